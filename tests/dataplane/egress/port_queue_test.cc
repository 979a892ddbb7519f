// The egress stage on its own: a PortQueue with a capturing TX hook and a
// clock the test drives (tsc_hz = 1e9: one tick is one nanosecond). Golden
// cases compare whole frames; expected frames are built independently with
// PacketBuilder (which computes checksums from scratch), never by running the
// code under test.
#include "dataplane/egress/port_queue.h"

#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <string>
#include <vector>

#include "dataplane/packet/builder.h"
#include "tests/dataplane/eal_env.h"

namespace ofan::dp {
namespace {

using testing::Frame;
using testing::FrameOf;
using testing::MbufOf;

constexpr uint64_t kHz = 1'000'000'000;

// A TX hook that takes up to `room` frames per burst and keeps their bytes.
struct Capture {
  std::vector<Frame> sent;
  uint32_t room = UINT32_MAX;
  static uint16_t Send(void* ctx, rte_mbuf** pkts, uint16_t n) {
    auto* c = static_cast<Capture*>(ctx);
    const auto take = static_cast<uint16_t>(std::min<uint32_t>(n, c->room));
    for (uint16_t i = 0; i < take; ++i) {
      c->sent.push_back(FrameOf(pkts[i]));
      rte_pktmbuf_free(pkts[i]);
    }
    return take;
  }
  TxHook hook() { return TxHook{&Send, this}; }
};

Frame Data(uint8_t tos, uint16_t sport, uint32_t bytes = 100) {
  return pkt::PacketBuilder()
      .Eth(pkt::MacAddr{{2, 0, 0, 0, 0, 1}}, pkt::MacAddr{{2, 0, 0, 0, 0, 2}})
      .Ipv4(0x0A000002, 0x0A010002, 63, tos)
      .Udp(sport, pkt::kRoceV2Port)
      .Bth(0x0A, 7, 1)
      .PadTo(bytes)
      .Build();
}

class PortQueueTest : public ::testing::Test {
 protected:
  PortQueueConfig Config() {
    PortQueueConfig c;
    c.limit_bytes = 1 << 20;
    c.ecn_bytes = 0;
    c.tsc_hz = kHz;
    c.pfc_tsc_per_quantum = 51.2;  // 512 bit times at 10 Gb/s, in ns
    c.burst = 32;
    c.ring_slots = 64;
    return c;
  }
  void Init(const PortQueueConfig& c, IngressTally* tally = nullptr) {
    static int n = 0;
    ASSERT_TRUE(q_.Init("pq" + std::to_string(n++), 0, c, cap_.hook(), tally, 0).ok());
  }
  void Put(int queue, const std::vector<Frame>& frames, uint64_t now, bool owner = false,
           uint16_t port = RTE_MBUF_PORT_INVALID) {
    std::vector<rte_mbuf*> ms;
    uint64_t bytes = 0;
    for (const Frame& f : frames) {
      ms.push_back(MbufOf(f, port));
      ASSERT_NE(ms.back(), nullptr);
      bytes += f.size();
    }
    q_.Enqueue(queue, ms.data(), static_cast<uint32_t>(ms.size()), bytes, now, owner, ctr_);
  }
  uint64_t Count(Counter c) const { return ctr_.Get(c); }

  Capture cap_;
  PortQueue q_;
  LcoreCounters ctr_;
};

TEST_F(PortQueueTest, AnEmptyUnshapedQueueOfItsOwnerSendsAtOnce) {
  Init(Config());
  const std::vector<Frame> in = {Data(2, 1), Data(2, 2)};
  Put(kNormalQueue, in, 10, /*owner=*/true);
  EXPECT_EQ(cap_.sent, in);
  EXPECT_EQ(q_.backlog_bytes(), 0u);
  EXPECT_EQ(Count(Counter::kTxPackets), 2u);
  EXPECT_EQ(Count(Counter::kTxBytes), 200u);
  EXPECT_EQ(q_.Stats(10).tx_packets, 2u);
}

TEST_F(PortQueueTest, AnotherWorkersFramesWaitForTheDrain) {
  Init(Config());
  const std::vector<Frame> in = {Data(2, 1), Data(2, 2), Data(2, 3)};
  Put(kNormalQueue, in, 10);
  EXPECT_TRUE(cap_.sent.empty());
  EXPECT_EQ(q_.backlog_bytes(), 300u);
  EXPECT_EQ(q_.Drain(20, ctr_), 3u);
  EXPECT_EQ(cap_.sent, in);
  EXPECT_EQ(q_.backlog_bytes(), 0u);
}

TEST_F(PortQueueTest, TailDropAboveTheBuffer) {
  PortQueueConfig c = Config();
  c.limit_bytes = 250;  // room for two 100 B frames
  Init(c);
  Put(kNormalQueue, {Data(2, 1), Data(2, 2), Data(2, 3), Data(2, 4)}, 0);
  EXPECT_EQ(Count(Counter::kDropBufferFull), 2u);
  EXPECT_EQ(q_.Stats(0).drops_buffer, 2u);
  EXPECT_EQ(q_.Stats(0).max_bytes, 200u);
  q_.Drain(1, ctr_);
  EXPECT_EQ(cap_.sent, (std::vector<Frame>{Data(2, 1), Data(2, 2)}));
}

TEST_F(PortQueueTest, EctFramesAboveTheThresholdLeaveCeMarked) {
  PortQueueConfig c = Config();
  c.ecn_bytes = 150;  // the third frame finds 200 B ahead of it
  Init(c);
  // ECT(0), ECT(1), ECT(0), Not-ECT, ECT(1): only ECT frames past 150 B get CE.
  Put(kNormalQueue, {Data(2, 1), Data(1, 2), Data(2, 3), Data(0, 4), Data(1, 5)}, 0);
  q_.Drain(1, ctr_);
  const std::vector<Frame> want = {Data(2, 1), Data(1, 2), Data(3, 3), Data(0, 4), Data(3, 5)};
  EXPECT_EQ(cap_.sent, want);
  EXPECT_EQ(Count(Counter::kEcnMarked), 2u);
  EXPECT_EQ(q_.Stats(1).ecn_marked, 2u);
}

TEST_F(PortQueueTest, StrictPriorityDrainsThePriorityQueueFirst) {
  Init(Config());
  Put(kNormalQueue, {Data(2, 1), Data(2, 2)}, 0);
  Put(kPrioQueue, {Data(2, 9)}, 0);
  q_.Drain(1, ctr_);
  EXPECT_EQ(cap_.sent, (std::vector<Frame>{Data(2, 9), Data(2, 1), Data(2, 2)}));
  EXPECT_EQ(Count(Counter::kPriorityQueued), 1u);
}

TEST_F(PortQueueTest, PfcPausesTheNormalQueueOnlyAndTheWatchdogFires) {
  Init(Config());
  q_.Pause(0xFFFF, 0, ctr_);  // 65535 quanta x 51.2 ns: ~3.36 ms
  EXPECT_TRUE(q_.paused(1));
  Put(kNormalQueue, {Data(2, 1)}, 1);
  Put(kPrioQueue, {Data(2, 9)}, 1);
  q_.Drain(2, ctr_);
  EXPECT_EQ(cap_.sent, (std::vector<Frame>{Data(2, 9)}));
  EXPECT_TRUE(q_.Stats(2).paused);
  // Paused again and again (a peer that never resumes): 200 ms later the
  // watchdog counts it, once.
  for (uint64_t t = 1'000'000; t <= 250'000'000; t += 1'000'000) {
    q_.Pause(0xFFFF, t, ctr_);
    q_.Drain(t, ctr_);
  }
  EXPECT_EQ(Count(Counter::kPfcWatchdog), 1u);
  EXPECT_EQ(cap_.sent.size(), 1u);
  q_.Pause(0, 260'000'000, ctr_);  // resume
  q_.Drain(260'000'001, ctr_);
  EXPECT_EQ(cap_.sent, (std::vector<Frame>{Data(2, 9), Data(2, 1)}));
}

TEST_F(PortQueueTest, TheShaperSendsWhatTheTokensAllow) {
  PortQueueConfig c = Config();
  c.bytes_per_tsc = 1.0;  // 1 B/ns = 8 Gb/s; each frame costs 100 + 20 B of tokens
  Init(c);
  Put(kNormalQueue, {Data(2, 1), Data(2, 2), Data(2, 3)}, 0, /*owner=*/true);
  EXPECT_TRUE(cap_.sent.empty()) << "a shaped queue never sends at once";
  q_.Drain(250, ctr_);  // 250 B of tokens: two frames; the third waits
  EXPECT_EQ(cap_.sent.size(), 2u);
  EXPECT_TRUE(q_.holds_backlog());
  q_.Drain(300, ctr_);  // 10 + 50 B: not yet
  EXPECT_EQ(cap_.sent.size(), 2u);
  q_.Drain(400, ctr_);  // 160 B
  EXPECT_EQ(cap_.sent, (std::vector<Frame>{Data(2, 1), Data(2, 2), Data(2, 3)}));
  EXPECT_FALSE(q_.holds_backlog());
}

// A backlogged port whose owner comes back later than the bucket's depth
// (20 us of line rate here) lost line time: the overflow is counted as
// shaper lag, the emulator's sign that a switch lacked CPU. Drains in time
// lose nothing, and neither does a port with nothing waiting.
TEST_F(PortQueueTest, ShaperLagCountsLineTimeLostWhileFramesWaited) {
  PortQueueConfig c = Config();
  c.bytes_per_tsc = 1.0;  // 1 B/ns; bucket depth max(8400 B, 20 us) = 20000 B
  Init(c);
  std::vector<Frame> frames;
  for (uint16_t i = 0; i < 60; ++i) frames.push_back(Data(2, i, 1000));
  Put(kNormalQueue, frames, 0, /*owner=*/true);
  for (uint64_t t = 5000; t <= 30000; t += 5000) q_.Drain(t, ctr_);  // on time
  EXPECT_EQ(q_.Stats(30000).shaper_lag_bytes, 0u);
  const size_t sent = cap_.sent.size();
  ASSERT_GT(sent, 20u);
  ASSERT_TRUE(q_.holds_backlog());
  // 100 us away: 100000 B of line time, plus what was left (under one
  // frame); the bucket holds 20000.
  q_.Drain(130000, ctr_);
  const uint64_t lag = q_.Stats(130000).shaper_lag_bytes;
  EXPECT_GE(lag, 80000u);
  EXPECT_LT(lag, 80000u + 1020u);
  // Drained dry, then idle for long: nothing waited, nothing lost.
  for (uint64_t t = 140000; t <= 400000; t += 10000) q_.Drain(t, ctr_);
  ASSERT_FALSE(q_.holds_backlog());
  q_.Drain(2'000'000, ctr_);
  EXPECT_EQ(q_.Stats(2'000'000).shaper_lag_bytes, lag);
  q_.ResetStats(2'000'000);
  EXPECT_EQ(q_.Stats(2'000'000).shaper_lag_bytes, 0u);
}

TEST_F(PortQueueTest, AFullDeviceKeepsTheRestInOrder) {
  Init(Config());
  cap_.room = 1;
  const std::vector<Frame> in = {Data(2, 1), Data(2, 2), Data(2, 3)};
  Put(kNormalQueue, in, 0, /*owner=*/true);  // one goes at once, two are queued
  EXPECT_EQ(cap_.sent.size(), 1u);
  EXPECT_EQ(q_.Drain(1, ctr_), 1u);
  EXPECT_TRUE(q_.holds_backlog());
  cap_.room = UINT32_MAX;
  q_.Drain(2, ctr_);
  EXPECT_EQ(cap_.sent, in);
  EXPECT_EQ(q_.backlog_bytes(), 0u);
}

TEST_F(PortQueueTest, DepthIsIntegratedOverTime) {
  Init(Config());
  Put(kNormalQueue, {Data(2, 1), Data(2, 2)}, 0);  // 200 B from t = 0
  q_.Drain(0, ctr_);                               // integrates nothing (dt 0), sends both
  Put(kNormalQueue, {Data(2, 3)}, 1000);           // 100 B from t = 1000
  q_.Drain(3000, ctr_);                            // 100 B x 3000 ns since the last drain
  const QueueStats s = q_.Stats(3000);
  EXPECT_DOUBLE_EQ(s.avg_bytes, 100.0);  // 300000 B ns over 3000 ns
  EXPECT_EQ(s.max_packets, 2u);
  EXPECT_EQ(s.max_bytes, 200u);
  q_.ResetStats(3000);
  EXPECT_EQ(q_.Stats(3000).max_bytes, 0u);
}

// The per-switch engine's watchdog on the TSC (detect 200 ms, restore 200
// ms, action drop): a peer that pauses without end stalls the lossless
// queue; 200 ms after the first pause that found frames waiting the
// watchdog fires, drops them (and the tally's bytes), and the queue ignores
// pause and drops its lossless frames while the storm lasts; the priority
// queue never stops. 200 ms after the last pause asked ends, it restores.
TEST_F(PortQueueTest, PerSwitchWatchdogDropsAStormedQueueAndRestores) {
  PortQueueConfig c = Config();
  c.wd_detect_ps = 200'000'000'000;
  c.wd_restore_ps = 200'000'000'000;
  c.wd_action = fabric::PfcWdAction::kDrop;
  std::vector<int32_t> port_of_dpdk = {0};
  IngressTally tally(port_of_dpdk.data(), 1, 1);
  Init(c, &tally);
  const uint64_t ms = 1'000'000;  // ticks (ns)
  Put(kNormalQueue, {Data(2, 1), Data(2, 2)}, 0, false, 0);
  q_.Pause(0xFFFF, 1, ctr_);  // 3.36 ms at 10 Gb/s
  uint64_t t = 1;
  for (; t < 199 * ms; t += ms) {
    q_.Pause(0xFFFF, t, ctr_);
    q_.Drain(t, ctr_);
  }
  EXPECT_TRUE(cap_.sent.empty());
  EXPECT_EQ(Count(Counter::kPfcWatchdog), 0u);
  uint64_t last_pause = 0;
  for (; t < 210 * ms; t += ms) {
    q_.Pause(0xFFFF, t, ctr_);
    last_pause = t;
    Put(kPrioQueue, {Data(2, 9)}, t);
    q_.Drain(t, ctr_);
  }
  EXPECT_EQ(Count(Counter::kPfcWatchdog), 1u);
  EXPECT_EQ(Count(Counter::kDropPfcWatchdog), 2u);
  EXPECT_EQ(tally.Bytes(0), 0u) << "the dropped frames left the tally";
  QueueStats s = q_.Stats(t);
  EXPECT_EQ(s.pfc.wd_fired, 1u);
  EXPECT_TRUE(s.pfc.wd_active);
  EXPECT_EQ(s.pfc.wd_dropped, 2u);
  EXPECT_GE(s.pfc.wd_fired_at_ps, 200'000'000'000u);
  EXPECT_LE(s.pfc.wd_fired_at_ps, 201'000'000'000u);
  EXPECT_GT(s.pfc.received, 200u);
  EXPECT_GT(s.pfc.paused_us, 199'000.0);
  EXPECT_FALSE(q_.paused(t)) << "a stormed queue ignores pause";
  for (const Frame& f : cap_.sent) EXPECT_EQ(f, Data(2, 9)) << "only the priority queue's";
  // While the storm lasts the lossless queue's frames are dropped.
  Put(kNormalQueue, {Data(2, 3)}, t, false, 0);
  q_.Drain(t, ctr_);
  EXPECT_EQ(Count(Counter::kDropPfcWatchdog), 3u);
  // The storm is over; its last pause asked 65,535 x 51.2 ns; 200 ms after
  // that pause's end, restored, and the queue heeds pause and sends again.
  const uint64_t end = last_pause + 3'355'392;
  for (t += ms; t < end + 199 * ms; t += ms) q_.Drain(t, ctr_);
  EXPECT_TRUE(q_.Stats(t).pfc.wd_active);
  q_.Drain(end + 201 * ms, ctr_);
  s = q_.Stats(end + 201 * ms);
  EXPECT_FALSE(s.pfc.wd_active);
  EXPECT_EQ(s.pfc.wd_restored, 1u);
  const size_t before = cap_.sent.size();
  Put(kNormalQueue, {Data(2, 4)}, end + 202 * ms, false, 0);
  q_.Drain(end + 202 * ms, ctr_);
  ASSERT_EQ(cap_.sent.size(), before + 1);
  EXPECT_EQ(cap_.sent.back(), Data(2, 4));
  EXPECT_EQ(s.pfc.lossless_drops, 0u);
}

// The per-switch engine's lossless admission: with PFC on, a lossless
// frame (DSCP 26) on the normal queue is admitted by its ingress port's
// account (xoff + headroom), not by this port's buffer; past the account it
// is a lossless drop. Other frames keep the port's tail drop, over their
// own share of its buffer (what it holds less the lossless frames), as the
// shared engine's EmuPort admits them: lossless data held past the buffer
// never crowds out an ACK.
TEST_F(PortQueueTest, PerSwitchLosslessFramesAreAdmittedByTheirIngressAccount) {
  PortQueueConfig c = Config();
  c.limit_bytes = 300;  // three 100 B frames
  c.wd_detect_ps = 200'000'000'000;
  c.wd_restore_ps = 200'000'000'000;
  c.lossless_dscp = 26;
  std::vector<int32_t> port_of_dpdk = {0, 1};
  IngressTally tally(port_of_dpdk.data(), 2, 2);
  tally.SetCaps({500, 500});  // five 100 B frames from each port
  Init(c, &tally);
  const uint8_t lossless = 26 << 2 | 2;
  std::vector<Frame> six(6, Data(lossless, 1));
  Put(kNormalQueue, six, 0, false, 0);  // from port 0: five fit its account
  Put(kNormalQueue, {Data(lossless, 2), Data(lossless, 3)}, 0, false, 1);  // port 1's own
  // Lossy, beside 700 B of lossless: three fit the 300 B buffer, the
  // fourth is over it.
  Put(kNormalQueue, {Data(0, 4), Data(0, 5), Data(0, 6), Data(0, 7)}, 0, false, 1);
  QueueStats s = q_.Stats(0);
  EXPECT_EQ(s.pfc.lossless_drops, 1u);
  EXPECT_EQ(Count(Counter::kDropLossless), 1u);
  EXPECT_EQ(Count(Counter::kDropBufferFull), 1u) << "the fourth lossy frame, over 300 B";
  EXPECT_EQ(tally.Bytes(0), 500u);
  EXPECT_EQ(tally.Bytes(1), 500u) << "an ingress port's account holds all its frames";
  for (uint64_t t = 1; t < 20; ++t) q_.Drain(t, ctr_);
  EXPECT_EQ(cap_.sent.size(), 10u);
  EXPECT_EQ(tally.Bytes(0), 0u);
  EXPECT_EQ(tally.Bytes(1), 0u);
  // Drained: the buffer is the lossy frames' again, all of it.
  Put(kNormalQueue, {Data(0, 8), Data(0, 9), Data(0, 10), Data(0, 11)}, 20, false, 1);
  EXPECT_EQ(Count(Counter::kDropBufferFull), 2u);
}

TEST_F(PortQueueTest, PfcTallyFollowsFramesFromEachIngressPort) {
  std::vector<int32_t> port_of_dpdk = {-1, 3, 5};  // DPDK ports 1 and 2 are fat-tree 3 and 5
  IngressTally tally(port_of_dpdk.data(), 3, 8);
  Init(Config(), &tally);
  Put(kNormalQueue, {Data(2, 1), Data(2, 2)}, 0, false, 1);
  Put(kNormalQueue, {Data(2, 3)}, 0, false, 2);
  Put(kNormalQueue, {Data(2, 4)}, 0, false, 0);  // from a port that is not the switch's
  EXPECT_EQ(tally.Bytes(3), 200u);
  EXPECT_EQ(tally.Bytes(5), 100u);
  q_.Drain(1, ctr_);
  EXPECT_EQ(tally.Bytes(3), 0u);
  EXPECT_EQ(tally.Bytes(5), 0u);
}

}  // namespace
}  // namespace ofan::dp
