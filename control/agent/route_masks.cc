#include "control/agent/route_masks.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "control/agent/fabric_roles.h"
#include "control/agent/json_input.h"

namespace ofan::agent {
namespace {

using nlohmann::json;

constexpr std::string_view kWhat = "ip -j route show";

Error Bad(size_t index, std::string_view problem) {
  return InvalidArgument(fmt::format("{}: route #{}: {}", kWhat, index, problem));
}

uint32_t MaskOfLen(int len) { return len == 0 ? 0 : ~uint32_t{0} << (32 - len); }

// "a.b.c.d" or "a.b.c.d/len"; "default" is 0.0.0.0/0.
bool ParsePrefix(std::string_view s, uint32_t& addr, int& len) {
  if (s == "default") {
    addr = 0;
    len = 0;
    return true;
  }
  len = 32;
  if (const size_t slash = s.find('/'); slash != std::string_view::npos) {
    const std::string_view l = s.substr(slash + 1);
    auto [p, ec] = std::from_chars(l.data(), l.data() + l.size(), len);
    if (ec != std::errc() || p != l.data() + l.size() || l.empty() || len < 0 || len > 32) {
      return false;
    }
    s = s.substr(0, slash);
  }
  addr = 0;
  const char* cur = s.data();
  const char* end = s.data() + s.size();
  for (int i = 0; i < 4; ++i) {
    if (i > 0) {
      if (cur == end || *cur != '.') return false;
      ++cur;
    }
    unsigned octet = 0;
    auto [p, ec] = std::from_chars(cur, end, octet);
    if (ec != std::errc() || p == cur || p - cur > 3 || octet > 255) return false;
    addr = (addr << 8) | octet;
    cur = p;
  }
  return cur == end;
}

Result<std::string> DevOf(const json& o, size_t index) {
  if (!o.contains("dev")) return std::string();
  if (!o["dev"].is_string() || o["dev"].get_ref<const std::string&>().empty()) {
    return Bad(index, fmt::format("'dev' is not an interface name: {}", JsonSnippet(o["dev"])));
  }
  return o["dev"].get<std::string>();
}

Result<KernelRoute> ParseRoute(const json& r, size_t index) {
  if (!r.is_object()) return Bad(index, "not an object");
  if (!r.contains("dst") || !r["dst"].is_string()) return Bad(index, "no string 'dst'");
  KernelRoute k;
  const std::string& dst = r["dst"].get_ref<const std::string&>();
  if (!ParsePrefix(dst, k.prefix, k.prefix_len)) {
    return Bad(index, fmt::format("dst '{}' is not an IPv4 prefix", dst));
  }
  if ((k.prefix & ~MaskOfLen(k.prefix_len)) != 0) {
    return Bad(index, fmt::format("dst '{}' has host bits set", dst));
  }
  if (r.contains("type")) {
    if (!r["type"].is_string()) return Bad(index, "'type' is not a string");
    k.unicast = r["type"].get_ref<const std::string&>() == "unicast";
  }
  if (r.contains("protocol")) {
    if (!r["protocol"].is_string()) return Bad(index, "'protocol' is not a string");
    k.protocol = r["protocol"].get<std::string>();
  }
  auto dev = DevOf(r, index);
  if (!dev) return dev.error();
  if (!dev->empty()) k.devs.push_back(*dev);
  if (r.contains("nexthops")) {
    const json& nh = r["nexthops"];
    if (!nh.is_array()) return Bad(index, "'nexthops' is not a list");
    for (const json& h : nh) {
      if (!h.is_object()) return Bad(index, "a next hop is not an object");
      auto d = DevOf(h, index);
      if (!d) return d.error();
      if (!d->empty()) k.devs.push_back(*d);
    }
  }
  return k;
}

}  // namespace

Result<std::vector<KernelRoute>> ParseIpRouteJson(std::string_view text) {
  auto doc = ParseJsonText(text, kWhat);
  if (!doc) return doc.error();
  if (!doc->is_array()) {
    return InvalidArgument(fmt::format("{}: not a list of routes: {}", kWhat, JsonSnippet(*doc)));
  }
  std::vector<KernelRoute> out;
  for (size_t i = 0; i < doc->size(); ++i) {
    const json& r = (*doc)[i];
    if (r.is_object() && r.contains("table") && r["table"] != "main") continue;
    auto k = ParseRoute(r, i);
    if (!k) return k.error();
    out.push_back(std::move(*k));
  }
  return out;
}

const KernelRoute* CoveringRoute(const std::vector<KernelRoute>& routes, uint32_t addr, int len) {
  const KernelRoute* best = nullptr;
  for (const KernelRoute& r : routes) {
    if (r.prefix_len > len || ((addr ^ r.prefix) & MaskOfLen(r.prefix_len)) != 0) continue;
    if (best == nullptr || r.prefix_len > best->prefix_len) best = &r;
  }
  return best;
}

const KernelRoute* KeyRoute(const lb::FatTree& t, lb::SwitchId self, int d,
                            const std::vector<KernelRoute>& routes) {
  const lb::SwitchInfo in = t.info(self);
  const bool edge = in.role == lb::Role::kEdge;
  if (d < 0 || d >= t.num_dests(self)) return nullptr;
  if (d == (edge ? static_cast<int>(self.value()) : in.pod)) return nullptr;  // below: no key
  return edge ? CoveringRoute(routes, t.edge_prefix(d), lb::FatTree::kEdgePrefixLen)
              : CoveringRoute(routes, t.switch_addr(t.agg(d, in.index)), 32);
}

std::string PrefixText(const KernelRoute& r) {
  return fmt::format("{}.{}.{}.{}/{}", r.prefix >> 24, (r.prefix >> 16) & 0xFF,
                     (r.prefix >> 8) & 0xFF, r.prefix & 0xFF, r.prefix_len);
}

std::vector<lb::PortMask> ComputeMasks(const lb::FatTree& t, lb::SwitchId self,
                                       const std::vector<KernelRoute>& routes,
                                       lb::PortMask usable_uplinks) {
  const int nd = t.num_dests(self);
  std::vector<lb::PortMask> masks(static_cast<size_t>(nd), 0);
  const int first = t.first_uplink_port(self);
  for (int d = 0; d < nd; ++d) {
    const KernelRoute* r = KeyRoute(t, self, d, routes);
    if (r == nullptr || !r->unicast) continue;
    lb::PortMask m = 0;
    for (const std::string& dev : r->devs) {
      const int port = PortOfIfName(dev);
      if (port >= 0 && port < t.num_ports(self) && t.is_uplink_port(self, port)) {
        m |= lb::PortMask{1} << (port - first);
      }
    }
    masks[static_cast<size_t>(d)] = m & usable_uplinks;
  }
  return masks;
}

}  // namespace ofan::agent
