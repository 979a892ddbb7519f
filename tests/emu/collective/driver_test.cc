// The engine end to end: schedules run by RankEngines under RunCollective
// over a LoopbackFabric that reorders messages and completions.
#include "emu/collective/driver.h"

#include <gtest/gtest.h>

#include <thread>
#include <tuple>

#include "emu/collective/loopback.h"
#include "emu/collective/pattern.h"

namespace ofan::emu {
namespace {

using namespace std::chrono_literals;

struct Harness {
  Schedule schedule;
  std::unique_ptr<LoopbackFabric> fabric;
};

Harness MakeHarness(Workload w, uint32_t n, uint64_t msg, uint32_t qps,
                    uint32_t max_outstanding = 4, uint32_t max_hold = 3, uint64_t seed = 1,
                    uint64_t chunk = 2048) {
  auto s = MakeSchedule({.workload = w,
                         .num_ranks = n,
                         .msg_bytes = msg,
                         .seed = seed,
                         .qps_per_peer = qps,
                         .chunk_bytes = chunk});
  EXPECT_TRUE(s.ok()) << s.error().message;
  LoopbackOptions o{.num_ranks = n,
                    .qps_per_peer = qps,
                    .max_outstanding = max_outstanding,
                    .send_bytes = s->MaxSendBytes(),
                    .recv_bytes = s->MaxRecvBytes(),
                    .max_hold = max_hold,
                    .seed = seed * 7919};
  return {std::move(*s), std::make_unique<LoopbackFabric>(o)};
}

CollectiveResult Go(Harness& run, RunOptions o = {}) {
  if (o.deadline == RunOptions{}.deadline) o.deadline = 20s;
  const std::vector<Transport*> eps = run.fabric->endpoints();
  return RunCollective(run.schedule, eps, o);
}

class EveryWorkload : public testing::TestWithParam<std::tuple<Workload, uint32_t>> {};

// Sizes: 1 byte (most blocks empty), not divisible by n, 4 or the chunk,
// exactly one chunk, many chunks. Odd QP counts leave uneven QP loads.
TEST_P(EveryWorkload, CompletesAndVerifiesWithReorderedCompletions) {
  const auto [w, n] = GetParam();
  for (uint32_t qps = 1; qps <= 4; ++qps) {
    for (uint64_t msg : {1ull, 13ull, 2048ull, 10007ull, 65536ull + 3}) {
      SCOPED_TRACE(testing::Message()
                   << WorkloadName(w) << " n=" << n << " qps=" << qps << " msg=" << msg);
      Harness run = MakeHarness(w, n, msg, qps, qps % 2 == 1 ? 1 : 4, 3, msg + qps);
      const CollectiveResult r = Go(run);
      ASSERT_TRUE(r.ok()) << r.error;
      EXPECT_TRUE(r.verified);
      EXPECT_EQ(r.bad_ranks, 0u);
      ASSERT_EQ(r.rank_us.size(), n);
      uint64_t writes = 0;
      for (const RankPlan& p : run.schedule.ranks) writes += p.writes.size();
      EXPECT_EQ(run.fabric->stats().delivered, writes);
      EXPECT_EQ(run.fabric->stats().rejected, 0u);
      EXPECT_EQ(r.msg_bytes, msg);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Collective, EveryWorkload,
                         testing::Combine(testing::Values(Workload::kPermutation,
                                                          Workload::kAllToAll, Workload::kAllGather,
                                                          Workload::kReduceScatter,
                                                          Workload::kIncast),
                                          testing::Range(2u, 17u)),
                         [](const auto& p) {
                           return std::string(WorkloadName(std::get<0>(p.param))) + "_" +
                                  std::to_string(std::get<1>(p.param));
                         });

// Receiver-driven admission (--cts): every workload completes and verifies
// with clear-to-sends reordered among the data, no rank ever has more
// chunks in flight to one receiver than it has slots there, and each
// granted slot's clear-to-send went over the fabric once.
TEST(Driver, CtsAdmitsNoMoreThanTheSlotsAndEveryWorkloadVerifies) {
  for (Workload w : {Workload::kPermutation, Workload::kAllToAll, Workload::kAllGather,
                     Workload::kReduceScatter, Workload::kIncast}) {
    for (uint32_t channels : {1u, 3u}) {
      for (uint32_t qps : {1u, 3u}) {
        SCOPED_TRACE(testing::Message()
                     << WorkloadName(w) << " channels=" << channels << " qps=" << qps);
        const uint32_t n = 7;
        auto s = MakeSchedule({.workload = w,
                               .num_ranks = n,
                               .msg_bytes = 40'000 + qps,
                               .seed = 5,
                               .qps_per_peer = qps,
                               .chunk_bytes = 1024,
                               .cts_channels = channels,
                               .cts_channel_bytes = 1024});
        ASSERT_TRUE(s.ok()) << s.error().message;
        LoopbackOptions lo{.num_ranks = n,
                           .qps_per_peer = qps,
                           .max_outstanding = 2,
                           .send_bytes = s->MaxSendBytes(),
                           .recv_bytes = s->MaxRecvBytes(),
                           .max_hold = 4,
                           .seed = channels * 31 + qps};
        Harness run{std::move(*s), std::make_unique<LoopbackFabric>(lo)};
        const CollectiveResult r = Go(run);
        ASSERT_TRUE(r.ok()) << r.error;
        EXPECT_TRUE(r.verified);
        EXPECT_LE(run.fabric->stats().max_pair_inflight, channels);
        EXPECT_GE(run.fabric->stats().max_pair_inflight, 1u);
        uint64_t writes = 0;
        for (const RankPlan& p : run.schedule.ranks) writes += p.writes.size();
        // Every chunk, and one clear-to-send per chunk (a slot granted per chunk).
        EXPECT_EQ(run.fabric->stats().delivered, 2 * writes);
        EXPECT_EQ(r.cts_channels, channels);
        EXPECT_LE(r.cts_waits_us.size(), writes);
        EXPECT_EQ(r.cts_flights_us.size(), writes) << "a clear-to-send per chunk, each timed";
        const nlohmann::json j = ResultJson(r);
        ASSERT_TRUE(j["cts_delay_us"].is_object());
        EXPECT_LE(j["cts_delay_us"]["p50"].get<double>(), j["cts_delay_us"]["p90"].get<double>());
        EXPECT_LE(j["cts_wait_us"]["p50"].get<double>(), j["cts_wait_us"]["p90"].get<double>());
      }
    }
  }
}

TEST(Driver, CtsParametersThatCannotWorkAreRefused) {
  for (auto [channels, bytes, chunk] :
       {std::tuple{1u, 0ull, 1024ull}, std::tuple{1u, 512ull, 1024ull},
        std::tuple{kMaxCtsChannels + 1, 4096ull, 1024ull}}) {
    auto s = MakeSchedule({.workload = Workload::kPermutation,
                           .num_ranks = 4,
                           .msg_bytes = 4096,
                           .chunk_bytes = chunk,
                           .cts_channels = channels,
                           .cts_channel_bytes = bytes});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("CTS"), std::string::npos) << s.error().message;
  }
}

// Default chunks (64 KiB), 1 MiB + 5 B, 16 ranks, 4 QPs, heavy reordering.
TEST(Driver, LargeMessagesOnSixteenRanks) {
  for (Workload w : {Workload::kPermutation, Workload::kAllToAll, Workload::kAllGather,
                     Workload::kReduceScatter}) {
    SCOPED_TRACE(WorkloadName(w));
    Harness run = MakeHarness(w, 16, (1 << 20) + 5, 4, 8, 8, 3, 64 * 1024);
    const CollectiveResult r = Go(run);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_TRUE(r.verified);
    EXPECT_GT(r.cct_us, 0);
    EXPECT_GT(r.algbw_gbps, 0);
  }
}

// Without reordering too, and the result lands where nccl-tests puts it.
TEST(Driver, ReduceScatterResultIsTheSumOfAllInputs) {
  Harness run = MakeHarness(Workload::kReduceScatter, 5, 4001, 2, 8, 0);
  const CollectiveResult r = Go(run);
  ASSERT_TRUE(r.ok()) << r.error;
  for (Rank k = 0; k < 5; ++k) {
    const uint64_t b = SplitBegin(4001, 5, 4, k), e = SplitBegin(4001, 5, 4, k + 1);
    const auto recv = run.fabric->endpoint(k).recv_buffer();
    for (uint64_t x = b; x < e; ++x) ASSERT_EQ(recv[x], SumPatternByte(5, x, 1)) << k << " " << x;
  }
}

TEST(Driver, CorruptedByteFailsVerificationWithRankAndOffset) {
  struct Case {
    Workload w;
    Rank rank;
    uint64_t offset;
  };
  // Permutation and all-to-all: any received byte. All-gather: a byte of the
  // block rank 2 receives last (3's), which it does not forward. Reduce-
  // scatter: a byte of rank 2's own block, the result.
  const uint64_t msg = 10000;
  for (const Case& c : {Case{Workload::kPermutation, 3, 1234}, Case{Workload::kAllToAll, 1, 2001},
                        Case{Workload::kAllGather, 2, SplitBegin(msg, 4, 1, 3) + 17},
                        Case{Workload::kReduceScatter, 2, SplitBegin(msg, 4, 4, 2) + 5}}) {
    SCOPED_TRACE(WorkloadName(c.w));
    Harness run = MakeHarness(c.w, 4, msg, 2);
    run.fabric->CorruptOnArrival(c.rank, c.offset, 0x40);
    const CollectiveResult r = Go(run);
    EXPECT_FALSE(r.verified);
    EXPECT_EQ(r.bad_ranks, 1u);
    EXPECT_NE(r.error.find("rank " + std::to_string(c.rank) + ": receive buffer offset " +
                           std::to_string(c.offset) + ":"),
              std::string::npos)
        << r.error;
    EXPECT_NE(r.error.find("verification failed"), std::string::npos) << r.error;
  }
}

// The same corruption in a forwarded all-gather block reaches every rank
// after it: each of them is reported bad.
TEST(Driver, CorruptionForwardedAlongTheRingIsSeenDownstream) {
  const uint64_t msg = 8000;
  Harness run = MakeHarness(Workload::kAllGather, 4, msg, 1);
  run.fabric->CorruptOnArrival(1, SplitBegin(msg, 4, 1, 0) + 3, 0x01);  // block 0, at step 0
  const CollectiveResult r = Go(run);
  EXPECT_FALSE(r.verified);
  EXPECT_EQ(r.bad_ranks, 3u) << r.error;  // 1, then 2 and 3 got it from 1
}

TEST(Driver, TransportErrorFailsTheRunWithItsMessage) {
  Harness run = MakeHarness(Workload::kAllGather, 4, 50000, 2);
  run.fabric->FailAfterPosts(2, 3, "retry count exceeded (PSN 17)");
  const CollectiveResult r = Go(run);
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.verified);
  EXPECT_NE(r.error.find("rank 2"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("retry count exceeded (PSN 17)"), std::string::npos) << r.error;
}

TEST(Driver, DeadlineFiresInsteadOfAHang) {
  Harness run = MakeHarness(Workload::kPermutation, 4, 50000, 2);
  run.fabric->DropPost(1, 2);  // lost for good
  RunOptions o;
  o.deadline = 200ms;
  const CollectiveResult r = Go(run, o);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("deadline of 200 ms"), std::string::npos) << r.error;
  // It names a rank that still waits, and for what.
  EXPECT_NE(r.error.find("writes acknowledged"), std::string::npos) << r.error;
}

TEST(Driver, WallClockDelayStillCompletes) {
  Harness run = MakeHarness(Workload::kAllToAll, 3, 3000, 2, 2, 0);
  LoopbackOptions o{.num_ranks = 3,
                    .qps_per_peer = 2,
                    .max_outstanding = 2,
                    .send_bytes = run.schedule.MaxSendBytes(),
                    .recv_bytes = run.schedule.MaxRecvBytes(),
                    .delay_us = 200};
  run.fabric = std::make_unique<LoopbackFabric>(o);
  const CollectiveResult r = Go(run);
  ASSERT_TRUE(r.ok()) << r.error;
  // Every rank waits at least one delay for its first write's completion.
  for (double t : r.rank_us) EXPECT_GT(t, 0);
}

// Records every Poll's max_wait_us, in order, over a loopback endpoint.
class RecordingTransport final : public Transport {
 public:
  RecordingTransport(Transport& inner, std::vector<std::pair<Rank, uint32_t>>* log)
      : t_(inner), log_(log) {}
  Rank rank() const override { return t_.rank(); }
  uint32_t num_ranks() const override { return t_.num_ranks(); }
  uint32_t qps_per_peer() const override { return t_.qps_per_peer(); }
  uint32_t max_outstanding() const override { return t_.max_outstanding(); }
  std::span<uint8_t> send_buffer() override { return t_.send_buffer(); }
  std::span<uint8_t> recv_buffer() override { return t_.recv_buffer(); }
  Status Post(const WriteRequest& w) override { return t_.Post(w); }
  void Poll(std::vector<Completion>* out, uint32_t max_wait_us) override {
    log_->push_back({t_.rank(), max_wait_us});
    t_.Poll(out, max_wait_us);
  }

 private:
  Transport& t_;
  std::vector<std::pair<Rank, uint32_t>>* log_;
};

// Every transport is polled in turn each sweep, and only one per sweep may
// wait, only after a sweep that found nothing.
TEST(Driver, PollsEveryTransportInTurnAndWaitsOnlyWhenIdle) {
  Harness run = MakeHarness(Workload::kAllGather, 3, 3000, 1, 4, 0);
  LoopbackOptions lo{.num_ranks = 3,
                     .qps_per_peer = 1,
                     .send_bytes = run.schedule.MaxSendBytes(),
                     .recv_bytes = run.schedule.MaxRecvBytes(),
                     .delay_us = 300};  // long enough for idle sweeps
  run.fabric = std::make_unique<LoopbackFabric>(lo);
  std::vector<std::pair<Rank, uint32_t>> log;
  std::vector<std::unique_ptr<RecordingTransport>> rec;
  std::vector<Transport*> eps;
  for (Transport* t : run.fabric->endpoints()) {
    rec.push_back(std::make_unique<RecordingTransport>(*t, &log));
    eps.push_back(rec.back().get());
  }
  RunOptions o;
  o.idle_wait_us = 7;
  const CollectiveResult r = RunCollective(run.schedule, eps, o);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(log.size() % 3, 0u);
  size_t waits = 0;
  for (size_t sweep = 0; sweep < log.size(); sweep += 3) {
    int waiting = 0;
    for (Rank i = 0; i < 3; ++i) {
      EXPECT_EQ(log[sweep + i].first, i);
      EXPECT_TRUE(log[sweep + i].second == 0 || log[sweep + i].second == 7);
      waiting += log[sweep + i].second != 0;
    }
    EXPECT_LE(waiting, 1);
    waits += waiting;
  }
  EXPECT_GT(waits, 0u);
  EXPECT_LT(waits, log.size() / 3);  // the first sweeps, busy, never wait
  EXPECT_EQ(log[0].second, 0u);
}

TEST(Driver, ProgressReachesTheTotal) {
  Harness run = MakeHarness(Workload::kAllGather, 4, 40000, 2);
  uint64_t last_done = 0, last_total = 0, calls = 0;
  RunOptions o;
  o.progress = [&](uint64_t done, uint64_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
    ++calls;
  };
  const CollectiveResult r = Go(run, o);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_GE(calls, 1u);
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(last_total, 3 * 40000u);  // each rank receives the n-1 other blocks
}

TEST(Driver, MismatchedTransportIsAnError) {
  Harness run = MakeHarness(Workload::kPermutation, 4, 1000, 2);
  auto other = MakeSchedule(
      {.workload = Workload::kPermutation, .num_ranks = 4, .msg_bytes = 1000, .qps_per_peer = 3});
  ASSERT_TRUE(other.ok());
  const std::vector<Transport*> eps = run.fabric->endpoints();
  const CollectiveResult r = RunCollective(*other, eps, {});
  EXPECT_NE(r.error.find("QPs per peer"), std::string::npos) << r.error;
  const std::vector<Transport*> twice = {eps[0], eps[1], eps[0]};
  const CollectiveResult dup = RunCollective(run.schedule, twice, {});
  EXPECT_NE(dup.error.find("two transports are rank 0"), std::string::npos) << dup.error;
  const CollectiveResult none = RunCollective(run.schedule, {}, {});
  EXPECT_NE(none.error.find("0 transports for 4 ranks"), std::string::npos) << none.error;
  // Buffers too small for the schedule.
  LoopbackFabric small({.num_ranks = 4, .qps_per_peer = 2, .send_bytes = 10, .recv_bytes = 10});
  const CollectiveResult tiny = RunCollective(run.schedule, small.endpoints(), {});
  EXPECT_NE(tiny.error.find("buffers of 10 / 10 B"), std::string::npos) << tiny.error;
}

// One collective split over two drivers in two threads, as over two
// processes (uroce processes, or VMs with one rank each): each verifies its
// own ranks, and the merged result has every rank's time.
TEST(Driver, SplitOverTwoDriversAndMerged) {
  for (Workload w : {Workload::kPermutation, Workload::kAllToAll, Workload::kAllGather,
                     Workload::kReduceScatter}) {
    SCOPED_TRACE(WorkloadName(w));
    Harness run = MakeHarness(w, 5, 30001, 2, 4, 2);
    const std::vector<Transport*> eps = run.fabric->endpoints();
    const std::vector<Transport*> a = {eps[3], eps[0]}, b = {eps[1], eps[2], eps[4]};
    RunOptions o;
    o.deadline = 20s;
    CollectiveResult ra, rb;
    std::thread other([&] { rb = RunCollective(run.schedule, b, o); });
    ra = RunCollective(run.schedule, a, o);
    other.join();
    ASSERT_TRUE(ra.ok()) << ra.error;
    ASSERT_TRUE(rb.ok()) << rb.error;
    EXPECT_TRUE(ra.partial());
    EXPECT_EQ(ra.local_ranks, (std::vector<Rank>{3, 0}));
    EXPECT_EQ(ra.rank_us.size(), 2u);
    const std::vector<CollectiveResult> parts = {ra, rb};
    auto m = MergeResults(parts);
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_FALSE(m->partial());
    EXPECT_TRUE(m->verified);
    ASSERT_EQ(m->rank_us.size(), 5u);
    EXPECT_EQ(m->rank_us[3], ra.rank_us[0]);
    EXPECT_EQ(m->rank_us[4], rb.rank_us[2]);
    EXPECT_EQ(m->cct_us, std::max(ra.cct_us, rb.cct_us));
  }
}

TEST(Driver, LowerBoundIsReportedAndBelowNothingItShouldNot) {
  Harness run = MakeHarness(Workload::kPermutation, 4, 100000, 2);
  RunOptions o;
  // emplace, then the fields: assigning a whole NicBoundParams (its hops
  // std::function included) trips g++ 12's -Wmaybe-uninitialized under ASan.
  o.bound.emplace();
  o.bound->link_gbps = 100;
  o.bound->rho = 0.9;
  o.bound->link_latency_us = 1;
  const CollectiveResult r = Go(run, o);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.cct_lower_bound_us.has_value());
  // 100000 B at 90 Gb/s is 8.9 us before headers, plus 4 us of propagation.
  EXPECT_GT(*r.cct_lower_bound_us, 12.9);
  o.bound->rho = 0;
  EXPECT_NE(Go(run, o).error.find("rho"), std::string::npos);
}

}  // namespace
}  // namespace ofan::emu
