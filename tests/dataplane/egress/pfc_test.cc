// PFC frames both ways (dataplane/egress/pfc.h), as whole frames. The
// expected PFC frame is written out byte by byte from 802.1Qbb's layout
// (Annex N: DA 01:80:C2:00:00:01, type 0x8808, opcode 0x0101, class-enable
// vector, eight 2-byte pause times), not produced by the code under test.
#include "dataplane/egress/pfc.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "dataplane/packet/builder.h"

namespace ofan::dp {
namespace {

const pkt::MacAddr kSrc{{0x02, 0, 0, 0, 0x0a, 0x03}};

TEST(Pfc, BuildsThe8021QbbFrameForOneClass) {
  const auto f = BuildPfcFrame(kSrc, 3, 0xFFFF);
  const std::vector<uint8_t> want = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01,  // DA
                                     0x02, 0x00, 0x00, 0x00, 0x0a, 0x03,  // SA
                                     0x88, 0x08,                          // MAC control
                                     0x01, 0x01,                          // PFC
                                     0x00, 0x08,                          // class 3 enabled
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // classes 0-2
                                     0xFF, 0xFF,                          // class 3
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                     // zero padding to Ethernet's 60 B minimum (no FCS)
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(std::vector<uint8_t>(f.begin(), f.end()), want);
  const auto resume = BuildPfcFrame(kSrc, 3, 0);
  EXPECT_EQ(ReceivedPauseQuanta(resume, 3), 0u);
}

TEST(Pfc, ReceivedFramesPauseOnlyTheirClasses) {
  const auto build = [](uint16_t classes, uint16_t quanta) {
    return pkt::PacketBuilder().Eth(pkt::kPfcDstMac, kSrc).Pfc(classes, quanta).PadTo(60).Build();
  };
  EXPECT_EQ(ReceivedPauseQuanta(build(1u << 3, 500), 3), 500u);
  EXPECT_EQ(ReceivedPauseQuanta(build(1u << 4, 500), 3), std::nullopt);
  EXPECT_EQ(ReceivedPauseQuanta(build(0xFF, 0), 3), 0u);
  // 802.3x PAUSE: opcode 1, the pause time where PFC has its class vector.
  std::vector<uint8_t> pause = build(0, 0);
  pause[14] = 0x00;
  pause[15] = 0x01;
  pause[16] = 0x01;
  pause[17] = 0x2C;  // 300 quanta
  EXPECT_EQ(ReceivedPauseQuanta(pause, 3), 300u);
  // Cut short: nothing.
  const std::vector<uint8_t> whole = build(1u << 3, 500);
  const std::vector<uint8_t> cut(whole.begin(), whole.begin() + 20);
  EXPECT_EQ(ReceivedPauseQuanta(cut, 3), std::nullopt);
  EXPECT_EQ(ReceivedPauseQuanta({}, 3), std::nullopt);
}

TEST(Pfc, ReadPauseSaysOursNotOursOrMalformed) {
  const auto build = [](uint16_t classes, uint16_t quanta) {
    return pkt::PacketBuilder().Eth(pkt::kPfcDstMac, kSrc).Pfc(classes, quanta).PadTo(60).Build();
  };
  const ReceivedPause ours = ReadPause(build(1u << 3, 500), 3, true);
  EXPECT_EQ(ours.kind, PauseRx::kOurs);
  EXPECT_EQ(ours.quanta, 500u);
  // Another class only: ours is not paused; with PFC on here, a class
  // without PFC is a malformed frame (counted and dropped), as is an empty
  // vector.
  EXPECT_EQ(ReadPause(build(1u << 4, 500), 3, false).kind, PauseRx::kNotOurs);
  EXPECT_EQ(ReadPause(build(1u << 4, 500), 3, true).kind, PauseRx::kMalformed);
  EXPECT_EQ(ReadPause(build((1u << 3) | (1u << 5), 500), 3, true).kind, PauseRx::kMalformed);
  EXPECT_EQ(ReadPause(build(0, 500), 3, true).kind, PauseRx::kMalformed);
  std::vector<uint8_t> bad_op = build(1u << 3, 500);
  bad_op[15] = 0x07;
  EXPECT_EQ(ReadPause(bad_op, 3, false).kind, PauseRx::kMalformed);
  const std::vector<uint8_t> whole = build(1u << 3, 500);
  EXPECT_EQ(ReadPause({whole.data(), 20}, 3, false).kind, PauseRx::kMalformed);
  EXPECT_EQ(ReadPause({}, 3, false).kind, PauseRx::kMalformed);
}

TEST(Pfc, GeneratorSendsXoffAndXonOnceEachWithHysteresis) {
  PfcGenerator g(std::vector<fabric::PfcThresholds>(4, {/*xoff=*/1000, /*xon=*/500, 100}), {});
  using A = PfcGenerator::Action;
  EXPECT_EQ(g.Step(1, 900, 0), A::kNone);
  EXPECT_EQ(g.Step(1, 1001, 1), A::kXoff);
  EXPECT_EQ(g.Step(1, 2000, 2), A::kNone);             // already paused (no refresh asked)
  EXPECT_EQ(g.Step(1, 700, 1'000'000'000), A::kNone);  // between xon and xoff
  EXPECT_EQ(g.Step(1, 499, 1'000'000'001), A::kXon);
  EXPECT_EQ(g.Step(1, 0, 1'000'000'002), A::kNone);
  EXPECT_EQ(g.Step(2, 0, 1'000'000'003), A::kNone);  // ports are independent
}

// Above xon, XOFF again every refresh interval (half the pause it asks):
// the peer never resumes while the port is still full; at xon, XON.
TEST(Pfc, GeneratorRefreshesXoffWhileAboveXon) {
  const fabric::TimePs every = 1'000'000;  // 1 us
  PfcGenerator g(std::vector<fabric::PfcThresholds>(2, {1000, 500, 100}), {every, every});
  using A = PfcGenerator::Action;
  EXPECT_EQ(g.Step(0, 1001, 10), A::kXoff);
  EXPECT_EQ(g.Step(0, 900, 10 + every - 1), A::kNone);
  EXPECT_EQ(g.Step(0, 900, 10 + every), A::kXoff) << "still above xon: refreshed";
  EXPECT_EQ(g.Step(0, 2000, 10 + every + 5), A::kNone);
  EXPECT_EQ(g.Step(0, 600, 10 + 2 * every), A::kXoff);
  EXPECT_EQ(g.Step(0, 500, 10 + 2 * every + 1), A::kXon);
  EXPECT_EQ(g.Step(0, 501, 10 + 5 * every), A::kNone) << "below xoff: no new XOFF";
  EXPECT_EQ(g.Step(1, 0, 0), A::kNone);
}

// A worker pauses a port the moment its bytes pass xoff (Crossed), once;
// the control thread's next poll knows it (no second XOFF before the
// refresh is due) and sends the XON.
TEST(Pfc, AWorkerPausesAtTheCrossingAndThePollResumes) {
  const fabric::TimePs every = 1'000'000;
  PfcGenerator g(std::vector<fabric::PfcThresholds>(2, {1000, 500, 100}), {every, every});
  using A = PfcGenerator::Action;
  EXPECT_FALSE(g.Crossed(0, 1000)) << "at xoff, not past it";
  EXPECT_TRUE(g.Crossed(0, 1001));
  g.XoffSent(0);
  EXPECT_FALSE(g.Crossed(0, 5000)) << "already paused: one XOFF";
  EXPECT_TRUE(g.xoff(0));
  EXPECT_EQ(g.xoff_events(0), 1u);
  EXPECT_EQ(g.Step(0, 1500, 7), A::kNone) << "the worker's XOFF is fresh";
  EXPECT_EQ(g.Step(0, 1500, 7 + every), A::kXoff) << "refreshed a refresh later";
  EXPECT_EQ(g.Step(0, 400, 8 + every), A::kXon);
  EXPECT_FALSE(g.xoff(0));
  EXPECT_EQ(g.Step(0, 400, 9 + every), A::kNone);
  EXPECT_TRUE(g.Crossed(0, 1001)) << "a new pause";
  EXPECT_EQ(g.xoff_events(0), 2u);
  EXPECT_FALSE(g.Crossed(1, 10)) << "ports are independent";
  EXPECT_FALSE(g.Crossed(7, 1'000'000)) << "no such port";
}

// A worker's XOFF that lands in the priority queue after the XON the
// control thread decided meanwhile: the next poll resumes the peer again.
TEST(Pfc, AWorkersLateXoffIsFollowedByAnotherXon) {
  PfcGenerator g(std::vector<fabric::PfcThresholds>(1, {1000, 500, 100}), {});
  using A = PfcGenerator::Action;
  ASSERT_TRUE(g.Crossed(0, 1200));      // the worker paused the port...
  EXPECT_EQ(g.Step(0, 0, 1), A::kXon);  // ...the poll, drained, resumed it...
  g.XoffSent(0);                        // ...and then the worker's XOFF was queued
  EXPECT_EQ(g.Step(0, 0, 2), A::kXon) << "the peer is paused: resume it again";
  EXPECT_EQ(g.Step(0, 0, 3), A::kNone);
  // A worker that could not queue its XOFF leaves the port unpaused.
  ASSERT_TRUE(g.Crossed(0, 1200));
  g.XoffFailed(0);
  EXPECT_FALSE(g.xoff(0));
  EXPECT_EQ(g.Step(0, 1200, 4), A::kXoff) << "the poll pauses it";
}

// Workers on several cores crossing at once: one XOFF per pause.
TEST(Pfc, ConcurrentCrossingsPauseOnce) {
  PfcGenerator g(std::vector<fabric::PfcThresholds>(1, {1000, 500, 100}), {});
  std::atomic<int> won{0};
  std::vector<std::thread> t;
  for (int i = 0; i < 4; ++i) {
    t.emplace_back([&] {
      for (int j = 0; j < 1000; ++j)
        if (g.Crossed(0, 2000)) won.fetch_add(1);
    });
  }
  for (std::thread& th : t) th.join();
  EXPECT_EQ(won.load(), 1);
  EXPECT_EQ(g.xoff_events(0), 1u);
}

}  // namespace
}  // namespace ofan::dp
