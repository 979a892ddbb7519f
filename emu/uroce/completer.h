// Completer: what the requester learns from the responder, as rxe_comp.c
// does (Linux, drivers/infiniband/sw/rxe/): ACKs retire work requests,
// NAKs and timeouts send the requester back.
//
// expects:  the ACKNOWLEDGE packets for this QP (BTH to the ICRC,
//           excluded); OnTimer() at NextDeadline() or later; `now`
//           non-decreasing; the QP not failed (the Qp checks)
// gives:    a kSendDone per work request whose last PSN is acknowledged,
//           in order; an ACK or NAK acknowledges everything before its PSN
//           (IBA 9.7.5.2.1), stale or bogus ones are ignored; go-back-N on
//           a PSN sequence error NAK; the same after an RNR NAK, once its
//           wait (`rnr_delay_ns`) is over; after `rto_ns` without progress,
//           go-back-N, or in ooo mode only the holes (the oldest
//           unacknowledged packet, then each one the next ACK stops short
//           of: NewReno's partial ACKs); the error that ends the QP (a
//           fatal NAK, `retry_count` timeouts in a row) as a static string
// modifies: the send queue (una, head, the timer), the requester's
//           transmission (GoBack, HoldUntil, ResendHole), REPS entropy
//           (the ports ACKs echo), its counters
// next:     SACK-like reports from the responder (one RTO per first hole
//           today; later holes cost one round trip each)
#pragma once

#include <cstdint>
#include <vector>

#include "emu/uroce/entropy.h"
#include "emu/uroce/framer.h"
#include "emu/uroce/qp_types.h"
#include "emu/uroce/requester.h"
#include "emu/uroce/send_queue.h"

namespace ofan::uroce {

class Completer {
 public:
  Completer(const EngineConfig& cfg, SendQueue* sq, Requester* req, Entropy* entropy,
            const Framer* framer, QpCounters* c)
      : cfg_(cfg), sq_(sq), req_(req), entropy_(entropy), framer_(framer), c_(c) {}
  Completer(const Completer&) = delete;
  Completer& operator=(const Completer&) = delete;

  // An ACKNOWLEDGE that came on `sport`. The error that ends the QP, or
  // nullptr.
  const char* OnAck(const uint8_t* bth, uint32_t len, uint16_t sport, Ns now,
                    std::vector<QpEvent>* events);
  // The retransmission timer. The error that ends the QP, or nullptr.
  const char* OnTimer(Ns now);
  // When the retransmission timer fires; ~0 for never.
  Ns NextDeadline() const;

 private:
  void AckUpTo(uint32_t psn, Ns now, std::vector<QpEvent>* events);

  const EngineConfig& cfg_;
  SendQueue* sq_;
  Requester* req_;
  Entropy* entropy_;
  const Framer* framer_;
  QpCounters* c_;
  uint32_t retries_ = 0;  // timeouts in a row
  // ooo mode's recovery after a timeout: until una reaches recover_psn_
  // (what had been sent then), each ACK short of it names the next hole.
  bool recovering_ = false;
  uint32_t recover_psn_ = 0;
};

}  // namespace ofan::uroce
