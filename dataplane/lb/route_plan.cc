#include "dataplane/lb/route_plan.h"

namespace ofan::lb {

RoutePlan::RoutePlan(const FatTree& tree, SwitchId self) {
  const SwitchInfo in = tree.info(self);
  role_ = in.role;
  levels_ = static_cast<uint32_t>(tree.levels());
  pods_ = static_cast<uint32_t>(tree.num_pods());
  epp_ = static_cast<uint32_t>(tree.edges_per_pod());
  w_ = static_cast<uint32_t>(tree.w());
  pod_ = static_cast<uint32_t>(in.pod);
  index_ = static_cast<uint32_t>(in.index);
  num_dests_ = static_cast<uint32_t>(tree.num_dests(self));
  gateway_ = role_ == Role::kEdge ? (10u << 24) | (pod_ << 16) | (index_ << 8) | 1u : 0u;
  own_prefix_ = (10u << 16) | (pod_ << 8) | index_;
}

RouteResult RoutePlan::Route(uint32_t dst_ip) const {
  RouteResult r;
  // A host address 10.pod.edge.(slot + 2) with every field in range.
  const uint32_t pe = (dst_ip >> 8) - (10u << 16);
  const uint32_t pod = pe >> 8, eip = pe & 0xFF;
  const uint32_t slot = (dst_ip & 0xFF) - 2u;
  if (pod >= pods_ || eip >= epp_ || slot >= w_) {
    // x.x.x.1 of this edge switch's host subnet is its own (gateway) address.
    if (role_ == Role::kEdge && dst_ip == gateway_) r.kind = RouteKind::kLocal;
    return r;
  }
  r.slice = static_cast<uint8_t>(slot);
  switch (role_) {
    case Role::kEdge:
      if ((dst_ip >> 8) == own_prefix_) {  // 10.pod.edge of this switch
        r.kind = RouteKind::kDown;
        r.port = static_cast<uint8_t>(slot);
      } else {
        r.kind = RouteKind::kUp;
        r.dest = static_cast<uint16_t>(pod * epp_ + eip);
      }
      break;
    case Role::kAgg:
      if (levels_ == 2 || pod == pod_) {
        r.kind = RouteKind::kDown;
        r.port = static_cast<uint8_t>(eip);
      } else {
        r.kind = RouteKind::kUp;
        r.dest = static_cast<uint16_t>(pod);
      }
      break;
    case Role::kCore:
      r.kind = RouteKind::kDown;
      r.port = static_cast<uint8_t>(pod);
      break;
  }
  return r;
}

}  // namespace ofan::lb
