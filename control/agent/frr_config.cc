#include "control/agent/frr_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "control/agent/fabric_roles.h"
#include "dataplane/lb/names.h"

namespace ofan::agent {
namespace {

using lb::FatTree;
using lb::SwitchId;

// FRR 8.4's ranges for bfd profile timers and detect-multiplier.
constexpr uint32_t kBfdMinMs = 10, kBfdMaxMs = 60000, kBfdMinMult = 2, kBfdMaxMult = 255;

// A profile or peer-group name FRR takes as one word.
bool IsWord(const std::string& s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  });
}

std::string Role(const FatTree& t, SwitchId s) {
  const lb::SwitchInfo in = t.info(s);
  if (t.levels() == 2)
    return fmt::format("{} {}", in.role == lb::Role::kEdge ? "leaf" : "spine", in.index);
  if (in.role == lb::Role::kCore) return fmt::format("core {}", in.index);
  return fmt::format("{} {} of pod {}", lb::RoleName(in.role), in.index, in.pod);
}

}  // namespace

uint32_t FabricAsn(const FatTree& t, SwitchId s) {
  const lb::SwitchInfo in = t.info(s);
  switch (in.role) {
    case lb::Role::kEdge:
      return kAsnBase + kAsnEdgeOffset + s.value();
    case lb::Role::kAgg:
      return t.levels() == 2 ? kAsnBase : kAsnBase + 1 + static_cast<uint32_t>(in.pod);
    case lb::Role::kCore:
      break;
  }
  return kAsnBase;
}

std::vector<int> AllFabricPorts(const FatTree& t, SwitchId s) {
  std::vector<int> ports;
  for (int p = 0; p < t.num_ports(s); ++p) {
    if (!t.peer(s, p).is_host) ports.push_back(p);
  }
  return ports;
}

std::vector<std::string> AnnouncedPrefixes(const FatTree& t, SwitchId s) {
  std::vector<std::string> out;
  if (t.role(s) == lb::Role::kEdge) {
    out.push_back(fmt::format("{}/{}",
                              FatTree::FormatAddr(t.edge_prefix(static_cast<int>(s.value()))),
                              FatTree::kEdgePrefixLen));
  }
  out.push_back(fmt::format("{}/32", FatTree::FormatAddr(t.switch_addr(s))));
  return out;
}

Result<std::string> RenderFrrConfig(const FatTree& t, SwitchId self,
                                    const std::vector<int>& fabric_ports, const FrrOptions& o) {
  if (self.value() >= static_cast<uint32_t>(t.num_switches())) {
    return InvalidArgument(fmt::format("no switch {} in the {}", self.value(), t.Describe()));
  }
  const std::string name = lb::SwitchName(t, self);
  const std::vector<int> plan = AllFabricPorts(t, self);
  for (size_t i = 0; i < fabric_ports.size(); ++i) {
    const int p = fabric_ports[i];
    if (std::find(plan.begin(), plan.end(), p) == plan.end()) {
      return InvalidArgument(
          fmt::format("port {} of {} does not face a switch: no BGP session there", p, name));
    }
    if (i > 0 && fabric_ports[i - 1] >= p) {
      return InvalidArgument(fmt::format("fabric ports of {} must be listed once, in order", name));
    }
  }
  if (o.bfd.interval_ms < kBfdMinMs || o.bfd.interval_ms > kBfdMaxMs) {
    return InvalidArgument(fmt::format("BFD interval {} ms is outside FRR's {}..{} ms",
                                       o.bfd.interval_ms, kBfdMinMs, kBfdMaxMs));
  }
  if (o.bfd.multiplier < kBfdMinMult || o.bfd.multiplier > kBfdMaxMult) {
    return InvalidArgument(fmt::format("BFD multiplier {} is outside FRR's {}..{}",
                                       o.bfd.multiplier, kBfdMinMult, kBfdMaxMult));
  }
  if (!IsWord(o.bfd_profile) || !IsWord(o.peer_group)) {
    return InvalidArgument(
        "the BFD profile and the peer group are names of letters, digits, - and _");
  }

  std::string c;
  auto out = std::back_inserter(c);
  fmt::format_to(out, "! {}: {} of the {}\n", name, Role(t, self), t.Describe());
  fmt::format_to(out, "! written by ofan-agent (control/agent/frr_config.h)\n");
  fmt::format_to(out, "frr defaults datacenter\nhostname {}\nservice integrated-vtysh-config\n!\n",
                 name);
  fmt::format_to(out, "no zebra nexthop kernel enable\n!\n");
  for (int p : fabric_ports) {
    // BGP unnumbered learns the peer's link-local address from its RAs.
    fmt::format_to(out, "interface {}\n no ipv6 nd suppress-ra\nexit\n!\n", PortIfName(p));
  }
  // Each block before what uses it, because `vtysh -f` applies the lines one
  // by one to running daemons (frr_apply.h): the BFD profile before the
  // sessions that name it, and the prefixes before the neighbours, so that no
  // session comes up and sends End-of-RIB without them — a graceful-restart
  // helper would then sweep the restarted switch's routes (frr_config.h).
  fmt::format_to(out, "bfd\n profile {}\n  detect-multiplier {}\n", o.bfd_profile,
                 o.bfd.multiplier);
  fmt::format_to(out, "  receive-interval {0}\n  transmit-interval {0}\n exit\n !\nexit\n!\n",
                 o.bfd.interval_ms);
  fmt::format_to(out, "router bgp {}\n", FabricAsn(t, self));
  fmt::format_to(out, " bgp router-id {}\n", FatTree::FormatAddr(t.switch_addr(self)));
  fmt::format_to(out, " no bgp ebgp-requires-policy\n no bgp network import-check\n");
  fmt::format_to(out, " bgp bestpath as-path multipath-relax\n");
  fmt::format_to(out, " bgp graceful-restart\n bgp graceful-restart preserve-fw-state\n");
  fmt::format_to(out, " address-family ipv4 unicast\n");
  for (const std::string& prefix : AnnouncedPrefixes(t, self)) {
    fmt::format_to(out, "  network {}\n", prefix);
  }
  fmt::format_to(out, "  maximum-paths {}\n exit-address-family\n !\n", t.w());
  const std::string& g = o.peer_group;
  fmt::format_to(out, " neighbor {0} peer-group\n neighbor {0} remote-as external\n", g);
  if (o.session_bfd) fmt::format_to(out, " neighbor {} bfd profile {}\n", g, o.bfd_profile);
  for (int p : fabric_ports) {
    fmt::format_to(out, " neighbor {} interface peer-group {}\n", PortIfName(p), g);
  }
  fmt::format_to(out, "exit\n!\n");
  return c;
}

}  // namespace ofan::agent
