// NSCC, the Ultra Ethernet Transport's Network Signal-based Congestion
// Control, as this simulator reads its public descriptions (the UEC design
// paper's summary, its write-ups and htsim's uec.cpp as described by them;
// the specification's constants are not public here). The reading is in
// nscc.cc and in README.md's note on ofan-sim's transport.
//
// Expects: one call per ACK with its RTT sample and echoed CE bit; loss and
// timeout calls from the engine's recovery (sim/sim.cc).
// Modifies: the window (packets), the delay average, quick adapt's counters.
// Why: one of the two spraying-aware CCAs of the paper's §6.5 and §6.7
// (Figs. 12(d-f), 13, 14).
#pragma once

#include "sim/transport/cca.h"

namespace ofan::sim::nscc {

// Target queueing delay, as a fraction of the flow's base RTT (assumption).
inline constexpr double kTarget = 0.75;
inline constexpr double kPi = 0.25;            // proportional increase: BDPs per RTT at zero delay
inline constexpr double kFi = 1;               // fair increase: packets per RTT
inline constexpr double kMd = 0.5;             // multiplicative decrease gain
inline constexpr double kMaxBdps = 1.5;        // maximum window (UEC's maxwnd, assumption)
inline constexpr double kDelayGain = 1.0 / 8;  // EWMA of the delay samples

struct Nscc {
  static void Init(CcState& s, const CcParams& p);
  static void OnAck(CcState& s, const CcParams& p, const AckSignal& a);
  static void OnLoss(CcState& s, const CcParams& p, TimePs now);
  static void OnTimeout(CcState& s, const CcParams& p, TimePs now);
};

}  // namespace ofan::sim::nscc
