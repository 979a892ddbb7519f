#include "dataplane/stages/route.h"

#include <cassert>

namespace ofan::dp {

Router::Router(const lb::FatTree& tree, lb::SwitchId self) : plan_(tree, self) {
  // RouteTable rejects a first byte other than 10 through pod < pods alone,
  // which needs pods <= 255 (a k <= 64 fat tree has at most 64 pods); an
  // entry holds a port or a destination in 14 bits.
  assert(plan_.pods() <= 255 && plan_.edges_per_pod() <= 255 &&
         plan_.num_dests() <= RouteTable::kValueMask);
  subnet_.resize(static_cast<size_t>(plan_.pods()) * 256);
  for (uint32_t pe = 0; pe < subnet_.size(); ++pe) {
    // The first host of 10.pod.edge stands for the whole /24: the plan's
    // answer depends on the host's slot only through an edge switch's down
    // port, which RouteTable takes from the address itself.
    const RouteResult r = plan_.Route((10u << 24) | (pe << 8) | 2u);
    const uint32_t value = r.kind == RouteKind::kUp ? r.dest : r.port;
    subnet_[pe] =
        static_cast<uint16_t>(static_cast<uint32_t>(r.kind) << RouteTable::kKindShift | value);
  }
}

}  // namespace ofan::dp
