#include "emu/uroce/completer.h"

namespace ofan::uroce {
namespace {

using pkt::PsnAdd;
using pkt::PsnDiff;

}  // namespace

void Completer::AckUpTo(uint32_t psn, Ns now, std::vector<QpEvent>* events) {
  if (PsnDiff(psn, sq_->una) < 0 || PsnDiff(psn, sq_->sent_hi) >= 0) return;  // stale or bogus
  sq_->una = PsnAdd(psn, 1);
  retries_ = 0;
  sq_->last_progress = now;
  while (sq_->head < sq_->tail) {
    const Wqe& w = sq_->at(sq_->head);
    if (PsnDiff(PsnAdd(w.first_psn, static_cast<int32_t>(w.npkts) - 1), psn) > 0) break;
    QpEvent e;
    e.kind = QpEventKind::kSendDone;
    e.qpn = framer_->peer().local_qpn;
    e.wr_id = w.wr.wr_id;
    e.len = w.wr.len;
    events->push_back(e);
    ++c_->completions;
    ++sq_->head;
  }
  if (recovering_) {
    recovering_ = PsnDiff(sq_->una, recover_psn_) < 0;
    if (recovering_) {
      req_->ResendHole(sq_->una);
    } else {
      req_->StopResending();
    }
  }
  // After a go-back, an ACK may cover packets not yet resent: skip them.
  if (sq_->tx < sq_->head || PsnDiff(sq_->TxPsn(), sq_->una) < 0) req_->GoBack(sq_->una);
}

const char* Completer::OnAck(const uint8_t* bth, uint32_t len, uint16_t sport, Ns now,
                             std::vector<QpEvent>* events) {
  if (len < kBth + sizeof(pkt::AethHdr)) {
    ++c_->drops;
    return nullptr;
  }
  const auto h = pkt::Load<pkt::BthHdr>(bth);
  const auto aeth = pkt::Load<pkt::AethHdr>(bth + kBth);
  const uint32_t psn = h.psn24();
  switch (aeth.kind()) {
    case pkt::AethHdr::Kind::kAck:
      ++c_->acks_rx;
      entropy_->OnAck(sport, h.becn());
      AckUpTo(psn, now, events);
      return nullptr;
    case pkt::AethHdr::Kind::kRnrNak:
      ++c_->other_naks_rx;
      if (PsnDiff(psn, sq_->una) > 0) AckUpTo(PsnAdd(psn, -1), now, events);
      if (psn == sq_->una && PsnDiff(psn, sq_->sent_hi) < 0) {
        req_->GoBack(psn);
        req_->HoldUntil(now + cfg_.rnr_delay_ns);
        sq_->last_progress = now;
      }
      return nullptr;
    case pkt::AethHdr::Kind::kNak:
      if (aeth.value() != pkt::AethHdr::kNakPsnSequenceError) {
        ++c_->other_naks_rx;
        return aeth.value() == pkt::AethHdr::kNakRemoteAccessError ? "remote access error NAK"
                                                                   : "invalid request NAK";
      }
      ++c_->naks_rx;
      // A NAK acknowledges every PSN before its own (IBA 9.7.5.2.1).
      if (PsnDiff(psn, sq_->una) > 0) AckUpTo(PsnAdd(psn, -1), now, events);
      if (psn == sq_->una && PsnDiff(psn, sq_->sent_hi) < 0) {
        req_->GoBack(psn);
        sq_->last_progress = now;
      }
      return nullptr;
    case pkt::AethHdr::Kind::kReserved:
      ++c_->drops;
      return nullptr;
  }
  return nullptr;
}

const char* Completer::OnTimer(Ns now) {
  if (!sq_->InFlight() || now - sq_->last_progress < cfg_.rto_ns) return nullptr;
  ++c_->timeouts;
  if (++retries_ > cfg_.retry_count) return "retry count exceeded";
  sq_->last_progress = now;
  if (cfg_.ooo) {
    // The responder has placed what came after the hole: resend the hole
    // and, as ACKs come back short of where we were (NewReno's partial
    // ACKs), the next one, until everything sent before the timeout is in.
    req_->ResendHole(sq_->una);
    recovering_ = true;
    recover_psn_ = sq_->sent_hi;
    return nullptr;
  }
  req_->GoBack(sq_->una);
  return nullptr;
}

Ns Completer::NextDeadline() const {
  return sq_->InFlight() ? sq_->last_progress + cfg_.rto_ns : ~Ns{0};
}

}  // namespace ofan::uroce
