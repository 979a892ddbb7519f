// Stage 6: TX, a port's device as the egress stage's TX hook.
//
// expects:   frames ready to leave, one burst, from PortQueue (the owner
//            lcore of the port)
// modifies:  nothing: the device takes what it can; while the port is
//            captured, copies of what it took go to the capture
//            (capture/port_capture.h), made before the device has the
//            frames (after, they may be gone) and published for those it took
// next:      the wire; what the device refuses stays with the queue, staged
#pragma once

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include <algorithm>
#include <cstdint>

#include "dataplane/capture/port_capture.h"
#include "dataplane/egress/port_queue.h"

namespace ofan::dp {

// A port's TX hook context: its device, and the capture that may want copies.
struct DeviceTxCtx {
  uint16_t dpdk_port = 0;
  uint32_t port = 0;  // the fat-tree port
  PortCapture* capture = nullptr;
};

inline uint16_t DeviceTxBurst(void* ctx, rte_mbuf** pkts, uint16_t n) {
  auto* c = static_cast<DeviceTxCtx*>(ctx);
  if (!c->capture->captures(c->port)) [[likely]]
    return rte_eth_tx_burst(c->dpdk_port, 0, pkts, n);
  const uint32_t copied = c->capture->CopyTx(c->port, pkts, n, rte_rdtsc());
  const uint16_t sent = rte_eth_tx_burst(c->dpdk_port, 0, pkts, n);
  c->capture->CommitTx(c->port, std::min<uint32_t>(copied, sent));
  return sent;
}
inline TxHook DeviceTx(DeviceTxCtx* ctx) { return TxHook{&DeviceTxBurst, ctx}; }

}  // namespace ofan::dp
