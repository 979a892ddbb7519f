#include "control/agent/route_masks.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "control/agent/fabric_roles.h"
#include "control/agent/frr_config.h"
#include "tests/control/agent/agent_test_util.h"

namespace ofan::agent {
namespace {

using lb::FatTree;
using lb::LinkSet;
using lb::PortMask;
using lb::SwitchId;

FatTree Tree(int k, int levels) { return *FatTree::Make(k, levels); }

// ---- parsing ip -j route show ----

TEST(ParseIpRouteJson, ReadsSingleAndMultipathRoutes) {
  const auto r = ParseIpRouteJson(R"([
    {"dst":"default","gateway":"192.0.2.1","dev":"eth0","flags":[]},
    {"dst":"10.0.1.0/24","protocol":"bgp","metric":20,"flags":[],
     "nexthops":[{"gateway":"169.254.0.1","dev":"p2","weight":1,"flags":["onlink"]},
                 {"gateway":"169.254.0.1","dev":"p3","weight":1,"flags":["onlink"]}]},
    {"dst":"10.255.0.9","gateway":"169.254.0.1","dev":"p3","protocol":"bgp","flags":["onlink"]},
    {"type":"blackhole","dst":"10.9.0.0/16","flags":[]},
    {"dst":"10.7.0.0/16","dev":"p1","table":"7","flags":[]}])");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0], (KernelRoute{0, 0, true, {"eth0"}, ""}));
  EXPECT_EQ((*r)[1], (KernelRoute{0x0A000100, 24, true, {"p2", "p3"}, "bgp"}));
  EXPECT_EQ((*r)[2], (KernelRoute{0x0AFF0009, 32, true, {"p3"}, "bgp"}));
  EXPECT_EQ((*r)[3], (KernelRoute{0x0A090000, 16, false, {}, ""}));
  const auto empty = ParseIpRouteJson("[]");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(ParseIpRouteJson, BadInputIsATypedErrorThatSaysWhere) {
  testing::ExpectRefused(
      [](const std::string& t) { return ParseIpRouteJson(t); }, "ip -j route show",
      {
          {"", "empty input"},
          {"{}", "not a list of routes"},
          {"[1]", "route #0: not an object"},
          {R"([{"dev":"p2"}])", "route #0: no string 'dst'"},
          {R"([{"dst":"10.0.0.0/24"},{"dst":"fe80::/64"}])", "route #1: dst 'fe80::/64' is not"},
          {R"([{"dst":"10.0.0.1/24"}])", "host bits set"},
          {R"([{"dst":"10.0.0.0/33"}])", "not an IPv4 prefix"},
          {R"([{"dst":"10.0.0.256"}])", "not an IPv4 prefix"},
          {R"([{"dst":"10.0.0.0","dev":7}])", "'dev' is not an interface name"},
          {R"([{"dst":"10.0.0.0","nexthops":{}}])", "'nexthops' is not a list"},
          {R"([{"dst":"10.0.0.0","nexthops":[3]}])", "a next hop is not an object"},
          {R"([{"dst":"10.0.0.0","type":1}])", "'type' is not a string"},
          {"[{\"dst\":\"10.0.0.0\xff\"}]", "not text: byte 0xff at offset 17"},
          {std::string("[\0]", 3), "not text: byte 0x00"},
          {"[{\"dst\":", "not JSON"},
          {"[1e999]", "not JSON"},  // nlohmann's out_of_range, not a parse_error (agent_fuzz)
          {std::string(100, '['), "nested deeper than 64"},
      });
}

TEST(CoveringRoute, LongestPrefixThatCoversTheWholeKey) {
  const std::vector<KernelRoute> rs = {{0, 0, true, {"a"}, ""},
                                       {0x0A000000, 16, true, {"b"}, ""},
                                       {0x0A000100, 24, true, {"c"}, ""},
                                       {0x0A000102, 32, true, {"d"}, ""}};
  EXPECT_EQ(CoveringRoute(rs, 0x0A000100, 24)->devs[0], "c");  // not the /32 inside it
  EXPECT_EQ(CoveringRoute(rs, 0x0A000200, 24)->devs[0], "b");
  EXPECT_EQ(CoveringRoute(rs, 0x0B000000, 24)->devs[0], "a");
  EXPECT_EQ(CoveringRoute(rs, 0x0A000102, 32)->devs[0], "d");
  EXPECT_EQ(CoveringRoute({}, 0x0A000102, 32), nullptr);
}

// l0's routes as the kernel holds them after FRR 8.4.4 converged on a k=4
// leaf-spine of l0, l1, s0, s1 (capture_daemons.sh): ECMP to l1's hosts over
// both spines, RFC 5549 next hops (169.254.0.1 onlink), no leaves 2 and 3.
TEST(ComputeMasks, RealFrrRoutesOfALeafGiveTheBruteForce) {
  const auto rs = ParseIpRouteJson(testing::ReadFixture("routes_k4_ls_l0.json"));
  ASSERT_TRUE(rs.ok()) << rs.error().message;
  const FatTree t = Tree(4, 2);
  const SwitchId l0 = t.edge(0, 0);
  const KernelRoute* r = CoveringRoute(*rs, t.edge_prefix(1), FatTree::kEdgePrefixLen);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->devs, (std::vector<std::string>{"p2", "p3"}));
  EXPECT_EQ(r->protocol, "bgp");
  std::vector<uint32_t> absent;  // leaves 2 and 3 were not started
  for (int l : {2, 3}) {
    for (int u = 0; u < t.w(); ++u) absent.push_back(t.uplink_id(t.edge(0, l), u));
  }
  const auto failed = t.FailedLinks(absent);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(ComputeMasks(t, l0, *rs), t.valid_uplink_table(l0, *failed));
  EXPECT_EQ(ComputeMasks(t, l0, *rs), (std::vector<PortMask>{0, 0b11, 0, 0}));
}

// ---- routes -> masks ----

TEST(ComputeMasks, EdgeAndAggKeysFromTheirRoutes) {
  const FatTree t = Tree(4, 3);
  const SwitchId e = t.edge(0, 0);
  // Edge 1 (same pod) over both uplinks, edge 2 (pod 1) over p3 only, edge 3
  // by the default route over p2, edge 4 blackholed, a route through a host
  // port and an unknown device counted out.
  const std::vector<KernelRoute> rs = {
      {0, 0, true, {"p2"}, "bgp"},
      {t.edge_prefix(1), 24, true, {"p2", "p3"}, "bgp"},
      {t.edge_prefix(2), 24, true, {"p3", "p0", "eth9"}, "bgp"},
      {t.edge_prefix(4), 24, false, {}, ""},
  };
  const auto m = ComputeMasks(t, e, rs);
  ASSERT_EQ(m.size(), static_cast<size_t>(t.num_edges()));
  EXPECT_EQ(m[0], 0u);  // itself: below, no key
  EXPECT_EQ(m[1], 0b11u);
  EXPECT_EQ(m[2], 0b10u);
  EXPECT_EQ(m[3], 0b01u);
  EXPECT_EQ(m[4], 0u);
  EXPECT_EQ(m[5], 0b01u);
  // An uplink fabric_roles found unusable never enters a mask.
  EXPECT_EQ(ComputeMasks(t, e, rs, 0b10)[1], 0b10u);
  // Agg 1 of pod 0: key pod d from the route to agg 1 of pod d's address.
  const SwitchId a = t.agg(0, 1);
  const std::vector<KernelRoute> ra = {
      {t.switch_addr(t.agg(2, 1)), 32, true, {"p3"}, "bgp"},
      {t.switch_addr(t.agg(3, 0)), 32, true, {"p2"}, "bgp"},  // another index: not a key
      {t.edge_prefix(4), 24, true, {"p2", "p3"}, "bgp"},      // a host /24 is no agg key
  };
  const auto ma = ComputeMasks(t, a, ra);
  ASSERT_EQ(ma.size(), 4u);
  EXPECT_EQ(ma, (std::vector<PortMask>{0, 0, 0b10, 0}));
  // Cores and spines have no keys.
  EXPECT_TRUE(ComputeMasks(t, t.core(0), ra).empty());
  EXPECT_TRUE(ComputeMasks(Tree(4, 2), Tree(4, 2).agg(0, 0), ra).empty());
}

// ---- the property: a BGP fabric's routes give the brute force's masks ----

// The link behind port p of s (FatTree numbers links by their lower end).
uint32_t LinkOf(const FatTree& t, SwitchId s, int p) {
  if (t.is_uplink_port(s, p)) return t.uplink_id(s, p - t.first_uplink_port(s));
  const lb::Peer o = t.peer(s, p);
  const SwitchId lower(o.id);
  return t.uplink_id(lower, o.port - t.first_uplink_port(lower));
}

// RFC 7938 eBGP run to convergence on the fat tree's wiring, independently of
// FatTree::valid_uplinks: every live switch originates AnnouncedPrefixes, a
// route is accepted unless its AS path holds the receiver's ASN, the best is
// the shortest AS path, multipath (as-path multipath-relax) keeps every
// neighbour with a best-length path, and each switch advertises one of them
// (its lowest port's). Gives, per switch, the routes zebra would install.
std::vector<std::vector<KernelRoute>> BgpRoutes(const FatTree& t, const LinkSet& failed,
                                                const std::set<uint32_t>& dead) {
  const int n = t.num_switches();
  struct Best {
    std::vector<uint32_t> path;  // AS path as advertised onward (own ASN not yet in)
    std::vector<int> ports;      // next hops; empty at the originator
  };
  std::vector<std::vector<KernelRoute>> routes(static_cast<size_t>(n));
  for (int origin = 0; origin < n; ++origin) {
    const SwitchId o(static_cast<uint32_t>(origin));
    if (dead.count(o.value())) continue;
    for (const std::string& prefix : AnnouncedPrefixes(t, o)) {
      std::vector<std::optional<Best>> best(static_cast<size_t>(n));
      best[o.value()] = Best{};
      for (bool changed = true; changed;) {
        changed = false;
        std::vector<std::optional<Best>> next = best;
        for (int i = 0; i < n; ++i) {
          const SwitchId s(static_cast<uint32_t>(i));
          if (i == origin || dead.count(s.value())) continue;
          const uint32_t my_asn = FabricAsn(t, s);
          std::optional<Best> b;
          for (int p = 0; p < t.num_ports(s); ++p) {
            const lb::Peer peer = t.peer(s, p);
            if (peer.is_host || dead.count(peer.id) || failed.failed(LinkOf(t, s, p))) continue;
            const auto& nb = best[peer.id];
            if (!nb) continue;
            std::vector<uint32_t> path = {FabricAsn(t, SwitchId(peer.id))};
            path.insert(path.end(), nb->path.begin(), nb->path.end());
            if (std::find(path.begin(), path.end(), my_asn) != path.end()) continue;
            if (!b || path.size() < b->path.size()) {
              b = Best{path, {p}};
            } else if (path.size() == b->path.size()) {
              b->ports.push_back(p);
            }
          }
          if (b.has_value() != next[s.value()].has_value() ||
              (b && (b->path != next[s.value()]->path || b->ports != next[s.value()]->ports))) {
            next[s.value()] = b;
            changed = true;
          }
        }
        best = std::move(next);
      }
      const size_t slash = prefix.find('/');
      KernelRoute r;
      r.prefix_len = std::stoi(prefix.substr(slash + 1));
      const auto parsed = ParseIpRouteJson(fmt::format(R"([{{"dst":"{}"}}])", prefix));
      r.prefix = (*parsed)[0].prefix;
      r.protocol = "bgp";
      for (int i = 0; i < n; ++i) {
        if (i == origin || !best[static_cast<size_t>(i)]) continue;
        KernelRoute ri = r;
        for (int p : best[static_cast<size_t>(i)]->ports) ri.devs.push_back(PortIfName(p));
        routes[static_cast<size_t>(i)].push_back(std::move(ri));
      }
    }
  }
  return routes;
}

void ExpectMasksEqualBruteForce(const FatTree& t, const std::vector<uint32_t>& links,
                                const std::set<uint32_t>& dead) {
  std::vector<uint32_t> ids = links;
  for (uint32_t d : dead) {  // a dead switch: every link it has is down
    for (int p = 0; p < t.num_ports(SwitchId(d)); ++p) {
      if (!t.peer(SwitchId(d), p).is_host) ids.push_back(LinkOf(t, SwitchId(d), p));
    }
  }
  const auto failed = t.FailedLinks(ids);
  ASSERT_TRUE(failed.ok());
  const auto routes = BgpRoutes(t, *failed, dead);
  for (int i = 0; i < t.num_switches(); ++i) {
    const SwitchId s(static_cast<uint32_t>(i));
    if (dead.count(s.value()) || t.num_dests(s) == 0) continue;
    ASSERT_EQ(ComputeMasks(t, s, routes[static_cast<size_t>(i)]), t.valid_uplink_table(s, *failed))
        << t.Describe() << ": switch " << i << ", " << failed->count() << " failed links, "
        << dead.size() << " dead switches";
  }
}

TEST(ComputeMasks, BgpFabricRoutesGiveTheBruteForceValidSets) {
  std::mt19937 rng(2110);
  for (int levels : {3, 2}) {
    for (int k : {4, 6, 8}) {
      const FatTree t = Tree(k, levels);
      ExpectMasksEqualBruteForce(t, {}, {});
      for (int trial = 0; trial < 12; ++trial) {
        std::vector<uint32_t> links;
        const int nl =
            std::uniform_int_distribution<int>(1, static_cast<int>(t.num_links()) / 3)(rng);
        for (int j = 0; j < nl; ++j) {
          links.push_back(std::uniform_int_distribution<uint32_t>(0, t.num_links() - 1)(rng));
        }
        std::set<uint32_t> dead;
        const int nd = trial % 3;  // 0, 1 or 2 dead switches of any role
        for (int j = 0; j < nd; ++j) {
          dead.insert(std::uniform_int_distribution<uint32_t>(
              0, static_cast<uint32_t>(t.num_switches() - 1))(rng));
        }
        ExpectMasksEqualBruteForce(t, links, dead);
      }
    }
  }
}

TEST(ComputeMasks, EveryAggCoreLinkOfOneIndexDownEmptiesThatPlane) {
  const FatTree t = Tree(4, 3);
  std::vector<uint32_t> links;
  for (int c = 0; c < t.w(); ++c) links.push_back(t.uplink_id(t.agg(1, 0), c));
  ExpectMasksEqualBruteForce(t, links, {});
}

}  // namespace
}  // namespace ofan::agent
