#include "emu/uroce/neighbour.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "emu/uroce/packet_io.h"

namespace ofan::uroce {
namespace {

std::string IpText(uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

// The namespace's tables as the calling thread sees them (after setns).
std::string ReadProc(const char* name) {
  std::ifstream f(std::string("/proc/thread-self/net/") + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// /proc/net/route prints addresses as the raw network-order word in hex.
uint32_t RouteWord(const std::string& hex) {
  return ntohl(static_cast<uint32_t>(std::strtoul(hex.c_str(), nullptr, 16)));
}

}  // namespace

Result<pkt::MacAddr> ParseMac(std::string_view s) {
  pkt::MacAddr m;
  unsigned b[6];
  char tail;
  const std::string text(s);
  if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
                  &tail) != 6)
    return InvalidArgument("not a MAC address: " + text);
  for (int i = 0; i < 6; ++i) {
    if (b[i] > 0xFF) return InvalidArgument("not a MAC address: " + text);
    m.b[i] = static_cast<uint8_t>(b[i]);
  }
  return m;
}

std::string MacText(const pkt::MacAddr& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m.b[0], m.b[1], m.b[2], m.b[3],
                     m.b[4], m.b[5]);
}

Result<pkt::MacAddr> NextHopMac(const std::string& netns, const std::string& ifname, uint32_t dst) {
  std::string routes, neigh;
  Status s = InNetns(netns, [&]() -> Status {
    routes = ReadProc("route");
    neigh = ReadProc("arp");
    return {};
  });
  if (!s.ok()) return s.error();
  // Longest prefix through ifname: Iface Destination Gateway Flags RefCnt
  // Use Metric Mask ...
  uint32_t hop = 0;
  int best = -1;
  std::istringstream rs(routes);
  std::string line;
  std::getline(rs, line);  // header
  while (std::getline(rs, line)) {
    std::istringstream ls(line);
    std::string ifc, d, g, flags, refcnt, use, metric, mask;
    if (!(ls >> ifc >> d >> g >> flags >> refcnt >> use >> metric >> mask) || ifc != ifname)
      continue;
    const uint32_t net = RouteWord(d), gw = RouteWord(g), m = RouteWord(mask);
    const int len = __builtin_popcount(m);
    if ((dst & m) == net && len > best) {
      best = len;
      hop = gw ? gw : dst;
    }
  }
  const std::string where = netns.empty() ? "this namespace" : "netns '" + netns + "'";
  if (best < 0) {
    return MakeError(ErrorCode::kNotFound,
                     fmt::format("no route to {} through {} in {}", IpText(dst), ifname, where));
  }
  // IP address, HW type, Flags, HW address, Mask, Device; flags 0x2: complete.
  std::istringstream ns(neigh);
  std::getline(ns, line);
  while (std::getline(ns, line)) {
    std::istringstream ls(line);
    std::string ip, type, flags, mac, mask, dev;
    if (!(ls >> ip >> type >> flags >> mac >> mask >> dev) || dev != ifname) continue;
    in_addr a{};
    if (inet_pton(AF_INET, ip.c_str(), &a) != 1 || ntohl(a.s_addr) != hop) continue;
    if (!(std::strtoul(flags.c_str(), nullptr, 16) & 0x2)) break;  // incomplete: no MAC yet
    return ParseMac(mac);
  }
  return MakeError(ErrorCode::kNotFound,
                   fmt::format("no complete neighbour entry for {} on {} in {}: add one (ip neigh "
                               "replace {} lladdr MAC dev {}) or give --next-hop-mac",
                               IpText(hop), ifname, where, IpText(hop), ifname));
}

}  // namespace ofan::uroce
