// ofan-topo: the facts of a fat tree that the emulator (and later the control
// daemon) needs, computed by the LB library (dataplane/lb/fat_tree.h) and
// printed as JSON, so that no other language re-derives the wiring, the
// address plan or the valid uplinks.
//
//   ofan-topo describe --k 4 --levels 3         switches, hosts, links, MACs
//   ofan-topo tables   --k 4 --levels 3 [--failed ID,...]
//                                               per switch: valid-uplink masks
//                                               (what ofan-dp's load_tables
//                                               takes) and the same as IPv4
//                                               routes (what a kernel router
//                                               takes)
//   ofan-topo facts                             the netdev MTU and the queue
//                                               stages (describe gives each
//                                               port's stage)
//
// expects:  k even in [4, 64], levels 2 or 3, failed link ids < num_links
// gives:    one JSON object on stdout; exit 0, or 2 with a message on stderr
//           for a bad command line
// next:     emu/fabric/ (ofan-emu) turns it into namespaces, veths, ofan-dp
//           configs, control-socket tables or kernel routes
//
// Names. Edge e of pod p is "e<p>-<e>", aggregation switch j of pod p is
// "a<p>-<j>", core c is "c<c>"; in a 2-level tree the leaves are "l<i>" and
// the spines "s<j>". Hosts are "h<id>". MACs are locally administered and
// carry the id: switch s port p is 02:00:ss:ss:pp:01, host h is 02:01:hh:hh:00:02
// (dataplane/lb/names.h holds the plan).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/main_guard.h"
#include "common/version.h"
#include "dataplane/fabric/host_stamp.h"
#include "dataplane/fabric/pfc.h"
#include "dataplane/fabric/reorder.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/names.h"
#include "dataplane/packet/frame_budget.h"

namespace ofan::emu {
namespace {

using lb::FatTree;
using lb::HostId;
using lb::Role;
using lb::SwitchId;
using nlohmann::json;

constexpr int kExitOk = 0, kExitUsage = 2;

std::string SwitchMacText(SwitchId s, int port) {
  return lb::FormatMac(lb::SwitchPortMac(s, port));
}
std::string HostMacText(HostId h) { return lb::FormatMac(lb::HostMac(h)); }

std::string Addr(uint32_t a) { return FatTree::FormatAddr(a); }

// The /24 of edge e's hosts and the /16 of pod p (the address plan of
// fat_tree.h: 10.<pod>.<edge-in-pod>.<slot+2>).
std::string EdgePrefix(const FatTree& t, int e) {
  return fmt::format("{}/{}", Addr(t.edge_prefix(e)), FatTree::kEdgePrefixLen);
}
std::string PodPrefix(int p) {
  return fmt::format("{}/{}", Addr(FatTree::pod_prefix(p)), FatTree::kPodPrefixLen);
}

json Describe(const FatTree& t) {
  json sw = json::array(), hosts = json::array(), links = json::array();
  for (int i = 0; i < t.num_switches(); ++i) {
    const SwitchId s(static_cast<uint32_t>(i));
    const lb::SwitchInfo in = t.info(s);
    json ports = json::array();
    for (int p = 0; p < t.num_ports(s); ++p) {
      const lb::Peer peer = t.peer(s, p);
      json port = {{"port", p},
                   {"mac", SwitchMacText(s, p)},
                   {"up", t.is_uplink_port(s, p)},
                   {"stage", lb::kStageNames[static_cast<size_t>(t.stage_of(s, p))]}};
      if (peer.is_host) {
        port["peer"] = {{"host", peer.id},
                        {"name", fmt::format("h{}", peer.id)},
                        {"mac", HostMacText(HostId(peer.id))}};
      } else {
        const SwitchId o(peer.id);
        port["peer"] = {{"switch", peer.id},
                        {"name", lb::SwitchName(t, o)},
                        {"port", peer.port},
                        {"mac", SwitchMacText(o, peer.port)}};
      }
      ports.push_back(std::move(port));
    }
    json j = {{"id", i},
              {"name", lb::SwitchName(t, s)},
              {"role", std::string(lb::RoleName(in.role))},
              {"pod", in.pod},
              {"index", in.index},
              {"uplinks", t.num_uplinks(s)},
              {"num_dests", t.num_dests(s)},
              {"addr", Addr(t.switch_addr(s))},
              {"ports", std::move(ports)}};
    if (in.role == Role::kEdge) {
      j["gateway"] = Addr((10u << 24) | (static_cast<uint32_t>(in.pod) << 16) |
                          (static_cast<uint32_t>(in.index) << 8) | 1u);
      j["subnet"] = EdgePrefix(t, i);
    }
    sw.push_back(std::move(j));
  }
  for (int h = 0; h < t.num_hosts(); ++h) {
    const HostId id(static_cast<uint32_t>(h));
    const SwitchId e = t.edge_switch_of(id);
    hosts.push_back({{"id", h},
                     {"name", fmt::format("h{}", h)},
                     {"addr", Addr(t.host_addr(id))},
                     {"mac", HostMacText(id)},
                     {"pod", t.pod_of(id)},
                     {"edge", e.value()},
                     {"edge_name", lb::SwitchName(t, e)},
                     {"edge_port", t.slot_of(id)},
                     {"edge_mac", SwitchMacText(e, t.slot_of(id))},
                     {"gateway", sw[e.value()]["gateway"]}});
  }
  for (uint32_t l = 0; l < t.num_links(); ++l) {
    const SwitchId lo = t.link_lower(l);
    const int port = t.first_uplink_port(lo) + t.link_uplink(l);
    const lb::Peer up = t.peer(lo, port);
    links.push_back({{"id", l},
                     {"lower", lo.value()},
                     {"lower_name", lb::SwitchName(t, lo)},
                     {"lower_port", port},
                     {"upper", up.id},
                     {"upper_name", lb::SwitchName(t, SwitchId(up.id))},
                     {"upper_port", up.port},
                     {"tier", t.role(lo) == Role::kEdge ? "edge-agg" : "agg-core"}});
  }
  return {{"k", t.k()},
          {"levels", t.levels()},
          {"w", t.w()},
          {"pods", t.num_pods()},
          {"edges_per_pod", t.edges_per_pod()},
          {"num_hosts", t.num_hosts()},
          {"switches", sw},
          {"hosts", hosts},
          {"links", links}};
}

json Tables(const FatTree& t, const lb::LinkSet& failed) {
  json out = json::array();
  for (int i = 0; i < t.num_switches(); ++i) {
    const SwitchId s(static_cast<uint32_t>(i));
    const lb::SwitchInfo in = t.info(s);
    const auto masks = t.valid_uplink_table(s, failed);
    json routes = json::array();
    const int w = t.w();
    // Down: what is below the switch, through one port.
    if (in.role == Role::kEdge) {
      for (int p = 0; p < w; ++p) {
        const HostId h(static_cast<uint32_t>(i * w + p));
        routes.push_back({{"prefix", Addr(t.host_addr(h)) + "/32"}, {"ports", {p}}});
      }
    } else if (in.role == Role::kAgg && t.levels() == 3) {
      for (int e = 0; e < t.edges_per_pod(); ++e) {
        routes.push_back(
            {{"prefix", EdgePrefix(t, in.pod * t.edges_per_pod() + e)}, {"ports", {e}}});
      }
    } else if (in.role == Role::kAgg) {  // spine
      for (int e = 0; e < t.num_edges(); ++e) {
        routes.push_back({{"prefix", EdgePrefix(t, e)}, {"ports", {e}}});
      }
    } else {  // core
      for (int p = 0; p < t.num_pods(); ++p) {
        routes.push_back({{"prefix", PodPrefix(p)}, {"ports", {p}}});
      }
    }
    // Up: one route per key, over its valid uplinks; a key with none is
    // unreachable from here (the route says so with no ports).
    for (size_t d = 0; d < masks.size(); ++d) {
      const int dest = static_cast<int>(d);
      if (in.role == Role::kEdge && dest == i) continue;
      if (in.role == Role::kAgg && dest == in.pod) continue;
      json ports = json::array();
      for (int u = 0; u < w; ++u) {
        if ((masks[d] >> u) & 1) ports.push_back(t.first_uplink_port(s) + u);
      }
      routes.push_back({{"prefix", in.role == Role::kEdge ? EdgePrefix(t, dest) : PodPrefix(dest)},
                        {"ports", std::move(ports)},
                        {"key", dest}});
    }
    json m = json::array();
    for (const auto v : masks) m.push_back(v);
    out.push_back({{"id", i}, {"name", lb::SwitchName(t, s)}, {"masks", m}, {"routes", routes}});
  }
  return {{"k", t.k()},
          {"levels", t.levels()},
          {"failed",
           [&] {
             json f = json::array();
             for (uint32_t l = 0; l < failed.size(); ++l) {
               if (failed.failed(l)) f.push_back(l);
             }
             return f;
           }()},
          {"switches", out}};
}

int Run(int argc, char** argv) {
  CLI::App app{
      "ofan-topo: a fat tree's switches, hosts, links, MACs, valid-uplink tables and routes, as "
      "JSON "
      "(computed by dataplane/lb; used by ofan-emu)"};
  app.set_version_flag("--version", std::string(kOfanVersion));
  app.require_subcommand(1);
  int k = 4, levels = 3;
  std::vector<uint32_t> failed;
  bool pretty = false;
  auto add_shape = [&](CLI::App* c) {
    c->add_option("--k", k, "switch radix, even, 4..64")->capture_default_str();
    c->add_option("--levels", levels, "2 (leaf-spine) or 3 (fat tree)")->capture_default_str();
    c->add_flag("--pretty", pretty, "indent the JSON");
  };
  CLI::App* describe =
      app.add_subcommand("describe", "switches (ports, peers, MACs), hosts, links");
  add_shape(describe);
  CLI::App* facts = app.add_subcommand(
      "facts",
      "what ofan-emu takes from the C++ side instead of a copy: {\"netdev_mtu\" (every fabric "
      "link's, as ofan-dp sets it), \"stages\" (the queue stages, in report order), "
      "\"pfc_priority\" and \"pfc_dscp\" (PFC's default lossless priority and its DSCP), "
      "\"pfc_watchdog\" (its defaults, ranges and actions), \"reorder\" (the reorder stage's "
      "defaults and timeout range), \"wire\" (what a frame costs on the wire beyond its "
      "length without FCS: preamble and SFD, FCS, inter-frame gap, their sum), \"host_stamps\" "
      "(how the shared engine may stamp a host's frames, and its default)}");
  facts->add_flag("--pretty", pretty, "indent the JSON");
  bool as_json = true;  // JSON is all ofan-topo prints; --json is accepted as elsewhere
  facts->add_flag("--json", as_json, "JSON (the only output)");
  CLI::App* tables =
      app.add_subcommand("tables", "per switch: valid-uplink masks and IPv4 routes under failures");
  add_shape(tables);
  tables->add_option("--failed", failed, "failed inter-switch link ids (describe lists them)")
      ->delimiter(',');
  if (auto rc = ParseCommandLine(app, argc, argv)) return *rc;
  if (facts->parsed()) {
    json stages = json::array();
    for (std::string_view n : lb::kStageNames) stages.push_back(n);
    json host_stamps = json::array();
    for (std::string_view n : fabric::kHostStampNames) host_stamps.push_back(n);
    const json out = {
        {"netdev_mtu", pkt::kNetdevMtu},
        {"stages", std::move(stages)},
        {"pfc_priority", fabric::kDefaultPfcPriority},
        {"pfc_dscp", fabric::kRoceDscp},
        {"pfc_watchdog",
         {{"detect_ms", fabric::kPfcWdDetectMs},
          {"restore_ms", fabric::kPfcWdRestoreMs},
          {"detect_range_ms", {fabric::kPfcWdDetectMinMs, fabric::kPfcWdDetectMaxMs}},
          {"restore_range_ms", {fabric::kPfcWdRestoreMinMs, fabric::kPfcWdRestoreMaxMs}},
          {"actions", {"drop", "forward", "alert"}}}},
        {"reorder",
         {{"buffer_bytes", fabric::kReorderDefaultBytes},
          {"timeout_range_us", {1, fabric::kReorderMaxTimeoutUs}}}},
        {"wire",
         {{"preamble_sfd_bytes", pkt::kPreambleSfdBytes},
          {"fcs_bytes", pkt::kFcsBytes},
          {"ifg_bytes", pkt::kIfgBytes},
          {"overhead_bytes", pkt::kWireOverheadBytes}}},
        {"host_stamps",
         {{"names", std::move(host_stamps)},
          {"default", fabric::HostStampName(fabric::kDefaultHostStamp)}}}};
    std::cout << out.dump(pretty ? 2 : -1) << "\n";
    return kExitOk;
  }
  auto tree = FatTree::Make(k, levels);
  if (!tree) {
    std::cerr << "ofan-topo: " << tree.error().message << "\n";
    return kExitUsage;
  }
  json out;
  if (describe->parsed()) {
    out = Describe(*tree);
  } else {
    const auto f = tree->FailedLinks(failed);
    if (!f) {
      std::cerr << "ofan-topo: --failed: " << f.error().message << "\n";
      return kExitUsage;
    }
    out = Tables(*tree, *f);
  }
  std::cout << out.dump(pretty ? 2 : -1) << "\n";
  return kExitOk;
}

}  // namespace
}  // namespace ofan::emu

int main(int argc, char** argv) {
  return ofan::GuardMain("ofan-topo", 1, [&] { return ofan::emu::Run(argc, argv); });
}
