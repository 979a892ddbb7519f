#include "emu/uroce/qp.h"

#include <algorithm>

namespace ofan::uroce {

Qp::Qp(const EngineConfig& cfg, MemoryRegion* mr, Stash* stash, uint32_t sq_depth,
       uint32_t rq_depth)
    : cfg_(cfg),
      framer_(cfg_),
      entropy_(cfg_),
      rate_(cfg_, &c_),
      sq_(sq_depth),
      req_(cfg_, &sq_, &framer_, &entropy_, &rate_, &c_),
      comp_(cfg_, &sq_, &req_, &entropy_, &framer_, &c_),
      resp_(cfg_, mr, stash, rq_depth, &framer_, &c_) {
  cfg_.mtu = std::clamp<uint32_t>(cfg_.mtu, 256, kMaxMtu);
  cfg_.ack_every = std::max<uint32_t>(cfg_.ack_every, 1);
  // The responder's ooo mode places at most kOooWindow PSNs ahead.
  cfg_.max_inflight_pkts = std::clamp<uint32_t>(cfg_.max_inflight_pkts, 1, kOooWindow);
}

void Qp::Connect(const QpPeer& peer) {
  framer_.Connect(peer);
  if (peer.mtu) cfg_.mtu = std::clamp<uint32_t>(peer.mtu, 256, kMaxMtu);
  entropy_.Connect(peer, framer_.base_sport());
  sq_.Start(peer.start_psn);
  resp_.Start(peer.peer_start_psn);
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
  switch (bth[0]) {
    case pkt::bth_opcode::kRcAck:
      if (const char* why = comp_.OnAck(bth, len, sport, now, events)) Fail(why, events);
      return;
    case pkt::bth_opcode::kCnp:
      rate_.OnCnp(now);
      return;
    default:
      resp_.OnRequest(bth, len, sport, ce, now, events);
      return;
  }
}

}  // namespace ofan::uroce
