// MSwift (Gerstein, Silberstein, Keslassy, arXiv:2509.07907, the paper's
// [32]): Google's Swift, delay-target based, fed with the median of the
// latest delay samples instead of the latest one, so that one congested path
// among the sprayed ones does not drive the window.
//
// Expects: one call per ACK with its RTT sample; loss and timeout calls from
// the engine's recovery (sim/sim.cc).
// Modifies: the window (packets) and the ring of delay samples.
// Why: the other spraying-aware CCA of the paper's §6.5 and §6.7; it targets
// smaller queues than NSCC (§6.5).
#pragma once

#include "sim/transport/cca.h"

namespace ofan::sim::mswift {

// Target queueing delay, as a fraction of the flow's base RTT (assumption:
// smaller than NSCC's, as the paper says).
inline constexpr double kTarget = 0.25;
inline constexpr double kAi = 1;        // additive increase: packets per RTT
inline constexpr double kBeta = 0.8;    // Swift's multiplicative decrease gain
inline constexpr double kMaxMdf = 0.5;  // largest cut at once
inline constexpr double kMaxBdps = 4;

struct Mswift {
  static void Init(CcState& s, const CcParams& p);
  static void OnAck(CcState& s, const CcParams& p, const AckSignal& a);
  static void OnLoss(CcState& s, const CcParams& p, TimePs now);
  static void OnTimeout(CcState& s, const CcParams& p, TimePs now);
};

}  // namespace ofan::sim::mswift
