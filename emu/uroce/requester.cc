#include "emu/uroce/requester.h"

#include <algorithm>
#include <cstring>

namespace ofan::uroce {
namespace {

using pkt::Opcode;
using pkt::PsnAdd;
using pkt::PsnDiff;

Opcode DataOpcode(WrOp op, bool first, bool last) {
  const bool write = op == WrOp::kWrite || op == WrOp::kWriteImm;
  const bool imm = op == WrOp::kWriteImm || op == WrOp::kSendImm;
  if (first && last) {
    if (write) return imm ? Opcode::kRdmaWriteOnlyWithImm : Opcode::kRdmaWriteOnly;
    return imm ? Opcode::kSendOnlyWithImm : Opcode::kSendOnly;
  }
  if (first) return write ? Opcode::kRdmaWriteFirst : Opcode::kSendFirst;
  if (!last) return write ? Opcode::kRdmaWriteMiddle : Opcode::kSendMiddle;
  if (write) return imm ? Opcode::kRdmaWriteLastWithImm : Opcode::kRdmaWriteLast;
  return imm ? Opcode::kSendLastWithImm : Opcode::kSendLast;
}

}  // namespace

bool Requester::Post(const SendWr& wr) {
  if (sq_->outstanding() >= sq_->capacity() || wr.len > (1u << 31)) return false;
  Wqe& w = sq_->at(sq_->tail);
  w.wr = wr;
  w.npkts = std::max<uint32_t>(1, (wr.len + cfg_.mtu - 1) / cfg_.mtu);
  w.first_psn = sq_->next_psn;
  sq_->next_psn = PsnAdd(sq_->next_psn, static_cast<int32_t>(w.npkts));
  ++sq_->tail;
  return true;
}

bool Requester::HasData(Ns now) const {
  if (now < hold_until_) return false;
  if (resend_owed_) return true;
  if (sq_->tx == sq_->tail) return false;
  return static_cast<uint32_t>(PsnDiff(sq_->TxPsn(), sq_->una)) < cfg_.max_inflight_pkts;
}

uint32_t Requester::BuildData(uint8_t* out, Ns now) {
  if (!HasData(now)) return 0;
  if (resend_owed_) {
    // ooo recovery: the one packet the ACKs say is missing, then back to
    // where transmission was (the rest may well have arrived).
    resend_owed_ = false;
    for (uint32_t i = sq_->head; i < sq_->tail; ++i) {
      const Wqe& w = sq_->at(i);
      const int32_t d = PsnDiff(resend_psn_, w.first_psn);
      if (d >= 0 && d < static_cast<int32_t>(w.npkts))
        return Emit(out, w, static_cast<uint32_t>(d), true, now);
    }
    if (sq_->tx == sq_->tail) return 0;  // acknowledged meanwhile
  }
  const Wqe& w = sq_->at(sq_->tx);
  const uint32_t len = Emit(out, w, sq_->tx_pkt, false, now);
  if (++sq_->tx_pkt == w.npkts) {
    ++sq_->tx;
    sq_->tx_pkt = 0;
  }
  return len;
}

Ns Requester::NextDeadline() const {
  return sq_->tx != sq_->tail && hold_until_ ? hold_until_ : ~Ns{0};
}

uint32_t Requester::Emit(uint8_t* out, const Wqe& w, uint32_t idx, bool force_ack_req, Ns now) {
  const uint32_t psn = PsnAdd(w.first_psn, static_cast<int32_t>(idx));
  const uint32_t inflight = static_cast<uint32_t>(PsnDiff(psn, sq_->una));
  const uint64_t off = static_cast<uint64_t>(idx) * cfg_.mtu;
  const uint32_t pay = static_cast<uint32_t>(std::min<uint64_t>(cfg_.mtu, w.wr.len - off));
  const bool first = idx == 0, last = idx + 1 == w.npkts;
  const Opcode op = DataOpcode(w.wr.op, first, last);
  const uint32_t pad = (4 - pay % 4) % 4;
  const uint32_t ext = pkt::ExtHeaderBytes(Raw(op));
  const uint32_t frame_len = kL2L4 + kBth + ext + pay + pad + pkt::kIcrcBytes;

  // AckReq by count, as rxe does, and also by time: a QP that gets a small
  // share of its host's link (an all-to-all: 1/15 of it) sends 64 packets
  // in longer than the timeout, and the responder ACKs only what asks. A
  // quarter of the timeout keeps the ACKs coming well inside it. The clock
  // starts with the first packet in flight.
  if (inflight == 0) last_ackreq_ = now;
  const bool ack_req = force_ack_req || last || ++since_ackreq_ >= cfg_.ack_every ||
                       inflight + 1 >= cfg_.max_inflight_pkts ||
                       now - last_ackreq_ >= cfg_.rto_ns / 4;
  if (ack_req && !force_ack_req) since_ackreq_ = 0;
  if (ack_req) last_ackreq_ = now;
  if (PsnDiff(psn, sq_->sent_hi) < 0) {
    ++c_->retransmits;
  } else {
    if (PsnDiff(sq_->sent_hi, sq_->una) == 0) sq_->last_progress = now;  // the timer starts
    sq_->sent_hi = PsnAdd(psn, 1);
  }

  uint8_t* p = out + framer_->Header(out, frame_len - sizeof(pkt::EtherHdr), entropy_->Next(),
                                     /*ect=*/!w.wr.priority, w.wr.priority);
  pkt::BthHdr bth = pkt::BthHdr::Make(op, framer_->peer().remote_qpn, psn);
  bth.set_ack_req(ack_req);
  bth.set_pad_count(static_cast<uint8_t>(pad));
  std::memcpy(p, &bth, kBth);
  p += kBth;
  if (pkt::HasReth(op)) {
    const auto reth = pkt::RethHdr::Make(w.wr.remote_va, w.wr.rkey, w.wr.len);
    std::memcpy(p, &reth, sizeof reth);
    p += sizeof reth;
  }
  if (pkt::HasImmDt(op)) {
    const pkt::ImmDtHdr imm{pkt::Be32::FromHost(w.wr.imm)};
    std::memcpy(p, &imm, sizeof imm);
    p += sizeof imm;
  }
  if (pay) std::memcpy(p, w.wr.local + off, pay);
  std::memset(p + pay, 0, pad);

  ++c_->tx_pkts;
  c_->tx_bytes += pay;
  if (rate_->limiting()) hold_until_ = now + rate_->Spacing(frame_len);
  return Framer::Finish(out, frame_len);
}

void Requester::GoBack(uint32_t psn) {
  uint32_t i = sq_->head;
  while (i < sq_->tail) {
    const Wqe& w = sq_->at(i);
    if (PsnDiff(PsnAdd(w.first_psn, static_cast<int32_t>(w.npkts)), psn) > 0) break;
    ++i;
  }
  sq_->tx = i;
  sq_->tx_pkt = 0;
  if (i < sq_->tail) {
    const int32_t d = PsnDiff(psn, sq_->at(i).first_psn);
    sq_->tx_pkt = d > 0 ? static_cast<uint32_t>(d) : 0;
  }
  since_ackreq_ = 0;
}

}  // namespace ofan::uroce
