#include "dataplane/stages/route.h"

#include <cassert>
#include <deque>

namespace ofan::dp {

Router::Router(const lb::FatTree& tree, lb::SwitchId self)
    : plan_(tree, self), switch_ip_(tree.switch_addr(self)) {
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
  // Switch addresses: breadth first from this switch over the healthy tree,
  // ports in order, so each switch is reached first along a shortest path;
  // its entry is that path's first port.
  const auto n = static_cast<uint32_t>(tree.num_switches());
  to_switch_.assign(n, static_cast<uint16_t>(static_cast<uint32_t>(RouteKind::kNoRoute)
                                             << RouteTable::kKindShift));
  to_switch_[self.value()] =
      static_cast<uint16_t>(static_cast<uint32_t>(RouteKind::kLocal) << RouteTable::kKindShift);
  std::vector<int> first(n, -1);  // the first port towards each switch; -1: not reached yet
  first[self.value()] = 0;
  std::deque<uint32_t> todo{self.value()};
  while (!todo.empty()) {
    const uint32_t u = todo.front();
    todo.pop_front();
    const lb::SwitchId su(u);
    for (int port = 0; port < tree.num_ports(su); ++port) {
      const lb::Peer p = tree.peer(su, port);
      if (p.is_host || first[p.id] >= 0) continue;
      first[p.id] = u == self.value() ? port : first[u];
      to_switch_[p.id] =
          static_cast<uint16_t>(static_cast<uint32_t>(RouteKind::kDown) << RouteTable::kKindShift |
                                static_cast<uint32_t>(first[p.id]));
      todo.push_back(p.id);
    }
  }
}

RouteResult Router::RouteByPlan(uint32_t dst_ip) const {
  RouteResult r;
  if (table().SwitchRoute(dst_ip, r)) return r;
  return plan_.Route(dst_ip);
}

}  // namespace ofan::dp
