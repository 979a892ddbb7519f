// dataplane/fabric/fifo.h: Fifo and SmallFifo hold exactly what a deque
// would through random pushes and pops, across SmallFifo's spill (deeper
// than its inline ring, refilled on pop) and Fifo's growth.
#include "dataplane/fabric/fifo.h"

#include <gtest/gtest.h>

#include <deque>

#include "common/rng.h"

namespace ofan::fabric {
namespace {

struct Item {
  uint64_t a = 0;
  uint32_t b = 0;
};

template <class Q>
void CheckAgainstDeque(uint64_t seed) {
  Rng rng(SplitMix64(seed));
  Q q;
  std::deque<Item> ref;
  uint64_t next = 0;
  for (int step = 0; step < 200000; ++step) {
    // Phases that fill deep (spill) and drain to empty, then mixed.
    const uint32_t phase = (step / 5000) % 3;
    const bool push = phase == 0   ? rng.Below(4) != 0
                      : phase == 1 ? rng.Below(4) == 0
                                   : rng.Below(2);
    if (push) {
      const Item it{next, static_cast<uint32_t>(next * 7)};
      ++next;
      q.push(it);
      ref.push_back(it);
    } else if (!ref.empty()) {
      ASSERT_FALSE(q.empty());
      ASSERT_EQ(q.front().a, ref.front().a);
      ASSERT_EQ(q.front().b, ref.front().b);
      q.pop();
      ref.pop_front();
    }
    ASSERT_EQ(q.size(), ref.size());
    ASSERT_EQ(q.empty(), ref.empty());
  }
}

TEST(Fifo, HoldsWhatADequeHolds) {
  for (uint64_t seed = 1; seed <= 3; ++seed) CheckAgainstDeque<Fifo<Item>>(seed);
}

TEST(SmallFifo, HoldsWhatADequeHoldsAcrossItsSpill) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    CheckAgainstDeque<SmallFifo<Item, 1>>(seed);
    CheckAgainstDeque<SmallFifo<Item, 4>>(seed);
    CheckAgainstDeque<SmallFifo<Item, 16>>(seed);
  }
}

TEST(SmallFifo, AShallowQueueStaysInline) {
  SmallFifo<Item, 4> q;
  for (uint64_t round = 0; round < 100; ++round) {
    for (uint64_t i = 0; i < 4; ++i) q.push({round * 4 + i, 0});
    EXPECT_EQ(q.size(), 4u);
    for (uint64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(q.front().a, round * 4 + i);
      q.pop();
    }
    EXPECT_TRUE(q.empty());
  }
  // A fifth entry goes to the spill and comes back in order.
  for (uint64_t i = 0; i < 5; ++i) q.push({i, 0});
  for (uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(q.front().a, i);
    q.pop();
  }
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace ofan::fabric
