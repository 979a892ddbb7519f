#include "dataplane/packet/pfc_frame.h"

#include <cstring>

namespace ofan::pkt {

std::optional<uint32_t> ReceivedPauseQuanta(std::span<const uint8_t> frame, uint8_t priority) {
  size_t off = sizeof(EtherHdr);
  if (frame.size() < off) return std::nullopt;
  if (Load<EtherHdr>(frame.data()).type.host() == ethertype::kVlan) off += sizeof(VlanTag);
  if (frame.size() < off + sizeof(PfcFrame)) return std::nullopt;
  const PfcFrame f = Load<PfcFrame>(frame.data() + off);
  if (f.opcode.host() == kPauseOpcode) {
    return f.class_enable.host();  // 802.3x: the first field is the pause time
  }
  if (!(f.class_enable.host() & (1u << priority))) return std::nullopt;
  return f.quanta[priority].host();
}

ReceivedPause ReadPause(std::span<const uint8_t> frame, uint8_t priority, bool strict) {
  size_t off = sizeof(EtherHdr);
  if (frame.size() < off) return {};
  if (Load<EtherHdr>(frame.data()).type.host() == ethertype::kVlan) off += sizeof(VlanTag);
  if (frame.size() < off + sizeof(PfcFrame)) return {};
  const PfcFrame f = Load<PfcFrame>(frame.data() + off);
  if (f.opcode.host() == kPauseOpcode) {  // 802.3x: every class
    return {PauseRx::kOurs, f.class_enable.host()};
  }
  if (f.opcode.host() != kPfcOpcode) return {};
  const uint16_t vec = f.class_enable.host();
  const uint16_t ours = static_cast<uint16_t>(1u << priority);
  if (strict && (vec == 0 || (vec & ~ours) != 0)) return {};
  if (!(vec & ours)) return {PauseRx::kNotOurs, 0};
  return {PauseRx::kOurs, f.quanta[priority].host()};
}

std::array<uint8_t, kPfcFrameBytes> BuildPfcFrame(const MacAddr& src, uint8_t priority,
                                                  uint16_t quanta) {
  std::array<uint8_t, kPfcFrameBytes> f{};
  const EtherHdr eth{kPfcDstMac, src, Be16::FromHost(ethertype::kMacControl)};
  PfcFrame pfc{};
  pfc.opcode = Be16::FromHost(kPfcOpcode);
  pfc.class_enable = Be16::FromHost(static_cast<uint16_t>(1u << priority));
  pfc.quanta[priority] = Be16::FromHost(quanta);
  std::memcpy(f.data(), &eth, sizeof(eth));
  std::memcpy(f.data() + sizeof(eth), &pfc, sizeof(pfc));
  return f;
}

}  // namespace ofan::pkt
