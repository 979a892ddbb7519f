// Incremental deployment (sim/placement.h): each placement puts --lb on
// half the edge and agg switches and --lb-rest on the others, the draws
// follow the seed, and a mixed run conserves packets and is deterministic.
#include "sim/placement.h"

#include <gtest/gtest.h>

#include <string>

#include "common/units.h"
#include "sim/config.h"
#include "sim/sim.h"

namespace ofan::sim {
namespace {

SimConfig Mixed(const std::string& placement, uint64_t seed = 1) {
  SimConfig c;
  c.k = 8;
  c.msg_bytes = 32 * kKiB;
  c.seed = c.policy.seed = seed;
  EXPECT_TRUE(ApplyLbName("4ofan", c).ok());
  EXPECT_TRUE(ApplyLbPlacement(placement, "ar", c).ok()) << placement;
  return c;
}

TEST(Placement, HalfTheLbSwitchesRunTheNewPolicy) {
  auto t = lb::FatTree::Make(8, 3);
  ASSERT_TRUE(t.ok());
  const int lbs = t->num_edges() + t->num_aggs();
  for (std::string_view pl : kPlacementNames) {
    SCOPED_TRACE(std::string(pl));
    const SimConfig c = Mixed(std::string(pl));
    ASSERT_TRUE(c.Validate().ok());
    const auto p = SwitchPolicies(c, *t);
    ASSERT_EQ(p.size(), static_cast<size_t>(t->num_switches()));
    int placed = 0;
    for (int s = 0; s < lbs; ++s) {
      const auto& x = p[static_cast<size_t>(s)];
      EXPECT_TRUE(x.kind == lb::PolicyKind::kPofan || x.kind == lb::PolicyKind::kAr);
      if (x.kind == lb::PolicyKind::kPofan) {
        ++placed;
        EXPECT_EQ(x.pipe_size, 4u);
      }
      const lb::Role role = t->info(lb::SwitchId(static_cast<uint32_t>(s))).role;
      if (pl == "edge") {
        EXPECT_EQ(x.kind == lb::PolicyKind::kPofan, role == lb::Role::kEdge);
      } else if (pl == "agg") {
        EXPECT_EQ(x.kind == lb::PolicyKind::kPofan, role == lb::Role::kAgg);
      }
    }
    EXPECT_EQ(placed, lbs / 2);
    if (pl == "random-pods") {  // a pod's switches all alike
      for (int s = 0; s < lbs; ++s) {
        const int pod = t->info(lb::SwitchId(static_cast<uint32_t>(s))).pod;
        EXPECT_EQ(p[static_cast<size_t>(s)].kind,
                  p[static_cast<size_t>(t->edge(pod, 0).value())].kind);
      }
    }
  }
  // The draws follow the seed.
  const auto a = SwitchPolicies(Mixed("random-switches", 1), *t);
  const auto b = SwitchPolicies(Mixed("random-switches", 2), *t);
  bool differ = false;
  for (size_t s = 0; s < a.size(); ++s) differ = differ || a[s].kind != b[s].kind;
  EXPECT_TRUE(differ);
}

TEST(Placement, MixedRunsConserveAndRepeat) {
  for (std::string_view pl : kPlacementNames) {
    SCOPED_TRACE(std::string(pl));
    auto r1 = RunSim(Mixed(std::string(pl)));
    auto r2 = RunSim(Mixed(std::string(pl)));
    ASSERT_TRUE(r1.ok()) << r1.error().message;
    ASSERT_TRUE(r2.ok());
    EXPECT_EQ(r1->flows_incomplete, 0u);
    EXPECT_EQ(r1->misdelivered, 0u);
    EXPECT_EQ(r1->data_received, r1->data_packets);
    EXPECT_EQ(r1->cct_us, r2->cct_us);
    EXPECT_EQ(r1->events, r2->events);
    EXPECT_EQ(r1->queue_max_pkts, r2->queue_max_pkts);
  }
}

TEST(Placement, TiersSpecErrors) {
  for (const char* bad : {"spine=ar", "edge=nope", "edge=ar,edge=ar", "edge", "=ar", "edge=",
                          "edge=ar,", "edge=conga", "agg=sglb", "edge=source", "core=reps"}) {
    SimConfig c;
    EXPECT_FALSE(ApplyLbTiers(bad, c).ok()) << bad;
    EXPECT_FALSE(c.mix.mixed()) << bad;
  }
  SimConfig c;
  ASSERT_TRUE(ApplyLbTiers("edge=4ofan,agg=ar,core=ecmp", c).ok());
  EXPECT_EQ(c.mix.placement, Placement::kTiers);
  EXPECT_FALSE(ApplyLbTiers("edge=ar", c).ok());  // one mix per run
}

}  // namespace
}  // namespace ofan::sim
