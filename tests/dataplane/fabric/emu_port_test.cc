// dataplane/fabric/emu_port.h with a clock the test holds: N frames offered
// at once to a port of rate R leave at exactly the times serialisation
// gives; with one queue it is the simulator's EgressTimeline, frame for
// frame and in its backlog integral; the priority queue overtakes waiting
// frames but never one on the wire; PFC holds the normal queue only.
#include "dataplane/fabric/emu_port.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace ofan::fabric {
namespace {

struct Sent {
  int h;
  TimePs start, last_bit;
};

struct Log {
  std::vector<Sent> sent;
  auto Emit() {
    return [this](int h, TimePs s, TimePs l) { sent.push_back({h, s, l}); };
  }
};

TEST(EmuPort, FramesOfferedAtOnceLeaveAtSerialisationTimes) {
  const EmuWire w = EmuWire::At(LinkRate::Gbps(0.4), 0);  // 400 Mb/s: 20 ns a byte
  ASSERT_EQ(w.Ser(1000), 20'000'000);
  ASSERT_EQ(w.pre, 160'000);
  ASSERT_EQ(w.gap, 320'000);  // FCS 4 + IFG 12 (packet/frame_budget.h)
  EmuPort<int> p;
  p.Configure(w, {});
  Log log;
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(p.Offer(0, 1, 1000, false, i, log.Emit()).queued);
  EXPECT_TRUE(log.sent.empty());  // none starts before time has passed 0
  EXPECT_EQ(p.NextStart(), 0u);
  p.StartBefore(kNever, log.Emit());
  ASSERT_EQ(log.sent.size(), 16u);
  for (int i = 0; i < 16; ++i) {
    const TimePs start = static_cast<TimePs>(i) * (20'000'000 + 320'000);
    EXPECT_EQ(log.sent[i].h, i);
    EXPECT_EQ(log.sent[i].start, start) << i;
    EXPECT_EQ(log.sent[i].last_bit, start + 160'000 + 20'000'000) << i;
  }
  // Half a frame after the 5th frame's last bit: 11 frames are queued.
  p.Integrate(log.sent[4].last_bit + 10'000'000);
  EXPECT_EQ(p.pkts(), 11u);
  EXPECT_EQ(p.bytes(), 11'000u);
  EXPECT_EQ(p.max_pkts(), 16u);
}

TEST(EmuPort, StartsOnlyWhatBeginsBeforeTheTimeGiven) {
  EmuPort<int> p;
  p.Configure(EmuWire::At(LinkRate::Gbps(8), 0), {});  // 1 ns a byte
  Log log;
  p.Offer(0, 1, 1000, false, 0, log.Emit());
  p.Offer(0, 1, 1000, false, 1, log.Emit());
  p.StartBefore(1, log.Emit());
  ASSERT_EQ(log.sent.size(), 1u);  // the second starts at 1000 + 16 ns (FCS and gap)
  EXPECT_EQ(p.NextStart(), 1'016'000u);
  p.StartBefore(1'016'000, log.Emit());
  EXPECT_EQ(log.sent.size(), 1u);
  p.StartBefore(1'016'001, log.Emit());
  EXPECT_EQ(log.sent.size(), 2u);
  EXPECT_EQ(p.NextStart(), kNever);
}

// With only the normal queue, every verdict, departure, the maximum and the
// integral equal EgressTimeline's on the same random arrivals.
TEST(EmuPort, OneQueueIsTheSimulatorsTimeline) {
  const EmuWire w = EmuWire::At(LinkRate::Gbps(0.1), 0);
  const QueueLimits lim{30'000, 10'000};
  std::mt19937_64 rng(7);
  EmuPort<int> p;
  p.Configure(w, lim);
  EgressTimeline q;
  Log log;
  std::vector<TimePs> expect_last;
  std::vector<int> queued;
  TimePs t = 0;
  for (int i = 0; i < 5000; ++i) {
    t += rng() % 150'000'000;  // about one frame time apart, often closer
    const uint32_t bytes = 64 + static_cast<uint32_t>(rng() % 2048);
    const bool ecn = rng() % 2;
    const OfferResult r = q.Offer(t, bytes, w.Ser(bytes), w.pre, w.gap, lim, ecn);
    const EmuVerdict v = p.Offer(t, 1, bytes, ecn, i, log.Emit());
    ASSERT_EQ(v.queued, r.queued) << i;
    ASSERT_EQ(v.ce, r.ce) << i;
    if (r.queued) {
      expect_last.push_back(r.last_bit);
      queued.push_back(i);
    }
  }
  p.StartBefore(kNever, log.Emit());
  ASSERT_EQ(log.sent.size(), expect_last.size());
  for (size_t i = 0; i < log.sent.size(); ++i) {
    ASSERT_EQ(log.sent[i].h, queued[i]);
    ASSERT_EQ(log.sent[i].last_bit, expect_last[i]) << i;
  }
  const TimePs end = expect_last.back() + 1;
  p.Integrate(end);
  q.Advance(end);
  EXPECT_EQ(p.max_bytes(), q.max_bytes());
  EXPECT_DOUBLE_EQ(p.area_bytes(), q.area());
  EXPECT_EQ(p.bytes(), 0u);
}

TEST(EmuPort, PriorityOvertakesWaitingFramesNotTheOneOnTheWire) {
  EmuPort<int> p;
  p.Configure(EmuWire::At(LinkRate::Gbps(8), 0), {});
  Log log;
  for (int i = 0; i < 3; ++i) p.Offer(0, 1, 1000, false, i, log.Emit());
  // An ACK arrives while frame 0 is on the wire: it goes second.
  p.Offer(500'000, 0, 64, false, 100, log.Emit());
  p.StartBefore(kNever, log.Emit());
  ASSERT_EQ(log.sent.size(), 4u);
  EXPECT_EQ(log.sent[0].h, 0);
  EXPECT_EQ(log.sent[1].h, 100);
  EXPECT_EQ(log.sent[1].start, 1'016'000u);
  EXPECT_EQ(log.sent[2].h, 1);
  EXPECT_EQ(log.sent[2].start, 1'016'000u + 64'000 + 16'000);
  EXPECT_EQ(log.sent[3].h, 2);
}

TEST(EmuPort, ANormalFrameGoesFirstWhenThePriorityOneHasNotArrived) {
  EmuPort<int> p;
  p.Configure(EmuWire::At(LinkRate::Gbps(8), 0), {});
  Log log;
  p.Offer(0, 1, 1000, false, 1, log.Emit());
  p.Offer(5'000'000, 0, 64, false, 0, log.Emit());
  p.StartBefore(kNever, log.Emit());
  ASSERT_EQ(log.sent.size(), 2u);
  EXPECT_EQ(log.sent[0].h, 1);
  EXPECT_EQ(log.sent[1].h, 0);
  EXPECT_EQ(log.sent[1].start, 5'000'000u);
}

TEST(EmuPort, PfcPausesTheNormalQueueOnly) {
  EmuPort<int> p;
  p.Configure(EmuWire::At(LinkRate::Gbps(8), 0), {});
  Log log;
  p.PauseUntil(10'000'000);
  p.Offer(0, 1, 1000, false, 1, log.Emit());
  p.Offer(0, 0, 64, false, 0, log.Emit());
  p.StartBefore(kNever, log.Emit());
  ASSERT_EQ(log.sent.size(), 2u);
  EXPECT_EQ(log.sent[0].h, 0);
  EXPECT_EQ(log.sent[0].start, 0u);
  EXPECT_EQ(log.sent[1].h, 1);
  EXPECT_EQ(log.sent[1].start, 10'000'000u);
}

TEST(EmuPort, TailDropAndEcnReadTheBacklogAtArrival) {
  EmuPort<int> p;
  p.Configure(EmuWire::At(LinkRate::Gbps(8), 0), {2500, 1500});
  Log log;
  EXPECT_FALSE(p.Offer(0, 1, 1000, true, 0, log.Emit()).ce);
  EXPECT_FALSE(p.Offer(0, 1, 1000, true, 1, log.Emit()).ce);      // 1000 queued: not above 1500
  EXPECT_FALSE(p.Offer(0, 1, 1000, true, 2, log.Emit()).queued);  // 3000 > 2500
  // The first has left (its last bit at 1008 ns); the second is on the wire.
  const EmuVerdict v = p.Offer(1'100'000, 1, 1000, true, 3, log.Emit());
  EXPECT_TRUE(v.queued);
  EXPECT_FALSE(v.ce);
  EXPECT_TRUE(p.Offer(1'100'000, 1, 400, true, 4, log.Emit()).ce);  // 2000 > 1500
  int dropped = 0;
  p.StartBefore(1'100'001, log.Emit());
  EXPECT_EQ(p.Flush([&](int) { ++dropped; }), 2u);  // 3 and 4 still wait
  EXPECT_EQ(dropped, 2);
}

}  // namespace
}  // namespace ofan::fabric
