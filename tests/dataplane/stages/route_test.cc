// Stage 2 (route.h): the address plan's answer for every switch of small
// trees and every address, the subnet table against the plan, and the
// golden frames of tests/golden/stages.golden (parsed, then routed by the
// switch each is given to: the route and the ports it may leave by, as the
// fixture derived them by hand from the plan).
#include "dataplane/stages/route.h"

#include <gtest/gtest.h>

#include <set>

#include "dataplane/counters.h"
#include "dataplane/stages/parse.h"
#include "dataplane/stages/rewrite.h"
#include "tests/dataplane/stages/stage_frames.h"
#include "tests/golden/golden.h"

namespace ofan::dp {
namespace {

using testing::Ip;

TEST(Route, EdgeSwitchDownUpLocalAndMartians) {
  auto tree = *lb::FatTree::Make(4, 3);
  Router r(tree, tree.edge(0, 1));  // pod 0, edge 1: hosts 10.0.1.2 and 10.0.1.3
  auto down = r.Route(Ip(10, 0, 1, 3));
  EXPECT_EQ(down.kind, RouteKind::kDown);
  EXPECT_EQ(down.port, 1);
  auto up = r.Route(Ip(10, 3, 0, 2));
  EXPECT_EQ(up.kind, RouteKind::kUp);
  EXPECT_EQ(up.dest, 6);  // pod 3, edge 0: global edge 6
  EXPECT_EQ(r.Route(Ip(10, 0, 1, 1)).kind, RouteKind::kLocal);
  EXPECT_EQ(r.gateway_ip(), Ip(10, 0, 1, 1));
  for (uint32_t a : {Ip(11, 0, 1, 2), Ip(10, 4, 0, 2), Ip(10, 0, 2, 2), Ip(10, 0, 1, 4),
                     Ip(10, 0, 1, 0), Ip(10, 1, 0, 1)}) {
    EXPECT_EQ(r.Route(a).kind, RouteKind::kNoRoute) << std::hex << a;
  }
}

TEST(Route, AgreesWithTheFatTreeForEverySwitchAndHost) {
  for (int levels : {2, 3}) {
    for (int k : {4, 8}) {
      auto tree = *lb::FatTree::Make(k, levels);
      for (int s = 0; s < tree.num_switches(); ++s) {
        const lb::SwitchId sw(static_cast<uint32_t>(s));
        Router r(tree, sw);
        for (int h = 0; h < tree.num_hosts(); ++h) {
          const lb::HostId host(static_cast<uint32_t>(h));
          auto res = r.Route(tree.host_addr(host));
          if (tree.is_below(sw, host)) {
            ASSERT_EQ(res.kind, RouteKind::kDown);
            EXPECT_EQ(res.port, tree.down_port(sw, host));
          } else {
            ASSERT_EQ(res.kind, RouteKind::kUp);
            EXPECT_EQ(res.dest, tree.dest_of(sw, host));
          }
          EXPECT_EQ(res.slice, tree.slot_of(host));
        }
      }
    }
  }
}

// The subnet table the dataplane routes with gives what the address plan
// gives, for every switch of small trees and addresses across 10.x.y.z
// (every /24 of the pods and beyond, every last byte) and outside 10/8.
TEST(Route, TableAgreesWithThePlanOnEveryAddress) {
  for (int levels : {2, 3}) {
    for (int k : {4, 8}) {
      auto tree = *lb::FatTree::Make(k, levels);
      for (int s = 0; s < tree.num_switches(); ++s) {
        const Router r(tree, lb::SwitchId(static_cast<uint32_t>(s)));
        auto check = [&](uint32_t a) {
          const RouteResult got = r.Route(a), want = r.RouteByPlan(a);
          ASSERT_EQ(got.kind, want.kind) << "switch " << s << " addr " << std::hex << a;
          if (want.kind == RouteKind::kDown) {
            ASSERT_EQ(got.port, want.port) << std::hex << a;
          }
          if (want.kind == RouteKind::kUp) {
            ASSERT_EQ(got.dest, want.dest) << std::hex << a;
          }
          if (want.kind == RouteKind::kDown || want.kind == RouteKind::kUp) {
            ASSERT_EQ(got.slice, want.slice) << std::hex << a;
          }
        };
        for (uint32_t pod = 0; pod <= static_cast<uint32_t>(tree.num_pods()) + 1; ++pod) {
          for (uint32_t e = 0; e < 256; e += (e < 8 ? 1 : 61)) {
            for (uint32_t last = 0; last < 256; ++last) check(Ip(10, pod, e, last));
          }
        }
        for (uint32_t a : {Ip(9, 0, 0, 2), Ip(11, 0, 0, 2), Ip(0, 0, 0, 0), Ip(255, 255, 255, 255),
                           Ip(10, 255, 0, 2), Ip(138, 0, 0, 2)}) {
          check(a);
        }
      }
    }
  }
}

RouteKind KindNamed(const std::string& s) {
  if (s == "down") return RouteKind::kDown;
  if (s == "up") return RouteKind::kUp;
  if (s == "local") return RouteKind::kLocal;
  return RouteKind::kNoRoute;
}

// Every golden frame, parsed and routed by its switch: the fixture's route,
// its drop reason where it has one, and out ports that are exactly the
// route's (the down port; every valid uplink towards an up destination).
TEST(RouteGolden, StagesFixtureRoutesAsTheAddressPlanSays) {
  const auto& g = golden::Fixture("stages.golden");
  ASSERT_TRUE(g.ok()) << g.error().message;
  ASSERT_GE(g->frames.size(), 15u);
  std::set<RouteKind> kinds_seen;
  for (const golden::Frame& f : g->frames) {
    SCOPED_TRACE(f.name);
    const golden::Switch& s = *g->FindSwitch(f.Str("switch"));
    const auto tree = lb::FatTree::Make(s.k, s.levels);
    ASSERT_TRUE(tree.ok());
    const lb::SwitchId self(s.id);
    const Router r(*tree, self);
    const ParsedPacket p = ParseFrame(f.in.data(), static_cast<uint32_t>(f.in.size()));
    if (!f.Has("route")) {  // dropped by parse
      ASSERT_EQ(p.verdict, Verdict::kDrop);
      EXPECT_EQ(CounterName(p.drop), f.Str("drop"));
      continue;
    }
    ASSERT_EQ(p.verdict, Verdict::kForward);
    const RouteResult got = r.Route(p.dst_ip);
    const RouteKind want = KindNamed(f.Str("route"));
    ASSERT_EQ(got.kind, want);
    kinds_seen.insert(want);
    std::set<uint32_t> ports;
    if (want == RouteKind::kDown) {
      EXPECT_EQ(got.port, f.Num("port"));
      ports = {got.port};
    } else if (want == RouteKind::kUp) {
      EXPECT_EQ(got.dest, f.Num("dest"));
      const lb::PortMask valid =
          tree->valid_uplinks(self, got.dest, lb::LinkSet(tree->num_links()));
      for (int u = 0; u < tree->num_uplinks(self); ++u) {
        if (valid >> u & 1) ports.insert(static_cast<uint32_t>(tree->first_uplink_port(self) + u));
      }
    } else {
      EXPECT_EQ(f.Str("drop"), want == RouteKind::kNoRoute ? "drop_no_route" : "");
    }
    // A routed frame whose TTL runs out here is counted, not forwarded.
    const bool expires = TtlExpires(f.in.data() + p.l3_offset);
    EXPECT_EQ(expires, f.Str("drop") == "drop_ttl_exceeded");
    if (expires) ports.clear();
    std::set<uint32_t> out;
    for (const golden::Output& o : f.out) out.insert(o.port);
    EXPECT_EQ(out, ports);
  }
  EXPECT_EQ(kinds_seen.size(), 4u);  // down, up, local and none all covered
}

}  // namespace
}  // namespace ofan::dp
