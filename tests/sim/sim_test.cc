// Engine invariants of ofan-sim: every packet accounted for, CCT never below
// the App. A bound, App. A's own example, determinism, failures, drops.
#include "sim/sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "common/units.h"
#include "sim/lower_bound.h"
#include "sim/workload.h"

namespace ofan::sim {
namespace {

SimConfig Small(int k, int levels, const std::string& lb, uint64_t msg) {
  SimConfig c;
  c.k = k;
  c.levels = levels;
  c.msg_bytes = msg;
  EXPECT_TRUE(ApplyLbName(lb, c).ok()) << lb;
  return c;
}

const char* kAllSchemes[] = {"ecmp", "eecmp", "pin",      "rps",   "rr",   "jsq",
                             "ar",   "drill", "flowlet",  "conga", "dlb",  "sglb",
                             "ofan", "pofan", "source",   "drb",   "reps", "spray",
                             "rsq",  "4ofan", "ethereal", "choice"};

void ExpectConserved(const SimResult& r) {
  const uint64_t drops = r.drops_buffer + r.drops_link_down + r.drops_no_route;
  EXPECT_EQ(r.data_packets + r.ack_packets,
            r.data_received + r.acks_received + drops + r.misdelivered);
  EXPECT_EQ(r.misdelivered, 0u);
}

struct Case {
  int k, levels;
  const char* workload;
};

class Conservation : public ::testing::TestWithParam<Case> {};

TEST_P(Conservation, EveryPacketArrivesAndCctRespectsTheBound) {
  const Case cs = GetParam();
  for (const char* lb : kAllSchemes) {
    SimConfig c = Small(cs.k, cs.levels, lb, 64 * kKiB);
    c.workload = *ParseWorkload(cs.workload);
    auto r = RunSim(c);
    ASSERT_TRUE(r.ok()) << lb << ": " << r.error().message;
    SCOPED_TRACE(lb);
    ExpectConserved(*r);
    const uint64_t per_flow = c.msg_bytes / c.payload;
    EXPECT_EQ(r->data_packets, r->flows * per_flow);
    EXPECT_EQ(r->data_received, r->data_packets);
    EXPECT_EQ(r->acks_received, r->data_packets);  // one ACK per data packet
    EXPECT_EQ(r->flows_incomplete, 0u);
    EXPECT_GE(r->cct_us, r->cct_lower_bound_us) << "CCT below the lower bound";
    EXPECT_GE(r->cct_inflation, 0.0);
    EXPECT_GT(r->events, r->data_packets);
  }
}

INSTANTIATE_TEST_SUITE_P(Topologies, Conservation,
                         ::testing::Values(Case{4, 3, "perm"}, Case{6, 3, "perm"},
                                           Case{8, 3, "perm"}, Case{4, 2, "perm"},
                                           Case{8, 2, "perm"}, Case{4, 3, "a2a"},
                                           Case{4, 3, "pair"}),
                         [](const auto& p) {
                           return std::string(p.param.workload) + "_k" + std::to_string(p.param.k) +
                                  "_l" + std::to_string(p.param.levels);
                         });

TEST(Sim, CctNeverBelowTheBoundAcrossSeedsAndSizes) {
  for (const char* lb : {"ecmp", "rps", "rr", "ofan", "pofan", "drb"}) {
    for (uint64_t msg : {4096ull, 64 * 1024ull, 1024 * 1024ull}) {
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        SimConfig c = Small(6, 3, lb, msg);
        c.seed = seed;
        c.policy.seed = seed;
        auto r = RunSim(c);
        ASSERT_TRUE(r.ok());
        EXPECT_GE(r->cct_us, r->cct_lower_bound_us) << lb << " " << msg << " seed " << seed;
      }
    }
  }
}

TEST(Sim, ReproducesAppendixAPairCheck) {
  // App. A: one flow from the first host to the last and one back, k = 4,
  // m = 256 packets. Bound 17.05694 us; the paper measures 17.0587 us as the
  // best over all algorithms and many runs. Our best must be at or above the
  // bound and within a few ns of the paper's measurement.
  double best = 1e9, bound = 0;
  for (const char* lb : kAllSchemes) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      SimConfig c = Small(4, 3, lb, 1 << 20);
      c.workload = WorkloadKind::kPair;
      c.seed = seed;
      c.policy.seed = seed;
      auto r = RunSim(c);
      ASSERT_TRUE(r.ok());
      bound = r->cct_lower_bound_us;
      EXPECT_GE(r->cct_us, bound) << lb;
      best = std::min(best, r->cct_us);
    }
  }
  EXPECT_NEAR(bound, 17.05694, 1e-5);
  EXPECT_GE(best, 17.05694);
  EXPECT_NEAR(best, 17.0587, 0.003) << "best measured CCT " << best;
}

// The host pacer's bucket (--host-burst): a host that fell behind catches
// up with up to N frames at line rate, and starts with one frame's credit,
// at the pace, as uroce's hosts do (emu/uroce/host.h StartPacing). Paced
// at 80 %, a bucket of 8 neither opens with a burst (the first-hop queues
// stay those of strictly periodic pacing; a full bucket at the start made
// them deeper than the emulator's) nor beats the NIC-bound, and catching
// up after the NIC sent ACKs finishes no later than periodic pacing.
TEST(Sim, HostBurstStartsAtThePaceAndCatchesUp) {
  SimConfig c = Small(4, 3, "rps", 1 << 20);
  c.load = 0.8;
  c.link_gbps = 0.025;
  c.latency_us = 0;
  auto periodic = RunSim(c);
  c.host_burst = 8;
  auto bursty = RunSim(c);
  ASSERT_TRUE(periodic.ok() && bursty.ok());
  EXPECT_EQ(bursty->flows_incomplete, 0u);
  EXPECT_GE(bursty->cct_inflation, 0.0);
  EXPECT_LE(bursty->cct_us, periodic->cct_us);
  EXPECT_LT(bursty->queue_max_pkts, periodic->queue_max_pkts + 1);
}

TEST(Sim, DeterministicPerSeed) {
  // The schemes of Table 1 added later (CONGA, DLB, SGLB, 4Ofan, Ethereal,
  // CHOICE) on a smaller run: a few seconds of CI each would add up.
  const std::pair<const char*, int> cases[] = {
      {"rps", 8}, {"jsq", 8},  {"ofan", 8},  {"reps", 8},     {"flowlet", 8}, {"conga", 6},
      {"dlb", 6}, {"sglb", 6}, {"4ofan", 6}, {"ethereal", 6}, {"choice", 6}};
  for (const auto& [lb, k] : cases) {
    SimConfig c = Small(k, 3, lb, k == 8 ? 256 * kKiB : 128 * kKiB);
    c.seed = 7;
    c.policy.seed = 7;
    auto a = RunSim(c), b = RunSim(c);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->cct_us, b->cct_us) << lb;
    EXPECT_EQ(a->events, b->events) << lb;
    EXPECT_EQ(a->queue_max_pkts, b->queue_max_pkts) << lb;
    EXPECT_EQ(a->queue_avg_pkts, b->queue_avg_pkts) << lb;
    c.seed = 8;
    c.policy.seed = 8;
    auto d = RunSim(c);
    EXPECT_TRUE(d->cct_us != a->cct_us || d->queue_avg_pkts != a->queue_avg_pkts) << lb;
  }
}

// --lb spellings: rsq is rps (§3.1), <N>ofan is POfan with N-port pipes.
TEST(Sim, LbNamesReachTheirPolicyAndPipeSize) {
  SimConfig c;
  ASSERT_TRUE(ApplyLbName("rsq", c).ok());
  EXPECT_EQ(c.policy.kind, lb::PolicyKind::kRps);
  ASSERT_TRUE(ApplyLbName("4ofan", c).ok());
  EXPECT_EQ(c.policy.kind, lb::PolicyKind::kPofan);
  EXPECT_EQ(c.policy.pipe_size, 4u);
  ASSERT_TRUE(ApplyLbName("1ofan", c).ok());
  EXPECT_EQ(c.policy.pipe_size, 1u);
  for (const char* bad : {"0ofan", "xofan", "-1ofan", "4 ofan", "99999ofan", "ofan4"}) {
    EXPECT_FALSE(ApplyLbName(bad, c).ok()) << bad;
  }
  c.k = 8;
  ASSERT_TRUE(ApplyLbName("12ofan", c).ok());  // a pipe wider than the switch
  EXPECT_FALSE(c.Validate().ok());
  // 1Ofan is per-port POfan: on k=8 edges its pipes are single ports, so a
  // run differs from 4Ofan's.
  SimConfig one = Small(8, 3, "1ofan", 256 * kKiB), four = Small(8, 3, "4ofan", 256 * kKiB);
  auto a = RunSim(one), b = RunSim(four);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->flows_incomplete + b->flows_incomplete, 0u);
  EXPECT_NE(a->queue_avg_pkts, b->queue_avg_pkts);
}

// CONGA's feedback (conga.h): the source edge files the CE of every data
// packet that left its edge, from that packet's ACK; a source-pod agg files
// the ones whose ACK comes back down through it, some but not all of the
// inter-pod ones. SGLB's switches hear from the fabric once per period.
TEST(Sim, CongaFeedbackAndSglbSyncReachTheSwitches) {
  SimConfig c = Small(4, 3, "conga", 256 * kKiB);
  c.seed = c.policy.seed = 3;
  const auto tree = lb::FatTree::Make(c.k, c.levels);
  const auto flows = MakeWorkload(c, *tree);
  ASSERT_TRUE(flows.ok());
  uint64_t inter_edge = 0, inter_pod = 0;
  const uint64_t per_flow = c.msg_bytes / c.payload;
  for (const Flow& f : *flows) {
    const lb::HostId s(f.src), d(f.dst);
    inter_edge += tree->edge_of(s) != tree->edge_of(d) ? per_flow : 0;
    inter_pod += tree->pod_of(s) != tree->pod_of(d) ? per_flow : 0;
  }
  ASSERT_GT(inter_pod, 0u);
  auto r = RunSim(c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->flows_incomplete, 0u);
  EXPECT_GT(r->remote_updates, inter_edge);
  EXPECT_LT(r->remote_updates, inter_edge + inter_pod);
  for (const char* lb : {"ofan", "dlb", "ar"}) {
    auto o = RunSim(Small(4, 3, lb, 256 * kKiB));
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(o->remote_updates, 0u) << lb;
  }
  SimConfig g = Small(4, 3, "sglb", 256 * kKiB);
  g.policy.glb_period_ps = 500'000;
  auto s = RunSim(g);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->flows_incomplete, 0u);
  const double periods = s->cct_us / 0.5;
  EXPECT_GE(static_cast<double>(s->remote_updates), 0.6 * periods);  // none in the tail
  EXPECT_LE(static_cast<double>(s->remote_updates), periods + 1);
}

TEST(Sim, OfanEdgeUplinkQueuesStayWithinWPlusOne) {
  // App. F.4 / H: the queue of any edge uplink under Ofan and POfan is at most
  // w + 1 packets, whatever m (a deterministic bound, not a model).
  for (const char* lb : {"ofan", "pofan"}) {
    for (uint64_t msg : {256 * 1024ull, 4ull << 20}) {
      SimConfig c = Small(8, 3, lb, msg);
      auto r = RunSim(c);
      ASSERT_TRUE(r.ok());
      const StageStats& up = r->stages[static_cast<int>(Stage::kEdgeUp)];
      EXPECT_LE(up.max_pkts, 4 + 1 + 0.1) << lb << " " << msg;
    }
  }
}

TEST(Sim, RandomFailuresKeepEveryFlowDeliveredAtRhoMax) {
  for (const char* lb :
       {"ecmp", "rps", "ofan", "pofan", "drb", "pin", "ethereal", "conga", "dlb", "sglb"}) {
    SimConfig c = Small(8, 3, lb, 64 * kKiB);
    c.fail_prob = 0.15;
    auto r = RunSim(c);
    ASSERT_TRUE(r.ok()) << r.error().message;
    SCOPED_TRACE(lb);
    EXPECT_GT(r->failed_links, 0u);
    EXPECT_LE(r->rho, 1.0);
    EXPECT_GT(r->rho, 0.0);
    ExpectConserved(*r);
    EXPECT_EQ(r->drops_no_route + r->drops_link_down, 0u)
        << "a policy used a failed or dead-end link";
    EXPECT_EQ(r->flows_incomplete, 0u);
  }
}

TEST(Sim, HeavyFailuresLowerRhoMax) {
  SimConfig c = Small(8, 3, "ofan", 64 * kKiB);
  c.fail_prob = 0.3;
  auto r = RunSim(c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_LT(r->rho, 1.0);
  EXPECT_EQ(r->flows_incomplete, 0u);
}

TEST(Sim, FiniteBuffersDropAndTheHostsSendAgain) {
  SimConfig c = Small(8, 3, "ecmp", kMiB);
  c.buffer_bytes = uint64_t{10} * 4158;  // ten full frames
  auto r = RunSim(c);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->drops_buffer, 0u);
  EXPECT_GT(r->retransmits, 0u);  // what was lost, sent again (loss_recovery_test.cc)
  EXPECT_EQ(r->flows_incomplete, 0u);
  ExpectConserved(*r);
  EXPECT_LE(r->queue_max_pkts, 10.0 + 1e-9);
}

TEST(Sim, EcnMarksOnlyAboveTheThreshold) {
  SimConfig c = Small(8, 3, "ofan", 1 << 20);
  auto r = RunSim(c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ecn_marks, 0u);  // Ofan's queues stay far below 80 KB
  c.policy.kind = lb::PolicyKind::kEcmp;
  r = RunSim(c);
  EXPECT_GT(r->ecn_marks, 0u);
}

TEST(Sim, InvalidConfigurationsAreRejectedWithAMessage) {
  auto bad = [](auto mutate) {
    SimConfig c;
    c.k = 4;
    mutate(c);
    auto r = RunSim(c);
    EXPECT_FALSE(r.ok());
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
      EXPECT_FALSE(r.error().message.empty());
    }
  };
  bad([](SimConfig& c) { c.k = 5; });
  bad([](SimConfig& c) { c.k = 66; });
  bad([](SimConfig& c) { c.levels = 4; });
  bad([](SimConfig& c) { c.load = 0; });
  bad([](SimConfig& c) { c.load = 1.5; });
  bad([](SimConfig& c) { c.host_burst = 0; });
  bad([](SimConfig& c) { c.host_burst = 2000; });
  bad([](SimConfig& c) { c.link_gbps = -1; });
  bad([](SimConfig& c) { c.payload = 0; });
  bad([](SimConfig& c) { c.msg_bytes = 0; });
  bad([](SimConfig& c) { c.fail_prob = 1.0; });
  bad([](SimConfig& c) { c.workload = WorkloadKind::kMatrix; });
  bad([](SimConfig& c) {
    c.policy.kind = lb::PolicyKind::kPofan;
    c.policy.pipe_size = 0;
  });
  bad([](SimConfig& c) { c.host = HostScheme::kDrb; });  // needs source-routed switches
}

TEST(Sim, TwoLevelLeafSpineHasNoCoreStages) {
  SimConfig c = Small(8, 2, "ofan", 64 * kKiB);
  auto r = RunSim(c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->hosts, 32u);
  EXPECT_EQ(r->stages[static_cast<int>(Stage::kCoreDown)].queues, 0u);
  EXPECT_EQ(r->stages[static_cast<int>(Stage::kAggUp)].queues, 0u);
  EXPECT_GT(r->stages[static_cast<int>(Stage::kAggDown)].queues, 0u);
}

}  // namespace
}  // namespace ofan::sim
