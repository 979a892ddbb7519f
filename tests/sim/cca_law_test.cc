// The congestion-control window laws of sim/transport/, each on a
// CcState driven by hand-made ACK sequences through CcInit/CcOnAck/CcOnLoss/
// CcOnTimeout, against the law its .cc states and its header's constants:
//  - DCTCP: 1/cwnd per unmarked ACK, alpha's EWMA per window of ACKs, the cut
//    by alpha/2 at the end of a marked window only, slow start after a
//    timeout up to max(2, cwnd/2), loss halving once per base RTT, the cap;
//  - NSCC: the four ECN x delay quadrants, the delay EWMA (only the first
//    sample taken as is, even a zero one), quick adapt on loss (once per
//    RTT) and on timeout (always) to the last full base RTT's ACKs, none
//    after a silence;
//  - MSwift: the median of the last kMedianSamples delays, kAi/cwnd below
//    target, neither growth nor cut at it, the capped cut once per RTT above
//    it, loss and timeout;
//  - every algorithm keeps the window in [1, kMaxBdps BDPs]; none touches
//    nothing.
// Expected values come from the laws in closed form or a few steps by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "sim/transport/cca.h"
#include "sim/transport/dctcp.h"
#include "sim/transport/mswift.h"
#include "sim/transport/nscc.h"

namespace ofan::sim {
namespace {

constexpr TimePs kBase = 10'000'000;  // 10 us
constexpr double kBdp = 20;

CcParams Params(double bdp = kBdp, double init_window = kBdp) {
  CcParams p;
  p.base_rtt = kBase;
  p.bdp = bdp;
  p.init_window = init_window;
  return p;
}

CcState Start(Cca kind, const CcParams& p) {
  CcState s;
  CcInit(kind, s, p);
  return s;
}

// An ACK at `now` whose packet saw `queueing` ps on top of the base RTT.
AckSignal Ack(TimePs now, TimePs queueing = 0, bool ce = false) {
  AckSignal a;
  a.now = now;
  a.rtt = kBase + queueing;
  a.ce = ce;
  return a;
}

// ---------------------------------------------------------------- DCTCP

// ACKs in a DCTCP window that begins now: as many as the window held, i.e.
// the first whole number at or above it.
int DctcpWindowAcks(const CcState& s) { return static_cast<int>(std::ceil(s.win_len)); }

TEST(CcaLawDctcp, StartsAtOneBdpInCongestionAvoidance) {
  const CcState s = Start(Cca::kDctcp, Params());
  EXPECT_EQ(s.cwnd, kBdp);
  EXPECT_EQ(s.ssthresh, kBdp);
  EXPECT_EQ(s.alpha, 0);
}

TEST(CcaLawDctcp, AdditiveIncreaseOfAboutOnePacketPerWindow) {
  const CcParams p = Params();
  CcState s = Start(Cca::kDctcp, p);
  // One window of 20 unmarked ACKs: 1/cwnd each, so a little under one packet.
  for (int i = 0; i < 20; ++i) {
    const double before = s.cwnd;
    CcOnAck(Cca::kDctcp, s, p, Ack(i * kBase / 20));
    EXPECT_DOUBLE_EQ(s.cwnd, before + 1 / before) << "ACK " << i;
  }
  EXPECT_GT(s.cwnd, kBdp + kBdp / (kBdp + 1));  // 20 steps of at least 1/21
  EXPECT_LT(s.cwnd, kBdp + 1);                  // 20 steps of at most 1/20
  EXPECT_EQ(s.alpha, 0);
  EXPECT_FALSE(s.cut_once);
  // c' = c + 1/c gives c'^2 = c^2 + 2 + 1/c^2: after n more ACKs,
  // 400 + 2n' <= c^2 <= 400 + 2n' + n'/400 with n' = all ACKs so far.
  const int n = 1000;
  for (int i = 20; i < n; ++i) CcOnAck(Cca::kDctcp, s, p, Ack(i * kBase / 20));
  EXPECT_GE(s.cwnd * s.cwnd, kBdp * kBdp + 2.0 * n);
  EXPECT_LE(s.cwnd * s.cwnd, kBdp * kBdp + 2.0 * n + n / (kBdp * kBdp));
}

TEST(CcaLawDctcp, AlphaIsTheEwmaOfEachWindowsMarkedFraction) {
  const CcParams p = Params();
  CcState s = Start(Cca::kDctcp, p);
  double alpha = 0;
  TimePs now = 0;
  // Marked fractions per window, as a share of the window's ACKs.
  for (double share : {0.25, 0.0, 0.5, 1.0, 0.0, 0.1}) {
    ASSERT_EQ(s.win_acks, 0u);
    const int n = DctcpWindowAcks(s);
    const int marks = static_cast<int>(std::lround(share * n));
    const double at_start = s.alpha;
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(s.alpha, at_start) << "alpha changed inside a window";
      CcOnAck(Cca::kDctcp, s, p, Ack(now += kBase / 20, 0, i < marks));
    }
    const double f = static_cast<double>(marks) / n;
    alpha = (1 - dctcp::kG) * alpha + dctcp::kG * f;
    EXPECT_DOUBLE_EQ(s.alpha, alpha) << "window of " << n << " ACKs, " << marks << " marked";
  }
  // Every ACK marked: alpha = 1 - (1 - g)^k after k windows.
  CcState t = Start(Cca::kDctcp, p);
  for (int k = 1; k <= 8; ++k) {
    const int n = DctcpWindowAcks(t);
    for (int i = 0; i < n; ++i) CcOnAck(Cca::kDctcp, t, p, Ack(now += kBase / 20, 0, true));
    EXPECT_NEAR(t.alpha, 1 - std::pow(1 - dctcp::kG, k), 1e-12) << "after " << k << " windows";
  }
}

TEST(CcaLawDctcp, CutByHalfAlphaAtTheEndOfAMarkedWindowOnly) {
  const CcParams p = Params();
  CcState s = Start(Cca::kDctcp, p);
  TimePs now = 0;
  // Window 1: 20 ACKs, the first 5 marked. Marks inside the window do not cut.
  for (int i = 0; i < 19; ++i) {
    const double before = s.cwnd;
    CcOnAck(Cca::kDctcp, s, p, Ack(now += kBase / 20, 0, i < 5));
    EXPECT_DOUBLE_EQ(s.cwnd, before + 1 / before);
  }
  EXPECT_FALSE(s.cut_once);
  double c = s.cwnd;
  CcOnAck(Cca::kDctcp, s, p, Ack(now += kBase / 20));
  const double alpha = dctcp::kG * 5 / 20;
  EXPECT_DOUBLE_EQ(s.alpha, alpha);
  EXPECT_DOUBLE_EQ(s.cwnd, (c + 1 / c) * (1 - alpha / 2));
  EXPECT_EQ(s.ssthresh, s.cwnd);
  EXPECT_TRUE(s.cut_once);
  EXPECT_EQ(s.last_cut, now);
  const TimePs cut_at = now;

  // Window 2: no marks. alpha decays, the window only grows.
  const int n = DctcpWindowAcks(s);
  EXPECT_EQ(n, static_cast<int>(std::ceil(s.cwnd)));
  for (int i = 0; i < n; ++i) {
    const double before = s.cwnd;
    CcOnAck(Cca::kDctcp, s, p, Ack(now += kBase / 20));
    EXPECT_DOUBLE_EQ(s.cwnd, before + 1 / before);
  }
  EXPECT_DOUBLE_EQ(s.alpha, (1 - dctcp::kG) * alpha);
  EXPECT_EQ(s.last_cut, cut_at);

  // Window 3: only its last ACK marked, which is enough.
  const int m = DctcpWindowAcks(s);
  for (int i = 0; i + 1 < m; ++i) CcOnAck(Cca::kDctcp, s, p, Ack(now += kBase / 20));
  c = s.cwnd;
  CcOnAck(Cca::kDctcp, s, p, Ack(now += kBase / 20, 0, true));
  const double alpha2 = (1 - dctcp::kG) * alpha;
  const double alpha3 = (1 - dctcp::kG) * alpha2 + dctcp::kG * (1.0 / m);
  EXPECT_DOUBLE_EQ(s.alpha, alpha3);
  EXPECT_DOUBLE_EQ(s.cwnd, (c + 1 / c) * (1 - alpha3 / 2));
  EXPECT_EQ(s.last_cut, now);
}

TEST(CcaLawDctcp, SlowStartAfterTimeoutUpToHalfTheWindow) {
  const CcParams p = Params();
  CcState s = Start(Cca::kDctcp, p);
  CcOnTimeout(Cca::kDctcp, s, p, kBase);
  EXPECT_EQ(s.cwnd, 1);
  EXPECT_EQ(s.ssthresh, std::max(2.0, kBdp / 2));
  TimePs now = kBase;
  // One packet per ACK while below ssthresh = 10: nine ACKs reach it.
  for (int i = 1; i <= 9; ++i) {
    CcOnAck(Cca::kDctcp, s, p, Ack(now += kBase / 20));
    EXPECT_EQ(s.cwnd, 1 + i);
  }
  // Then congestion avoidance.
  CcOnAck(Cca::kDctcp, s, p, Ack(now += kBase / 20));
  EXPECT_DOUBLE_EQ(s.cwnd, 10 + 1.0 / 10);

  // A timeout at one packet: ssthresh is 2, not half a packet.
  CcOnTimeout(Cca::kDctcp, s, p, now += kBase);
  CcOnTimeout(Cca::kDctcp, s, p, now += kBase);
  EXPECT_EQ(s.cwnd, 1);
  EXPECT_EQ(s.ssthresh, 2);
  CcOnAck(Cca::kDctcp, s, p, Ack(now += kBase / 20));
  EXPECT_EQ(s.cwnd, 2);
  CcOnAck(Cca::kDctcp, s, p, Ack(now += kBase / 20));
  EXPECT_DOUBLE_EQ(s.cwnd, 2.5);
}

TEST(CcaLawDctcp, LossHalvesAtMostOncePerBaseRtt) {
  const CcParams p = Params();
  CcState s = Start(Cca::kDctcp, p);
  CcOnLoss(Cca::kDctcp, s, p, 0);  // the first cut needs no wait
  EXPECT_EQ(s.cwnd, kBdp / 2);
  EXPECT_EQ(s.ssthresh, kBdp / 2);
  CcOnLoss(Cca::kDctcp, s, p, kBase - 1);
  EXPECT_EQ(s.cwnd, kBdp / 2);
  CcOnLoss(Cca::kDctcp, s, p, kBase);
  EXPECT_EQ(s.cwnd, kBdp / 4);
  CcOnLoss(Cca::kDctcp, s, p, 2 * kBase);
  CcOnLoss(Cca::kDctcp, s, p, 3 * kBase);
  EXPECT_EQ(s.cwnd, 1.25);
  CcOnLoss(Cca::kDctcp, s, p, 4 * kBase);
  EXPECT_EQ(s.cwnd, 1);  // not 0.625
}

TEST(CcaLawDctcp, WindowCappedAtMaxBdps) {
  const CcParams p = Params();
  CcState s = Start(Cca::kDctcp, p);
  const double cap = dctcp::kMaxBdps * kBdp;
  // Reaching the cap by 1/cwnd per ACK takes about (cap^2 - 20^2) / 2 ACKs.
  const int n = static_cast<int>((cap * cap - kBdp * kBdp) / 2) + 200;
  for (int i = 0; i < n; ++i) {
    CcOnAck(Cca::kDctcp, s, p, Ack(i * kBase / 20));
    ASSERT_LE(s.cwnd, cap) << "ACK " << i;
  }
  EXPECT_EQ(s.cwnd, cap);
  // Below one BDP the cap is kMaxBdps packets.
  const CcParams small = Params(0.25, 1);
  CcState t = Start(Cca::kDctcp, small);
  for (int i = 0; i < 100; ++i) CcOnAck(Cca::kDctcp, t, small, Ack(i * kBase));
  EXPECT_EQ(t.cwnd, dctcp::kMaxBdps);
}

// ----------------------------------------------------------------- NSCC

constexpr double kNsccTarget = nscc::kTarget * kBase;  // 7.5 us

TEST(CcaLawNscc, DelayAverageTakesTheFirstSampleThenGainOneEighth) {
  const CcParams p = Params();
  CcState s = Start(Cca::kNscc, p);
  EXPECT_EQ(s.cwnd, kBdp);
  CcOnAck(Cca::kNscc, s, p, Ack(1, 4'000'000));
  EXPECT_EQ(s.avg_delay, 4'000'000);
  CcOnAck(Cca::kNscc, s, p, Ack(2, 12'000'000));
  double avg = (1 - nscc::kDelayGain) * 4'000'000 + nscc::kDelayGain * 12'000'000;
  EXPECT_DOUBLE_EQ(s.avg_delay, avg);
  // An RTT below the base one is no queueing, not negative queueing.
  AckSignal early = Ack(3);
  early.rtt = kBase - 1'000'000;
  CcOnAck(Cca::kNscc, s, p, early);
  avg = (1 - nscc::kDelayGain) * avg;
  EXPECT_DOUBLE_EQ(s.avg_delay, avg);

  // A flow whose first ACKs see no queue: 0 is a sample like any other, so
  // a first queued sample of 8 us moves the average by 1/8 of it, to 1 us.
  CcState z = Start(Cca::kNscc, p);
  CcOnAck(Cca::kNscc, z, p, Ack(1));
  EXPECT_EQ(z.avg_delay, 0);
  CcOnAck(Cca::kNscc, z, p, Ack(2, 8'000'000));
  EXPECT_DOUBLE_EQ(z.avg_delay, 1'000'000);
  CcOnAck(Cca::kNscc, z, p, Ack(3, 8'000'000));
  EXPECT_DOUBLE_EQ(z.avg_delay, (1 - nscc::kDelayGain) * 1'000'000 + nscc::kDelayGain * 8'000'000);
  // The average back at exactly 0 is still an average, not "no sample".
  CcState b = Start(Cca::kNscc, p);
  CcOnAck(Cca::kNscc, b, p, Ack(1));
  CcOnAck(Cca::kNscc, b, p, Ack(2));
  ASSERT_EQ(b.avg_delay, 0);
  CcOnAck(Cca::kNscc, b, p, Ack(3, 16'000'000));
  EXPECT_DOUBLE_EQ(b.avg_delay, 2'000'000);
}

TEST(CcaLawNscc, NoCeBelowTargetIncreasesProportionally) {
  const CcParams p = Params();
  CcState s = Start(Cca::kNscc, p);
  // Delay a third of the target: kPi BDPs per RTT scaled by 2/3, per ACK / cwnd.
  const TimePs d = static_cast<TimePs>(kNsccTarget / 3);
  for (int i = 0; i < 5; ++i) {
    const double before = s.cwnd;
    CcOnAck(Cca::kNscc, s, p, Ack(1 + i, d));
    ASSERT_DOUBLE_EQ(s.avg_delay, d);
    EXPECT_DOUBLE_EQ(s.cwnd, before + nscc::kPi * kBdp * (kNsccTarget - d) / kNsccTarget / before);
  }
  EXPECT_FALSE(s.cut_once);
  // At zero delay, kPi * bdp / cwnd per ACK: c^2 grows by 2 kPi bdp plus at
  // most (kPi bdp / c)^2 per ACK; one window (20 ACKs) is about kPi BDPs.
  CcState z = Start(Cca::kNscc, p);
  const double step = nscc::kPi * kBdp;
  for (int i = 0; i < 20; ++i) CcOnAck(Cca::kNscc, z, p, Ack(1 + i));
  EXPECT_GE(z.cwnd * z.cwnd, kBdp * kBdp + 20 * 2 * step);
  EXPECT_LE(z.cwnd * z.cwnd, kBdp * kBdp + 20 * (2 * step + step * step / (kBdp * kBdp)));
}

TEST(CcaLawNscc, NoCeAtOrAboveTargetIncreasesFairly) {
  const CcParams p = Params();
  CcState s = Start(Cca::kNscc, p);
  const TimePs t = static_cast<TimePs>(kNsccTarget);
  CcOnAck(Cca::kNscc, s, p, Ack(1, t));  // exactly at the target
  EXPECT_DOUBLE_EQ(s.cwnd, kBdp + nscc::kFi / kBdp);
  for (int i = 0; i < 5; ++i) {
    const double before = s.cwnd;
    CcOnAck(Cca::kNscc, s, p, Ack(2 + i, 4 * t));
    ASSERT_GE(s.avg_delay, kNsccTarget);
    EXPECT_DOUBLE_EQ(s.cwnd, before + nscc::kFi / before);
  }
  EXPECT_FALSE(s.cut_once);
}

TEST(CcaLawNscc, CeAboveTargetCutsMultiplicativelyOncePerRtt) {
  const CcParams p = Params();
  CcState s = Start(Cca::kNscc, p);
  const TimePs d = 2 * static_cast<TimePs>(kNsccTarget);  // 15 us
  auto factor = [](double delay) {
    return std::max(0.5, 1 - nscc::kMd * (delay - kNsccTarget) / delay);
  };
  const TimePs t0 = 5 * kBase;
  CcOnAck(Cca::kNscc, s, p, Ack(t0, d, true));
  double w = kBdp * factor(d);
  EXPECT_DOUBLE_EQ(s.cwnd, w);
  EXPECT_EQ(s.last_cut, t0);
  // The same sample keeps the average at d; the next cut waits base RTT + d.
  CcOnAck(Cca::kNscc, s, p, Ack(t0 + kBase + d - 1, d, true));
  ASSERT_DOUBLE_EQ(s.avg_delay, d);
  EXPECT_DOUBLE_EQ(s.cwnd, w);  // neither cut nor grown
  CcOnAck(Cca::kNscc, s, p, Ack(t0 + kBase + d, d, true));
  w *= factor(d);
  EXPECT_DOUBLE_EQ(s.cwnd, w);
  EXPECT_EQ(s.last_cut, t0 + kBase + d);

  // A huge delay: the factor tends to 1 - kMd, never below one half.
  CcState h = Start(Cca::kNscc, p);
  const TimePs huge = 1000 * kBase;
  CcOnAck(Cca::kNscc, h, p, Ack(1, huge, true));
  EXPECT_DOUBLE_EQ(h.cwnd, kBdp * factor(static_cast<double>(huge)));
  EXPECT_GE(h.cwnd, kBdp / 2);
}

TEST(CcaLawNscc, CeBelowTargetLeavesTheWindowAlone) {
  const CcParams p = Params();
  CcState s = Start(Cca::kNscc, p);
  for (TimePs d :
       {TimePs{0}, static_cast<TimePs>(kNsccTarget / 2), static_cast<TimePs>(kNsccTarget) - 1}) {
    CcState t = Start(Cca::kNscc, p);
    for (int i = 0; i < 10; ++i) CcOnAck(Cca::kNscc, t, p, Ack(1 + i * kBase, d, true));
    EXPECT_EQ(t.cwnd, kBdp) << "delay " << d;
    EXPECT_FALSE(t.cut_once);
  }
  // Also after growing: a CE below target neither grows nor cuts.
  for (int i = 0; i < 10; ++i) CcOnAck(Cca::kNscc, s, p, Ack(1 + i));
  const double w = s.cwnd;
  CcOnAck(Cca::kNscc, s, p, Ack(20, 0, true));
  EXPECT_EQ(s.cwnd, w);
}

TEST(CcaLawNscc, QuickAdaptOnLossToLastBaseRttsAcksOncePerRtt) {
  const CcParams p = Params();
  CcState s = Start(Cca::kNscc, p);
  // A loss before a full base RTT of ACKs: nothing acknowledged, one packet.
  CcState early = Start(Cca::kNscc, p);
  CcOnAck(Cca::kNscc, early, p, Ack(0));
  CcOnLoss(Cca::kNscc, early, p, kBase / 2);
  EXPECT_EQ(early.cwnd, 1);

  // Seven ACKs in [0, base RTT); the next one closes that RTT.
  for (int i = 0; i < 7; ++i) CcOnAck(Cca::kNscc, s, p, Ack(i * kBase / 10));
  CcOnAck(Cca::kNscc, s, p, Ack(kBase));
  ASSERT_GT(s.cwnd, 7);
  CcOnLoss(Cca::kNscc, s, p, kBase + 1);
  EXPECT_EQ(s.cwnd, 7);
  // Three ACKs in the next base RTT (the closing one above counts).
  CcOnAck(Cca::kNscc, s, p, Ack(kBase + 2'000'000));
  CcOnAck(Cca::kNscc, s, p, Ack(kBase + 4'000'000));
  const double grown = s.cwnd;
  ASSERT_GT(grown, 7);
  CcOnLoss(Cca::kNscc, s, p, 2 * kBase);  // within the RTT of the last adapt
  EXPECT_EQ(s.cwnd, grown);
  CcOnAck(Cca::kNscc, s, p, Ack(2 * kBase));
  CcOnLoss(Cca::kNscc, s, p, 2 * kBase + 1);
  EXPECT_EQ(s.cwnd, 3);

  // More ACKs over the last RTT than the window: never raised.
  CcState f = Start(Cca::kNscc, p);
  const TimePs at_target = static_cast<TimePs>(kNsccTarget);
  for (int i = 0; i < 28; ++i) CcOnAck(Cca::kNscc, f, p, Ack(i * kBase / 28, at_target));
  CcOnAck(Cca::kNscc, f, p, Ack(kBase, at_target));
  ASSERT_LT(f.cwnd, 28);
  const double w = f.cwnd;
  CcOnLoss(Cca::kNscc, f, p, kBase + 1);
  EXPECT_EQ(f.cwnd, w);
  EXPECT_EQ(f.last_cut, kBase + 1);
}

TEST(CcaLawNscc, QuickAdaptOnTimeoutAlways) {
  const CcParams p = Params();
  CcState s = Start(Cca::kNscc, p);
  for (int i = 0; i < 7; ++i) CcOnAck(Cca::kNscc, s, p, Ack(i * kBase / 10));
  CcOnAck(Cca::kNscc, s, p, Ack(kBase));
  CcOnLoss(Cca::kNscc, s, p, kBase + 1);
  ASSERT_EQ(s.cwnd, 7);
  CcOnAck(Cca::kNscc, s, p, Ack(kBase + 5'000'000));
  CcOnAck(Cca::kNscc, s, p, Ack(2 * kBase));  // closes an RTT of 2 ACKs
  CcOnLoss(Cca::kNscc, s, p, 2 * kBase);      // a loss may not adapt yet
  EXPECT_GT(s.cwnd, 7);
  CcOnTimeout(Cca::kNscc, s, p, 2 * kBase);  // a timeout does
  EXPECT_EQ(s.cwnd, 2);
  EXPECT_EQ(s.last_cut, 2 * kBase);
}

TEST(CcaLawNscc, QuickAdaptCountsTheLastFullBaseRttBeforeNow) {
  const CcParams p = Params();
  // Seven ACKs in [0, base RTT), one at base RTT opens the next period and
  // two more fall in it: 3 acknowledged over [base RTT, 2 base RTTs).
  auto seven_then_three = [&] {
    CcState s = Start(Cca::kNscc, p);
    for (int i = 0; i < 7; ++i) CcOnAck(Cca::kNscc, s, p, Ack(i * kBase / 10));
    CcOnAck(Cca::kNscc, s, p, Ack(kBase));
    CcOnAck(Cca::kNscc, s, p, Ack(kBase + 3'000'000));
    CcOnAck(Cca::kNscc, s, p, Ack(kBase + 6'000'000));
    return s;
  };
  // No ACK since: at 2 base RTTs + 1 the period with 3 has ended and is the
  // last full base RTT (not the one with 7 before it).
  CcState s = seven_then_three();
  ASSERT_GT(s.cwnd, 7);
  CcOnLoss(Cca::kNscc, s, p, 2 * kBase + 1);
  EXPECT_EQ(s.cwnd, 3);
  // Its last instant still counts 3; a base RTT later nothing was
  // acknowledged over the last base RTT: one packet.
  CcState edge = seven_then_three();
  CcOnTimeout(Cca::kNscc, edge, p, 3 * kBase - 1);
  EXPECT_EQ(edge.cwnd, 3);
  CcState gone = seven_then_three();
  CcOnTimeout(Cca::kNscc, gone, p, 3 * kBase);
  EXPECT_EQ(gone.cwnd, 1);

  // A timeout after a silence of many base RTTs: one packet, not a count
  // from before the silence; a loss as well (once its RTT has passed).
  CcState t = seven_then_three();
  CcOnTimeout(Cca::kNscc, t, p, 50 * kBase);
  EXPECT_EQ(t.cwnd, 1);
  EXPECT_EQ(t.last_cut, 50 * kBase);
  CcState l = seven_then_three();
  CcOnLoss(Cca::kNscc, l, p, 50 * kBase);
  EXPECT_EQ(l.cwnd, 1);

  // An ACK after the silence opens a period; until it ends, the last full
  // base RTT is the silent one before it: one packet, not 3.
  CcState a = seven_then_three();
  CcOnAck(Cca::kNscc, a, p, Ack(50 * kBase));
  ASSERT_GT(a.cwnd, 3);
  CcOnLoss(Cca::kNscc, a, p, 50 * kBase + 1);
  EXPECT_EQ(a.cwnd, 1);
  // Right after the period with 3, without a silent base RTT, it counts.
  CcState c = seven_then_three();
  CcOnAck(Cca::kNscc, c, p, Ack(3 * kBase - 1));
  CcOnLoss(Cca::kNscc, c, p, 3 * kBase);
  EXPECT_EQ(c.cwnd, 3);
}

// --------------------------------------------------------------- MSwift

constexpr double kSwiftTarget = mswift::kTarget * kBase;  // 2.5 us

double SwiftCut(double m) {
  return 1 - std::min(mswift::kBeta * (m - kSwiftTarget) / m, mswift::kMaxMdf);
}

TEST(CcaLawMswift, IncreaseBelowTarget) {
  const CcParams p = Params();
  CcState s = Start(Cca::kMswift, p);
  EXPECT_EQ(s.cwnd, kBdp);
  for (TimePs d : {TimePs{0}, static_cast<TimePs>(kSwiftTarget) - 1}) {
    for (int i = 0; i < 10; ++i) {
      const double before = s.cwnd;
      CcOnAck(Cca::kMswift, s, p, Ack(1 + i, d));
      EXPECT_DOUBLE_EQ(s.cwnd, before + mswift::kAi / before);
    }
  }
  EXPECT_FALSE(s.cut_once);
}

TEST(CcaLawMswift, AtTheTargetNeitherGrowsNorCuts) {
  const CcParams p = Params();
  CcState s = Start(Cca::kMswift, p);
  const TimePs t = static_cast<TimePs>(kSwiftTarget);
  ASSERT_EQ(static_cast<double>(t), mswift::kTarget * static_cast<double>(kBase));
  TimePs now = kBase;
  for (int i = 0; i < kMedianSamples; ++i) {
    CcOnAck(Cca::kMswift, s, p, Ack(now += 1000, t));
    EXPECT_EQ(s.cwnd, kBdp) << "ACK " << i;
  }
  EXPECT_FALSE(s.cut_once);  // not a cut: the next one need not wait
  // A median above the target right after: cut at once.
  const TimePs high = 2 * t;
  for (int i = 0; i < kMedianSamples / 2; ++i) CcOnAck(Cca::kMswift, s, p, Ack(now += 1000, high));
  EXPECT_EQ(s.cwnd, kBdp);  // median still at the target
  CcOnAck(Cca::kMswift, s, p, Ack(now += 1000, high));
  EXPECT_DOUBLE_EQ(s.cwnd, kBdp * SwiftCut(static_cast<double>(high)));
  EXPECT_EQ(s.last_cut, now);
}

TEST(CcaLawMswift, TheMedianOfTheLatestDelaysDecides) {
  const CcParams p = Params();
  CcState s = Start(Cca::kMswift, p);
  TimePs now = 0;
  for (int i = 0; i < kMedianSamples; ++i) CcOnAck(Cca::kMswift, s, p, Ack(now += 1000));
  // High samples at twice the target: a cut by kBeta / 2.
  const TimePs high = 2 * static_cast<TimePs>(kSwiftTarget);
  static_assert(kMedianSamples == 9, "the counts below are for 9 samples");
  for (int i = 0; i < 4; ++i) {  // 4 high among the latest 9: median low
    const double before = s.cwnd;
    CcOnAck(Cca::kMswift, s, p, Ack(now += 1000, high));
    EXPECT_DOUBLE_EQ(s.cwnd, before + mswift::kAi / before) << "high sample " << i + 1;
  }
  EXPECT_FALSE(s.cut_once);
  const double before = s.cwnd;
  CcOnAck(Cca::kMswift, s, p, Ack(now += 1000, high));  // the 5th: median high
  EXPECT_DOUBLE_EQ(s.cwnd, before * SwiftCut(static_cast<double>(high)));
  EXPECT_DOUBLE_EQ(SwiftCut(static_cast<double>(high)), 1 - mswift::kBeta / 2);
  EXPECT_EQ(s.last_cut, now);

  // Low samples push the highs out of the ring again: 5 low among the latest
  // 9 bring the median below the target.
  CcState t = Start(Cca::kMswift, p);
  for (int i = 0; i < kMedianSamples; ++i) CcOnAck(Cca::kMswift, t, p, Ack(now += 1000, high));
  const double w = t.cwnd;  // cut once, then waiting for an RTT
  for (int i = 0; i < 4; ++i) CcOnAck(Cca::kMswift, t, p, Ack(now += 1000));
  EXPECT_EQ(t.cwnd, w);  // median still high, no growth, no cut yet
  CcOnAck(Cca::kMswift, t, p, Ack(now += 1000));
  EXPECT_DOUBLE_EQ(t.cwnd, w + mswift::kAi / w);
}

TEST(CcaLawMswift, CutCappedAtMaxMdfOncePerRtt) {
  const CcParams p = Params();
  CcState s = Start(Cca::kMswift, p);
  const TimePs m = 4 * kBase;  // kBeta (m - t) / m = 0.75 > kMaxMdf
  const TimePs t0 = 3 * kBase;
  CcOnAck(Cca::kMswift, s, p, Ack(t0, m));
  double w = kBdp * (1 - mswift::kMaxMdf);
  EXPECT_DOUBLE_EQ(s.cwnd, w);
  EXPECT_DOUBLE_EQ(SwiftCut(static_cast<double>(m)), 1 - mswift::kMaxMdf);
  CcOnAck(Cca::kMswift, s, p, Ack(t0 + kBase + m - 1, m));
  EXPECT_DOUBLE_EQ(s.cwnd, w);
  CcOnAck(Cca::kMswift, s, p, Ack(t0 + kBase + m, m));
  w *= 1 - mswift::kMaxMdf;
  EXPECT_DOUBLE_EQ(s.cwnd, w);
  EXPECT_EQ(s.last_cut, t0 + kBase + m);
}

TEST(CcaLawMswift, LossCutsByMaxMdfOncePerRttTimeoutSetsOne) {
  const CcParams p = Params();
  CcState s = Start(Cca::kMswift, p);
  CcOnLoss(Cca::kMswift, s, p, 0);
  EXPECT_DOUBLE_EQ(s.cwnd, kBdp * (1 - mswift::kMaxMdf));
  CcOnLoss(Cca::kMswift, s, p, kBase - 1);
  EXPECT_DOUBLE_EQ(s.cwnd, kBdp * (1 - mswift::kMaxMdf));
  CcOnLoss(Cca::kMswift, s, p, kBase);
  EXPECT_DOUBLE_EQ(s.cwnd, kBdp * (1 - mswift::kMaxMdf) * (1 - mswift::kMaxMdf));
  CcOnTimeout(Cca::kMswift, s, p, kBase);  // right after a cut: still
  EXPECT_EQ(s.cwnd, 1);
  CcOnLoss(Cca::kMswift, s, p, 5 * kBase);
  EXPECT_EQ(s.cwnd, 1);
}

// ---------------------------------------------------- every algorithm

double MaxBdps(Cca kind) {
  switch (kind) {
    case Cca::kDctcp:
      return dctcp::kMaxBdps;
    case Cca::kNscc:
      return nscc::kMaxBdps;
    case Cca::kMswift:
      return mswift::kMaxBdps;
    case Cca::kNone:
      break;
  }
  return 0;
}

class EveryCca : public ::testing::TestWithParam<Cca> {};

TEST_P(EveryCca, WindowNeverBelowOnePacket) {
  const Cca kind = GetParam();
  const CcParams p = Params(1, 1);
  CcState s = Start(kind, p);
  // Marks, long queues, losses and timeouts, spaced so that every cut may
  // happen.
  TimePs now = 0;
  for (int i = 0; i < 300; ++i) {
    now += 100 * kBase;
    CcOnAck(kind, s, p, Ack(now, 50 * kBase, true));
    ASSERT_GE(s.cwnd, 1) << "ACK " << i;
    if (i % 3 == 0) CcOnLoss(kind, s, p, now += 100 * kBase);
    ASSERT_GE(s.cwnd, 1) << "loss " << i;
    if (i % 7 == 0) CcOnTimeout(kind, s, p, now += 100 * kBase);
    ASSERT_GE(s.cwnd, 1) << "timeout " << i;
  }
}

TEST_P(EveryCca, WindowNeverAboveMaxBdps) {
  const Cca kind = GetParam();
  for (double bdp : {0.25, 1.0, kBdp}) {
    const CcParams p = Params(bdp, std::max(1.0, bdp));
    const double cap = MaxBdps(kind) * std::max(1.0, bdp);
    CcState s = Start(kind, p);
    for (int i = 0; i < 20'000; ++i) {
      CcOnAck(kind, s, p, Ack(static_cast<TimePs>(i) * kBase / 10));
      ASSERT_LE(s.cwnd, cap) << "bdp " << bdp << ", ACK " << i;
    }
    EXPECT_EQ(s.cwnd, cap) << "bdp " << bdp;
  }
}

INSTANTIATE_TEST_SUITE_P(CcaLaw, EveryCca, ::testing::Values(Cca::kDctcp, Cca::kNscc, Cca::kMswift),
                         [](const auto& i) { return std::string(CcaName(i.param)); });

// Every field of a CcState, comparable and printable in one go.
auto Fields(const CcState& s) {
  return std::tuple(s.cwnd, s.ssthresh, s.last_cut, s.cut_once, s.alpha, s.win_len, s.win_acks,
                    s.win_marks, s.avg_delay, s.have_delay, s.qa_acked, s.qa_start, s.qa_last,
                    std::vector<TimePs>(s.delays, s.delays + kMedianSamples), int{s.ndelays},
                    int{s.dpos});
}

TEST(CcaLawNone, LeavesTheStateAlone) {
  const CcParams p = Params();
  CcState s;
  s.cwnd = 7.5;
  s.ssthresh = 3.25;
  s.last_cut = 42;
  s.cut_once = true;
  s.alpha = 0.125;
  s.win_len = 6;
  s.win_acks = 2;
  s.win_marks = 1;
  s.avg_delay = 1234;
  s.have_delay = true;
  s.qa_acked = 5;
  s.qa_start = 99;
  s.qa_last = 4;
  for (int i = 0; i < kMedianSamples; ++i) s.delays[i] = 1000 + i;
  s.ndelays = 3;
  s.dpos = 3;
  CcState t = s;
  CcInit(Cca::kNone, t, p);
  for (int i = 0; i < 10; ++i) CcOnAck(Cca::kNone, t, p, Ack(i * kBase, 10 * kBase, true));
  CcOnLoss(Cca::kNone, t, p, 20 * kBase);
  CcOnTimeout(Cca::kNone, t, p, 30 * kBase);
  EXPECT_EQ(Fields(t), Fields(s));
}

}  // namespace
}  // namespace ofan::sim
