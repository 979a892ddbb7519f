// dataplane/fabric/pfc.h on a fake clock: pause quanta at several rates,
// SONiC-style headroom, thresholds and their errors, XOFF/XON/refresh at
// the exact times thresholds are crossed, lossless admission, and the
// paused-time clock; a seeded random walk holds the invariants.
#include "dataplane/fabric/pfc.h"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <vector>

#include "dataplane/egress/lossless.h"
#include "dataplane/fabric/emu_port.h"
#include "dataplane/packet/builder.h"

namespace ofan::fabric {
namespace {

TEST(PfcQuanta, AQuantumIs512BitTimesAtTheLinksRate) {
  // 25 Mb/s: 64 B x 320 ns = 20.48 us; 100 Mb/s: 5.12 us; 100 Gb/s: 5.12 ns.
  EXPECT_EQ(PauseQuantaPs(1, EmuWire::At(LinkRate::Gbps(0.025), 0).ps_per_byte), 20'480'000u);
  EXPECT_EQ(PauseQuantaPs(1, EmuWire::At(LinkRate::Gbps(0.1), 0).ps_per_byte), 5'120'000u);
  EXPECT_EQ(PauseQuantaPs(1, EmuWire::At(LinkRate::Gbps(100), 0).ps_per_byte), 5'120u);
  // The longest pause at 100 Gb/s: ~335 us (docs/design.md's fact).
  EXPECT_EQ(PauseQuantaPs(kPfcMaxQuanta, EmuWire::At(LinkRate::Gbps(100), 0).ps_per_byte),
            335'539'200u);
  EXPECT_EQ(PauseQuantaPs(0, EmuWire::At(LinkRate::Gbps(100), 0).ps_per_byte), 0u);
}

TEST(PfcHeadroom, CableBothWaysPlusResponsePlusTwoFrames) {
  // 100 Mb/s (80 ns a byte), 1 us of cable: 2 x 1 us = 25 B; 394 quanta =
  // 25,216 B; two 2110 B frames.
  const EmuWire w = EmuWire::At(LinkRate::Gbps(0.1), 1.0);
  EXPECT_EQ(PfcHeadroomBytes(w.ps_per_byte, w.latency, 2110), 25u + 25'216u + 4'220u);
  EXPECT_EQ(PfcHeadroomBytes(w.ps_per_byte, w.latency, 2110, 0), 25u + 4'220u);
  // 100 Gb/s over 100 m of fibre (~0.5 us): the cable dominates the frames.
  const EmuWire f = EmuWire::At(LinkRate::Gbps(100), 0.5);
  EXPECT_EQ(PfcHeadroomBytes(f.ps_per_byte, f.latency, 2110, 0), 12'500u + 4'220u);
}

TEST(PfcThresholdsTest, DerivedFromTheBufferAndErrorsNameWhatDoesNotFit) {
  auto th = MakePfcThresholds(uint64_t{256} * 1024, 10'000, 0, 0, 4'220);
  ASSERT_TRUE(th) << th.error().message;
  EXPECT_EQ(th->xoff, 256u * 1024 - 10'000);
  EXPECT_EQ(th->xon, th->xoff - 4'220);
  EXPECT_EQ(th->headroom, 10'000u);
  auto given = MakePfcThresholds(uint64_t{256} * 1024, 10'000, 100'000, 50'000, 4'220);
  ASSERT_TRUE(given);
  EXPECT_EQ(given->xoff, 100'000u);
  EXPECT_EQ(given->xon, 50'000u);
  auto no_room = MakePfcThresholds(8'000, 10'000, 0, 0, 4'220);
  ASSERT_FALSE(no_room);
  EXPECT_NE(no_room.error().message.find("does not fit"), std::string::npos);
  auto too_high = MakePfcThresholds(100'000, 10'000, 95'000, 0, 4'220);
  ASSERT_FALSE(too_high);
  EXPECT_NE(too_high.error().message.find("exceed"), std::string::npos);
  auto xon_high = MakePfcThresholds(100'000, 10'000, 50'000, 60'000, 4'220);
  ASSERT_FALSE(xon_high);
  EXPECT_NE(xon_high.error().message.find("below xoff"), std::string::npos);
}

class PfcIngressTest : public ::testing::Test {
 protected:
  // Two ports: xoff 10,000, xon 6,000, headroom 5,000; XOFF refreshed
  // every 1 us.
  PfcIngress pfc_{{{10'000, 6'000, 5'000}, {10'000, 6'000, 5'000}}, {1'000'000, 1'000'000}};
  std::vector<PfcAction> out_;
};

TEST_F(PfcIngressTest, XoffAtTheFrameThatCrossesXoffAndOnlyOnce) {
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(pfc_.Admit(0, 1'000, 100 + i, out_));
  EXPECT_TRUE(out_.empty());  // exactly at xoff: not above it
  ASSERT_TRUE(pfc_.Admit(0, 1'000, 200, out_));
  ASSERT_EQ(out_.size(), 1u);
  EXPECT_EQ(out_[0].port, 0u);
  EXPECT_EQ(out_[0].t, 200u);
  EXPECT_EQ(out_[0].quanta, kPfcMaxQuanta);
  ASSERT_TRUE(pfc_.Admit(0, 1'000, 300, out_));
  EXPECT_EQ(out_.size(), 1u);  // still above xoff: no second XOFF
  EXPECT_EQ(pfc_.counters(0).xoff_events, 1u);
  EXPECT_EQ(pfc_.counters(0).headroom_max_bytes, 2'000u);
  EXPECT_EQ(pfc_.held(1), 0u);  // the other port's account is its own
}

TEST_F(PfcIngressTest, XonWhenTheReleaseReachesXon) {
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(pfc_.Admit(1, 1'000, 10, out_));
  out_.clear();
  for (int i = 0; i < 5; ++i) pfc_.Release(1, 1'000, 20 + i, out_);
  EXPECT_TRUE(out_.empty());  // 7,000 held: above xon
  pfc_.Release(1, 1'000, 50, out_);
  ASSERT_EQ(out_.size(), 1u);
  EXPECT_EQ(out_[0].t, 50u);
  EXPECT_EQ(out_[0].quanta, 0);
  EXPECT_FALSE(pfc_.xoff_out(1));
  EXPECT_EQ(pfc_.counters(1).xon_sent, 1u);
}

TEST_F(PfcIngressTest, XoffIsRefreshedAtItsOwnTimesWhileAboveXon) {
  for (int i = 0; i < 11; ++i) ASSERT_TRUE(pfc_.Admit(0, 1'000, 1'000, out_));
  ASSERT_EQ(out_.size(), 1u);
  EXPECT_EQ(pfc_.NextRefresh(), 1'001'000u);
  out_.clear();
  pfc_.Due(3'500'000, out_);  // three refreshes due, each at its time
  ASSERT_EQ(out_.size(), 3u);
  EXPECT_EQ(out_[0].t, 1'001'000u);
  EXPECT_EQ(out_[1].t, 2'001'000u);
  EXPECT_EQ(out_[2].t, 3'001'000u);
  // Below xon: no more refreshes.
  out_.clear();
  for (int i = 0; i < 6; ++i) pfc_.Release(0, 1'000, 3'600'000, out_);
  ASSERT_EQ(out_.size(), 1u);
  EXPECT_EQ(out_[0].quanta, 0);
  EXPECT_EQ(pfc_.NextRefresh(), std::numeric_limits<TimePs>::max());
  out_.clear();
  pfc_.Due(100'000'000, out_);
  EXPECT_TRUE(out_.empty());
}

TEST_F(PfcIngressTest, AFullHeadroomIsALosslessDropCounted) {
  for (int i = 0; i < 15; ++i) ASSERT_TRUE(pfc_.Admit(0, 1'000, 1, out_));
  EXPECT_FALSE(pfc_.Admit(0, 1'000, 2, out_));
  EXPECT_EQ(pfc_.counters(0).lossless_drops, 1u);
  EXPECT_EQ(pfc_.held(0), 15'000u);
  EXPECT_EQ(pfc_.counters(0).headroom_max_bytes, 5'000u);
  pfc_.ResetMaxima();
  EXPECT_EQ(pfc_.counters(0).lossless_drops, 1u);  // counts go on
  EXPECT_EQ(pfc_.counters(0).max_bytes, 15'000u);  // what it holds now
  EXPECT_EQ(pfc_.counters(0).headroom_max_bytes, 5'000u);
}

// A seeded random walk over two ports: held bytes never pass xoff +
// headroom, XOFF and XON alternate per port, and a port is above xon
// whenever its XOFF is out.
TEST_F(PfcIngressTest, RandomAdmitsAndReleasesKeepTheInvariants) {
  std::mt19937 rng(7);
  std::deque<uint32_t> fifo[2];
  bool off[2] = {false, false};
  TimePs t = 0;
  for (int step = 0; step < 20'000; ++step) {
    t += rng() % 500;
    const uint32_t p = rng() % 2;
    out_.clear();
    if (rng() % 2 && !fifo[p].empty()) {
      pfc_.Release(p, fifo[p].front(), t, out_);
      fifo[p].pop_front();
    } else {
      const uint32_t bytes = 64 + rng() % 2100;
      if (pfc_.Admit(p, bytes, t, out_)) fifo[p].push_back(bytes);
    }
    pfc_.Due(t, out_);
    for (const PfcAction& a : out_) {
      if (a.quanta == 0) {
        ASSERT_TRUE(off[a.port]);
        off[a.port] = false;
      } else {
        off[a.port] = true;  // a new XOFF or a refresh
      }
    }
    for (uint32_t q = 0; q < 2; ++q) {
      ASSERT_LE(pfc_.held(q), 15'000u);
      ASSERT_EQ(off[q], pfc_.xoff_out(q));
      if (pfc_.xoff_out(q)) {
        ASSERT_GT(pfc_.held(q), 6'000u);
      }
    }
  }
}

// SONiC's pfcwd semantics on a fake clock: 200 ms detection, 200 ms
// restoration, in ps.
constexpr TimePs kMs = 1'000'000'000;

TEST(PfcWatchdogTest, AStormFiresAtExactlyTheDetectionTimeAndRestoresAfterIt) {
  PfcWatchdog wd(200 * kMs, 200 * kMs);
  // A broken NIC: XOFF every ms, each asking 2 ms, frames waiting.
  TimePs t = 5 * kMs;
  for (; t < 300 * kMs; t += kMs) {
    wd.Paused(t, t + 2 * kMs, true);
    if (wd.Check(t, true) == PfcWatchdog::Event::kFire) break;
  }
  ASSERT_TRUE(wd.fired());
  EXPECT_EQ(wd.event_time(), 205 * kMs);  // the first pause + 200 ms
  EXPECT_EQ(t, 205 * kMs);
  EXPECT_EQ(wd.fired_count(), 1u);
  // The storm goes on: no restore while pauses keep coming.
  for (t += kMs; t < 400 * kMs; t += kMs) {
    wd.Paused(t, t + 2 * kMs, true);
    EXPECT_EQ(wd.Check(t, true), PfcWatchdog::Event::kNone);
  }
  // The last pause asked 2 ms: 200 ms after it ends, restored.
  const TimePs end = t - kMs + 2 * kMs;
  EXPECT_EQ(wd.Deadline(), end + 200 * kMs);
  EXPECT_EQ(wd.Check(end + 199 * kMs, true), PfcWatchdog::Event::kNone);
  EXPECT_EQ(wd.Check(end + 250 * kMs, true), PfcWatchdog::Event::kRestore);
  EXPECT_EQ(wd.event_time(), end + 200 * kMs);
  EXPECT_FALSE(wd.fired());
  EXPECT_EQ(wd.restored_count(), 1u);
  // A pause that covers a second (a slow link's XOFF): frames stop at
  // 300 ms, but the peer still asks pause until 1.3 s; restored 200 ms
  // after that, or at once 200 ms after an XON. Restored, nothing it
  // ignored pauses it again.
  PfcWatchdog again(200 * kMs, 200 * kMs);
  for (TimePs u = 0; u <= 300 * kMs; u += kMs) {
    again.Paused(u, u + 1'000 * kMs, true);  // each asks a second
    (void)again.Check(u, true);
  }
  ASSERT_TRUE(again.fired());
  EXPECT_EQ(again.Check(600 * kMs, true), PfcWatchdog::Event::kNone);
  EXPECT_EQ(again.Deadline(), 1'500 * kMs);
  again.Paused(700 * kMs, 700 * kMs, true);  // XON
  EXPECT_EQ(again.Check(899 * kMs, true), PfcWatchdog::Event::kNone);
  EXPECT_EQ(again.Check(900 * kMs, true), PfcWatchdog::Event::kRestore);
  for (TimePs u = 900 * kMs; u < 2'000 * kMs; u += 10 * kMs)
    ASSERT_EQ(again.Check(u, true), PfcWatchdog::Event::kNone) << u / kMs;
  EXPECT_EQ(again.fired_count(), 1u);
}

TEST(PfcWatchdogTest, NoFireWhenThePauseLapsesOrNothingWaits) {
  PfcWatchdog wd(200 * kMs, 200 * kMs);
  // Paused 150 ms, then a lapse of 10 ms, then 150 ms more: never 200 in a row.
  for (TimePs t = 0; t < 150 * kMs; t += kMs) wd.Paused(t, t + 2 * kMs, true);
  EXPECT_EQ(wd.Check(160 * kMs, true), PfcWatchdog::Event::kNone);
  for (TimePs t = 160 * kMs; t < 310 * kMs; t += kMs) {
    wd.Paused(t, t + 2 * kMs, true);
    ASSERT_EQ(wd.Check(t, true), PfcWatchdog::Event::kNone) << t / kMs;
  }
  // Paused for long with nothing waiting: not a storm (nothing is held).
  PfcWatchdog idle(200 * kMs, 200 * kMs);
  for (TimePs t = 0; t < 500 * kMs; t += kMs) {
    idle.Paused(t, t + 2 * kMs, false);
    ASSERT_EQ(idle.Check(t, false), PfcWatchdog::Event::kNone);
  }
  // XON ends a pause at once.
  PfcWatchdog xon(200 * kMs, 200 * kMs);
  xon.Paused(0, 300 * kMs, true);
  xon.Paused(100 * kMs, 100 * kMs, true);
  EXPECT_EQ(xon.Check(250 * kMs, true), PfcWatchdog::Event::kNone);
}

TEST(PauseClockTest, PausedTimeIsTheUnionOfTheIntervals) {
  PauseClock c;
  EXPECT_EQ(c.paused_ps(1'000), 0u);
  c.Received(100, 600);  // paused 100..600
  EXPECT_TRUE(c.paused_at(300));
  EXPECT_EQ(c.paused_ps(300), 200u);
  c.Received(400, 1'000);  // refreshed before it ended: 100..1000
  EXPECT_EQ(c.paused_ps(2'000), 900u);
  c.Received(1'500, 1'500);  // an XON with nothing paused
  EXPECT_EQ(c.paused_ps(2'000), 900u);
  c.Received(2'000, 3'000);
  c.Received(2'500, 2'500);  // XON cuts it short
  EXPECT_FALSE(c.paused_at(2'600));
  EXPECT_EQ(c.paused_ps(5'000), 1'400u);
}

TEST(LosslessClass, RoceDataOfItsDscpOnlyNotItsAcks) {
  const pkt::MacAddr a{{2, 0, 0, 0, 0, 1}}, b{{2, 0, 0, 0, 0, 2}};
  auto roce = [&](uint8_t tos, uint8_t opcode, bool vlan = false) {
    pkt::PacketBuilder pb;
    pb.Eth(a, b);
    if (vlan) pb.Vlan(7);
    return pb.Ipv4(0x0A000002, 0x0A000102, 64, tos)
        .Udp(0xC000, 4791)
        .Bth(opcode, 0x111, 1)
        .Payload(100)
        .Build();
  };
  const uint8_t d26 = kRoceDscp << 2 | 2;  // ECT(0)
  auto lossless = [](const std::vector<uint8_t>& f) {
    return dp::IsLosslessFrame(f.data(), static_cast<uint32_t>(f.size()), kRoceDscp);
  };
  EXPECT_TRUE(lossless(roce(d26, 0x0A)));          // RDMA WRITE first
  EXPECT_TRUE(lossless(roce(d26, 0x0A, true)));    // behind a VLAN tag
  EXPECT_FALSE(lossless(roce(d26, 0x11)));         // ACK: strict priority, lossy
  EXPECT_FALSE(lossless(roce(0 << 2 | 2, 0x0A)));  // DSCP 0: best effort
  // A switch that queues RC ACKs with data (reorder on) keeps them lossless
  // too; a CNP stays lossy; the host NIC's class is the DSCP alone.
  auto with_acks = [](const std::vector<uint8_t>& f) {
    return dp::IsLosslessFrame(f.data(), static_cast<uint32_t>(f.size()), kRoceDscp, true);
  };
  EXPECT_TRUE(with_acks(roce(d26, 0x11)));
  EXPECT_TRUE(with_acks(roce(d26, 0x12)));
  EXPECT_FALSE(with_acks(roce(d26, 0x81)));
  EXPECT_FALSE(with_acks(roce(0 << 2 | 2, 0x11)));
  const std::vector<uint8_t> ack = roce(d26, 0x11);
  EXPECT_TRUE(dp::HasDscp(ack.data(), static_cast<uint32_t>(ack.size()), kRoceDscp));
  const auto udp = pkt::PacketBuilder().Eth(a, b).Ipv4(1, 2, 64, d26).Udp(1, 2).Payload(8).Build();
  EXPECT_TRUE(lossless(udp));  // the DSCP decides for anything else
  const auto arp = pkt::PacketBuilder().Eth(a, b, pkt::ethertype::kArp).PadTo(60).Build();
  EXPECT_FALSE(lossless(arp));
  const std::vector<uint8_t> whole = roce(d26, 0x0A);
  for (uint32_t n = 0; n < whole.size(); ++n) {  // every cut: no overread (ASan), an answer
    const std::vector<uint8_t> cut(whole.begin(), whole.begin() + n);
    (void)lossless(cut);
  }
}

}  // namespace
}  // namespace ofan::fabric
