// DCTCP (Alizadeh et al., SIGCOMM 2010) as htsim runs it for the paper's
// Fig. 12(a-c).
//
// Expects: one call per ACK with its echoed CE bit; loss and timeout calls
// from the engine's recovery (sim/sim.cc: a packet is lost once 3 + the
// flow's number of paths packets sent after it were acknowledged, htsim's
// default threshold, or at the retransmission timeout).
// Modifies: the window (packets), alpha, the per-window counters.
// Why: the paper's standard datacenter CCA; with spraying, reordering and the
// per-window cut are what make it collapse for REPS and AR (§6.5).
#pragma once

#include "sim/transport/cca.h"

namespace ofan::sim::dctcp {

inline constexpr double kG = 1.0 / 16;  // alpha's EWMA gain
// Assumption: the window never grows past this many BDPs (the pacer at rho
// is the rate limit; more window only adds queue).
inline constexpr double kMaxBdps = 4;

struct Dctcp {
  static void Init(CcState& s, const CcParams& p);
  static void OnAck(CcState& s, const CcParams& p, const AckSignal& a);
  static void OnLoss(CcState& s, const CcParams& p, TimePs now);
  static void OnTimeout(CcState& s, const CcParams& p, TimePs now);
};

}  // namespace ofan::sim::dctcp
