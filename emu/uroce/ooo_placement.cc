#include "emu/uroce/ooo_placement.h"

#include <algorithm>
#include <cstring>

#include "emu/uroce/opcodes.h"

namespace ofan::uroce {
namespace {

using pkt::PsnAdd;
using pkt::PsnDiff;

bool TestBit(const uint64_t* bits, uint32_t i) { return (bits[i / 64] >> (i % 64)) & 1; }
void SetBit(uint64_t* bits, uint32_t i) { bits[i / 64] |= uint64_t{1} << (i % 64); }
void ClearBit(uint64_t* bits, uint32_t i) { bits[i / 64] &= ~(uint64_t{1} << (i % 64)); }

}  // namespace

void OooPlacement::Start(uint32_t epsn) {
  acked_epsn_ = epsn;
  ackreq_hi_ = PsnAdd(epsn, -1);
}

void OooPlacement::Drain() {
  for (;;) {
    const uint32_t slot = ack_->epsn() % kOooWindow;
    if (!TestBit(got_.data(), slot)) return;
    ClearBit(got_.data(), slot);
    if (TestBit(last_bit_.data(), slot)) ack_->EndMessage();
    ClearBit(last_bit_.data(), slot);
    ack_->Advance();
  }
}

void OooPlacement::OweContiguousAck() {
  const bool advanced = ack_->epsn() != acked_epsn_;
  if (ackreq_seen_ || (advanced && PsnDiff(ackreq_hi_, acked_epsn_) >= 0)) {
    ack_->OweAck(PsnAdd(ack_->epsn(), -1), ack_->owed() ? ack_->sport() : framer_->base_sport(),
                 ack_->owed() && ack_->becn());
  }
}

void OooPlacement::OnAckSent(uint32_t psn) {
  ackreq_seen_ = false;
  acked_epsn_ = PsnAdd(psn, 1);
}

void OooPlacement::OnWrite(const uint8_t* bth, uint32_t len, uint16_t sport, bool ce,
                           std::vector<QpEvent>* events, bool replay) {
  const auto h = pkt::Load<pkt::BthHdr>(bth);
  const uint8_t op = h.opcode;
  const uint32_t psn = h.psn24();
  const int32_t d = PsnDiff(psn, ack_->epsn());
  const uint32_t slot = psn % kOooWindow;
  if (d < 0 || (d < static_cast<int32_t>(kOooWindow) && TestBit(got_.data(), slot))) {
    ++c_->duplicates;
    ack_->OweAck(PsnAdd(ack_->epsn(), -1), sport, ce);
    return;
  }
  if (d >= static_cast<int32_t>(kOooWindow)) {
    ++c_->drops;
    return;
  }
  if (d > 0 && !replay) ++c_->out_of_sequence;
  Msg* m = nullptr;
  for (auto& x : msgs_) {
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
        ++c_->drops;
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
      ++c_->drops;
      ack_->OweNak(Syndrome::kNakRemoteAccess);
      return;
    }
    for (auto& x : msgs_) {
      if (!x.used) {
        m = &x;
        break;
      }
    }
    if (!m) {
      ++c_->drops;
      return;
    }
    *m = Msg{};
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
    ++c_->drops;
    return;
  }
  if (pay) std::memcpy(mr_->base + (m->va - mr_->va) + off, bth + kBth + ext, pay);
  SetBit(got_.data(), slot);
  if (IsLast(op)) SetBit(last_bit_.data(), slot);
  if (pkt::HasImmDt(op)) {
    m->has_imm = true;
    m->imm = pkt::Rd32(bth + kBth + ext - sizeof(pkt::ImmDtHdr));
  }
  ++c_->rx_pkts;
  c_->rx_bytes += pay;
  if (h.ack_req()) {
    ackreq_seen_ = true;
    if (PsnDiff(psn, ackreq_hi_) > 0) ackreq_hi_ = psn;
    ack_->Echo(sport, ce);
  }
  if (++m->got == m->npkts) {
    if (m->has_imm) {
      QpEvent e;
      e.kind = QpEventKind::kRecvDone;
      e.qpn = framer_->peer().local_qpn;
      e.len = m->len;
      e.va = m->va;
      e.has_imm = true;
      e.imm = m->imm;
      events->push_back(e);
    }
    ++c_->deliveries;
    m->used = false;
  }
  Drain();
  if (created && stash_) {
    const uint32_t first = m->first_psn, n = m->npkts;
    for (auto& s : stash_->slots()) {
      if (s.owner != this || PsnDiff(s.psn, first) < 0 ||
          PsnDiff(s.psn, PsnAdd(first, static_cast<int32_t>(n))) >= 0)
        continue;
      s.owner = nullptr;  // free before the replay: it cannot be stashed again
      OnWrite(s.bth.data(), s.len, s.sport, s.ce, events, true);
    }
  }
}

}  // namespace ofan::uroce
