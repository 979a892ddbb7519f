#include "sim/transport/mswift.h"

#include <algorithm>

namespace ofan::sim::mswift {

// Swift's law on the median m of the last kMedianSamples queueing delays
// (RTT - base RTT): below the target, grow by kAi packets per RTT; above it,
// cut by min(kBeta (m - target) / m, kMaxMdf) at most once per RTT; at
// exactly the target, neither (Swift's cut there is by zero, so it is not a
// cut and does not hold back the next one for an RTT). A loss
// cuts by kMaxMdf (once per RTT), a timeout sets the window to one packet.
// Window in [1, kMaxBdps BDPs], starting at one BDP (--init-window). Swift's fabric/host
// split and its flow-scaled target are not modelled: one target per flow.
void Mswift::Init(CcState& s, const CcParams& p) { s.cwnd = p.init_window; }

namespace {
TimePs Median(const CcState& s) {
  TimePs v[kMedianSamples];
  std::copy(s.delays, s.delays + s.ndelays, v);
  std::nth_element(v, v + s.ndelays / 2, v + s.ndelays);
  return v[s.ndelays / 2];
}
}  // namespace

void Mswift::OnAck(CcState& s, const CcParams& p, const AckSignal& a) {
  const TimePs q = a.rtt > p.base_rtt ? a.rtt - p.base_rtt : 0;
  s.delays[s.dpos] = q;
  s.dpos = static_cast<uint8_t>((s.dpos + 1) % kMedianSamples);
  if (s.ndelays < kMedianSamples) ++s.ndelays;
  const double m = static_cast<double>(Median(s));
  const double target = kTarget * static_cast<double>(p.base_rtt);
  if (m < target) {
    s.cwnd += kAi / s.cwnd;
  } else if (m > target && MayCut(s, a.now, p.base_rtt + static_cast<TimePs>(m))) {
    s.cwnd *= 1 - std::min(kBeta * (m - target) / m, kMaxMdf);
    NoteCut(s, a.now);
  }
  s.cwnd = std::clamp(s.cwnd, 1.0, kMaxBdps * std::max(1.0, p.bdp));
}

void Mswift::OnLoss(CcState& s, const CcParams& p, TimePs now) {
  if (!MayCut(s, now, p.base_rtt)) return;
  s.cwnd = std::max(1.0, s.cwnd * (1 - kMaxMdf));
  NoteCut(s, now);
}

void Mswift::OnTimeout(CcState& s, const CcParams& /*p*/, TimePs now) {
  s.cwnd = 1;
  NoteCut(s, now);
}

}  // namespace ofan::sim::mswift
