#include "dataplane/egress/pfc.h"

namespace ofan::dp {

PfcGenerator::PfcGenerator(std::vector<fabric::PfcThresholds> th,
                           std::vector<fabric::TimePs> refresh)
    : th_(std::move(th)),
      refresh_(std::move(refresh)),
      st_(std::make_unique<PortState[]>(th_.size())),
      next_refresh_(th_.size(), 0),
      known_xoff_(th_.size(), 0),
      xoffs_at_xon_(th_.size(), 0) {
  refresh_.resize(th_.size(), 0);
}

PfcGenerator::Action PfcGenerator::Step(uint32_t port, uint64_t ingress_bytes, fabric::TimePs now) {
  if (port >= th_.size()) return Action::kNone;
  PortState& s = st_[port];
  if (!s.xoff.load(std::memory_order_acquire)) {
    known_xoff_[port] = 0;
    if (ingress_bytes > th_[port].xoff && Pause(s)) {
      known_xoff_[port] = 1;
      next_refresh_[port] = now + refresh_[port];
      return Action::kXoff;
    }
    if (!s.xoff.load(std::memory_order_acquire)) {
      // A worker's XOFF that raced the last XON may have queued after it:
      // the peer is paused though the port is not. Resume it again.
      const uint64_t w = s.worker_xoffs.load(std::memory_order_acquire);
      if (w == xoffs_at_xon_[port]) return Action::kNone;
      xoffs_at_xon_[port] = w;
      return Action::kXon;
    }
  }
  if (!known_xoff_[port]) {
    // A worker paused it since the last poll: its XOFF is fresh.
    known_xoff_[port] = 1;
    next_refresh_[port] = now + refresh_[port];
  }
  if (ingress_bytes <= th_[port].xon) {
    const uint64_t w = s.worker_xoffs.load(std::memory_order_acquire);
    bool was = true;
    if (!s.xoff.compare_exchange_strong(was, false, std::memory_order_acq_rel)) {
      return Action::kNone;
    }
    known_xoff_[port] = 0;
    xoffs_at_xon_[port] = w;
    return Action::kXon;
  }
  if (refresh_[port] == 0 || now < next_refresh_[port]) return Action::kNone;
  next_refresh_[port] = now + refresh_[port];
  return Action::kXoff;
}

}  // namespace ofan::dp
