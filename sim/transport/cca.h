// The hosts' congestion control (paper §6.5, Fig. 12): one list
// registers each algorithm's enumerator, name and help; the engine picks one
// per run and calls it through CcOnAck/CcOnLoss/CcOnTimeout, a switch on a
// run-wide constant (no virtual call, no allocation).
//
// Expects: a window in data packets of one size (every data frame of a run
// has the same size); an RTT sample and the echoed CE bit per ACK.
// Modifies: only the CcState it is given.
// Why: the paper runs its LB schemes under DCTCP, UEC's NSCC and MSwift and
// measures how much each CCA has to rein in the senders (§6.5).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "dataplane/lb/types.h"

namespace ofan::sim {

using lb::TimePs;

// X(enumerator, name, help). The order is the enum's.
#define OFAN_SIM_CCAS(X)                                                                     \
  X(kNone, "none", "no congestion control: hosts pace at rho (§2.2), resend after --rto-us") \
  X(kDctcp, "dctcp", "DCTCP: ECN fraction EWMA, cut by alpha/2 once per window")             \
  X(kNscc, "nscc", "UEC's NSCC: ECN x delay quadrants, quick adapt on loss")                 \
  X(kMswift, "mswift", "MSwift: Swift on the median of the latest delays")

enum class Cca : uint8_t {
#define OFAN_SIM_CCA_ENUM(e, name, help) e,
  OFAN_SIM_CCAS(OFAN_SIM_CCA_ENUM)
#undef OFAN_SIM_CCA_ENUM
};

#define OFAN_SIM_CCA_COUNT(e, name, help) +1  // NOLINT(bugprone-macro-parentheses): a term of a sum
inline constexpr int kNumCcas = 0 OFAN_SIM_CCAS(OFAN_SIM_CCA_COUNT);
#undef OFAN_SIM_CCA_COUNT

std::string_view CcaName(Cca c);
Result<Cca> ParseCca(std::string_view s);
// "none|dctcp|..." and one line per algorithm, for --help.
std::string CcaNames();
std::string CcaHelp();

// The paper's switch buffers when a CCA runs (§6, footnote 6): 800 KB per
// port; its ECN threshold (80 KB) is SimConfig's default.
inline constexpr uint64_t kCcaBufferBytes = 800'000;

// A flow's constants, from its path's length and the link rate.
struct CcParams {
  TimePs base_rtt = 0;     // no queueing: data there, ACK back
  double bdp = 1;          // data frames in flight that fill the line over base_rtt
  double init_window = 1;  // packets: SimConfig::init_window_bdps BDPs, at least 1
};

// MSwift's median runs over this many of the latest delay samples.
inline constexpr int kMedianSamples = 9;

// Every algorithm's per-flow state, flat (one vector of these per run).
struct CcState {
  double cwnd = 1;  // data packets
  double ssthresh = 0;
  TimePs last_cut = 0;  // time of the last multiplicative decrease
  bool cut_once = false;
  // DCTCP: the fraction of marked ACKs, its EWMA, per window of ACKs.
  double alpha = 0;
  double win_len = 0;
  uint32_t win_acks = 0, win_marks = 0;
  // NSCC: the queueing delay's average (ps), valid once have_delay is set
  // (the first sample is taken as is); quick adapt's packets acknowledged
  // in the base RTT that began at qa_start, and in the full base RTT before
  // that period (0 if no ACK came in it).
  double avg_delay = 0;
  bool have_delay = false;
  uint32_t qa_acked = 0;
  TimePs qa_start = 0;
  uint32_t qa_last = 0;
  // MSwift: a ring of the latest delays.
  TimePs delays[kMedianSamples] = {};
  uint8_t ndelays = 0, dpos = 0;
};

// What one ACK tells the sender.
struct AckSignal {
  TimePs now = 0;
  TimePs rtt = 0;  // this data packet's send time to its ACK's arrival
  bool ce = false;
};

// May the algorithm cut again (at most once per RTT: the base RTT plus the
// latest sample's queueing)?
inline bool MayCut(const CcState& s, TimePs now, TimePs rtt) {
  return !s.cut_once || now >= s.last_cut + rtt;
}
inline void NoteCut(CcState& s, TimePs now) {
  s.last_cut = now;
  s.cut_once = true;
}

void CcInit(Cca kind, CcState& s, const CcParams& p);
void CcOnAck(Cca kind, CcState& s, const CcParams& p, const AckSignal& a);
// Packets declared lost by the duplicate threshold (at most once per RTT).
void CcOnLoss(Cca kind, CcState& s, const CcParams& p, TimePs now);
void CcOnTimeout(Cca kind, CcState& s, const CcParams& p, TimePs now);

}  // namespace ofan::sim
