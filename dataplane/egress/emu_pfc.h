// EmuPfc: one switch's PFC in the shared fabric engine (emulated time), the
// engine thread's alone.
//
// expects:   the switch's PortQueues (emulated) call Admit for each frame of
//            the lossless class they take, Release when its transmission
//            starts; the switch calls Due at every drain and sends `pending`
// modifies:  fabric::PfcIngress (per ingress port accounting), `pending`:
//            the PFC frames to send, each at its emulated time
// next:      Switch::FlushPfc builds each pending frame and queues it on its
//            port's strict-priority queue at its time (switch.cc)
//
// The lossless class is the normal queue's IPv4 frames whose DSCP maps to
// the PFC priority (kRoceDscp -> 3 by default), from a port of the switch
// (IsLosslessFrame); ACK/NAK/CNP and control frames go through the
// strict-priority queue and are never paused (RC ACKs queued with data, the
// reorder stage's fabric, are of data's class). A lossless frame carries
// its ingress port, marked, in mbuf->port from Admit until Release, so
// that Release needs no lookup.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <vector>

#include "dataplane/egress/lossless.h"
#include "dataplane/fabric/pfc.h"

namespace ofan::dp {

struct EmuPfc {
  EmuPfc(fabric::PfcIngress m, uint8_t lossless_dscp, bool lossless_acks = false)
      : model(std::move(m)), dscp(lossless_dscp), acks(lossless_acks) {}

  fabric::PfcIngress model;
  uint8_t dscp = fabric::kRoceDscp;
  bool acks = false;  // RC ACKs of dscp are lossless (queued with data: no ack priority)
  // The watchdog every port's lossless queue runs (PortQueue keeps its own
  // fabric::PfcWatchdog with these).
  fabric::TimePs wd_detect_ps = 0, wd_restore_ps = 0;
  fabric::PfcWdAction wd_action = fabric::PfcWdAction::kDrop;
  std::vector<fabric::PfcAction> pending;

  // The marked port of a lossless frame between Admit and Release.
  static constexpr uint16_t kMark = kLosslessPortMark;
  static bool Marked(const rte_mbuf* m) {
    return m->port != RTE_MBUF_PORT_INVALID && (m->port & kMark) != 0;
  }
  // Is this normal-queue frame lossless? Its DSCP against the class's.
  bool Lossless(const rte_mbuf* m) const {
    if (m->port >= model.ports()) return false;  // no ingress port: a control frame
    return IsLosslessFrame(rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m), dscp,
                           acks);
  }
  // Admits m (a lossless frame from m->port) at t; false: a lossless drop.
  bool Admit(rte_mbuf* m, fabric::TimePs t) {
    if (!model.Admit(m->port, rte_pktmbuf_pkt_len(m), t, pending)) return false;
    m->port = static_cast<uint16_t>(m->port | kMark);
    return true;
  }
  // m (Marked) starts leaving at t: its bytes leave its port's account.
  void Release(rte_mbuf* m, fabric::TimePs t) {
    m->port = static_cast<uint16_t>(m->port & ~kMark);
    model.Release(m->port, rte_pktmbuf_pkt_len(m), t, pending);
  }
};

}  // namespace ofan::dp
