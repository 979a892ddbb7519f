// frr.conf for one switch: BGP unnumbered eBGP with BFD on its usable fabric
// ports, RFC 7938's ASN plan, the switch's prefixes announced.
//
// expects:  the switch's identity (FatTree + SwitchId) and the fabric ports to
//           peer on (FabricRoles::usable_fabric_ports of fabric_roles.h, or
//           AllFabricPorts for the plan's); FRR 8.4.4 (Debian 12) running
//           zebra + bgpd + bfdd with `-F datacenter`, one `-N` pathspace and
//           one UTS namespace per switch (so `hostname` is honoured).
// gives:    the whole integrated config text, or kInvalidArgument for a port
//           that does not face a switch or BFD timers FRR would refuse.
//           tests/control/agent/fixtures/frr_*.conf are its golden outputs,
//           and capture_daemons.sh has real FRR load them.
// why:      RFC 7938: eBGP everywhere, one ASN for the top tier (cores; the
//           spines of a leaf-spine), one per pod's aggregation switches, one per
//           edge. Valley paths then repeat an ASN and are refused, so every
//           route a switch installs is a shortest up*down* path and its next
//           hops are the valid uplinks (route_masks.h). Each switch announces
//           its own address (FatTree::switch_addr, /32; also the router-id) and
//           an edge its hosts' /24. `no bgp network import-check`: the
//           prefixes are the plan's, announced whether or not the namespace
//           holds a route for them (the dataplane, not the kernel, delivers
//           to hosts). `no zebra nexthop kernel enable`: Debian's 8.4.4
//           desynchronises kernel nexthop groups after a carrier loss and the
//           route stays single-path for good; without groups the
//           next hops sit in each route. `bgp graceful-restart` with
//           `preserve-fw-state` (RFC 4724, F bit: ofan-dp keeps forwarding on
//           its last masks while the control plane restarts): a bgpd that
//           dies closes its TCP sessions, and its peers keep its routes,
//           stale, while it is away; on its return it gets its sessions
//           first and BFD once they are up (FrrOptions::session_bfd). A
//           link that fails is no restart: FRR 8.4 keeps
//           stale routes only when the TCP session closes or a NOTIFICATION
//           with the N bit arrives, never on BFD down or carrier loss, so
//           failures still withdraw at once. BFD 300 ms x 3 by default: 20
//           bfdd at 100 ms idle cost a third of a core here, at 300 ms an
//           eighth.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "dataplane/lb/fat_tree.h"

namespace ofan::agent {

struct BfdTimers {
  uint32_t interval_ms = 300;  // transmit and receive
  uint32_t multiplier = 3;     // packets missed before the session is down
};

struct FrrOptions {
  BfdTimers bfd;
  std::string bfd_profile = "fabric";
  std::string peer_group = "fabric";
  // false: the sessions without BFD (the `bfd` profile is still defined).
  // What the agent gives a bgpd that restarted, until its sessions are back
  // (agent_cycle.h): FRR 8.4's bgpd resets a session whose fresh BFD
  // registration flaps as it comes up, with a Hard Reset that ends graceful
  // restart and withdraws the switch's prefixes for about 2 s.
  bool session_bfd = true;
};

// RFC 6996's private 4-byte ASNs: the top tier kAsnBase, the aggregation
// switches of pod p kAsnBase + 1 + p, edge (leaf) e kAsnBase + kAsnEdgeOffset + e.
inline constexpr uint32_t kAsnBase = 4200000000u;
inline constexpr uint32_t kAsnEdgeOffset = 1000u;
uint32_t FabricAsn(const lb::FatTree& tree, lb::SwitchId s);

// The ports of s that face switches by the plan, in order.
std::vector<int> AllFabricPorts(const lb::FatTree& tree, lb::SwitchId s);
// What s announces: its /32 and, at an edge, its hosts' /24 ("a.b.c.d/len").
std::vector<std::string> AnnouncedPrefixes(const lb::FatTree& tree, lb::SwitchId s);

Result<std::string> RenderFrrConfig(const lb::FatTree& tree, lb::SwitchId self,
                                    const std::vector<int>& fabric_ports,
                                    const FrrOptions& options = {});

}  // namespace ofan::agent
