#include "control/agent/agent_cycle.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "control/agent/frr_apply.h"
#include "control/agent/frr_state.h"
#include "control/agent/lldp_neighbors.h"
#include "control/agent/route_masks.h"
#include "dataplane/lb/names.h"

namespace ofan::agent {

using nlohmann::json;

namespace {

json PortJson(const PortReport& p) {
  json seen = json::array();
  for (const LldpNeighbor& n : p.seen) {
    seen.push_back({{"chassis", n.chassis_name}, {"port", n.port_id}});
  }
  return {{"port", p.port},
          {"ifname", PortIfName(p.port)},
          {"expected", p.expected_name},
          {"faces", p.expected.is_host ? "host" : "switch"},
          {"neighbors", seen},
          {"status", PortStatusName(p.status)},
          {"miswire", MiswireName(p.miswire)},
          {"usable", p.usable},
          {"detail", p.detail}};
}

json MasksJson(const std::vector<lb::PortMask>& m) {
  json a = json::array();
  for (lb::PortMask v : m) a.push_back(v);
  return a;
}

}  // namespace

Result<Agent> Agent::Make(AgentOptions options, CommandRunner& runner, DpLink& dp) {
  auto tree = lb::FatTree::Make(options.k, options.levels);
  if (!tree) return tree.error();
  if (options.switch_id >= static_cast<uint32_t>(tree->num_switches())) {
    return InvalidArgument(fmt::format("switch {} does not exist: the fabric k={} levels={} has {}",
                                       options.switch_id, options.k, options.levels,
                                       tree->num_switches()));
  }
  if (options.settle_cycles < 1) {
    return InvalidArgument("settle cycles must be at least 1");
  }
  if (options.name.empty()) options.name = lb::SwitchName(*tree, lb::SwitchId(options.switch_id));
  return Agent(std::move(options), *tree, runner, dp);
}

Result<std::string> Agent::RunOk(const std::vector<std::string>& argv) {
  auto r = runner_->Run(argv);
  if (!r) return r.error();
  if (r->exit_code != 0) {
    std::string err = r->err.empty() ? r->out : r->err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    if (err.size() > 200) err = err.substr(0, 200) + "...";
    return MakeError(ErrorCode::kIo, fmt::format("{}: exit {}{}{}", FormatArgv(argv), r->exit_code,
                                                 err.empty() ? "" : ": ", err));
  }
  return std::move(r->out);
}

std::vector<long> Agent::FrrPids() const {
  const std::string dir =
      !o_.frr_run_dir.empty()
          ? o_.frr_run_dir
          : (o_.vtysh_pathspace.empty() ? "/run/frr" : "/run/frr/" + o_.vtysh_pathspace);
  std::vector<long> pids;
  for (const char* d : {"zebra", "bgpd", "bfdd"}) {
    std::ifstream in(dir + "/" + d + ".pid");
    long pid = 0;
    if (!(in >> pid) || pid <= 0) pid = 0;
    pids.push_back(pid);
  }
  return pids;
}

void Agent::ApplyFrr(const FabricRoles& roles, json& status, json& errors) {
  const lb::SwitchId self(o_.switch_id);
  json frr{{"dir", o_.frr_dir}, {"ports", roles.peer_ports}};
  if (o_.frr_dir.empty()) {
    frr["action"] = "unmanaged";
    status["frr"] = frr;
    return;
  }
  // A daemon that came back (a new pid) starts empty: give it all again.
  // One that is down (no pidfile) is waited for.
  const std::vector<long> pids = FrrPids();
  const bool restarted =
      applied_ && pids != applied_pids_ && std::find(pids.begin(), pids.end(), 0) == pids.end();
  if (restarted) {
    frr["restarted"] = true;
    applied_.reset();  // nothing to remove first: the new daemon has nothing
  }
  if (applied_ && *applied_ == roles.peer_ports) {
    frr["action"] = "unchanged";
    status["frr"] = frr;
    return;
  }
  const auto fail = [&](const std::string& m) {
    frr["action"] = "failed";
    frr["error"] = m;
    errors.push_back("frr: " + m);
    status["frr"] = frr;
  };
  auto text = RenderFrrConfig(tree_, self, roles.peer_ports, o_.frr);
  if (!text) return fail(text.error().message);
  std::string file = o_.frr_dir + "/" + kFrrConfName;
  if (Status s = WriteFileAtomically(file, *text); !s) return fail(s.error().message);
  // A bgpd that restarted gets its sessions without BFD first, and BFD once
  // they are up (AddPendingBfd): see FrrOptions::session_bfd.
  bfd_pending_ = restarted && o_.frr.session_bfd;
  if (bfd_pending_) {
    FrrOptions first = o_.frr;
    first.session_bfd = false;
    auto t = RenderFrrConfig(tree_, self, roles.peer_ports, first);
    if (!t) return fail(t.error().message);
    file = o_.frr_dir + "/" + kFrrRestartConfName;
    if (Status s = WriteFileAtomically(file, *t); !s) return fail(s.error().message);
    frr["bfd"] = "once the sessions are up";
  }
  // The ports FRR had and must lose first: `vtysh -f` only adds.
  std::vector<int> removed;
  if (applied_) {
    std::set_difference(applied_->begin(), applied_->end(), roles.peer_ports.begin(),
                        roles.peer_ports.end(), std::back_inserter(removed));
  }
  if (!removed.empty()) {
    auto r = RunOk(RemoveNeighborsArgv(o_.vtysh_pathspace, FabricAsn(tree_, self), removed));
    if (!r) return fail(r.error().message);
  }
  if (auto r = RunOk(ApplyArgv(o_.vtysh_pathspace, file)); !r) return fail(r.error().message);
  applied_ = roles.peer_ports;
  applied_pids_ = pids;
  frr["action"] = "applied";
  frr["removed"] = removed;
  status["frr"] = frr;
}

void Agent::AddPendingBfd(json& status, json& errors) {
  // frr.conf is the whole config: applied again, it adds BFD to the
  // sessions, which are up (vtysh -f only adds).
  const std::string file = o_.frr_dir + "/" + kFrrConfName;
  if (auto r = RunOk(ApplyArgv(o_.vtysh_pathspace, file)); !r) {
    errors.push_back("frr: adding BFD: " + r.error().message);
    return;
  }
  bfd_pending_ = false;
  status["frr"]["bfd"] = "added";
}

void Agent::ReadLldp(json& status, json& errors) {
  std::vector<std::string> lldp{"lldpcli"};
  if (!o_.lldpcli_socket.empty()) {
    lldp.emplace_back("-u");
    lldp.push_back(o_.lldpcli_socket);
  }
  for (const char* w : {"-f", "json0", "show", "neighbors"}) lldp.emplace_back(w);
  bool lldp_fresh = false;
  if (auto out = RunOk(lldp); !out) {
    errors.push_back("lldp: " + out.error().message);
  } else if (auto n = ParseLldpNeighbors(*out); !n) {
    errors.push_back("lldp: " + n.error().message);
  } else {
    roles_ = ClassifyPorts(tree_, lb::SwitchId(o_.switch_id), *n);
    lldp_fresh = true;
  }
  status["lldp"] = lldp_fresh ? "fresh" : (roles_ ? "stale" : "none");
  json ports = json::array(), miswires = json::array(), usable = json::array();
  if (roles_) {
    for (const PortReport& p : roles_->ports) {
      ports.push_back(PortJson(p));
      if (p.usable) usable.push_back(p.port);
      if (p.status == PortStatus::kMiswired || p.status == PortStatus::kUnknownChassis) {
        miswires.push_back({{"port", p.port},
                            {"status", PortStatusName(p.status)},
                            {"contradicts", MiswireName(p.miswire)},
                            {"detail", p.detail}});
      }
    }
    status["identity"] = {
        {"inferred", roles_->identity.inferred},
        {"switch", roles_->identity.inferred ? lb::SwitchName(tree_, roles_->identity.id) : ""},
        {"votes", roles_->identity.votes},
        {"voters", roles_->identity.voters},
        {"contradicts", roles_->identity.contradicts},
        {"detail", roles_->identity.detail}};
  }
  status["ports"] = ports;
  status["usable_ports"] = usable;
  status["usable_fabric_ports"] = roles_ ? json(roles_->usable_fabric_ports) : json::array();
  status["peer_ports"] = roles_ ? json(roles_->peer_ports) : json::array();
  status["miswires"] = miswires;
}

Agent::RouteRead Agent::ReadRoutes(json& status, json& errors) {
  RouteRead read;
  const lb::SwitchId self(o_.switch_id);
  if (auto out = RunOk({"ip", "-4", "-j", "route", "show"}); !out) {
    errors.push_back("routes: " + out.error().message);
  } else if (auto rs = ParseIpRouteJson(*out); !rs) {
    errors.push_back("routes: " + rs.error().message);
  } else if (roles_) {
    read.masks = ComputeMasks(tree_, self, *rs, roles_->usable_uplinks);
    // What each key's mask came from, for the operator (ofanctl agent).
    json routes = json::array();
    for (int d = 0; d < tree_.num_dests(self); ++d) {
      const KernelRoute* r = KeyRoute(tree_, self, d, *rs);
      if (r == nullptr) continue;
      routes.push_back({{"key", d},
                        {"prefix", PrefixText(*r)},
                        {"protocol", r->protocol},
                        {"unicast", r->unicast},
                        {"nexthops", r->devs}});
    }
    status["routes"] = std::move(routes);
    read.bgp_routes = std::any_of(rs->begin(), rs->end(),
                                  [](const KernelRoute& r) { return r.protocol == "bgp"; });
  }
  return read;
}

void Agent::ReadFrrState(const std::optional<std::vector<lb::PortMask>>& masks, json& status,
                         json& errors) {
  // vtysh is the dearest read (it talks to every daemon), so once converged
  // it runs only when something moved (the masks, the usable ports,
  // frr.conf) and every bgp_refresh_cycles cycles; otherwise the last answer
  // stands. A bgpd or zebra that dies takes its routes with it, which is a
  // change, so it is seen at once.
  const bool moved = !masks || !last_masks_ || *masks != *last_masks_ ||
                     (roles_ && roles_->usable_fabric_ports != last_usable_) ||
                     status["frr"].value("action", "") == "applied";
  // BFD comes up after its BGP session: until every Established session
  // has an up BFD peer, keep reading (it is only reported, never acted on).
  size_t sessions_up = 0, bfd_up = 0;
  for (const BgpPeer& p : bgp_.value_or(std::vector<BgpPeer>{})) sessions_up += p.established();
  if (bfd_.is_array()) {
    for (const json& b : bfd_) bfd_up += b.value("status", "") == "up";
  }
  const bool ask =
      !synced_ || moved || bfd_up < sessions_up || cycle_ - asked_cycle_ >= o_.bgp_refresh_cycles;
  if (roles_) last_usable_ = roles_->usable_fabric_ports;
  status["bgp_read"] = ask ? "now" : fmt::format("{} cycles ago", cycle_ - asked_cycle_);
  if (ask) {
    asked_cycle_ = cycle_;
    bgp_.reset();
    if (auto out = RunOk(VtyshArgv(o_.vtysh_pathspace, "show bgp summary json")); !out) {
      errors.push_back("bgp: " + out.error().message);
    } else if (auto p = ParseBgpSummary(*out); !p) {
      errors.push_back("bgp: " + p.error().message);
    } else {
      bgp_ = std::move(*p);
    }
    bfd_ = nullptr;
    if (auto out = RunOk(VtyshArgv(o_.vtysh_pathspace, "show bfd peers json")); !out) {
      errors.push_back("bfd: " + out.error().message);
    } else if (auto p = ParseBfdPeers(*out); !p) {
      errors.push_back("bfd: " + p.error().message);
    } else {
      json b = json::array();
      for (const BfdPeer& x : *p) {
        b.push_back({{"interface", x.interface}, {"peer", x.peer}, {"status", x.status}});
      }
      bfd_ = b;
    }
  }
  json bgp_json = json::array();
  for (const BgpPeer& p : bgp_.value_or(std::vector<BgpPeer>{})) {
    bgp_json.push_back({{"interface", p.interface},
                        {"state", p.state},
                        {"prefixes_received", p.prefixes_received},
                        {"hostname", p.hostname}});
  }
  status["bgp"] = bgp_ ? bgp_json : json(nullptr);
  status["bfd"] = bfd_;
}

std::string Agent::Converge(const std::optional<std::vector<lb::PortMask>>& masks, bool bgp_routes,
                            json& status, json& errors) {
  int established = 0, full = 0;
  const std::vector<int> fabric = roles_ ? roles_->usable_fabric_ports : std::vector<int>{};
  if (bgp_) {
    for (const BgpPeer& p : *bgp_) {
      if (!p.established() || p.prefixes_received == 0) continue;
      ++established;
      const int port = PortOfIfName(p.interface);
      if (std::find(fabric.begin(), fabric.end(), port) != fabric.end()) ++full;
    }
  }
  std::string hold;
  if (!bgp_) {
    hold = "bgpd does not answer";
  } else if (!masks) {
    hold = roles_ ? "no routes read" : "no lldp neighbours read yet";
  } else if (established == 0) {
    hold = "no BGP session established with prefixes";
  } else if (!bgp_routes) {
    hold = "BGP sessions are up but the kernel holds no BGP route (zebra restarting?)";
  }
  if (!hold.empty()) synced_ = false;
  if (hold.empty() && !synced_) {
    if (full < static_cast<int>(fabric.size()) || fabric.empty()) {
      hold = fmt::format("converging: {} of {} usable fabric ports have an established session",
                         full, fabric.size());
    } else if (stable_cycles_ < o_.settle_cycles) {
      hold = fmt::format("converging: routes unchanged for {} of {} cycles", stable_cycles_,
                         o_.settle_cycles);
    } else {
      synced_ = true;
    }
  }
  status["converged"] = synced_;
  if (bfd_pending_ && bgp_ && !fabric.empty() && full == static_cast<int>(fabric.size())) {
    AddPendingBfd(status, errors);
  }
  return hold;
}

void Agent::PushMasks(int64_t now_ms, const std::optional<std::vector<lb::PortMask>>& masks,
                      const std::string& hold, json& status, json& errors) {
  const lb::SwitchId self(o_.switch_id);
  json dp{{"socket", dp_->path()}};
  json m{{"destinations", tree_.num_dests(self)}};
  const Status conn = dp_->Connect(now_ms);
  dp["connected"] = dp_->connected();
  if (!conn) {
    dp["error"] = conn.error().message;
    errors.push_back("ofan-dp: " + conn.error().message);
  }
  dp["masks_known"] = dp_->masks().has_value();
  if (masks) m["computed"] = MasksJson(*masks);
  if (tree_.num_dests(self) == 0) {
    m["action"] = "none";
    m["reason"] = "a top-tier switch has no uplinks";
  } else if (!hold.empty()) {
    m["action"] = "held";
    m["reason"] = hold;
  } else if (!dp_->connected()) {
    m["action"] = "held";
    m["reason"] = "ofan-dp unreachable";
  } else if (dp_->masks() && *dp_->masks() == *masks) {
    m["action"] = "unchanged";
  } else if (Status s = dp_->Push(*masks, now_ms); !s) {
    m["action"] = "failed";
    m["reason"] = s.error().message;
    errors.push_back("ofan-dp: " + s.error().message);
  } else {
    ++pushes_;
    m["action"] = "pushed";
  }
  status["masks"] = m;
  status["dp"] = dp;
}

json Agent::Cycle(int64_t now_ms) {
  ++cycle_;
  json errors = json::array();
  json status{{"cycle", cycle_}, {"switch", o_.name}};
  // 1. LLDP -> roles. A failed read keeps the last classification.
  ReadLldp(status, errors);
  // 2. frr.conf when the usable fabric ports changed.
  if (roles_) {
    ApplyFrr(*roles_, status, errors);
  } else {
    status["frr"] = {{"action", "waiting for lldp"}};
  }
  // 3. Routes -> masks.
  const RouteRead routes = ReadRoutes(status, errors);
  // 4. BGP and BFD as FRR sees them.
  ReadFrrState(routes.masks, status, errors);
  if (routes.masks && last_masks_ && *routes.masks == *last_masks_) {
    ++stable_cycles_;
  } else {
    stable_cycles_ = routes.masks ? 1 : 0;
  }
  if (routes.masks) last_masks_ = routes.masks;
  // 5. Convergence (the rule in agent_cycle.h).
  const std::string hold = Converge(routes.masks, routes.bgp_routes, status, errors);
  // 6. ofan-dp.
  PushMasks(now_ms, routes.masks, hold, status, errors);
  status["errors"] = errors;
  return status;
}

}  // namespace ofan::agent
