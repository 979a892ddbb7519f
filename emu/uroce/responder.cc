#include "emu/uroce/responder.h"

#include <algorithm>
#include <cstring>

#include "emu/uroce/opcodes.h"

namespace ofan::uroce {

using pkt::PsnDiff;

Responder::Responder(const EngineConfig& cfg, MemoryRegion* mr, Stash* stash, uint32_t rq_depth,
                     Framer* framer, QpCounters* c)
    : cfg_(cfg),
      mr_(mr),
      framer_(framer),
      c_(c),
      ack_(framer, c),
      ooo_(cfg, mr, stash, &ack_, framer, c),
      cnp_(cfg, framer, c),
      rq_(std::max<uint32_t>(rq_depth, 1)) {}

void Responder::Start(uint32_t peer_start_psn) {
  ack_.Start(peer_start_psn);
  ooo_.Start(ack_.epsn());
}

bool Responder::PostRecv(uint8_t* buf, uint32_t len, uint64_t wr_id) {
  if (rq_tail_ - rq_head_ >= rq_.size()) return false;
  rq_[rq_tail_++ % rq_.size()] = Recv{buf, len, wr_id};
  return true;
}

uint32_t Responder::BuildControl(uint8_t* out, Ns now) {
  if (cnp_.owed()) return cnp_.Build(out, now);
  if (cfg_.ooo) {
    ooo_.OweContiguousAck();
    if (ack_.owed() && ack_.acking()) ooo_.OnAckSent(ack_.psn());
  }
  return ack_.Build(out);
}

void Responder::OnRequest(const uint8_t* bth, uint32_t len, uint16_t sport, bool ce, Ns now,
                          std::vector<QpEvent>* events) {
  const uint8_t op = bth[0];
  if (!IsSend(op) && !IsWrite(op)) {
    ++c_->drops;
    return;
  }
  const uint32_t pad = (bth[1] >> 4) & 3;
  if (len < kBth + pkt::ExtHeaderBytes(op) + pad) {
    ++c_->drops;
    return;
  }
  if (ce) cnp_.OnCe(now);
  if (cfg_.ooo && IsWrite(op)) return ooo_.OnWrite(bth, len, sport, ce, events);
  const uint64_t owed_before = ack_.acks_owed();
  OnInOrder(bth, len, events);
  // A SEND placed in order may close the gap before later WRITE packets.
  if (cfg_.ooo) ooo_.Drain();
  // The ACK this packet asked for echoes its entropy (REPS) and CE mark.
  if (ack_.acks_owed() != owed_before && ack_.acking()) ack_.Echo(sport, ce);
}

void Responder::OnInOrder(const uint8_t* bth, uint32_t len, std::vector<QpEvent>* events) {
  const auto h = pkt::Load<pkt::BthHdr>(bth);
  const uint8_t op = h.opcode;
  const uint32_t psn = h.psn24();
  const int32_t d = PsnDiff(psn, ack_.epsn());
  if (d > 0) {
    ++c_->out_of_sequence;
    if (!cfg_.ooo && !nak_sent_) {  // rxe: one NAK per gap, then silence
      nak_sent_ = true;
      ack_.OweNak(Syndrome::kNakPsnSequence);
    } else {
      ++c_->drops;
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
    ++c_->duplicates;
    if (h.ack_req()) ack_.OweAck(psn, framer_->base_sport(), false);
    return;
  }
  nak_sent_ = false;
  const bool first = IsFirst(op), last = IsLast(op), send = IsSend(op);
  if (first == in_msg_ || (in_msg_ && send != msg_is_send_)) {
    ++c_->drops;
    ack_.OweNak(Syndrome::kNakInvalidRequest);
    return;
  }
  const uint32_t ext = pkt::ExtHeaderBytes(op);
  const uint32_t pay = len - kBth - ext - h.pad_count();
  if (first) {
    if (send) {
      if (rq_head_ == rq_tail_) {
        ++c_->drops;
        ack_.OweNak(Syndrome::kRnr);
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
        ++c_->drops;
        ack_.OweNak(Syndrome::kNakRemoteAccess);
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
    ++c_->drops;
    in_msg_ = false;
    ack_.OweNak(Syndrome::kNakInvalidRequest);
    return;
  }
  if (pay) std::memcpy(place_, bth + kBth + ext, pay);
  place_ += pay;
  place_left_ -= pay;
  if (send) msg_len_ += pay;
  ++c_->rx_pkts;
  c_->rx_bytes += pay;
  ack_.Advance();
  if (last) {
    in_msg_ = false;
    ack_.EndMessage();
    if (send || pkt::HasImmDt(op)) {
      QpEvent e;
      e.kind = QpEventKind::kRecvDone;
      e.qpn = framer_->peer().local_qpn;
      e.wr_id = send ? recv_wr_id_ : 0;
      e.len = msg_len_;
      e.va = msg_va_;
      if (pkt::HasImmDt(op)) {
        e.has_imm = true;
        e.imm = pkt::Rd32(bth + kBth + ext - sizeof(pkt::ImmDtHdr));
      }
      events->push_back(e);
    }
    ++c_->deliveries;
  }
  if (h.ack_req()) ack_.OweAck(psn, framer_->base_sport(), false);
}

}  // namespace ofan::uroce
