#include "control/agent/frr_config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "dataplane/lb/names.h"
#include "tests/control/agent/agent_test_util.h"

namespace ofan::agent {
namespace {

using lb::FatTree;
using lb::SwitchId;

FatTree Tree(int k, int levels) { return *FatTree::Make(k, levels); }

// The golden texts: what the agent writes for the plan's ports, byte for
// byte. OFAN_UPDATE_GOLDEN=1 rewrites them (then review the diff);
// capture_daemons.sh has real FRR 8.4.4 load the leaf-spine ones.
void ExpectGolden(const FatTree& t, const std::string& name) {
  const auto s = lb::ParseSwitchName(t, name);
  ASSERT_TRUE(s.ok()) << name;
  const auto text = RenderFrrConfig(t, *s, AllFabricPorts(t, *s));
  ASSERT_TRUE(text.ok()) << text.error().message;
  const std::string file =
      fmt::format("frr_k{}_{}_{}.conf", t.k(), t.levels() == 3 ? "fat" : "ls", name);
  if (std::getenv("OFAN_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(testing::FixturePath(file), std::ios::binary) << *text;
  }
  EXPECT_EQ(*text, testing::ReadFixture(file)) << file;
}

TEST(FrrConfig, GoldenFatTreeK4EdgeAggCore) {
  const FatTree t = Tree(4, 3);
  for (const char* n : {"e0-0", "a0-0", "c0", "e3-1"}) ExpectGolden(t, n);
}

TEST(FrrConfig, GoldenLeafSpineK4) {
  const FatTree t = Tree(4, 2);
  for (const char* n : {"l0", "l1", "s0", "s1"}) ExpectGolden(t, n);
}

TEST(FrrConfig, AsnPlanFollowsRfc7938) {
  const FatTree t = Tree(8, 3);
  std::set<uint32_t> edges;
  for (int e = 0; e < t.num_edges(); ++e) {
    EXPECT_TRUE(edges.insert(FabricAsn(t, SwitchId(static_cast<uint32_t>(e)))).second);
  }
  std::set<uint32_t> pods;
  for (int p = 0; p < t.num_pods(); ++p) {
    for (int j = 1; j < t.w(); ++j) EXPECT_EQ(FabricAsn(t, t.agg(p, j)), FabricAsn(t, t.agg(p, 0)));
    EXPECT_TRUE(pods.insert(FabricAsn(t, t.agg(p, 0))).second);
    EXPECT_FALSE(edges.count(FabricAsn(t, t.agg(p, 0))));
  }
  for (int c = 0; c < t.num_cores(); ++c) EXPECT_EQ(FabricAsn(t, t.core(c)), kAsnBase);
  EXPECT_FALSE(edges.count(kAsnBase) || pods.count(kAsnBase));
  // Leaf-spine: the spines share one ASN, every leaf has its own.
  const FatTree ls = Tree(8, 2);
  for (int s = 0; s < ls.num_aggs(); ++s) EXPECT_EQ(FabricAsn(ls, ls.agg(0, s)), kAsnBase);
  std::set<uint32_t> leaves;
  for (int l = 0; l < ls.num_edges(); ++l) {
    EXPECT_TRUE(leaves.insert(FabricAsn(ls, ls.edge(0, l))).second);
  }
  EXPECT_FALSE(leaves.count(kAsnBase));
  // The largest tree's ASNs stay 4-byte private (RFC 6996: up to 4294967294).
  const FatTree big = Tree(64, 3);
  EXPECT_LT(FabricAsn(big, SwitchId(static_cast<uint32_t>(big.num_edges() - 1))), 4294967295u);
}

TEST(FrrConfig, OnlyTheGivenPortsPeerAndTimersAreSettable) {
  const FatTree t = Tree(4, 3);
  const SwitchId e = t.edge(1, 0);
  FrrOptions o;
  o.bfd = {.interval_ms = 100, .multiplier = 5};
  const auto text = RenderFrrConfig(t, e, {3}, o);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_NE(text->find(" neighbor p3 interface peer-group fabric\n"), std::string::npos);
  EXPECT_EQ(text->find("neighbor p2 "), std::string::npos);
  EXPECT_EQ(text->find("interface p2\n"), std::string::npos);
  EXPECT_NE(text->find("  detect-multiplier 5\n  receive-interval 100\n  transmit-interval 100\n"),
            std::string::npos);
  EXPECT_NE(text->find("network 10.1.0.0/24\n"), std::string::npos);
  EXPECT_NE(text->find(fmt::format("network {}/32\n", FatTree::FormatAddr(t.switch_addr(e)))),
            std::string::npos);
  EXPECT_NE(text->find("no zebra nexthop kernel enable\n"), std::string::npos);
  // No usable fabric port: still a whole config, announcing, with no session.
  const auto none = RenderFrrConfig(t, e, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->find(" interface peer-group"), std::string::npos);
}

TEST(FrrConfig, RefusesWhatFrrWouldNot) {
  const FatTree t = Tree(4, 3);
  const SwitchId e = t.edge(0, 0);
  auto host_port = RenderFrrConfig(t, e, {0, 2});
  ASSERT_FALSE(host_port.ok());
  EXPECT_NE(host_port.error().message.find("port 0 of e0-0 does not face a switch"),
            std::string::npos);
  EXPECT_FALSE(RenderFrrConfig(t, e, {4}).ok());
  EXPECT_FALSE(RenderFrrConfig(t, e, {3, 2}).ok());
  EXPECT_FALSE(RenderFrrConfig(t, e, {2, 2}).ok());
  EXPECT_FALSE(RenderFrrConfig(t, SwitchId(20), {}).ok());
  for (BfdTimers b :
       {BfdTimers{5, 3}, BfdTimers{60001, 3}, BfdTimers{300, 1}, BfdTimers{300, 256}}) {
    FrrOptions o;
    o.bfd = b;
    const auto r = RenderFrrConfig(t, e, {2, 3}, o);
    EXPECT_FALSE(r.ok()) << b.interval_ms << " x " << b.multiplier;
  }
  FrrOptions o;
  o.bfd_profile = "a b";
  EXPECT_FALSE(RenderFrrConfig(t, e, {2, 3}, o).ok());
}

}  // namespace
}  // namespace ofan::agent
