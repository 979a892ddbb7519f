// The calendar queue pops exactly what one global (time, sequence) heap
// would: random pushes near and far, ties, jumps over empty time.
#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include "common/rng.h"

namespace ofan::sim {
namespace {

TEST(EventQueue, PopsInTheOrderOfOneGlobalHeap) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    Rng rng(SplitMix64(seed));
    EventQueue q;
    EventHeap ref;
    uint64_t seq = 0;
    TimePs now = 0;
    auto push = [&](TimePs t) {
      Event e{};
      e.t = t;
      e.node = static_cast<uint32_t>(seq);
      q.Push(e);
      ref.Push(e, seq++);
    };
    for (int i = 0; i < 64; ++i) push(rng.Below(1000));
    for (int step = 0; step < 200000 && !ref.empty(); ++step) {
      const Event want = ref.Pop();
      const Event got = q.Pop();
      ASSERT_EQ(got.t, want.t);
      ASSERT_EQ(got.node, want.node);  // the push order
      now = got.t;
      // Pushes: same time (ties), same bucket, within the horizon, far
      // beyond it, ties around the horizon, crowded buckets; sometimes none
      // (the queue drains and jumps).
      const uint32_t n = step < 150000 ? rng.Below(3) : 0;
      for (uint32_t j = 0; j < n; ++j) {
        switch (rng.Below(7)) {
          case 0:
            push(now);
            break;
          case 1:
            push(now + rng.Below(256));
            break;
          case 2:
            push(now + rng.Below(600000));
            break;
          case 3:
            push(now + rng.Below(1u << 24));
            break;
          case 4:
            push(now + (uint64_t{1} << 30) + rng.Below(1u << 30));
            break;
          case 5:  // ties on a coarse grid around the horizon (far and direct)
            push((now / 4096 + 1) * 4096 + (uint64_t{1} << 22) - 4096 * rng.Below(3));
            break;
          default:
            if (rng.Below(50) == 0) {  // 80 events, many tied, in one 256 ps bucket
              const TimePs at = (now / 256 + 4 + rng.Below(20)) * 256;
              for (int b = 0; b < 80; ++b) push(at + rng.Below(64));
            }
            break;
        }
      }
    }
    EXPECT_TRUE(ref.empty());
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.size(), 0u);
  }
}

}  // namespace
}  // namespace ofan::sim
