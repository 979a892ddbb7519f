// PFC frames both ways (dataplane/egress/pfc.h), as whole frames. The
// expected PFC frame is written out byte by byte from 802.1Qbb's layout
// (Annex N: DA 01:80:C2:00:00:01, type 0x8808, opcode 0x0101, class-enable
// vector, eight 2-byte pause times), not produced by the code under test.
#include "dataplane/egress/pfc.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ofan::dp
