#include "control/agent/fabric_roles.h"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "dataplane/lb/names.h"

namespace ofan::agent {
namespace {

using lb::FatTree;
using lb::SwitchId;

// The switch a chassis name names, only in SwitchName's own spelling (not
// ParseSwitchName's decimal ids: a chassis called "3" is no switch of ours).
std::optional<SwitchId> SwitchOfChassis(const FatTree& t, std::string_view name) {
  auto s = lb::ParseSwitchName(t, name);
  if (!s || lb::SwitchName(t, *s) != name) return std::nullopt;
  return *s;
}

std::string HostName(uint32_t id) { return fmt::format("h{}", id); }

std::string PeerName(const FatTree& t, const lb::Peer& p) {
  if (p.is_host) return HostName(p.id);
  return fmt::format("{} {}", lb::SwitchName(t, SwitchId(p.id)), PortIfName(p.port));
}

std::string Describe(const FatTree& t, SwitchId s) {
  const lb::SwitchInfo in = t.info(s);
  if (in.role == lb::Role::kCore) return fmt::format("core {}", in.index);
  return fmt::format("{} {} of pod {}", lb::RoleName(in.role), in.index, in.pod);
}

// What a switch seen where `want` belongs contradicts, coarsest first.
Miswire Contradiction(const FatTree& t, SwitchId want, int want_port, SwitchId got, int got_port) {
  const lb::SwitchInfo a = t.info(want), b = t.info(got);
  if (a.role != b.role) return Miswire::kLevel;
  if (a.pod != b.pod) return Miswire::kPod;
  if (a.index != b.index || want_port != got_port) return Miswire::kPosition;
  return Miswire::kNone;
}

void Judge(const FatTree& t, PortReport& r) {
  if (r.seen.empty()) {
    r.status = PortStatus::kNoNeighbor;
    r.usable = r.expected.is_host;
    r.detail = r.expected.is_host ? fmt::format("host port (expects {}); no LLDP", r.expected_name)
                                  : fmt::format(
                                        "no LLDP neighbour (expects {}): down or not yet "
                                        "heard; not used",
                                        r.expected_name);
    return;
  }
  if (r.seen.size() > 1) {
    r.status = PortStatus::kMiswired;
    r.miswire = Miswire::kPosition;
    r.detail = fmt::format("{} LLDP neighbours on one port (expects {} alone): a shared segment",
                           r.seen.size(), r.expected_name);
    return;
  }
  const LldpNeighbor& n = r.seen[0];
  const auto got = SwitchOfChassis(t, n.chassis_name);
  const int got_port = PortOfIfName(n.port_id);
  const std::string got_name = fmt::format("'{}' port '{}'", n.chassis_name, n.port_id);
  if (r.expected.is_host) {
    if (n.chassis_name == r.expected_name) {
      r.status = PortStatus::kOk;
      r.usable = true;
      r.detail = fmt::format("host {} confirmed by LLDP", r.expected_name);
    } else if (got) {
      r.status = PortStatus::kMiswired;
      r.miswire = Miswire::kLevel;
      r.detail = fmt::format("expects host {}, LLDP shows switch {}: wrong level", r.expected_name,
                             got_name);
    } else {
      r.status = PortStatus::kUnknownChassis;
      r.detail = fmt::format("expects host {}, LLDP shows {}: not this fabric's; not used",
                             r.expected_name, got_name);
    }
    return;
  }
  if (!got) {
    r.status = PortStatus::kUnknownChassis;
    r.detail = fmt::format("expects {}, LLDP shows {}: no switch of this {}; not used",
                           r.expected_name, got_name, t.Describe());
    return;
  }
  const SwitchId want(r.expected.id);
  const Miswire m =
      got_port < 0 ? Miswire::kPosition : Contradiction(t, want, r.expected.port, *got, got_port);
  if (m == Miswire::kNone) {
    r.status = PortStatus::kOk;
    r.usable = true;
    r.detail = fmt::format("{} confirmed by LLDP", r.expected_name);
    return;
  }
  r.status = PortStatus::kMiswired;
  r.miswire = m;
  r.detail =
      fmt::format("expects {} ({}), LLDP shows {} ({}): wrong {}; never used", r.expected_name,
                  Describe(t, want), got_name, Describe(t, *got), MiswireName(m));
}

}  // namespace

std::string_view PortStatusName(PortStatus s) {
  switch (s) {
    case PortStatus::kOk:
      return "ok";
    case PortStatus::kNoNeighbor:
      return "no-neighbor";
    case PortStatus::kMiswired:
      return "miswired";
    case PortStatus::kUnknownChassis:
      return "unknown-chassis";
  }
  return "?";
}

std::string_view MiswireName(Miswire m) {
  switch (m) {
    case Miswire::kNone:
      return "none";
    case Miswire::kLevel:
      return "level";
    case Miswire::kPod:
      return "pod";
    case Miswire::kPosition:
      return "position";
  }
  return "?";
}

FabricRoles ClassifyPorts(const FatTree& tree, SwitchId self,
                          const std::vector<LldpNeighbor>& neighbors) {
  FabricRoles out;
  const int nports = tree.num_ports(self);
  for (int p = 0; p < nports; ++p) {
    PortReport r;
    r.port = p;
    r.expected = tree.peer(self, p);
    r.expected_name = PeerName(tree, r.expected);
    out.ports.push_back(std::move(r));
  }
  std::map<uint32_t, int> votes;  // implied own id -> neighbours implying it
  for (const LldpNeighbor& n : neighbors) {
    const int p = PortOfIfName(n.local_port);
    if (p < 0 || p >= nports) {
      out.ignored.push_back(n);
      continue;
    }
    out.ports[static_cast<size_t>(p)].seen.push_back(n);
    const auto s = SwitchOfChassis(tree, n.chassis_name);
    const int q = PortOfIfName(n.port_id);
    if (!s || q < 0 || q >= tree.num_ports(*s)) continue;
    const lb::Peer implied = tree.peer(*s, q);
    if (implied.is_host) continue;
    ++out.identity.voters;
    ++votes[implied.id];
  }
  for (PortReport& r : out.ports) {
    Judge(tree, r);
    if (!r.expected.is_host &&
        (r.status == PortStatus::kOk || r.status == PortStatus::kNoNeighbor)) {
      out.peer_ports.push_back(r.port);
    }
    if (!r.usable) continue;
    out.usable_ports |= uint64_t{1} << r.port;
    if (!r.expected.is_host) out.usable_fabric_ports.push_back(r.port);
    if (tree.is_uplink_port(self, r.port)) {
      out.usable_uplinks |= lb::PortMask{1} << (r.port - tree.first_uplink_port(self));
    }
  }
  IdentityReport& id = out.identity;
  for (const auto& [v, n] : votes) {
    // A tie with the configured identity is no contradiction.
    if (n > id.votes || (n == id.votes && SwitchId(v) == self)) {
      id.votes = n;
      id.id = SwitchId(v);
      id.inferred = true;
    }
  }
  const std::string self_name = lb::SwitchName(tree, self);
  if (!id.inferred) {
    id.detail =
        fmt::format("no fabric switch among the LLDP neighbours: {} unconfirmed", self_name);
  } else if (id.id != self) {
    id.contradicts = true;
    id.detail = fmt::format("configured as {} ({}), but {} of {} neighbours place it as {} ({})",
                            self_name, Describe(tree, self), id.votes, id.voters,
                            lb::SwitchName(tree, id.id), Describe(tree, id.id));
  } else {
    id.detail = fmt::format("{} ({}) confirmed by {} of {} neighbours", self_name,
                            Describe(tree, self), id.votes, id.voters);
  }
  return out;
}

}  // namespace ofan::agent
