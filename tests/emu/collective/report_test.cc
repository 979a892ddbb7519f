#include "emu/collective/report.h"

#include <gtest/gtest.h>

namespace ofan::emu {
namespace {

TEST(Report, AlgBwIsSizeOverTime) {
  // 1 MiB in 100 us: 8388608 bits / 100 us = 83.88608 Gb/s.
  EXPECT_NEAR(AlgBwGbps(1 << 20, 100), 83.88608, 1e-9);
  EXPECT_EQ(AlgBwGbps(1 << 20, 0), 0);
}

TEST(Report, BusBwFollowsNcclTests) {
  CollectiveResult r;
  r.msg_bytes = 1 << 20;
  r.num_ranks = 8;
  r.rank_us = {50, 100, 75, 20, 1, 2, 3, 4};
  for (auto [w, factor] :
       {std::pair{Workload::kAllGather, 7.0 / 8}, std::pair{Workload::kReduceScatter, 7.0 / 8},
        std::pair{Workload::kAllToAll, 7.0 / 8}, std::pair{Workload::kPermutation, 1.0}}) {
    r.workload = w;
    ComputeBandwidths(&r);
    EXPECT_EQ(r.cct_us, 100);  // the slowest rank
    EXPECT_NEAR(r.algbw_gbps, 83.88608, 1e-9);
    EXPECT_NEAR(r.busbw_gbps, 83.88608 * factor, 1e-9);
  }
  // Hand-computed: all-gather of 16 MiB on 16 ranks in 2 ms: algbw
  // 67.108864 Gb/s, busbw x 15/16 = 62.91456 Gb/s.
  r.workload = Workload::kAllGather;
  r.num_ranks = 16;
  r.msg_bytes = 16 << 20;
  r.rank_us = {2000};
  ComputeBandwidths(&r);
  EXPECT_NEAR(r.algbw_gbps, 67.108864, 1e-9);
  EXPECT_NEAR(r.busbw_gbps, 62.91456, 1e-9);
}

TEST(Report, JsonHasEveryField) {
  CollectiveResult r;
  r.workload = Workload::kReduceScatter;
  r.num_ranks = 2;
  r.hosts = {3, 9};
  r.msg_bytes = 4096;
  r.rank_us = {1.5, 2.5};
  ComputeBandwidths(&r);
  r.verified = true;
  nlohmann::json j = ResultJson(r);
  EXPECT_EQ(j["workload"], "reducescatter");
  EXPECT_EQ(j["ranks"], 2);
  EXPECT_EQ(j["hosts"], nlohmann::json::array({3, 9}));
  EXPECT_EQ(j["msg_bytes"], 4096);
  EXPECT_EQ(j["cct_us"], 2.5);
  EXPECT_EQ(j["rank_us"].size(), 2u);
  EXPECT_TRUE(j["cct_lower_bound_us"].is_null());
  EXPECT_TRUE(j["error"].is_null());
  EXPECT_EQ(j["verified"], true);
  EXPECT_GT(j["algbw_gbps"].get<double>(), 0);
  EXPECT_LT(j["busbw_gbps"].get<double>(), j["algbw_gbps"].get<double>());
  r.cct_lower_bound_us = 1.25;
  r.error = "rank 1: boom";
  j = ResultJson(r);
  EXPECT_EQ(j["cct_lower_bound_us"], 1.25);
  EXPECT_EQ(j["error"], "rank 1: boom");
}

CollectiveResult Part(std::vector<Rank> ranks, std::vector<double> us) {
  CollectiveResult r;
  r.workload = Workload::kAllGather;
  r.num_ranks = 4;
  r.msg_bytes = 1 << 20;
  r.qps_per_peer = 2;
  r.local_ranks = std::move(ranks);
  r.rank_us = std::move(us);
  r.verified = true;
  ComputeBandwidths(&r);
  return r;
}

TEST(Report, MergeCombinesPartsInRankOrder) {
  std::vector<CollectiveResult> parts = {Part({2, 0}, {30, 10}), Part({1, 3}, {100, 40})};
  parts[1].cct_lower_bound_us = 5;
  EXPECT_TRUE(parts[0].partial());
  auto m = MergeResults(parts);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->rank_us, (std::vector<double>{10, 100, 30, 40}));
  EXPECT_EQ(m->local_ranks, (std::vector<Rank>{0, 1, 2, 3}));
  EXPECT_FALSE(m->partial());
  EXPECT_EQ(m->cct_us, 100);
  EXPECT_NEAR(m->algbw_gbps, 83.88608, 1e-9);
  EXPECT_NEAR(m->busbw_gbps, 83.88608 * 3 / 4, 1e-9);
  EXPECT_EQ(m->cct_lower_bound_us, 5);
  EXPECT_TRUE(m->verified);
  // A failed part fails the whole, with its error.
  parts[1].verified = false;
  parts[1].bad_ranks = 1;
  parts[1].error = "verification failed: rank 3: ...";
  m = MergeResults(parts);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->verified);
  EXPECT_EQ(m->bad_ranks, 1u);
  EXPECT_EQ(m->error, parts[1].error);
}

TEST(Report, MergeRejectsPartsOfDifferentRuns) {
  const std::vector<CollectiveResult> twice = {Part({0, 1}, {1, 1}), Part({1, 2, 3}, {1, 1, 1})};
  EXPECT_FALSE(MergeResults(twice).ok());
  const std::vector<CollectiveResult> missing = {Part({0, 1}, {1, 1}), Part({3}, {1})};
  auto m = MergeResults(missing);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("rank 2"), std::string::npos);
  std::vector<CollectiveResult> other = {Part({0, 1}, {1, 1}), Part({2, 3}, {1, 1})};
  other[1].msg_bytes = 4096;
  EXPECT_FALSE(MergeResults(other).ok());
  EXPECT_FALSE(MergeResults({}).ok());
}

// What one process prints comes back whole through ParseResultJson (ofan-coll
// merge reads the ranks' outputs), and a malformed one is refused by name.
TEST(Report, CtsWaitsMergeAndGiveTheirQuantiles) {
  EXPECT_EQ(Quantile({}, 0.5), 0);
  EXPECT_EQ(Quantile({5}, 0.9), 5);
  EXPECT_EQ(Quantile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.5), 5);
  EXPECT_EQ(Quantile({10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 0.9), 9);
  CollectiveResult a;
  a.workload = Workload::kIncast;
  a.num_ranks = 4;
  a.msg_bytes = 100;
  a.qps_per_peer = 1;
  a.local_ranks = {0, 1};
  a.rank_us = {10, 20};
  a.cts_channels = 2;
  a.cts_channel_bytes = 4096;
  a.cts_waits_us = {1, 2};
  a.cts_flights_us = {0.5};
  CollectiveResult b = a;
  b.local_ranks = {2, 3};
  b.cts_waits_us = {30};
  b.cts_priority = false;
  const CollectiveResult parts[] = {a, b};
  auto m = MergeResults(parts);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->cts_waits_us.size(), 3u);
  EXPECT_TRUE(m->cts_flights_us.empty()) << "two processes' clocks";
  const nlohmann::json j = ResultJson(*m);
  EXPECT_EQ(j["cts"]["channels"], 2);
  EXPECT_EQ(j["cts_wait_us"]["p50"], 2.0);
  EXPECT_EQ(j["cts_wait_us"]["p90"], 30.0);
  EXPECT_TRUE(j["cts_delay_us"].is_null());
  const nlohmann::json one = ResultJson(a);
  EXPECT_EQ(one["cts_delay_us"]["p90"], 0.5);
  auto back = ParseResultJson(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->cts_waits_us, m->cts_waits_us);
  EXPECT_EQ(back->cts_channel_bytes, 4096u);
  nlohmann::json broken = j;
  broken["cts"]["waits_us"] = "soon";
  EXPECT_FALSE(ParseResultJson(broken).ok());
  // Without CTS the result has neither key.
  a.cts_channels = 0;
  EXPECT_FALSE(ResultJson(a).contains("cts"));
}

TEST(Report, ParseResultJsonInvertsResultJson) {
  CollectiveResult r = Part({2, 0}, {30, 10});
  r.hosts = {5, 6, 7, 8};
  r.seed = 42;
  r.cct_lower_bound_us = 7.5;
  auto back = ParseResultJson(ResultJson(r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(ResultJson(*back), ResultJson(r));
  r.error = "rank 2: deadline";
  r.verified = false;
  r.cct_lower_bound_us.reset();
  back = ParseResultJson(ResultJson(r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->error, "rank 2: deadline");
  EXPECT_FALSE(back->cct_lower_bound_us.has_value());

  struct Case {
    const char* key;
    nlohmann::json value;
    const char* says;
  };
  const Case cases[] = {
      {"workload", "allreduce", "allreduce"},
      {"ranks", -1, "'ranks'"},
      {"ranks", 5000, "'ranks'"},
      {"local_ranks", "0", "'local_ranks'"},
      {"rank_us", {1.0, 2.0, 3.0}, "more 'rank_us'"},
      {"verified", 1, "'verified'"},
      {"error", 3, "'error'"},
      {"rank_us", {-1.0, 1.0}, "'rank_us'"},
  };
  for (const auto& c : cases) {
    nlohmann::json j = ResultJson(Part({2, 0}, {30, 10}));
    j[c.key] = c.value;
    auto p = ParseResultJson(j);
    ASSERT_FALSE(p.ok()) << c.key;
    EXPECT_NE(p.error().message.find(c.says), std::string::npos) << p.error().message;
  }
  nlohmann::json j = ResultJson(r);
  j.erase("seed");
  ASSERT_FALSE(ParseResultJson(j).ok());
  EXPECT_NE(ParseResultJson(j).error().message.find("'seed' is missing"), std::string::npos);
  EXPECT_FALSE(ParseResultJson(nlohmann::json::array()).ok());
}

}  // namespace
}  // namespace ofan::emu
