// Route planning: what the address plan of fat_tree.h says about a
// destination address at one switch, in arithmetic. Shared by ofan-dp's route
// stage (dataplane/stages/route.h builds its per-/24 table from it) and the
// P4 control plane (tofino_p4/control/pofan_tables.cc writes it as the
// program's route table). No DPDK.
//
// From 10.<pod>.<edge>.<slot+2> every switch knows whether the destination is
// below it and on which port, and otherwise its pointer key (destination edge
// switch at an edge, destination pod at an agg, §4). x.x.x.1 of a host subnet
// is the edge switch's own (gateway) address.
#pragma once

#include <cstdint>

#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/types.h"

namespace ofan::lb {

enum class RouteKind : uint8_t { kDown, kUp, kLocal, kNoRoute };

struct RouteResult {
  RouteKind kind = RouteKind::kNoRoute;
  uint8_t port = 0;   // kDown: the output port
  uint16_t dest = 0;  // kUp: d, the destination in this switch's key space
  uint8_t slice = 0;  // the destination host's edge port (path pinning)
};

class RoutePlan {
 public:
  RoutePlan(const FatTree& tree, SwitchId self);

  // The route of dst_ip (host byte order) at this switch.
  RouteResult Route(uint32_t dst_ip) const;

  Role role() const { return role_; }
  uint32_t num_dests() const { return num_dests_; }
  uint32_t pods() const { return pods_; }
  uint32_t edges_per_pod() const { return epp_; }
  uint32_t w() const { return w_; }
  // The gateway address of an edge switch's hosts (10.pod.edge.1); 0 otherwise.
  uint32_t gateway_ip() const { return gateway_; }

 private:
  Role role_;
  uint32_t levels_, pods_, epp_, w_, pod_, index_, num_dests_, gateway_;
  uint32_t own_prefix_;  // an edge's 10.pod.edge (its hosts' addresses >> 8)
};

}  // namespace ofan::lb
