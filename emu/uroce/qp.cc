#include "emu/uroce/qp.h"

#include <algorithm>
#include <cstring>

namespace ofan::uroce {
namespace {

using pkt::Opcode;
using pkt::PsnAdd;
using pkt::PsnDiff;

// AETH syndromes as rxe sends them (rxe_hdr.h: AETH_ACK_UNLIMITED, AETH_NAK_*).
constexpr uint8_t kSynAck = 0x1F;
constexpr uint8_t kSynNakPsnSeq = 0x60;
constexpr uint8_t kSynNakInvalid = 0x61;
constexpr uint8_t kSynNakAccess = 0x62;
constexpr uint8_t kSynRnr = 0x20 | 14;  // RNR NAK, timer code 14 (~1 ms as IBA table 45)

bool IsFirst(uint8_t op) {
  return op == Raw(Opcode::kSendFirst) || op == Raw(Opcode::kSendOnly) ||
         op == Raw(Opcode::kSendOnlyWithImm) || op == Raw(Opcode::kRdmaWriteFirst) ||
         op == Raw(Opcode::kRdmaWriteOnly) || op == Raw(Opcode::kRdmaWriteOnlyWithImm);
}
bool IsLast(uint8_t op) {
  return op == Raw(Opcode::kSendLast) || op == Raw(Opcode::kSendLastWithImm) ||
         op == Raw(Opcode::kSendOnly) || op == Raw(Opcode::kSendOnlyWithImm) ||
         op == Raw(Opcode::kRdmaWriteLast) || op == Raw(Opcode::kRdmaWriteLastWithImm) ||
         op == Raw(Opcode::kRdmaWriteOnly) || op == Raw(Opcode::kRdmaWriteOnlyWithImm);
}
bool IsSend(uint8_t op) { return op <= Raw(Opcode::kSendOnlyWithImm); }
bool IsWrite(uint8_t op) {
  return op >= Raw(Opcode::kRdmaWriteFirst) && op <= Raw(Opcode::kRdmaWriteOnlyWithImm);
}

bool TestBit(const uint64_t* bits, uint32_t i) { return (bits[i / 64] >> (i % 64)) & 1; }
void SetBit(uint64_t* bits, uint32_t i) { bits[i / 64] |= uint64_t{1} << (i % 64); }
void ClearBit(uint64_t* bits, uint32_t i) { bits[i / 64] &= ~(uint64_t{1} << (i % 64)); }

}  // namespace

Qp::Qp(const EngineConfig& cfg, MemoryRegion* mr, Stash* stash, uint32_t sq_depth,
       uint32_t rq_depth)
    : cfg_(cfg),
      mr_(mr),
      stash_(stash),
      framer_(cfg_),
      entropy_(cfg_),
      rate_(cfg_, &c_),
      cnp_(cfg_, &framer_, &c_),
      sq_(sq_depth),
      req_(cfg_, &sq_, &framer_, &entropy_, &rate_, &c_),
      comp_(cfg_, &sq_, &req_, &entropy_, &framer_, &c_),
      rq_(std::max<uint32_t>(rq_depth, 1)) {
  cfg_.mtu = std::clamp<uint32_t>(cfg_.mtu, 256, kMaxMtu);
  cfg_.ack_every = std::max<uint32_t>(cfg_.ack_every, 1);
  cfg_.max_inflight_pkts = std::clamp<uint32_t>(cfg_.max_inflight_pkts, 1, kOooWindow);
}

void Qp::Connect(const QpPeer& peer) {
  framer_.Connect(peer);
  if (peer.mtu) cfg_.mtu = std::clamp<uint32_t>(peer.mtu, 256, kMaxMtu);
  entropy_.Connect(peer, framer_.base_sport());
  sq_.Start(peer.start_psn);
  epsn_ = ooo_acked_epsn_ = peer.peer_start_psn & pkt::kPsnMask;
  ooo_ackreq_hi_ = PsnAdd(epsn_, -1);
}

bool Qp::Post(const SendWr& wr) { return !failed_ && req_.Post(wr); }

bool Qp::PostRecv(uint8_t* buf, uint32_t len, uint64_t wr_id) {
  if (rq_tail_ - rq_head_ >= rq_.size()) return false;
  rq_[rq_tail_++ % rq_.size()] = Recv{buf, len, wr_id};
  return true;
}

bool Qp::HasData(Ns now) const { return !failed_ && req_.HasData(now); }

uint32_t Qp::BuildData(uint8_t* out, Ns now) { return failed_ ? 0 : req_.BuildData(out, now); }

uint32_t Qp::BuildControl(uint8_t* out, Ns now) {
  if (cnp_.owed()) return cnp_.Build(out, now);
  if (cfg_.ooo) {
    const bool advanced = epsn_ != ooo_acked_epsn_;
    if (ooo_ackreq_seen_ || (advanced && PsnDiff(ooo_ackreq_hi_, ooo_acked_epsn_) >= 0)) {
      OweAck(PsnAdd(epsn_, -1), ack_owed_ ? ack_sport_ : framer_.base_sport(),
             ack_owed_ && ack_becn_);
    }
  }
  if (!ack_owed_) return 0;
  ack_owed_ = false;
  if (ack_syndrome_ == kSynAck) {
    ++c_.acks_tx;
    ooo_ackreq_seen_ = false;
    ooo_acked_epsn_ = PsnAdd(ack_psn_, 1);
  } else if (ack_syndrome_ == kSynNakPsnSeq) {
    ++c_.naks_tx;
  } else {
    ++c_.other_naks_tx;
  }
  const uint32_t frame_len = kL2L4 + kBth + 4 + pkt::kIcrcBytes;
  uint8_t* p = out + framer_.Header(out, frame_len - sizeof(pkt::EtherHdr), ack_sport_);
  pkt::BthHdr bth = pkt::BthHdr::Make(Opcode::kAcknowledge, framer_.peer().remote_qpn, ack_psn_);
  bth.set_becn(ack_becn_);  // the echo of a CE mark (what REPS calls ECE)
  std::memcpy(p, &bth, kBth);
  const auto aeth = pkt::AethHdr::Make(ack_syndrome_, msn_);
  std::memcpy(p + kBth, &aeth, sizeof aeth);
  return Framer::Finish(out, frame_len);
}

void Qp::OweAck(uint32_t psn, uint16_t sport, bool becn) {
  // The ACK owed covers the others, so it keeps the highest PSN (a
  // re-acknowledged duplicate's is lower than a new packet's).
  if (ack_owed_ && ack_syndrome_ == kSynAck && PsnDiff(psn, ack_psn_) < 0) return;
  ++acks_owed_;
  ack_owed_ = true;
  ack_syndrome_ = kSynAck;
  ack_psn_ = psn;
  ack_sport_ = sport;
  ack_becn_ = becn;
}

void Qp::OweNak(uint8_t syndrome) {
  ack_owed_ = true;
  ack_syndrome_ = syndrome;
  ack_psn_ = epsn_;
  ack_sport_ = framer_.base_sport();
  ack_becn_ = false;
}

void Qp::Fail(const char* why, std::vector<QpEvent>* events) {
  if (failed_) return;
  failed_ = true;
  QpEvent e;
  e.kind = QpEventKind::kError;
  e.qpn = framer_.peer().local_qpn;
  e.error = why;
  events->push_back(e);
}

void Qp::OnTimer(Ns now, std::vector<QpEvent>* events) {
  if (failed_) return;
  rate_.OnTimer(now);
  if (const char* why = comp_.OnTimer(now)) Fail(why, events);
}

Ns Qp::NextDeadline() const {
  if (failed_) return ~Ns{0};
  return std::min({comp_.NextDeadline(), req_.NextDeadline(), rate_.NextDeadline()});
}

void Qp::OnPacket(const uint8_t* bth, uint32_t len, uint16_t sport, bool ce, Ns now,
                  std::vector<QpEvent>* events) {
  if (len < kBth || failed_) {
    ++c_.drops;
    return;
  }
  const uint8_t op = bth[0];
  if (op == pkt::bth_opcode::kRcAck) {
    if (const char* why = comp_.OnAck(bth, len, sport, now, events)) Fail(why, events);
    return;
  }
  if (op == pkt::bth_opcode::kCnp) return rate_.OnCnp(now);
  if (!IsSend(op) && !IsWrite(op)) {
    ++c_.drops;
    return;
  }
  const uint32_t pad = (bth[1] >> 4) & 3;
  if (len < kBth + pkt::ExtHeaderBytes(op) + pad) {
    ++c_.drops;
    return;
  }
  if (ce) cnp_.OnCe(now);
  if (cfg_.ooo && IsWrite(op)) return OnDataOoo(bth, len, sport, ce, events, false);
  const uint64_t owed_before = acks_owed_;
  OnDataInOrder(bth, len, events);
  if (cfg_.ooo) {
    // A SEND placed in order may close the gap before later WRITE packets.
    while (TestBit(got_.data(), epsn_ % kOooWindow)) {
      ClearBit(got_.data(), epsn_ % kOooWindow);
      if (TestBit(last_bit_.data(), epsn_ % kOooWindow)) ++msn_;
      ClearBit(last_bit_.data(), epsn_ % kOooWindow);
      epsn_ = PsnAdd(epsn_, 1);
    }
  }
  // The ACK this packet asked for echoes its entropy (REPS) and CE mark.
  if (acks_owed_ != owed_before && ack_syndrome_ == kSynAck) {
    ack_sport_ = sport;
    ack_becn_ = ce;
  }
}

void Qp::OnDataInOrder(const uint8_t* bth, uint32_t len, std::vector<QpEvent>* events) {
  const auto h = pkt::Load<pkt::BthHdr>(bth);
  const uint8_t op = h.opcode;
  const uint32_t psn = h.psn24();
  const int32_t d = PsnDiff(psn, epsn_);
  if (d > 0) {
    ++c_.out_of_sequence;
    if (!cfg_.ooo && !nak_sent_) {  // rxe: one NAK per gap, then silence
      nak_sent_ = true;
      OweNak(kSynNakPsnSeq);
    } else {
      ++c_.drops;
    }
    return;
  }
  if (d < 0) {
    // C9-105: acknowledged again, never delivered again. Only a duplicate
    // that asks (AckReq), and with its own PSN, not the newest one: rxe's
    // requester (6.1, rxe_comp.c) takes an ACK that covers a message it is
    // sending again for an update of its PSN without the completion
    // (COMPST_UPDATE_COMP), and its next retry then re-sends that message
    // as a 0-byte *_ONLY one PSN on, every later packet shifted by one
    // (seen in a pcap: SEND ONLY of 0 B at the PSN of a SEND FIRST, then a
    // NAK invalid request that ends the QP). An ACK for what rxe has just
    // sent with AckReq finds that message pending and completes it.
    ++c_.duplicates;
    if (h.ack_req()) OweAck(psn, framer_.base_sport(), false);
    return;
  }
  nak_sent_ = false;
  const bool first = IsFirst(op), last = IsLast(op), send = IsSend(op);
  if (first == in_msg_ || (in_msg_ && send != msg_is_send_)) {
    ++c_.drops;
    OweNak(kSynNakInvalid);
    return;
  }
  const uint32_t ext = pkt::ExtHeaderBytes(op);
  const uint32_t pay = len - kBth - ext - h.pad_count();
  if (first) {
    if (send) {
      if (rq_head_ == rq_tail_) {
        ++c_.drops;
        OweNak(kSynRnr);
        nak_sent_ = true;  // what follows is dropped quietly until the retry
        return;
      }
      const Recv& r = rq_[rq_head_++ % rq_.size()];
      place_ = r.buf;
      place_left_ = r.len;
      recv_wr_id_ = r.wr_id;
      msg_len_ = 0;
      msg_va_ = 0;
    } else {
      const auto reth = pkt::Load<pkt::RethHdr>(bth + kBth);
      if (!MayPlace(mr_, reth.va(), reth.length(), reth.r_key())) {
        ++c_.drops;
        OweNak(kSynNakAccess);
        return;
      }
      place_ = mr_->base + (reth.va() - mr_->va);
      place_left_ = msg_len_ = reth.length();
      msg_va_ = reth.va();
    }
    in_msg_ = true;
    msg_is_send_ = send;
  }
  if (pay > place_left_) {
    ++c_.drops;
    in_msg_ = false;
    OweNak(kSynNakInvalid);
    return;
  }
  if (pay) std::memcpy(place_, bth + kBth + ext, pay);
  place_ += pay;
  place_left_ -= pay;
  if (send) msg_len_ += pay;
  ++c_.rx_pkts;
  c_.rx_bytes += pay;
  epsn_ = PsnAdd(epsn_, 1);
  if (last) {
    in_msg_ = false;
    msn_ = (msn_ + 1) & 0xFFFFFF;
    if (send || pkt::HasImmDt(op)) {
      QpEvent e;
      e.kind = QpEventKind::kRecvDone;
      e.qpn = framer_.peer().local_qpn;
      e.wr_id = send ? recv_wr_id_ : 0;
      e.len = msg_len_;
      e.va = msg_va_;
      if (pkt::HasImmDt(op)) {
        e.has_imm = true;
        e.imm = pkt::Rd32(bth + kBth + ext - sizeof(pkt::ImmDtHdr));
      }
      events->push_back(e);
    }
    ++c_.deliveries;
  }
  if (h.ack_req()) OweAck(psn, framer_.base_sport(), false);
}

void Qp::OnDataOoo(const uint8_t* bth, uint32_t len, uint16_t sport, bool ce,
                   std::vector<QpEvent>* events, bool replay) {
  const auto h = pkt::Load<pkt::BthHdr>(bth);
  const uint8_t op = h.opcode;
  const uint32_t psn = h.psn24();
  const int32_t d = PsnDiff(psn, epsn_);
  const uint32_t slot = psn % kOooWindow;
  if (d < 0 || (d < static_cast<int32_t>(kOooWindow) && TestBit(got_.data(), slot))) {
    ++c_.duplicates;
    OweAck(PsnAdd(epsn_, -1), sport, ce);
    return;
  }
  if (d >= static_cast<int32_t>(kOooWindow)) {
    ++c_.drops;
    return;
  }
  if (d > 0 && !replay) ++c_.out_of_sequence;
  OooMsg* m = nullptr;
  for (auto& x : ooo_msgs_) {
    if (x.used && PsnDiff(psn, x.first_psn) >= 0 &&
        PsnDiff(psn, PsnAdd(x.first_psn, static_cast<int32_t>(x.npkts))) < 0) {
      m = &x;
      break;
    }
  }
  bool created = false;
  if (!m) {
    if (!IsFirst(op)) {
      // Ahead of its message's first packet: wait for the RETH.
      Stash::Slot* s = stash_ ? stash_->Take() : nullptr;
      if (!s || len > s->bth.size()) {
        ++c_.drops;
        return;
      }
      s->owner = this;
      s->psn = psn;
      s->len = len;
      s->sport = sport;
      s->ce = ce;
      std::memmove(s->bth.data(), bth, len);
      return;
    }
    const auto reth = pkt::Load<pkt::RethHdr>(bth + kBth);
    if (!MayPlace(mr_, reth.va(), reth.length(), reth.r_key())) {
      ++c_.drops;
      OweNak(kSynNakAccess);
      return;
    }
    for (auto& x : ooo_msgs_) {
      if (!x.used) {
        m = &x;
        break;
      }
    }
    if (!m) {
      ++c_.drops;
      return;
    }
    *m = OooMsg{};
    m->used = true;
    m->first_psn = psn;
    m->npkts = std::max<uint32_t>(1, (reth.length() + cfg_.mtu - 1) / cfg_.mtu);
    m->va = reth.va();
    m->len = reth.length();
    created = true;
  }
  const uint32_t ext = pkt::ExtHeaderBytes(op);
  const uint32_t pay = len - kBth - ext - h.pad_count();
  const uint64_t off =
      static_cast<uint64_t>(PsnDiff(psn, m->first_psn)) * static_cast<uint64_t>(cfg_.mtu);
  if (off + pay > m->len) {
    ++c_.drops;
    return;
  }
  if (pay) std::memcpy(mr_->base + (m->va - mr_->va) + off, bth + kBth + ext, pay);
  SetBit(got_.data(), slot);
  if (IsLast(op)) SetBit(last_bit_.data(), slot);
  if (pkt::HasImmDt(op)) {
    m->has_imm = true;
    m->imm = pkt::Rd32(bth + kBth + ext - sizeof(pkt::ImmDtHdr));
  }
  ++c_.rx_pkts;
  c_.rx_bytes += pay;
  if (h.ack_req()) {
    ooo_ackreq_seen_ = true;
    if (PsnDiff(psn, ooo_ackreq_hi_) > 0) ooo_ackreq_hi_ = psn;
    ack_sport_ = sport;
    ack_becn_ = ce;
  }
  if (++m->got == m->npkts) {
    if (m->has_imm) {
      QpEvent e;
      e.kind = QpEventKind::kRecvDone;
      e.qpn = framer_.peer().local_qpn;
      e.len = m->len;
      e.va = m->va;
      e.has_imm = true;
      e.imm = m->imm;
      events->push_back(e);
    }
    ++c_.deliveries;
    m->used = false;
  }
  while (TestBit(got_.data(), epsn_ % kOooWindow)) {
    ClearBit(got_.data(), epsn_ % kOooWindow);
    if (TestBit(last_bit_.data(), epsn_ % kOooWindow)) msn_ = (msn_ + 1) & 0xFFFFFF;
    ClearBit(last_bit_.data(), epsn_ % kOooWindow);
    epsn_ = PsnAdd(epsn_, 1);
  }
  if (created && stash_) {
    const uint32_t first = m->first_psn, n = m->npkts;
    for (auto& s : stash_->slots()) {
      if (s.owner != this || PsnDiff(s.psn, first) < 0 ||
          PsnDiff(s.psn, PsnAdd(first, static_cast<int32_t>(n))) >= 0)
        continue;
      s.owner = nullptr;  // free before the replay: it cannot be stashed again
      OnDataOoo(s.bth.data(), s.len, s.sport, s.ce, events, true);
    }
  }
}

}  // namespace ofan::uroce
