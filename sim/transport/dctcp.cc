#include "sim/transport/dctcp.h"

#include <algorithm>

namespace ofan::sim::dctcp {

// Assumptions, where the description leaves a choice:
// - the initial window is one BDP of the flow's path (--init-window) and the flow starts in
//   congestion avoidance (ssthresh = the initial window);
// - a window of ACKs is as many ACKs as the window held when it began;
//   alpha is updated at its end and the window is cut by alpha/2 then if
//   any of its ACKs carried ECE (once per window);
// - additive increase of one packet per window (1/cwnd per ACK), slow start
//   (one packet per ACK) below ssthresh after a timeout;
// - loss halves the window at most once per RTT (fast recovery, NewReno's
//   once per window of data); a timeout sets it to one packet.
void Dctcp::Init(CcState& s, const CcParams& p) {
  s.cwnd = p.init_window;
  s.ssthresh = s.cwnd;
  s.alpha = 0;
  s.win_len = s.cwnd;
  s.win_acks = s.win_marks = 0;
}

void Dctcp::OnAck(CcState& s, const CcParams& p, const AckSignal& a) {
  ++s.win_acks;
  s.win_marks += a.ce ? 1u : 0u;
  if (s.cwnd < s.ssthresh) {
    s.cwnd += 1;
  } else {
    s.cwnd += 1.0 / s.cwnd;
  }
  if (s.win_acks >= s.win_len) {
    const double f = static_cast<double>(s.win_marks) / static_cast<double>(s.win_acks);
    s.alpha = (1 - kG) * s.alpha + kG * f;
    if (s.win_marks > 0) {
      s.cwnd = std::max(1.0, s.cwnd * (1 - s.alpha / 2));
      s.ssthresh = s.cwnd;
      NoteCut(s, a.now);
    }
    s.win_len = s.cwnd;
    s.win_acks = s.win_marks = 0;
  }
  s.cwnd = std::min(s.cwnd, kMaxBdps * std::max(1.0, p.bdp));
}

void Dctcp::OnLoss(CcState& s, const CcParams& p, TimePs now) {
  if (!MayCut(s, now, p.base_rtt)) return;
  s.cwnd = std::max(1.0, s.cwnd / 2);
  s.ssthresh = s.cwnd;
  NoteCut(s, now);
}

void Dctcp::OnTimeout(CcState& s, const CcParams& /*p*/, TimePs now) {
  s.ssthresh = std::max(2.0, s.cwnd / 2);
  s.cwnd = 1;
  s.win_len = 1;
  s.win_acks = s.win_marks = 0;
  NoteCut(s, now);
}

}  // namespace ofan::sim::dctcp
