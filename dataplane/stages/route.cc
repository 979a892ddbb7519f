#include "dataplane/stages/route.h"

#include <cassert>

namespace ofan::dp {

Router::Router(const lb::FatTree& tree, lb::SwitchId self) {
  const lb::SwitchInfo in = tree.info(self);
  role_ = in.role;
  levels_ = static_cast<uint32_t>(tree.levels());
  pods_ = static_cast<uint32_t>(tree.num_pods());
  epp_ = static_cast<uint32_t>(tree.edges_per_pod());
  w_ = static_cast<uint32_t>(tree.w());
  pod_ = static_cast<uint32_t>(in.pod);
  index_ = static_cast<uint32_t>(in.index);
  num_dests_ = static_cast<uint32_t>(tree.num_dests(self));
  gateway_ = role_ == lb::Role::kEdge ? (10u << 24) | (pod_ << 16) | (index_ << 8) | 1u : 0u;
  own_prefix_ = (10u << 16) | (pod_ << 8) | index_;
  // RouteTable rejects a first byte other than 10 through pod < pods_ alone,
  // which needs pods_ <= 255 (a k <= 64 fat tree has at most 64 pods); an
  // entry holds a port or a destination in 14 bits.
  assert(pods_ <= 255 && epp_ <= 255 && num_dests_ <= RouteTable::kValueMask);
  subnet_.resize(static_cast<size_t>(pods_) * 256);
  for (uint32_t pe = 0; pe < subnet_.size(); ++pe) {
    // The first host of 10.pod.edge stands for the whole /24: the plan's
    // answer depends on the host's slot only through an edge switch's down
    // port, which RouteTable takes from the address itself.
    const RouteResult r = RouteByPlan((10u << 24) | (pe << 8) | 2u);
    const uint32_t value = r.kind == RouteKind::kUp ? r.dest : r.port;
    subnet_[pe] =
        static_cast<uint16_t>(static_cast<uint32_t>(r.kind) << RouteTable::kKindShift | value);
  }
}

RouteResult Router::RouteByPlan(uint32_t dst_ip) const {
  RouteResult r;
  // A host address 10.pod.edge.(slot + 2) with every field in range.
  const uint32_t pe = (dst_ip >> 8) - (10u << 16);
  const uint32_t pod = pe >> 8, eip = pe & 0xFF;
  const uint32_t slot = (dst_ip & 0xFF) - 2u;
  if (pod >= pods_ || eip >= epp_ || slot >= w_) {
    // x.x.x.1 of this edge switch's host subnet is its own (gateway) address.
    if (role_ == lb::Role::kEdge && dst_ip == gateway_) r.kind = RouteKind::kLocal;
    return r;
  }
  r.slice = static_cast<uint8_t>(slot);
  switch (role_) {
    case lb::Role::kEdge:
      if ((dst_ip >> 8) == own_prefix_) {  // 10.pod.edge of this switch
        r.kind = RouteKind::kDown;
        r.port = static_cast<uint8_t>(slot);
      } else {
        r.kind = RouteKind::kUp;
        r.dest = static_cast<uint16_t>(pod * epp_ + eip);
      }
      break;
    case lb::Role::kAgg:
      if (levels_ == 2 || pod == pod_) {
        r.kind = RouteKind::kDown;
        r.port = static_cast<uint8_t>(eip);
      } else {
        r.kind = RouteKind::kUp;
        r.dest = static_cast<uint16_t>(pod);
      }
      break;
    case lb::Role::kCore:
      r.kind = RouteKind::kDown;
      r.port = static_cast<uint8_t>(pod);
      break;
  }
  return r;
}

}  // namespace ofan::dp
