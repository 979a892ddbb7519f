#include "dataplane/egress/pfc.h"

namespace ofan::dp {

PfcGenerator::Action PfcGenerator::Step(uint32_t port, uint64_t ingress_bytes) {
  if (port >= th_.size()) return Action::kNone;
  if (ingress_bytes > th_[port].xoff && !sent_xoff_[port]) {
    sent_xoff_[port] = true;
    return Action::kXoff;
  }
  if (ingress_bytes <= th_[port].xon && sent_xoff_[port]) {
    sent_xoff_[port] = false;
    return Action::kXon;
  }
  return Action::kNone;
}

}  // namespace ofan::dp
