// SendQueue: the work requests a QP has posted and not yet completed, and
// the PSN window they occupy. It is the state the requester and the
// completer share, as rxe's qp->sq is shared by rxe_req.c and rxe_comp.c
// (Linux, drivers/infiniband/sw/rxe/), each moving its own indices: the
// requester posts (tail, next_psn), transmits and goes back (tx, tx_pkt,
// sent_hi); the completer acknowledges and retires (una, head). Either
// restarts the retransmission timer (last_progress): the requester when
// the first packet goes in flight, the completer on progress and timeout.
// Plain data: the two stages keep the invariants, documented per field.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dataplane/packet/roce.h"
#include "emu/uroce/qp_types.h"

namespace ofan::uroce {

// A posted work request and the PSNs it was given.
struct Wqe {
  SendWr wr;
  uint32_t first_psn = 0, npkts = 0;
};

struct SendQueue {
  explicit SendQueue(uint32_t depth) : ring(std::max<uint32_t>(depth, 1)) {}
  SendQueue(const SendQueue&) = delete;
  SendQueue& operator=(const SendQueue&) = delete;

  // The PSNs of both directions' first packets, once connected.
  void Start(uint32_t psn) { next_psn = una = sent_hi = psn & pkt::kPsnMask; }
  uint32_t capacity() const { return static_cast<uint32_t>(ring.size()); }
  uint32_t outstanding() const { return tail - head; }
  Wqe& at(uint32_t i) { return ring[i % ring.size()]; }
  const Wqe& at(uint32_t i) const { return ring[i % ring.size()]; }
  // The PSN the requester transmits next (next_psn once all is out).
  uint32_t TxPsn() const {
    return tx < tail ? pkt::PsnAdd(at(tx).first_psn, static_cast<int32_t>(tx_pkt)) : next_psn;
  }
  // Packets sent and not acknowledged (the retransmission timer runs).
  bool InFlight() const { return pkt::PsnDiff(sent_hi, una) > 0; }

  std::vector<Wqe> ring;
  // Indices, modulo the ring's size: completed < head <= tx <= tail.
  uint32_t head = 0;      // the oldest not completed (completer)
  uint32_t tx = 0;        // the one being transmitted (requester)
  uint32_t tx_pkt = 0;    // its packet to send next (requester)
  uint32_t tail = 0;      // the next free slot (requester, Post)
  uint32_t next_psn = 0;  // PSN of the next packet to post (requester)
  uint32_t una = 0;       // oldest unacknowledged PSN (completer)
  uint32_t sent_hi = 0;   // one past the highest PSN ever sent (requester)
  Ns last_progress = 0;   // the retransmission timer's start
};

}  // namespace ofan::uroce
