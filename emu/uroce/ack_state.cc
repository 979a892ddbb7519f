#include "emu/uroce/ack_state.h"

#include <cstring>

namespace ofan::uroce {

void AckState::OweAck(uint32_t psn, uint16_t sport, bool becn) {
  // The ACK owed covers the others, so it keeps the highest PSN (a
  // re-acknowledged duplicate's is lower than a new packet's).
  if (owed_ && syndrome_ == Syndrome::kAck && pkt::PsnDiff(psn, psn_) < 0) return;
  ++acks_owed_;
  owed_ = true;
  syndrome_ = Syndrome::kAck;
  psn_ = psn;
  sport_ = sport;
  becn_ = becn;
}

void AckState::OweNak(Syndrome syndrome) {
  owed_ = true;
  syndrome_ = syndrome;
  psn_ = epsn_;
  sport_ = framer_->base_sport();
  becn_ = false;
}

uint32_t AckState::Build(uint8_t* out) {
  if (!owed_) return 0;
  owed_ = false;
  if (syndrome_ == Syndrome::kAck) {
    ++c_->acks_tx;
  } else if (syndrome_ == Syndrome::kNakPsnSequence) {
    ++c_->naks_tx;
  } else {
    ++c_->other_naks_tx;
  }
  const uint32_t frame_len = kL2L4 + kBth + sizeof(pkt::AethHdr) + pkt::kIcrcBytes;
  uint8_t* p = out + framer_->Header(out, frame_len - sizeof(pkt::EtherHdr), sport_);
  pkt::BthHdr bth = pkt::BthHdr::Make(pkt::Opcode::kAcknowledge, framer_->peer().remote_qpn, psn_);
  bth.set_becn(becn_);  // the echo of a CE mark (what REPS calls ECE)
  std::memcpy(p, &bth, kBth);
  const auto aeth = pkt::AethHdr::Make(static_cast<uint8_t>(syndrome_), msn_);
  std::memcpy(p + kBth, &aeth, sizeof aeth);
  return Framer::Finish(out, frame_len);
}

}  // namespace ofan::uroce
