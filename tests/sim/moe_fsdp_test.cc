// The §6 workloads beyond the permutation: all-to-all with
// constant per-host size, MoE dispatch (workload/moe.h) and FSDP2's rings
// (workload/fsdp.h): their stated shape, a hand count of the ring schedule,
// determinism per seed, bad matrix files, and a tiny ofan-sim run of each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "sim/sim.h"
#include "sim/workload.h"
#include "workload/fsdp.h"
#include "workload/moe.h"

namespace ofan::sim {
namespace {

using workload::FsdpPhase;
using workload::MoeShape;
using workload::MoeTokens;
using workload::RingSend;

TEST(A2aHost, EachHostSendsMsgSplitOverItsFlows) {
  const lb::FatTree t = *lb::FatTree::Make(4, 3);  // 16 hosts, 15 flows each
  SimConfig c;
  c.k = 4;
  c.workload = WorkloadKind::kA2aHost;
  c.msg_bytes = 1000;  // 66 x 15 + 10: ten flows of 67 B, five of 66 B
  auto flows = MakeWorkload(c, t);
  ASSERT_TRUE(flows.ok());
  ASSERT_EQ(flows->size(), 16u * 15u);
  std::map<uint32_t, uint64_t> sent;
  std::map<uint64_t, int> sizes;
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  for (const Flow& f : *flows) {
    sent[f.src] += f.bytes;
    ++sizes[f.bytes];
    EXPECT_NE(f.src, f.dst);
    pairs.insert({f.src, f.dst});
  }
  EXPECT_EQ(pairs.size(), 240u);
  for (const auto& [h, b] : sent) EXPECT_EQ(b, 1000u) << "host " << h;
  EXPECT_EQ(sizes[67], 16 * 10);
  EXPECT_EQ(sizes[66], 16 * 5);
  c.msg_bytes = 14;  // less than a byte per flow
  EXPECT_FALSE(MakeWorkload(c, t).ok());
}

// §6.6's shape. Before rounding the generator meets both figures exactly
// (bisection to 1e-15 on sigma, then an exact scale); rounding each of the
// 16,384 counts (about 470 copies each) moves any sum by under 0.5 / 470 =
// 0.11 % per cell, so 0.5 % on the mean and 0.01 on the ratio cannot be
// missed by rounding but would catch a generator off by any real amount.
TEST(Moe, GeneratedMatrixHasThePapersShape) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    auto m = workload::GenerateMoeTokens(128, seed);
    ASSERT_TRUE(m.ok()) << m.error().message;
    auto t = workload::MoeDispatch(*m, workload::RandomPlacement(128, seed));
    ASSERT_TRUE(t.ok());
    EXPECT_NEAR(t->mean_sent_bytes, 492e6, 492e6 * 0.005) << "seed " << seed;
    EXPECT_NEAR(t->busiest_ratio, 1.48, 0.01) << "seed " << seed;
    // Hierarchical: a GPU sends only to same-rank GPUs of other servers.
    std::set<std::pair<uint32_t, uint32_t>> pairs;
    for (const Flow& f : t->flows) {
      EXPECT_NE(f.src / 8, f.dst / 8);
      EXPECT_EQ(f.src % 8, f.dst % 8);
      pairs.insert({f.src, f.dst});
    }
    EXPECT_EQ(pairs.size(), t->flows.size());
    EXPECT_LE(t->flows.size(), 128u * 15u);
    EXPECT_GT(t->local_bytes, 0u);  // tokens for experts on the own server stay off the fabric
    // EPLB on the same matrix: less skew (the paper: 1.13x).
    auto e = workload::MoeDispatch(*m, workload::EplbPlacement(*m, seed));
    ASSERT_TRUE(e.ok());
    EXPECT_LT(e->busiest_ratio, 1.3) << "seed " << seed;
    EXPECT_GT(e->busiest_ratio, 1.0);
  }
}

TEST(Moe, DeterministicPerSeed) {
  auto a = workload::GenerateMoeTokens(64, 7), b = workload::GenerateMoeTokens(64, 7),
       c = workload::GenerateMoeTokens(64, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->tokens, b->tokens);
  EXPECT_NE(a->tokens, c->tokens);
  const auto pa = workload::EplbPlacement(*a, 7), pb = workload::EplbPlacement(*b, 7);
  EXPECT_EQ(pa, pb);
  // Every expert's replica shares sum to 1; every GPU holds two slots.
  std::map<uint32_t, int> slots;
  for (const auto& reps : pa) {
    double sum = 0;
    for (const auto& [g, share] : reps) sum += share, ++slots[g];
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
  EXPECT_EQ(slots.size(), 64u);
  for (const auto& [g, s] : slots) EXPECT_EQ(s, 2) << "GPU " << g;
}

TEST(Moe, BadMatrixFilesAreClearErrors) {
  // A good 16 x 16 matrix first, then each defect.
  std::string good;
  for (int r = 0; r < 16; ++r) {
    for (int e = 0; e < 16; ++e) good += std::to_string(r + e) + (e < 15 ? " " : "\n");
  }
  auto ok = workload::ParseMoeTokens("# tokens\n\n" + good, 16);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->tokens[17], 2u);
  const std::pair<std::string, std::string> bad[] = {
      {"", "0 rows, expected 16"},
      {good.substr(0, good.rfind('\n', good.size() - 2) + 1), "15 rows"},
      {good + "1 2\n", "more than 16 rows"},
      {"1 2 3\n", "3 columns, expected 16"},
      {"x" + good.substr(1), "'x' is not a non-negative integer"},
      {"-1" + good.substr(1), "'-1' is not"},
      {"1.5" + good.substr(1), "'1.5' is not"},
      {"99999999999999999999" + good.substr(1), "is not"},
      {"2000000000000" + good.substr(1), "too many"},
      {good.substr(0, good.find('\n')) + " 4" + good.substr(good.find('\n')),
       "more than 16 columns"},
  };
  for (const auto& [text, want] : bad) {
    auto r = workload::ParseMoeTokens(text, 16);
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find(want), std::string::npos) << r.error().message;
  }
  std::string z;
  for (int r = 0; r < 16; ++r) {
    for (int e = 0; e < 16; ++e) z += e < 15 ? "0 " : "0\n";
  }
  EXPECT_NE(workload::ParseMoeTokens(z, 16).error().message.find("every count is zero"),
            std::string::npos);
  // Only the diagonal block (own server): nothing crosses the fabric.
  std::string local;
  for (int r = 0; r < 16; ++r) {
    for (int e = 0; e < 16; ++e) {
      local += r / 8 == e / 8 ? '5' : '0';
      local += e < 15 ? ' ' : '\n';
    }
  }
  auto lm = workload::ParseMoeTokens(local, 16);
  ASSERT_TRUE(lm.ok());
  std::vector<std::vector<std::pair<uint32_t, double>>> ident(16);
  for (uint32_t e = 0; e < 16; ++e) ident[e] = {{e, 1.0}};
  EXPECT_FALSE(workload::MoeDispatch(*lm, ident).ok());
  EXPECT_FALSE(workload::GenerateMoeTokens(4096, 1).ok());  // too many GPUs: an error, no 400 MB
  EXPECT_FALSE(workload::ParseMoeTokens(good, 4096).ok());
  EXPECT_FALSE(workload::GenerateMoeTokens(12, 1).ok());  // not whole servers
  // Through ofan-sim's workload: a missing file and a bad one.
  const lb::FatTree t = *lb::FatTree::Make(4, 3);
  SimConfig c;
  c.k = 4;
  c.workload = WorkloadKind::kMoe;
  c.moe_matrix_file = "/nonexistent/moe.txt";
  auto r = MakeWorkload(c, t);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kIo);
  const std::string path = ::testing::TempDir() + "moe_bad.txt";
  std::ofstream(path) << "1 2 x\n";
  c.moe_matrix_file = path;
  r = MakeWorkload(c, t);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(path + ": MoE matrix line 1"), std::string::npos)
      << r.error().message;
  std::remove(path.c_str());
}

// 32 GPUs = 4 servers of 8, placement the identity: rings of R = 4, 3 steps.
TEST(Fsdp, RingScheduleMatchesAHandCount) {
  const std::vector<uint32_t> ident = {0, 1, 2, 3};
  auto rs = workload::FsdpRingSchedule(32, 8, FsdpPhase::kReduceScatter, ident);
  auto ag = workload::FsdpRingSchedule(32, 8, FsdpPhase::kAllGather, ident);
  ASSERT_TRUE(rs.ok() && ag.ok());
  ASSERT_EQ(rs->size(), 3u * 32u);
  auto find = [](const std::vector<RingSend>& v, uint32_t step, uint32_t src) {
    for (const RingSend& r : v) {
      if (r.step == step && r.src == src) return r;
    }
    return RingSend{99, 99, 99, 99};
  };
  // By hand: GPU i is member j = i / 8 of ring r = i % 8, sends to i + 8 mod
  // 32; ReduceScatter step s sends chunk (j - s) mod 4, i.e. shard 4r + that.
  struct Want {
    uint32_t step, src, dst, shard;
  };
  for (const Want& w : {Want{0, 0, 8, 0}, Want{0, 9, 17, 5}, Want{0, 27, 3, 15}, Want{1, 0, 8, 3},
                        Want{1, 9, 17, 4}, Want{2, 27, 3, 13}, Want{2, 31, 7, 29}}) {
    const RingSend got = find(*rs, w.step, w.src);
    EXPECT_EQ(got.dst, w.dst) << "RS step " << w.step << " src " << w.src;
    EXPECT_EQ(got.shard, w.shard) << "RS step " << w.step << " src " << w.src;
  }
  // AllGather step s forwards chunk (j + 1 - s) mod 4: its own at s = 0.
  for (const Want& w :
       {Want{0, 0, 8, 1}, Want{0, 27, 3, 12}, Want{1, 0, 8, 0}, Want{2, 9, 17, 4}}) {
    const RingSend got = find(*ag, w.step, w.src);
    EXPECT_EQ(got.dst, w.dst);
    EXPECT_EQ(got.shard, w.shard) << "AG step " << w.step << " src " << w.src;
  }
  // Run the schedule on data: each GPU starts with value (gpu + 1) in every
  // shard of its ring; after ReduceScatter the owner of each shard holds the
  // ring's sum in it, and after AllGather every member holds every sum.
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> val;  // (gpu, shard) -> partial sum
  for (uint32_t g = 0; g < 32; ++g) {
    for (uint32_t c = 0; c < 4; ++c) val[{g, (g % 8) * 4 + c}] = g + 1;
  }
  for (uint32_t s = 0; s < 3; ++s) {
    auto before = val;
    for (const RingSend& r : *rs) {
      if (r.step == s) val[{r.dst, r.shard}] += before.at({r.src, r.shard});
    }
  }
  for (uint32_t g = 0; g < 32; ++g) {
    const uint32_t ring = g % 8, j = g / 8, owned = ring * 4 + (j + 1) % 4;
    const uint64_t sum = 4 * (ring + 1) + 8 * (0 + 1 + 2 + 3);  // gpus ring, ring+8, +16, +24
    EXPECT_EQ(val.at({g, owned}), sum) << "GPU " << g;
  }
  std::map<std::pair<uint32_t, uint32_t>, bool> has;
  for (uint32_t g = 0; g < 32; ++g) has[{g, (g % 8) * 4 + (g / 8 + 1) % 4}] = true;
  for (uint32_t s = 0; s < 3; ++s) {
    for (const RingSend& r : *ag) {
      if (r.step != s) continue;
      EXPECT_TRUE((has[{r.src, r.shard}])) << "GPU " << r.src << " forwards a shard it lacks";
      has[{r.dst, r.shard}] = true;
    }
  }
  for (uint32_t g = 0; g < 32; ++g) {
    for (uint32_t c = 0; c < 4; ++c) EXPECT_TRUE((has[{g, (g % 8) * 4 + c}]));
  }
}

TEST(Fsdp, RandomPlacementKeepsRingsAcrossServersAndIsSeeded) {
  const auto p = workload::ServerPlacement(128, 3);
  EXPECT_EQ(p, workload::ServerPlacement(128, 3));
  EXPECT_NE(p, workload::ServerPlacement(128, 4));
  EXPECT_EQ(std::set<uint32_t>(p.begin(), p.end()).size(), 128u);
  auto rs = workload::FsdpRingSchedule(1024, 8, FsdpPhase::kReduceScatter, p);
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(rs->size(), 127u * 1024u);
  auto flows = workload::FsdpFlows(1024, 8, workload::kLlama3[2], 1, 2, 4096, 3);
  ASSERT_TRUE(flows.ok());
  ASSERT_EQ(flows->size(), 1024u);
  std::set<uint32_t> dsts;
  for (const Flow& f : *flows) {
    EXPECT_EQ(f.src % 8, f.dst % 8);  // same rank
    EXPECT_NE(f.src / 8, f.dst / 8);  // another server
    EXPECT_EQ(f.bytes, 2ull * 127 * 1533 * 4096);
    dsts.insert(f.dst);
  }
  EXPECT_EQ(dsts.size(), 1024u);  // a permutation: every GPU receives one ring
  EXPECT_EQ(workload::kLlama3[0].packets_per_step, 119u);
  EXPECT_EQ(workload::kLlama3[1].packets_per_step, 418u);
  EXPECT_FALSE(workload::FsdpFlows(1024, 8, workload::kLlama3[0], 33, 2, 4096, 1).ok());
  EXPECT_FALSE(workload::FsdpFlows(12, 8, workload::kLlama3[0], 1, 2, 4096, 1).ok());
  EXPECT_FALSE(workload::ParseLlamaModel("7b").ok());
}

// ofan-sim's flows for moe (both placements) and fsdp at k=8: the same for
// the same seed, other flows for another seed.
TEST(Workloads, FlowsArePureFunctionsOfTheSeed) {
  const lb::FatTree t = *lb::FatTree::Make(8, 3);
  auto key = [](const std::vector<Flow>& v) {
    std::vector<std::tuple<uint32_t, uint32_t, uint64_t>> k;
    for (const Flow& f : v) k.emplace_back(f.src, f.dst, f.bytes);
    return k;
  };
  for (WorkloadKind w : {WorkloadKind::kMoe, WorkloadKind::kFsdp}) {
    for (bool eplb : {false, true}) {
      SimConfig c;
      c.k = 8;
      c.workload = w;
      c.moe_eplb = eplb;
      c.seed = 5;
      WorkloadInfo ia, ib;
      auto a = MakeWorkload(c, t, &ia), b = MakeWorkload(c, t, &ib);
      c.seed = 6;
      auto d = MakeWorkload(c, t);
      ASSERT_TRUE(a.ok() && b.ok() && d.ok());
      EXPECT_EQ(key(*a), key(*b)) << WorkloadName(w);
      EXPECT_EQ(ia.note, ib.note);
      EXPECT_NE(key(*a), key(*d)) << WorkloadName(w);
    }
  }
}

// Each workload at a tiny size through the whole simulator: every flow done.
TEST(Workloads, TinyRunsComplete) {
  SimConfig c;
  c.k = 4;  // 16 hosts = 2 servers of 8
  for (WorkloadKind w : {WorkloadKind::kA2aHost, WorkloadKind::kMoe, WorkloadKind::kFsdp}) {
    c.workload = w;
    c.msg_bytes = 64 * 1024;
    c.payload = DefaultPayload(w, 4096);
    c.moe_scale = 0.002;  // 16 GPUs: ~1.2 MB per GPU instead of 492 MB
    auto r = RunSim(c);
    ASSERT_TRUE(r.ok()) << WorkloadName(w) << ": " << r.error().message;
    EXPECT_EQ(r->flows_incomplete, 0u) << WorkloadName(w);
    EXPECT_GT(r->flows, 0u);
    EXPECT_EQ(r->data_received, r->data_packets) << WorkloadName(w);
    if (w == WorkloadKind::kMoe) {
      EXPECT_NE(r->workload.note.find("GENERATED"), std::string::npos);
    }
    if (w == WorkloadKind::kFsdp) {
      EXPECT_EQ(r->data_packets, 16u * 2 * 1 * 119);
    }
  }
}

}  // namespace
}  // namespace ofan::sim
