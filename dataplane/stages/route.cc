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
  // RouteAs rejects a first byte other than 10 through pod < pods_ alone,
  // which needs pods_ <= 255 (a k <= 64 fat tree has at most 64 pods).
  assert(pods_ <= 255 && epp_ <= 255);
}

}  // namespace ofan::dp
