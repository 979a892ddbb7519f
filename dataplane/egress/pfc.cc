#include "dataplane/egress/pfc.h"

namespace ofan::dp {

PfcGenerator::Action PfcGenerator::Step(uint32_t port, uint64_t ingress_bytes, fabric::TimePs now) {
  if (port >= th_.size()) return Action::kNone;
  if (!sent_xoff_[port]) {
    if (ingress_bytes <= th_[port].xoff) return Action::kNone;
    sent_xoff_[port] = true;
  } else if (ingress_bytes <= th_[port].xon) {
    sent_xoff_[port] = false;
    return Action::kXon;
  } else if (refresh_[port] == 0 || now < next_refresh_[port]) {
    return Action::kNone;
  }
  next_refresh_[port] = now + refresh_[port];
  return Action::kXoff;
}

}  // namespace ofan::dp
