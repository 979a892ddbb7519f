// Requester: turns the send queue's work requests into data frames, as
// rxe_req.c does (Linux, drivers/infiniband/sw/rxe/): RDMA WRITE (with
// immediate) and SEND, segmented at the path MTU, PSNs modulo 2^24.
//
// expects:  SendQueue::Start() before the first Post(); `now`
//           non-decreasing; the QP not failed (the Qp checks)
// gives:    AckReq on a message's last packet, at least every `ack_every`
//           packets, where the in-flight window (`max_inflight_pkts`)
//           closes, and at least every quarter of the retransmission
//           timeout (rxe acknowledges only what asks); nothing sent past
//           the window, before an RNR wait ends or before the rate limiter
//           allows; after GoBack(), everything again from that PSN; after
//           ResendHole(), that one packet first, then on where it was
// modifies: the send queue (tail, next_psn on Post; tx, tx_pkt, sent_hi,
//           the timer's start on sending), the tx and retransmit counters
// next:     READ and atomics (rxe's requester has them; nothing here asks)
#pragma once

#include <cstdint>

#include "emu/uroce/dcqcn.h"
#include "emu/uroce/entropy.h"
#include "emu/uroce/framer.h"
#include "emu/uroce/qp_types.h"
#include "emu/uroce/send_queue.h"

namespace ofan::uroce {

class Requester {
 public:
  Requester(const EngineConfig& cfg, SendQueue* sq, Framer* framer, Entropy* entropy,
            const RateLimiter* rate, QpCounters* c)
      : cfg_(cfg), sq_(sq), framer_(framer), entropy_(entropy), rate_(rate), c_(c) {}
  Requester(const Requester&) = delete;
  Requester& operator=(const Requester&) = delete;

  // Queues a send; false when the send queue is full or len > 2^31.
  bool Post(const SendWr& wr);
  // True when BuildData would produce a frame now.
  bool HasData(Ns now) const;
  // Writes the next data frame to `out` (kMaxFrame bytes); its length, 0 if none.
  uint32_t BuildData(uint8_t* out, Ns now);
  // When a wait (RNR, rate) ends with data queued; ~0 for none.
  Ns NextDeadline() const;

  // What the completer asks for. Go back N: transmit again from `psn`
  // (rxe's req_retry).
  void GoBack(uint32_t psn);
  // Send nothing before `until` (an RNR NAK's wait).
  void HoldUntil(Ns until) { hold_until_ = until; }
  // Out-of-order recovery: the packet `psn` goes next, alone, and
  // transmission continues where it was.
  void ResendHole(uint32_t psn) {
    resend_owed_ = true;
    resend_psn_ = psn;
  }
  void StopResending() { resend_owed_ = false; }

 private:
  // Packet `idx` of `w` into out; accounts for it (counters, sent_hi).
  uint32_t Emit(uint8_t* out, const Wqe& w, uint32_t idx, bool force_ack_req, Ns now);

  const EngineConfig& cfg_;
  SendQueue* sq_;
  Framer* framer_;
  Entropy* entropy_;
  const RateLimiter* rate_;
  QpCounters* c_;
  uint32_t since_ackreq_ = 0;  // packets since the last AckReq by count
  Ns last_ackreq_ = 0;         // when a packet last asked for an ACK
  Ns hold_until_ = 0;          // RNR wait, DCQCN spacing
  bool resend_owed_ = false;
  uint32_t resend_psn_ = 0;
};

}  // namespace ofan::uroce
