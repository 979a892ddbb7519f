#include "dataplane/lb/names.h"

#include <fmt/format.h>

#include <charconv>

namespace ofan::lb {

std::string SwitchName(const FatTree& t, SwitchId s) {
  const SwitchInfo in = t.info(s);
  if (t.levels() == 2) return fmt::format("{}{}", in.role == Role::kEdge ? "l" : "s", in.index);
  switch (in.role) {
    case Role::kEdge:
      return fmt::format("e{}-{}", in.pod, in.index);
    case Role::kAgg:
      return fmt::format("a{}-{}", in.pod, in.index);
    case Role::kCore:
      return fmt::format("c{}", in.index);
  }
  return "?";
}

Result<SwitchId> ParseSwitchName(const FatTree& t, std::string_view name) {
  uint32_t id = 0;
  const char* end = name.data() + name.size();
  if (!name.empty()) {
    auto [p, ec] = std::from_chars(name.data(), end, id);
    if (ec == std::errc() && p == end) {
      if (id < static_cast<uint32_t>(t.num_switches())) return SwitchId(id);
      return MakeError(ErrorCode::kNotFound,
                       fmt::format("switch id {} is out of range: this {} has switches 0..{}", id,
                                   t.Describe(), t.num_switches() - 1));
    }
  }
  // Names are few (at most 5,120 switches at k = 64): compare with each.
  for (int i = 0; i < t.num_switches(); ++i) {
    const SwitchId s(static_cast<uint32_t>(i));
    if (SwitchName(t, s) == name) return s;
  }
  return MakeError(ErrorCode::kNotFound,
                   fmt::format("no switch '{}' in the {} (names look like {}, or give an id)", name,
                               t.Describe(), t.levels() == 3 ? "e0-0, a1-0, c3" : "l0, s1"));
}

MacBytes SwitchPortMac(SwitchId s, int port) {
  const uint32_t v = s.value();
  return {
      0x02, 0x00, static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v), static_cast<uint8_t>(port),
      0x01};
}

MacBytes HostMac(HostId h) {
  const uint32_t v = h.value();
  return {0x02, 0x01, static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v), 0x00, 0x02};
}

MacBytes PeerMac(const FatTree& t, SwitchId s, int port) {
  const Peer p = t.peer(s, port);
  return p.is_host ? HostMac(HostId(p.id)) : SwitchPortMac(SwitchId(p.id), p.port);
}

std::string FormatMac(const MacBytes& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4],
                     m[5]);
}

std::string PortIfName(int port) { return fmt::format("p{}", port); }

int PortOfIfName(std::string_view ifname) {
  if (ifname.size() < 2 || ifname.size() > 4 || ifname[0] != 'p') return -1;
  if (ifname[1] == '0' && ifname.size() > 2) return -1;  // one spelling per port
  int v = 0;
  const char* end = ifname.data() + ifname.size();
  auto [p, ec] = std::from_chars(ifname.data() + 1, end, v);
  if (ec != std::errc() || p != end) return -1;
  return v;
}

}  // namespace ofan::lb
