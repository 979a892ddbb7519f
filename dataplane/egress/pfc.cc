#include "dataplane/egress/pfc.h"

#include <cstring>

namespace ofan::dp {

std::optional<uint32_t> ReceivedPauseQuanta(std::span<const uint8_t> frame, uint8_t priority) {
  size_t off = sizeof(pkt::EtherHdr);
  if (frame.size() < off) return std::nullopt;
  if (pkt::Load<pkt::EtherHdr>(frame.data()).type.host() == pkt::ethertype::kVlan)
    off += sizeof(pkt::VlanTag);
  if (frame.size() < off + sizeof(pkt::PfcFrame)) return std::nullopt;
  const pkt::PfcFrame f = pkt::Load<pkt::PfcFrame>(frame.data() + off);
  if (f.opcode.host() == pkt::kPauseOpcode) {
    return f.class_enable.host();  // 802.3x: the first field is the pause time
  }
  if (!(f.class_enable.host() & (1u << priority))) return std::nullopt;
  return f.quanta[priority].host();
}

ReceivedPause ReadPause(std::span<const uint8_t> frame, uint8_t priority, bool strict) {
  size_t off = sizeof(pkt::EtherHdr);
  if (frame.size() < off) return {};
  if (pkt::Load<pkt::EtherHdr>(frame.data()).type.host() == pkt::ethertype::kVlan)
    off += sizeof(pkt::VlanTag);
  if (frame.size() < off + sizeof(pkt::PfcFrame)) return {};
  const pkt::PfcFrame f = pkt::Load<pkt::PfcFrame>(frame.data() + off);
  if (f.opcode.host() == pkt::kPauseOpcode) {  // 802.3x: every class
    return {PauseRx::kOurs, f.class_enable.host()};
  }
  if (f.opcode.host() != pkt::kPfcOpcode) return {};
  const uint16_t vec = f.class_enable.host();
  const uint16_t ours = static_cast<uint16_t>(1u << priority);
  if (strict && (vec == 0 || (vec & ~ours) != 0)) return {};
  if (!(vec & ours)) return {PauseRx::kNotOurs, 0};
  return {PauseRx::kOurs, f.quanta[priority].host()};
}

std::array<uint8_t, kPfcFrameBytes> BuildPfcFrame(const pkt::MacAddr& src, uint8_t priority,
                                                  uint16_t quanta) {
  std::array<uint8_t, kPfcFrameBytes> f{};
  const pkt::EtherHdr eth{pkt::kPfcDstMac, src, pkt::Be16::FromHost(pkt::ethertype::kMacControl)};
  pkt::PfcFrame pfc{};
  pfc.opcode = pkt::Be16::FromHost(pkt::kPfcOpcode);
  pfc.class_enable = pkt::Be16::FromHost(static_cast<uint16_t>(1u << priority));
  pfc.quanta[priority] = pkt::Be16::FromHost(quanta);
  std::memcpy(f.data(), &eth, sizeof(eth));
  std::memcpy(f.data() + sizeof(eth), &pfc, sizeof(pfc));
  return f;
}

PfcGenerator::Action PfcGenerator::Step(uint32_t port, uint64_t ingress_bytes) {
  if (port >= th_.size()) return Action::kNone;
  if (ingress_bytes > th_[port].xoff && !sent_xoff_[port]) {
    sent_xoff_[port] = true;
    return Action::kXoff;
  }
  if (ingress_bytes <= th_[port].xon && sent_xoff_[port]) {
    sent_xoff_[port] = false;
    return Action::kXon;
  }
  return Action::kNone;
}

}  // namespace ofan::dp
