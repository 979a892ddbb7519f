// DCQCN-like rate control (Zhu et al., "Congestion Control for Large-Scale
// RDMA Deployments", SIGCOMM'15), both ends of it:
//
// CnpSender, the notification point (responder side):
// expects:  OnCe() for every CE-marked data packet the QP accepts to look at
// gives:    one CNP owed per CE mark, at most one per `cnp_interval_ns`;
//           the CNP frame: BTH opcode CNP with BECN set, 16 reserved bytes
//           (IBA annex A17.9.3), sent from the QP pair's port, not
//           ECN-capable
// modifies: the ce_rx and cnps_tx counters
//
// RateLimiter, the reaction point (requester side), only with `dcqcn` set:
// expects:  OnCnp() per CNP received, OnTimer() at NextDeadline() or later
// gives:    on a CNP, alpha = 15/16 alpha + 1/16 and the rate cut by
//           alpha / 2 (floor 1 % of the line rate); every 55 us without a
//           CNP, alpha decays and the rate halves its distance to the line
//           rate (fast recovery only); while below the line rate, the gap
//           after each data frame that holds the QP to its rate
// modifies: the cnps_rx counter
// next:     DCQCN's additive and hyper increase stages (the rate now jumps
//           back in a few fast-recovery steps)
#pragma once

#include <cstdint>

#include "emu/uroce/framer.h"
#include "emu/uroce/qp_types.h"

namespace ofan::uroce {

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
  static constexpr Ns kRecoveryNs = 55'000;  // DCQCN's rate increase timer
  const EngineConfig& cfg_;
  QpCounters* c_;
  double rate_ = 1.0, alpha_ = 1.0;
  Ns updated_ = 0;  // the last cut or recovery step
};

}  // namespace ofan::uroce
