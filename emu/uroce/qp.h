// Qp: one RoCEv2 reliable-connection queue pair as a state machine over
// frames. It neither owns a socket nor reads a clock: the Host (host.h)
// hands it received BTHs and the time, and asks it for the next data frame
// to send and for the ACK / NAK / CNP it owes.
//
// It is a façade over parts cut along the lines of Linux's rxe
// (drivers/infiniband/sw/rxe/), each with its own contract:
//   requester.h    work requests into data frames (rxe_req.c)
//   completer.h    ACKs, NAKs and timeouts: completions, go-back-N,
//                  ooo recovery (rxe_comp.c)
//   send_queue.h   the send queue and PSN window the two share (qp->sq)
//   responder.h    requests in, ACK / NAK / CNP out (rxe_resp.c), with
//   ack_state.h    the expected PSN, MSN and the ACK owed (qp->resp), and
//   ooo_placement.h  out-of-order placement of WRITEs (rxe has none)
//   dcqcn.h        rate control: CNPs owed, the rate they cut
//   entropy.h      the UDP source port of each data packet
//   framer.h       Ethernet / IPv4 / UDP headers and the ICRC
//
// expects:  Connect() before anything else; Post() of at most `sq_depth`
//           outstanding work requests; received packets whose ICRC the Host
//           has checked; `now` non-decreasing
// gives:    what the parts give; packets routed to them by opcode
//           (ACKNOWLEDGE to the completer, CNP to the rate limiter, the
//           rest to the responder); one kError when the completer reports
//           a fatal NAK or too many timeouts, after which the QP sends and
//           accepts nothing (received packets count as drops)
// modifies: the registered memory region (placement), the posted receive
//           buffers (SEND), its counters
// next:     SACK-like reports from the responder (one RTO per first hole
//           today; later holes cost one round trip each)
#pragma once

#include <cstdint>
#include <vector>

#include "emu/uroce/completer.h"
#include "emu/uroce/dcqcn.h"
#include "emu/uroce/entropy.h"
#include "emu/uroce/framer.h"
#include "emu/uroce/ooo_placement.h"
#include "emu/uroce/qp_types.h"
#include "emu/uroce/requester.h"
#include "emu/uroce/responder.h"
#include "emu/uroce/send_queue.h"

namespace ofan::uroce {

class Qp {
 public:
  Qp(const EngineConfig& cfg, MemoryRegion* mr, Stash* stash, uint32_t sq_depth, uint32_t rq_depth);
  Qp(const Qp&) = delete;
  Qp& operator=(const Qp&) = delete;

  void Connect(const QpPeer& peer);
  uint32_t qpn() const { return framer_.peer().local_qpn; }
  const QpPeer& peer() const { return framer_.peer(); }
  const QpCounters& counters() const { return c_; }
  bool failed() const { return failed_; }
  uint16_t base_sport() const { return framer_.base_sport(); }

  // Queues a send; false when the QP has failed, the send queue is full or
  // len > 2^31.
  bool Post(const SendWr& wr) { return !failed_ && req_.Post(wr); }
  // A receive buffer for an incoming SEND.
  bool PostRecv(uint8_t* buf, uint32_t len, uint64_t wr_id) {
    return resp_.PostRecv(buf, len, wr_id);
  }
  uint32_t outstanding() const { return sq_.outstanding(); }

  // A received packet (`bth` to the ICRC, excluded) for this QP.
  void OnPacket(const uint8_t* bth, uint32_t len, uint16_t sport, bool ce, Ns now,
                std::vector<QpEvent>* events);
  // Retransmission and rate recovery timers.
  void OnTimer(Ns now, std::vector<QpEvent>* events);
  // The earliest time OnTimer or BuildData may have something to do.
  Ns NextDeadline() const;

  // True when BuildData would produce a frame now.
  bool HasData(Ns now) const { return !failed_ && req_.HasData(now); }
  // Writes the next data frame to `out` (kMaxFrame bytes); its length, 0 if none.
  uint32_t BuildData(uint8_t* out, Ns now) { return failed_ ? 0 : req_.BuildData(out, now); }
  // Writes the ACK / NAK / CNP owed (one per call); 0 when none is.
  uint32_t BuildControl(uint8_t* out, Ns now) { return resp_.BuildControl(out, now); }

  // DCQCN-like rate (fraction of the line rate).
  double rate_fraction() const { return rate_.rate(); }

 private:
  void Fail(const char* why, std::vector<QpEvent>* events);

  // Declared before the parts: they keep references to these.
  EngineConfig cfg_;
  QpCounters c_;
  Framer framer_;
  Entropy entropy_;
  RateLimiter rate_;
  SendQueue sq_;
  Requester req_;
  Completer comp_;
  Responder resp_;
  bool failed_ = false;
};

}  // namespace ofan::uroce
