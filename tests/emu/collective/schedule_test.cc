#include "emu/collective/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "dataplane/lb/fat_tree.h"
#include "sim/config.h"
#include "sim/workload.h"

namespace ofan::emu {
namespace {

Schedule Make(Workload w, uint32_t n, uint64_t msg, uint32_t qps = 1, uint64_t chunk = 4096,
              uint64_t seed = 1) {
  auto s = MakeSchedule({.workload = w,
                         .num_ranks = n,
                         .msg_bytes = msg,
                         .seed = seed,
                         .qps_per_peer = qps,
                         .chunk_bytes = chunk});
  EXPECT_TRUE(s.ok()) << s.error().message;
  return *s;
}

// [begin, end) byte ranges, checked to tile [lo, hi) exactly once.
void ExpectTiles(std::vector<std::pair<uint64_t, uint64_t>> r, uint64_t lo, uint64_t hi) {
  std::sort(r.begin(), r.end());
  uint64_t at = lo;
  for (auto [b, e] : r) {
    EXPECT_EQ(b, at) << "gap or overlap";
    EXPECT_LT(b, e) << "empty chunk";
    at = e;
  }
  EXPECT_EQ(at, hi);
}

TEST(Schedule, NamesRoundTrip) {
  for (Workload w : {Workload::kPermutation, Workload::kAllToAll, Workload::kAllGather,
                     Workload::kReduceScatter, Workload::kIncast}) {
    auto p = ParseWorkload(WorkloadName(w));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, w);
  }
  EXPECT_EQ(*ParseWorkload("perm"), Workload::kPermutation);  // ofan-emu's names
  EXPECT_EQ(*ParseWorkload("a2a"), Workload::kAllToAll);
  auto bad = ParseWorkload("allreduce");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("allreduce"), std::string::npos);
}

TEST(Schedule, RejectsBadParameters) {
  const ScheduleParams good{.workload = Workload::kAllGather, .num_ranks = 4, .msg_bytes = 100};
  EXPECT_TRUE(MakeSchedule(good).ok());
  auto with = [&](auto f) {
    ScheduleParams p = good;
    f(p);
    return MakeSchedule(p);
  };
  EXPECT_FALSE(with([](ScheduleParams& p) { p.num_ranks = 1; }).ok());
  EXPECT_FALSE(with([](ScheduleParams& p) { p.msg_bytes = 0; }).ok());
  EXPECT_FALSE(with([](ScheduleParams& p) { p.qps_per_peer = 0; }).ok());
  EXPECT_FALSE(with([](ScheduleParams& p) { p.chunk_bytes = 6; }).ok());
  auto many = with([](ScheduleParams& p) {
    p.workload = Workload::kPermutation;
    p.msg_bytes = uint64_t{1} << 30;
    p.chunk_bytes = 4;
  });
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("chunk"), std::string::npos);
}

TEST(Schedule, SplitIsEvenAndAligned) {
  for (uint64_t total : {1ull, 3ull, 7ull, 100ull, 1001ull, 65537ull}) {
    for (uint32_t parts : {1u, 2u, 3u, 7u, 16u}) {
      for (uint32_t align : {1u, 4u}) {
        EXPECT_EQ(SplitBegin(total, parts, align, 0), 0u);
        EXPECT_EQ(SplitBegin(total, parts, align, parts), total);
        const uint64_t units = (total + align - 1) / align;
        for (uint32_t i = 0; i < parts; ++i) {
          const uint64_t b = SplitBegin(total, parts, align, i);
          const uint64_t e = SplitBegin(total, parts, align, i + 1);
          EXPECT_LE(b, e);
          EXPECT_EQ(b % align, 0u);
          // At most one unit more than the floor of an even share.
          EXPECT_LE((e - b + align - 1) / align, units / parts + 1);
        }
      }
    }
  }
}

TEST(Schedule, ImmediateNamesStepAndChunk) {
  EXPECT_EQ(ImmStep(MakeImm(7, 12345)), 7u);
  EXPECT_EQ(ImmChunk(MakeImm(7, 12345)), 12345u);
  EXPECT_EQ(ImmChunk(MakeImm(kMaxSteps - 1, kMaxChunksPerGroup - 1)), kMaxChunksPerGroup - 1);
  EXPECT_EQ(ImmStep(MakeImm(kMaxSteps - 1, kMaxChunksPerGroup - 1)), kMaxSteps - 1);
}

TEST(Schedule, PermutationIsADerangementAndOfanSimsPairs) {
  for (uint32_t n = 2; n <= 40; ++n) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      const Schedule s = Make(Workload::kPermutation, n, 1000, 2, 4096, seed);
      std::set<Rank> dsts(s.peer_of.begin(), s.peer_of.end());
      EXPECT_EQ(dsts.size(), n);
      for (Rank i = 0; i < n; ++i) {
        EXPECT_NE(s.peer_of[i], i);
        EXPECT_LT(s.peer_of[i], n);
        std::vector<std::pair<uint64_t, uint64_t>> tiles;
        for (const PlannedWrite& w : s.ranks[i].writes) {
          EXPECT_EQ(w.peer, s.peer_of[i]);
          tiles.push_back({w.src_off, w.src_off + w.len});
        }
        ExpectTiles(tiles, 0, 1000);
      }
    }
  }
  // The same pairs as ofan-sim's permutation on a k=4 fat tree (16 hosts)
  // and a k=8 one (128), for the same seed.
  for (int k : {4, 8}) {
    const lb::FatTree tree = *lb::FatTree::Make(k, 3);
    for (uint64_t seed : {1ull, 2ull, 42ull}) {
      sim::SimConfig c;
      c.k = k;
      c.seed = seed;
      c.workload = sim::WorkloadKind::kPerm;
      auto flows = sim::MakeWorkload(c, tree);
      ASSERT_TRUE(flows.ok());
      const auto n = static_cast<uint32_t>(tree.num_hosts());
      const Schedule s = Make(Workload::kPermutation, n, 4096, 1, 4096, seed);
      ASSERT_EQ(flows->size(), n);
      for (const sim::Flow& f : *flows) EXPECT_EQ(s.peer_of[f.src], f.dst);
    }
  }
}

TEST(Schedule, ChunksRoundRobinOverQpsAndRespectTheChunkSize) {
  for (uint32_t qps = 1; qps <= 4; ++qps) {
    for (uint64_t msg : {1ull, 3ull, 4096ull, 10001ull, 65536ull}) {
      const Schedule s = Make(Workload::kPermutation, 3, msg, qps, 4096);
      for (const RankPlan& p : s.ranks) {
        std::vector<std::pair<uint64_t, uint64_t>> tiles;
        for (const PlannedWrite& w : p.writes) {
          EXPECT_EQ(w.qp, w.chunk % qps);
          EXPECT_LE(w.len, 4096u);
          EXPECT_EQ(w.src_off, w.dst_off);
          tiles.push_back({w.src_off, w.src_off + w.len});
        }
        ExpectTiles(tiles, 0, msg);
        // Big enough transfers use every QP.
        if (msg >= qps) {
          EXPECT_GE(p.writes.size(), qps);
        }
      }
    }
  }
}

TEST(Schedule, AllToAllSendsChunkJToRankJ) {
  for (uint32_t n : {2u, 3u, 5u, 8u}) {
    for (uint64_t msg : {1ull, 7ull, 1000ull, 4097ull * 3}) {
      const Schedule s = Make(Workload::kAllToAll, n, msg, 2, 512);
      for (Rank j = 0; j < n; ++j) {
        const uint64_t len = SplitBegin(msg, n, 1, j + 1) - SplitBegin(msg, n, 1, j);
        EXPECT_EQ(s.ranks[j].recv_bytes, n * len);
        std::vector<std::pair<uint64_t, uint64_t>> slots;  // at j, from everyone
        for (Rank i = 0; i < n; ++i) {
          std::vector<std::pair<uint64_t, uint64_t>> sent;  // from i's buffer
          for (const PlannedWrite& w : s.ranks[i].writes) {
            if (w.peer != j) continue;
            sent.push_back({w.src_off, w.src_off + w.len});
            slots.push_back({w.dst_off, w.dst_off + w.len});
            EXPECT_EQ(w.dst_off - i * len, w.src_off - SplitBegin(msg, n, 1, j));
          }
          for (const LocalCopy& c : s.ranks[i].local) {
            if (i != j) continue;
            sent.push_back({c.src_off, c.src_off + c.len});
            slots.push_back({c.dst_off, c.dst_off + c.len});
          }
          if (len > 0) ExpectTiles(sent, SplitBegin(msg, n, 1, j), SplitBegin(msg, n, 1, j + 1));
        }
        if (len > 0) ExpectTiles(slots, 0, n * len);
      }
    }
  }
}

// Every ring step sends each block's chunks exactly once, from each rank to
// the next, and a forwarded chunk waits for the same chunk of the step before.
TEST(Schedule, RingStepsSendEachChunkExactlyOncePerStep) {
  for (Workload wl : {Workload::kAllGather, Workload::kReduceScatter}) {
    const bool rs = wl == Workload::kReduceScatter;
    for (uint32_t n = 2; n <= 9; ++n) {
      for (uint32_t qps = 1; qps <= 4; ++qps) {
        for (uint64_t msg : {1ull, 5ull, 999ull, 40003ull}) {
          SCOPED_TRACE(testing::Message()
                       << WorkloadName(wl) << " n=" << n << " qps=" << qps << " msg=" << msg);
          const Schedule s = Make(wl, n, msg, qps, 1024);
          ASSERT_EQ(s.num_steps, n - 1);
          const uint32_t align = rs ? 4 : 1;
          for (uint32_t step = 0; step < n - 1; ++step) {
            std::map<uint64_t, int> blocks_sent;  // block begin -> ranks sending it
            for (Rank r = 0; r < n; ++r) {
              const uint32_t blk = (r + 2 * n - step - (rs ? 1 : 0)) % n;
              const uint64_t b = SplitBegin(msg, n, align, blk);
              const uint64_t e = SplitBegin(msg, n, align, blk + 1);
              std::vector<std::pair<uint64_t, uint64_t>> tiles;
              for (const PlannedWrite& w : s.ranks[r].writes) {
                if (w.step != step) continue;
                EXPECT_EQ(w.peer, (r + 1) % n);
                EXPECT_EQ(w.qp, w.chunk % qps);
                EXPECT_EQ(w.src_off, w.dst_off);
                EXPECT_EQ(w.src_off % align, 0u);
                tiles.push_back({w.src_off, w.src_off + w.len});
                if (step == 0) {
                  EXPECT_EQ(w.after, kNoDep);
                  continue;
                }
                ASSERT_NE(w.after, kNoDep);
                const PlannedArrival& a = s.ranks[r].arrivals[w.after];
                EXPECT_EQ(a.from, (r + n - 1) % n);
                EXPECT_EQ(a.step, step - 1);
                EXPECT_EQ(a.chunk, w.chunk);
                EXPECT_EQ(a.off, w.src_off);
                EXPECT_EQ(a.len, w.len);
                EXPECT_EQ(a.action, rs ? OnArrival::kReduceToSend : OnArrival::kCopyToSend);
              }
              if (b == e) {
                EXPECT_TRUE(tiles.empty());
              } else {
                ExpectTiles(tiles, b, e);
                ++blocks_sent[b];
              }
            }
            for (auto [b, count] : blocks_sent) EXPECT_EQ(count, 1) << "block at " << b;
          }
          // The last step's arrivals end the ring: the result (reduce-scatter)
          // or nothing to do (all-gather), never a forward.
          for (Rank r = 0; r < n; ++r) {
            for (const PlannedArrival& a : s.ranks[r].arrivals) {
              if (a.step + 1 != n - 1) continue;
              EXPECT_EQ(a.unblocks, kNoDep);
              EXPECT_EQ(a.action, rs ? OnArrival::kReduceToRecv : OnArrival::kNone);
              // The block that arrives last is the rank's own.
              const uint32_t own = rs ? r : (r + 1) % n;
              EXPECT_GE(a.off, SplitBegin(msg, n, align, own));
              EXPECT_LT(a.off, SplitBegin(msg, n, align, own + 1));
            }
          }
        }
      }
    }
  }
}

TEST(Schedule, IncastSendsEverySendersBytesToRankZeroSideBySide) {
  const Schedule s = Make(Workload::kIncast, 16, 10'000, 2);
  ASSERT_EQ(s.ranks[0].writes.size(), 0u);
  EXPECT_EQ(s.ranks[0].recv_bytes, 15u * 10'000);
  std::vector<std::pair<uint64_t, uint64_t>> tiles;
  for (Rank r = 1; r < 16; ++r) {
    EXPECT_EQ(s.ranks[r].send_bytes, 10'000u);
    for (const PlannedWrite& w : s.ranks[r].writes) {
      EXPECT_EQ(w.peer, 0u);
      tiles.push_back({w.dst_off, w.dst_off + w.len});
    }
    EXPECT_TRUE(s.ranks[r].arrivals.empty());
  }
  ExpectTiles(tiles, 0, 15u * 10'000);
  EXPECT_TRUE(std::is_sorted(s.ranks[0].arrivals.begin(), s.ranks[0].arrivals.end(),
                             [](const PlannedArrival& a, const PlannedArrival& b) {
                               return std::tie(a.from, a.step, a.chunk) <
                                      std::tie(b.from, b.step, b.chunk);
                             }));
  EXPECT_EQ(s.ranks[0].expect.size(), 15u);
}

TEST(Schedule, IncastSendersAreSpreadAndBounded) {
  // Three of 15: one in each other pod of a k=4 fat tree's 16 hosts.
  EXPECT_EQ(IncastSenders(16, 3), (std::vector<Rank>{1, 6, 11}));
  EXPECT_EQ(IncastSenders(16, 0).size(), 15u);
  EXPECT_EQ(IncastSenders(16, 15).size(), 15u);
  EXPECT_EQ(IncastSenders(2, 1), (std::vector<Rank>{1}));
  auto s = MakeSchedule(
      {.workload = Workload::kIncast, .num_ranks = 16, .msg_bytes = 4096, .incast_senders = 3});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->ranks[0].recv_bytes, 3u * 4096);
  EXPECT_FALSE(s->ranks[6].writes.empty());
  EXPECT_TRUE(s->ranks[2].writes.empty());
  auto too_many = MakeSchedule(
      {.workload = Workload::kIncast, .num_ranks = 4, .msg_bytes = 4096, .incast_senders = 4});
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message.find("at most 3"), std::string::npos);
}

TEST(Schedule, TheVictimFlowSharesNoEndWithTheIncast) {
  // Neither rank 1 (the receiver's neighbour) nor rank 15 (the victim's
  // sender) sends to rank 0; 15 sends to 1 what a sender sends to 0.
  EXPECT_EQ(IncastSenders(16, 0, true).size(), 13u);
  EXPECT_EQ(IncastSenders(16, 0, true).front(), 2u);
  EXPECT_EQ(IncastSenders(16, 0, true).back(), 14u);
  EXPECT_EQ(IncastSenders(16, 3, true), (std::vector<Rank>{2, 6, 10}));
  EXPECT_TRUE(IncastSenders(3, 0, true).empty());
  auto s = MakeSchedule({.workload = Workload::kIncast,
                         .num_ranks = 16,
                         .msg_bytes = 4096,
                         .incast_senders = 0,
                         .victim = true});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->ranks[0].recv_bytes, 13u * 4096);
  EXPECT_EQ(s->ranks[1].recv_bytes, 4096u);
  ASSERT_EQ(s->ranks[1].expect.size(), 1u);
  EXPECT_EQ(s->ranks[1].expect[0].src, 15u);
  ASSERT_FALSE(s->ranks[15].writes.empty());
  for (const PlannedWrite& w : s->ranks[15].writes) EXPECT_EQ(w.peer, 1u);
  EXPECT_TRUE(s->ranks[1].writes.empty());
  auto bad = [](ScheduleParams p, const char* says) {
    auto r = MakeSchedule(p);
    ASSERT_FALSE(r.ok()) << says;
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
  };
  bad({.workload = Workload::kPermutation, .num_ranks = 16, .msg_bytes = 4096, .victim = true},
      "beside an incast");
  bad({.workload = Workload::kIncast, .num_ranks = 3, .msg_bytes = 4096, .victim = true},
      "needs 4 ranks");
  bad({.workload = Workload::kIncast,
       .num_ranks = 16,
       .msg_bytes = 4096,
       .incast_senders = 14,
       .victim = true},
      "at most 13");
}

TEST(Schedule, FindArrivalByImmediate) {
  const Schedule s = Make(Workload::kAllGather, 4, 40000, 2, 1024);
  const RankPlan& p = s.ranks[2];
  for (uint32_t a = 0; a < p.arrivals.size(); ++a) {
    const PlannedArrival& pa = p.arrivals[a];
    EXPECT_EQ(p.FindArrival(pa.from, MakeImm(pa.step, pa.chunk)), a);
  }
  EXPECT_EQ(p.FindArrival(3, MakeImm(0, 0)), kNoDep);  // 2 hears from 1 only
  EXPECT_EQ(p.FindArrival(1, MakeImm(9, 0)), kNoDep);
}

TEST(Schedule, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusBwFactor(Workload::kPermutation, 16), 1.0);
  EXPECT_DOUBLE_EQ(BusBwFactor(Workload::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBwFactor(Workload::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBwFactor(Workload::kAllToAll, 2), 0.5);
}

}  // namespace
}  // namespace ofan::emu
