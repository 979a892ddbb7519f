// AckState: where the responder's receive sequence stands (the expected
// PSN, the MSN) and the one ACK or NAK it owes the requester, as rxe_resp.c
// keeps them in qp->resp (Linux, drivers/infiniband/sw/rxe/). Both receive
// paths (in order, out of order) write it; Build() pays what is owed.
//
// expects:  Start() with the peer's first PSN before any packet
// gives:    coalesced ACKs: one frame pays every ACK owed since the last,
//           with the highest PSN owed (PSNs only grow; a duplicate's lower
//           PSN does not replace a newer one), the MSN of the messages
//           completed, the UDP source port and CE echo (BECN) of the packet
//           that asked; a NAK replaces whatever was owed and carries the
//           expected PSN, from the QP pair's port
// modifies: the acks_tx, naks_tx and other_naks_tx counters
// next:     credits in the ACK's syndrome (rxe sends "unlimited" too)
#pragma once

#include <cstdint>

#include "emu/uroce/framer.h"
#include "emu/uroce/qp_types.h"

namespace ofan::uroce {

// AETH syndromes as rxe sends them (rxe_hdr.h: AETH_ACK_UNLIMITED,
// AETH_NAK_*, AETH_RNR_NAK).
enum class Syndrome : uint8_t {
  kAck = 0x1F,             // ACK, unlimited credits
  kRnr = 0x20 | 14,        // RNR NAK, timer code 14 (~1 ms as IBA table 45)
  kNakPsnSequence = 0x60,  // PSN sequence error
  kNakInvalidRequest = 0x61,
  kNakRemoteAccess = 0x62,
};

class AckState {
 public:
  AckState(Framer* framer, QpCounters* c) : framer_(framer), c_(c) {}
  AckState(const AckState&) = delete;
  AckState& operator=(const AckState&) = delete;

  void Start(uint32_t peer_start_psn) { epsn_ = peer_start_psn & pkt::kPsnMask; }

  // The PSN the responder expects next, and the messages completed in
  // order (the AETH's MSN, modulo 2^24).
  uint32_t epsn() const { return epsn_; }
  void Advance() { epsn_ = pkt::PsnAdd(epsn_, 1); }
  void EndMessage() { msn_ = (msn_ + 1) & 0xFFFFFF; }

  // An ACK of `psn` owed, from `sport` with BECN `becn`.
  void OweAck(uint32_t psn, uint16_t sport, bool becn);
  // A NAK owed (it replaces an ACK owed), for the expected PSN.
  void OweNak(Syndrome syndrome);
  // The owed ACK's port and BECN become those of the packet that asked
  // (REPS recycles the port; BECN echoes its CE mark).
  void Echo(uint16_t sport, bool becn) {
    sport_ = sport;
    becn_ = becn;
  }

  bool owed() const { return owed_; }
  // The last thing owed (or paid) is an ACK, not a NAK.
  bool acking() const { return syndrome_ == Syndrome::kAck; }
  uint32_t psn() const { return psn_; }
  uint16_t sport() const { return sport_; }
  bool becn() const { return becn_; }
  // How many ACKs have been owed so far (tells whether a packet owed one).
  uint64_t acks_owed() const { return acks_owed_; }

  // Writes the ACK / NAK owed to `out` (kMaxFrame bytes); its length, 0 if
  // none is owed.
  uint32_t Build(uint8_t* out);

 private:
  Framer* framer_;
  QpCounters* c_;
  uint32_t epsn_ = 0, msn_ = 0;
  bool owed_ = false;
  Syndrome syndrome_ = Syndrome::kAck;
  uint32_t psn_ = 0;
  uint16_t sport_ = 0;
  bool becn_ = false;
  uint64_t acks_owed_ = 0;
};

}  // namespace ofan::uroce
