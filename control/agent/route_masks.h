// Route masks: a switch's kernel routes (what FRR installed in its namespace)
// turned into the valid-uplink masks ofan-dp's load_tables takes.
//
// expects:  routes as KernelRoute records: from `ip -j route show` text
//           (ParseIpRouteJson; multipath routes list "nexthops", each with its
//           "dev") or, later, from netlink; the switch's identity; the uplinks
//           fabric_roles.h found usable.
// gives:    masks[d] for every destination d of the switch's key space
//           (FatTree::num_dests: destination edge at an edge, destination pod
//           at an aggregation switch; none at a core or spine), bit u = uplink
//           u = port first_uplink_port + u: exactly the vector of lb::PortMask
//           that dataplane/control_socket.cc's load_tables ("masks") and
//           FatTree::valid_uplink_table give. Parse errors are
//           kInvalidArgument with the route and field named.
// why:      the kernel's next hops are what BGP with BFD decided (RFC 7938:
//           every installed path is a shortest up*down* one, frr_config.h), so
//           a next-hop set is a valid-uplink set. The key's route is the
//           longest prefix covering it: at an edge, the destination edge's host
//           /24; at an aggregation switch j, the /32 of aggregation switch j of
//           the destination pod, which every switch announces. That is the
//           same question FatTree::valid_uplinks asks at an agg (reach the
//           destination pod's agg j; the agg->edge hop is the source edge's
//           concern), so the masks equal the brute force for any failure set
//           (tests/control/agent/route_masks_test.cc). A route that is no
//           unicast (blackhole, unreachable) or whose next hops are no usable
//           uplink gives an empty mask: the dataplane drops rather than
//           guesses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/types.h"

namespace ofan::agent {

struct KernelRoute {
  uint32_t prefix = 0;            // IPv4, host byte order, host bits zero
  int prefix_len = 0;             // 0 for "default"
  bool unicast = true;            // false: blackhole, unreachable, prohibit, ...
  std::vector<std::string> devs;  // one per next hop, in the kernel's order
  std::string protocol;           // "bgp", "kernel", ... ("" if not given)
  friend bool operator==(const KernelRoute&, const KernelRoute&) = default;
};

// The main table's IPv4 routes from `ip -j route show` (entries of another
// table, when ip prints one, are left out).
Result<std::vector<KernelRoute>> ParseIpRouteJson(std::string_view text);

// The longest-prefix route that covers all of [addr, addr + 2^(32-len)), or
// nullptr.
const KernelRoute* CoveringRoute(const std::vector<KernelRoute>& routes, uint32_t addr, int len);

// The route key d's mask comes from (the longest prefix covering the
// destination edge's hosts, or the destination pod's aggregation switch
// with this switch's index), or nullptr: no route, or d is below this switch.
const KernelRoute* KeyRoute(const lb::FatTree& tree, lb::SwitchId self, int d,
                            const std::vector<KernelRoute>& routes);

// "a.b.c.d/len".
std::string PrefixText(const KernelRoute& route);

std::vector<lb::PortMask> ComputeMasks(const lb::FatTree& tree, lb::SwitchId self,
                                       const std::vector<KernelRoute>& routes,
                                       lb::PortMask usable_uplinks = ~lb::PortMask{0});

}  // namespace ofan::agent
