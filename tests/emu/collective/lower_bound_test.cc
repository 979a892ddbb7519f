#include "emu/collective/lower_bound.h"

#include <gtest/gtest.h>

#include "dataplane/lb/fat_tree.h"

namespace ofan::emu {
namespace {

Schedule Perm(uint32_t n, uint64_t msg, uint64_t chunk = 65536) {
  return *MakeSchedule({.workload = Workload::kPermutation,
                        .num_ranks = n,
                        .msg_bytes = msg,
                        .qps_per_peer = 1,
                        .chunk_bytes = chunk});
}

TEST(LowerBound, WireBytesCountHeadersPerPacket) {
  // One packet: 82 B of gap, headers and trailers, RETH and ImmDt.
  EXPECT_EQ(WriteWireBytes(1, 2048), 1u + 82 + 16 + 4);
  EXPECT_EQ(WriteWireBytes(2048, 2048), 2048u + 82 + 16 + 4);
  EXPECT_EQ(WriteWireBytes(2049, 2048), 2049u + 2 * 82 + 16 + 4);
  EXPECT_EQ(LastFrameWireBytes(2049, 2048), 1u + 82 + 4);
  EXPECT_EQ(LastFrameWireBytes(100, 2048), 100u + 82 + 16 + 4);
  EXPECT_EQ(kAckWireBytes, 86u);
}

// By hand: 2 ranks, 4096 B each way in one write of 2 packets = 4280 B on
// the wire; at 0.5 x 100 Gb/s that is 0.6848 us. Then 2 links of 1 us there
// and back, the 2134 B last frame once more at the switch (0.17072 us) and
// the 86 B ACK on both links (0.01376 us): 4.86928 us.
TEST(LowerBound, PermutationByHand) {
  auto b = NicBoundUs(Perm(2, 4096), {},
                      {.link_gbps = 100, .rho = 0.5, .link_latency_us = 1, .mtu = 2048});
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_NEAR(*b, 4.86928, 1e-9);
}

TEST(LowerBound, UsesThePathLengthOfTheHosts) {
  // k=4 fat tree: hosts 0 and 1 share an edge switch (2 links), hosts 0 and
  // 15 are in different pods (6 links).
  const lb::FatTree tree = *lb::FatTree::Make(4, 3);
  auto hops = [&](uint32_t a, uint32_t b) { return tree.hops(lb::HostId(a), lb::HostId(b)); };
  const Schedule s = Perm(2, 4096);
  const NicBoundParams p{.link_gbps = 100, .rho = 1, .link_latency_us = 1, .hops = hops};
  const std::vector<uint32_t> near = {0, 1}, far = {0, 15};
  auto a = NicBoundUs(s, near, p);
  auto b = NicBoundUs(s, far, p);
  ASSERT_TRUE(a.ok() && b.ok());
  // 4 more links each way, 4 more store-and-forwards of the last frame and
  // 4 more ACK serialisations.
  EXPECT_NEAR(*b - *a, 8 * 1.0 + 4 * 8.0 * 2134 / 1e5 + 4 * 8.0 * 86 / 1e5, 1e-9);
}

TEST(LowerBound, GrowsWithBytesAndChunks) {
  const NicBoundParams p{.link_gbps = 100};
  const double one = *NicBoundUs(Perm(4, 1 << 20), {}, p);
  const double two = *NicBoundUs(Perm(4, 2 << 20), {}, p);
  EXPECT_GT(two, 1.9 * one);
  // Smaller chunks: one more RETH + ImmDt each.
  EXPECT_GT(*NicBoundUs(Perm(4, 1 << 20, 4096), {}, p), one);
  // 1 MiB at 100 Gb/s is 83.9 us before headers.
  EXPECT_GT(one, 83.88);
}

// An incast waits for the receiver's link: 15 writes of 4096 B (4280 B on
// the wire each) at 100 Gb/s = 5.136 us, plus 2 links of 1 us; each sender
// alone would be done in 4.87 us at rho 0.5.
TEST(LowerBound, AnIncastIsBoundByTheReceiversLink) {
  const Schedule s = *MakeSchedule(
      {.workload = Workload::kIncast, .num_ranks = 16, .msg_bytes = 4096, .chunk_bytes = 65536});
  auto b = NicBoundUs(s, {}, {.link_gbps = 100, .rho = 0.5, .link_latency_us = 1, .mtu = 2048});
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_NEAR(*b, 15 * 4280 * 8.0 / 1e5 + 2.0, 1e-9);
}

TEST(LowerBound, RejectsBadParameters) {
  const Schedule s = Perm(2, 4096);
  EXPECT_FALSE(NicBoundUs(s, {}, {.link_gbps = 0}).ok());
  EXPECT_FALSE(NicBoundUs(s, {}, {.link_gbps = 1, .rho = 1.5}).ok());
  EXPECT_FALSE(NicBoundUs(s, {}, {.link_gbps = 1, .mtu = 100}).ok());
  const std::vector<uint32_t> three = {0, 1, 2};
  EXPECT_FALSE(NicBoundUs(s, three, {.link_gbps = 1}).ok());
  EXPECT_FALSE(
      NicBoundUs(s, {}, {.link_gbps = 1, .hops = [](uint32_t, uint32_t) { return 0; }}).ok());
}

}  // namespace
}  // namespace ofan::emu
