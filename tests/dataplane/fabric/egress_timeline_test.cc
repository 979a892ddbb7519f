// dataplane/fabric/egress_timeline.h with a clock the test holds: frames
// leave at exactly the times serialisation gives, the backlog, its maximum
// and integral are exact, tail drop and ECN at enqueue, and two ports in a
// line build the queue a closed form predicts. (The simulator runs on the
// same model; the shared fabric engine will.)
#include "dataplane/fabric/egress_timeline.h"

#include <gtest/gtest.h>

namespace ofan::fabric {
namespace {

constexpr TimePs kSer = 1'000'000;  // 1 us per frame
constexpr uint32_t kBytes = 1000;

TEST(EgressTimeline, FramesOfferedAtOnceLeaveAtSerialisationTimes) {
  EgressTimeline q;
  constexpr TimePs kPre = 6'400, kGap = 9'600;  // preamble and IFG at 10 Gb/s
  for (uint64_t i = 0; i < 16; ++i) {
    const OfferResult r = q.Offer(0, kBytes, kSer, kPre, kGap, {}, false);
    ASSERT_TRUE(r.queued);
    EXPECT_EQ(r.last_bit, kPre + kSer + i * (kSer + kGap)) << i;
  }
  EXPECT_EQ(q.bytes(), 16u * kBytes);
  EXPECT_EQ(q.max_bytes(), 16u * kBytes);
  // Half a frame time after the 5th has left: 11 remain.
  q.Advance(kPre + kSer + 4 * (kSer + kGap) + kSer / 2);
  EXPECT_EQ(q.bytes(), 11u * kBytes);
  EXPECT_EQ(q.frames(), 11u);
}

TEST(EgressTimeline, TheBacklogIntegralIsExact) {
  EgressTimeline q;
  // Three frames at 0 (leaving at 1, 2, 3 us), one at 10 us (leaving at 11).
  for (int i = 0; i < 3; ++i) q.Offer(0, kBytes, kSer, 0, 0, {}, false);
  q.Offer(10 * kSer, kBytes, kSer, 0, 0, {}, false);
  q.Advance(20 * kSer);
  // byte-ps: 3000 for 1 us, 2000 for 1 us, 1000 for 1 us, then 1000 for 1 us.
  EXPECT_DOUBLE_EQ(q.area(), static_cast<double>((3000 + 2000 + 1000 + 1000) * kSer));
  EXPECT_EQ(q.bytes(), 0u);
  EXPECT_EQ(q.busy_until(), 11 * kSer);
}

TEST(EgressTimeline, TailDropAndEcnAtEnqueue) {
  EgressTimeline q;
  const QueueLimits lim{3 * kBytes, kBytes};  // 3 frames of buffer, mark above 1
  std::vector<OfferResult> r;
  for (int i = 0; i < 4; ++i) r.push_back(q.Offer(0, kBytes, kSer, 0, 0, lim, true));
  EXPECT_TRUE(r[0].queued && !r[0].ce);  // found 0 queued
  EXPECT_TRUE(r[1].queued && !r[1].ce);  // found 1 frame: not above the threshold
  EXPECT_TRUE(r[2].queued && r[2].ce);   // found 2
  EXPECT_FALSE(r[3].queued) << "a 4th frame overflows the buffer";
  // Once the first has left there is room again; a frame that may not be
  // marked (not ECN-capable, or an ACK) is never marked.
  const OfferResult later = q.Offer(kSer, kBytes, kSer, 0, 0, lim, false);
  EXPECT_TRUE(later.queued);
  EXPECT_FALSE(later.ce);
  EXPECT_EQ(later.last_bit, 4 * kSer);
}

// Port A at twice B's rate feeds B: N frames at once into A arrive at B one
// every kSer/2 and leave B one every kSer. After arrival i, i+1 frames have
// come and floor(i/2) have left, so B's deepest backlog is
// N - floor((N-1)/2) frames.
TEST(EgressTimeline, TwoPortsInALineQueueAsTheClosedFormSays) {
  constexpr int kN = 10;
  constexpr TimePs kProp = 0;
  EgressTimeline a, b;
  std::vector<TimePs> at_b;
  for (int i = 0; i < kN; ++i) {
    at_b.push_back(a.Offer(0, kBytes, kSer / 2, 0, 0, {}, false).last_bit + kProp);
  }
  TimePs last = 0;
  for (int i = 0; i < kN; ++i) {
    const OfferResult r = b.Offer(at_b[static_cast<size_t>(i)], kBytes, kSer, 0, 0, {}, false);
    EXPECT_EQ(r.last_bit, kSer / 2 + kSer + static_cast<TimePs>(i) * kSer) << i;
    last = r.last_bit;
  }
  EXPECT_EQ(b.max_bytes(), static_cast<uint64_t>(kN - (kN - 1) / 2) * kBytes);
  EXPECT_EQ(a.max_bytes(), static_cast<uint64_t>(kN) * kBytes);
  b.Advance(last);
  EXPECT_EQ(b.bytes(), 0u);
}

}  // namespace
}  // namespace ofan::fabric
