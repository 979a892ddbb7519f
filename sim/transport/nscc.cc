#include "sim/transport/nscc.h"

#include <algorithm>

namespace ofan::sim::nscc {

// The reading. Each ACK brings two signals: its CE bit (congestion on the
// path this packet took) and its queueing delay (RTT - base RTT), averaged
// (EWMA, gain 1/8, from the flow's first sample taken as is, even if 0)
// against a target. The four quadrants:
//   no CE, delay < target: proportional increase, by kPi BDPs per RTT
//                          scaled by how far below the target the delay is;
//   no CE, delay >= target: fair increase, kFi packets per RTT;
//   CE, delay >= target:    multiplicative decrease by kMd (delay - target) /
//                           delay, at most once per RTT, never below half;
//   CE, delay < target:     no change: a transient queue on one path, which
//                           the load balancer (not the window) should fix.
// Loss or timeout: quick adapt, the window becomes what was acknowledged
// over the last base RTT (at least one packet), never more than it was; at
// most once per RTT for a loss, always for a timeout. The last full base
// RTT before `now`: the current counting period (one base RTT from the ACK
// that opened it) if it has ended, else the one before it; a base RTT
// without ACKs in between counts 0 (after a silence the window becomes 1).
// Window in [1, kMaxBdps BDPs], starting at one BDP (--init-window).
void Nscc::Init(CcState& s, const CcParams& p) {
  s.cwnd = p.init_window;
  s.avg_delay = 0;
  s.have_delay = false;
}

namespace {
// Packets acknowledged over the last full base RTT before `now`.
uint32_t AckedOverLastBaseRtt(const CcState& s, TimePs base_rtt, TimePs now) {
  if (now < s.qa_start + base_rtt) return s.qa_last;  // the current period runs on
  if (now < s.qa_start + 2 * base_rtt) return s.qa_acked;
  return 0;  // a silent base RTT since the current period ended
}
}  // namespace

void Nscc::OnAck(CcState& s, const CcParams& p, const AckSignal& a) {
  const double base = static_cast<double>(p.base_rtt);
  const double sample = std::max(0.0, static_cast<double>(a.rtt) - base);
  s.avg_delay = s.have_delay ? (1 - kDelayGain) * s.avg_delay + kDelayGain * sample : sample;
  s.have_delay = true;
  const double delay = s.avg_delay, target = kTarget * base;
  if (a.now >= s.qa_start + p.base_rtt) {
    s.qa_last = AckedOverLastBaseRtt(s, p.base_rtt, a.now);
    s.qa_acked = 0;
    s.qa_start = a.now;
  }
  ++s.qa_acked;
  if (!a.ce) {
    if (delay < target) {
      s.cwnd += kPi * p.bdp * (target - delay) / target / s.cwnd;
    } else {
      s.cwnd += kFi / s.cwnd;
    }
  } else if (delay >= target && MayCut(s, a.now, static_cast<TimePs>(base + delay))) {
    s.cwnd *= std::max(0.5, 1 - kMd * (delay - target) / delay);
    NoteCut(s, a.now);
  }
  s.cwnd = std::clamp(s.cwnd, 1.0, kMaxBdps * std::max(1.0, p.bdp));
}

namespace {
void QuickAdapt(CcState& s, const CcParams& p, TimePs now) {
  if (!MayCut(s, now, p.base_rtt)) return;
  const double acked = AckedOverLastBaseRtt(s, p.base_rtt, now);
  s.cwnd = std::clamp(acked, 1.0, s.cwnd);
  NoteCut(s, now);
}
}  // namespace

void Nscc::OnLoss(CcState& s, const CcParams& p, TimePs now) { QuickAdapt(s, p, now); }
void Nscc::OnTimeout(CcState& s, const CcParams& p, TimePs now) {
  s.cut_once = false;  // a timeout always adapts
  QuickAdapt(s, p, now);
}

}  // namespace ofan::sim::nscc
