#include "emu/collective/loopback.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace ofan::emu {
namespace {

LoopbackOptions Opts(uint32_t max_hold, uint32_t max_outstanding = 64) {
  return {.num_ranks = 3,
          .qps_per_peer = 2,
          .max_outstanding = max_outstanding,
          .send_bytes = 4096,
          .recv_bytes = 4096,
          .max_hold = max_hold,
          .seed = 5};
}

WriteRequest W(Rank peer, uint32_t qp, uint64_t off, uint64_t len, uint64_t id) {
  return {
      .peer = peer, .qp = qp, .src_off = off, .dst_off = off, .len = len, .imm = 0, .wr_id = id};
}

// Posts 40 writes from rank 0 to rank 1 and returns the wr_ids in the order
// their kWriteDone came out, polling until all have.
std::vector<uint64_t> DoneOrder(LoopbackFabric& f) {
  for (uint64_t i = 0; i < 40; ++i) {
    EXPECT_TRUE(f.endpoint(0).Post(W(1, i % 2, i * 8, 8, i)).ok());
  }
  std::vector<uint64_t> order;
  std::vector<Completion> out;
  for (int polls = 0; polls < 1000 && order.size() < 40; ++polls) {
    out.clear();
    f.endpoint(0).Poll(&out, 0);
    for (const Completion& c : out) {
      EXPECT_EQ(c.kind, CompletionKind::kWriteDone);
      order.push_back(c.wr_id);
    }
  }
  return order;
}

TEST(Loopback, DeliversBytesAndBothCompletions) {
  LoopbackFabric f(Opts(0));
  auto send = f.endpoint(0).send_buffer();
  std::iota(send.begin(), send.end(), 0);
  ASSERT_TRUE(
      f.endpoint(0)
          .Post(
              {.peer = 2, .qp = 1, .src_off = 10, .dst_off = 100, .len = 5, .imm = 77, .wr_id = 9})
          .ok());
  std::vector<Completion> at0, at2;
  f.endpoint(0).Poll(&at0, 0);
  f.endpoint(2).Poll(&at2, 0);
  ASSERT_EQ(at0.size(), 1u);
  EXPECT_EQ(at0[0].kind, CompletionKind::kWriteDone);
  EXPECT_EQ(at0[0].wr_id, 9u);
  EXPECT_EQ(at0[0].peer, 2u);
  ASSERT_EQ(at2.size(), 1u);
  EXPECT_EQ(at2[0].kind, CompletionKind::kWriteArrived);
  EXPECT_EQ(at2[0].imm, 77u);
  EXPECT_EQ(at2[0].len, 5u);
  EXPECT_EQ(at2[0].peer, 0u);
  EXPECT_EQ(at2[0].qp, 1u);
  auto recv = f.endpoint(2).recv_buffer();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(recv[100 + i], 10 + i);
}

TEST(Loopback, HoldingReordersCompletionsReproduciblyBySeed) {
  LoopbackFabric in_order(Opts(0));
  std::vector<uint64_t> ids(40);
  std::iota(ids.begin(), ids.end(), 0);
  EXPECT_EQ(DoneOrder(in_order), ids);
  LoopbackFabric a(Opts(4)), b(Opts(4));
  const std::vector<uint64_t> oa = DoneOrder(a);
  ASSERT_EQ(oa.size(), 40u);
  EXPECT_NE(oa, ids);
  EXPECT_EQ(DoneOrder(b), oa);  // same seed, same polls
  std::vector<uint64_t> sorted = oa;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, ids);  // each exactly once
}

TEST(Loopback, AnEmptyWriteCarriesItsImmediateAlone) {
  LoopbackFabric f(Opts(0, 2));
  Transport& a = f.endpoint(0);
  Transport& b = f.endpoint(1);
  WriteRequest w = W(1, 0, 0, 0, 7);
  w.imm = 0xC75;
  ASSERT_TRUE(a.Post(w).ok());
  std::vector<Completion> got;
  for (int i = 0; i < 10 && got.empty(); ++i) b.Poll(&got, 0);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, CompletionKind::kWriteArrived);
  EXPECT_EQ(got[0].len, 0u);
  EXPECT_EQ(got[0].imm, 0xC75u);
  EXPECT_EQ(f.stats().max_pair_inflight, 0u);  // no data
}

TEST(Loopback, PostRejectsBadWritesAndLeavesNothingQueued) {
  LoopbackFabric f(Opts(0, 2));
  Transport& t = f.endpoint(0);
  EXPECT_FALSE(t.Post(W(0, 0, 0, 8, 0)).ok());     // to itself
  EXPECT_FALSE(t.Post(W(3, 0, 0, 8, 0)).ok());     // no such rank
  EXPECT_FALSE(t.Post(W(1, 2, 0, 8, 0)).ok());     // no such QP
  EXPECT_FALSE(t.Post(W(1, 0, 4090, 8, 0)).ok());  // past the buffers
  EXPECT_TRUE(t.Post(W(1, 0, 0, 8, 0)).ok());
  EXPECT_TRUE(t.Post(W(1, 0, 0, 8, 1)).ok());
  auto third = t.Post(W(1, 0, 0, 8, 2));  // max_outstanding 2 on (1, QP 0)
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.error().message.find("outstanding"), std::string::npos);
  EXPECT_TRUE(t.Post(W(1, 1, 0, 8, 3)).ok());  // another QP has room
  EXPECT_EQ(f.stats().rejected, 5u);
  std::vector<Completion> out;
  t.Poll(&out, 0);
  EXPECT_EQ(out.size(), 3u);
  EXPECT_TRUE(t.Post(W(1, 0, 0, 8, 4)).ok());  // room again once seen complete
}

}  // namespace
}  // namespace ofan::emu
