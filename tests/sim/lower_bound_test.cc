#include "sim/lower_bound.h"

#include <gtest/gtest.h>

namespace ofan::sim {
namespace {

TEST(AppendixABound, ReproducesThePapersExample) {
  // App. A: §6 defaults, m = 256 packets over H = 6 hops -> 17.05694 us.
  SimConfig c;
  const double b = AppendixABound(Timing::From(c), 256, 6, 1.0);
  EXPECT_NEAR(b * 1e6, 17.05694, 1e-5);
}

TEST(AppendixABound, GrowsWithMessageAndHops) {
  SimConfig c;
  const Timing t = Timing::From(c);
  double prev = 0;
  for (uint64_t m : {1, 10, 77, 78, 79, 100, 256, 1024, 4096}) {
    const double b = AppendixABound(t, m, 6, 1.0);
    EXPECT_GT(b, prev) << m;
    prev = b;
  }
  EXPECT_LT(AppendixABound(t, 256, 2, 1.0), AppendixABound(t, 256, 4, 1.0));
  EXPECT_LT(AppendixABound(t, 256, 4, 1.0), AppendixABound(t, 256, 6, 1.0));
  // Slower pacing can only lengthen the bound.
  EXPECT_GT(AppendixABound(t, 256, 6, 0.5), AppendixABound(t, 256, 6, 1.0));
}

TEST(AppendixABound, LargeMessagesApproachTheSerialisationTime) {
  // m data frames and m ACKs through one NIC: m (Td' + Ta') plus latency.
  SimConfig c;
  const Timing t = Timing::From(c);
  const uint64_t m = 1 << 16;
  const double b = AppendixABound(t, m, 6, 1.0);
  const double serial = static_cast<double>(m) * (t.td + t.ta + 2 * t.tg);
  EXPECT_GT(b, serial);
  EXPECT_LT(b, serial + 10e-6);
}

TEST(CctLowerBound, PermutationUsesAppendixAAndOthersAreNaive) {
  SimConfig c;
  c.k = 4;
  auto tree = lb::FatTree::Make(4, 3);
  ASSERT_TRUE(tree.ok());
  std::vector<Flow> perm = {{0, 15, 1 << 20}, {15, 0, 1 << 20}};
  LowerBound b = CctLowerBound(c, *tree, perm);
  EXPECT_STREQ(b.kind, "appendix_a");
  EXPECT_NEAR(b.seconds * 1e6, 17.05694, 1e-5);
  std::vector<Flow> incast = {{0, 15, 1 << 20}, {1, 15, 1 << 20}};
  b = CctLowerBound(c, *tree, incast);
  EXPECT_STREQ(b.kind, "naive");
  // The receiver's NIC must send 512 ACKs and nothing else; the senders 256 frames each.
  EXPECT_GT(b.seconds, 256 * Timing::From(c).td);
}

}  // namespace
}  // namespace ofan::sim
