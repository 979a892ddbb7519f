// DCQCN-like rate control (Zhu et al., "Congestion Control for Large-Scale
// RDMA Deployments", SIGCOMM'15), both ends of it:
//
// CnpSender, the notification point (responder side):
// expects:  OnCe() for every CE-marked data packet the QP accepts to look at
// gives:    one CNP owed per CE mark, at most one per `cnp_interval_ns`
//           (DcqcnTime: that long at 40 Gb/s, as much line time slower);
//           the CNP frame: BTH opcode CNP with BECN set, 16 reserved bytes
//           (IBA annex A17.9.3), sent from the QP pair's port, not
//           ECN-capable
// modifies: the ce_rx and cnps_tx counters
//
// RateLimiter, the reaction point (requester side), only with `dcqcn` set:
// expects:  OnCnp() per CNP received, OnTimer() at NextDeadline() or later
// gives:    on a CNP, alpha = 15/16 alpha + 1/16 and the rate cut by
//           alpha / 2 (floor 1 % of the line rate); every 55 us without a
//           CNP (DcqcnTime: at 40 Gb/s), alpha decays and the rate halves
//           its distance to the line rate (fast recovery only); while below
//           the line rate, the gap
//           after each data frame that holds the QP to its rate
// modifies: the cnps_rx counter
// next:     DCQCN's additive and hyper increase stages (the rate now jumps
//           back in a few fast-recovery steps)
#pragma once

#include <cstdint>

#include "emu/uroce/framer.h"
#include "emu/uroce/qp_types.h"

namespace ofan::uroce {

// DCQCN's timers (the SIGCOMM'15 paper's, at 40 Gb/s) in line time: a link
// slower than kDcqcnRefGbps gets them as much longer, so that a rate cut
// lasts as many frames as it does there (at ofan-emu's 25 Mb/s the 55 us
// recovery timer would pass 12 times in one 2 KiB frame, and DCQCN would
// never hold a rate). At 40 Gb/s and above, as given.
inline constexpr double kDcqcnRefGbps = 40.0;
inline Ns DcqcnTime(Ns at_ref, double line_rate_gbps) {
  if (!(line_rate_gbps > 0) || line_rate_gbps >= kDcqcnRefGbps) return at_ref;
  return static_cast<Ns>(static_cast<double>(at_ref) * (kDcqcnRefGbps / line_rate_gbps));
}

class CnpSender {
 public:
  CnpSender(const EngineConfig& cfg, Framer* framer, QpCounters* c)
      : cfg_(cfg), framer_(framer), c_(c) {}

  void OnCe(Ns now);
  bool owed() const { return owed_; }
  // Writes the CNP owed to `out` (kMaxFrame bytes); its length, 0 if none.
  uint32_t Build(uint8_t* out, Ns now);

 private:
  const EngineConfig& cfg_;
  Framer* framer_;
  QpCounters* c_;
  bool owed_ = false;
  bool ever_ = false;  // a CNP has been sent (last_ is meaningful)
  Ns last_ = 0;
};

class RateLimiter {
 public:
  RateLimiter(const EngineConfig& cfg, QpCounters* c) : cfg_(cfg), c_(c) {}

  void OnCnp(Ns now);
  void OnTimer(Ns now);
  // When OnTimer next has work; ~0 for never.
  Ns NextDeadline() const;
  // True when the QP is held below the line rate.
  bool limiting() const { return cfg_.dcqcn && rate_ < 1.0; }
  // While limiting(): the time a frame of `frame_len` bytes takes at the
  // QP's rate, 24 bytes of preamble, FCS and gap included (as the host's
  // pacer counts).
  Ns Spacing(uint32_t frame_len) const;
  // The rate as a fraction of the line rate.
  double rate() const { return rate_; }

 private:
  static constexpr Ns kRecoveryNs = 55'000;  // DCQCN's rate increase timer at 40 Gb/s
  Ns recovery() const { return DcqcnTime(kRecoveryNs, cfg_.line_rate_gbps); }
  const EngineConfig& cfg_;
  QpCounters* c_;
  double rate_ = 1.0, alpha_ = 1.0;
  Ns updated_ = 0;  // the last cut or recovery step
};

}  // namespace ofan::uroce
