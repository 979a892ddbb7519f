// Fabric roles: what each port of a switch should see by the fat-tree plan,
// what LLDP says it sees, and whether the port may be used.
//
// expects:  the switch's configured identity (FatTree + SwitchId, as ofan-dp's
//           config gives them) and its LLDP neighbours (lldp_neighbors.h). A
//           fabric switch announces chassis name = lb::SwitchName and port id =
//           its interface name "p<N>" (PortIfName); a host announces "h<id>" if
//           it speaks LLDP at all.
// gives:    per port: the expected peer (dataplane/lb's wiring: FatTree::peer),
//           the neighbours seen, a verdict (ok, no neighbour, miswired with
//           what it contradicts: level, pod or position, unknown chassis) and
//           whether it is usable; the identity the neighbours imply (each
//           switch neighbour (S, port q) says "you are FatTree::peer(S, q)"),
//           with the votes and whether it contradicts the configured one.
// why:      a miswired cable must never carry traffic silently (docs/emu.md,
//           "Switches that run their own control plane"): the
//           usable set is what frr_config.h peers on and what route_masks.h
//           lets into a mask. A fabric port counts as usable only when LLDP
//           confirms its far end; a host port is usable unless LLDP shows
//           something that is not its host (hosts need not speak LLDP).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "control/agent/lldp_neighbors.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/names.h"
#include "dataplane/lb/types.h"

namespace ofan::agent {

enum class PortStatus : uint8_t { kOk, kNoNeighbor, kMiswired, kUnknownChassis };
// What a miswired port's neighbour contradicts, coarsest first.
enum class Miswire : uint8_t { kNone, kLevel, kPod, kPosition };

std::string_view PortStatusName(PortStatus s);
std::string_view MiswireName(Miswire m);

// The port netdevs' names (dataplane/lb/names.h).
using lb::PortIfName;
using lb::PortOfIfName;

struct PortReport {
  int port = 0;
  lb::Peer expected;          // FatTree::peer(self, port)
  std::string expected_name;  // "h3", or "a0-1 p0"
  std::vector<LldpNeighbor> seen;
  PortStatus status = PortStatus::kNoNeighbor;
  Miswire miswire = Miswire::kNone;
  bool usable = false;
  std::string detail;  // one line for a person
};

struct IdentityReport {
  bool inferred = false;  // at least one switch neighbour named a position
  lb::SwitchId id;        // the position most neighbours imply
  int votes = 0;          // neighbours that imply `id`
  int voters = 0;         // neighbours that imply some position
  bool contradicts = false;
  std::string detail;
};

struct FabricRoles {
  std::vector<PortReport> ports;      // one per port of self, in port order
  std::vector<LldpNeighbor> ignored;  // on interfaces that are no port of self
  IdentityReport identity;
  // Usable ports, bit = port number (k <= 64).
  uint64_t usable_ports = 0;
  // Usable switch-facing ports (LLDP confirms the far end), in order: where
  // an Established session is expected before the agent calls BGP converged.
  std::vector<int> usable_fabric_ports;
  // Switch-facing ports LLDP does not contradict (confirmed, or silent), in
  // order: where FRR keeps a neighbour. A port whose cable is down or cut
  // keeps its neighbour (the session is simply down) so that FRR's config
  // changes only for a miswire: Debian's FRR 8.4.4 bgpd frees an unnumbered
  // peer whose interface went down before the `no neighbor` without
  // unlinking its nexthop cache, and crashes (evaluate_paths, SIGSEGV) when
  // the link returns (upstream FRRouting/frr pull 12457).
  std::vector<int> peer_ports;
  // Usable uplinks, bit = uplink index (port - first_uplink_port): the form
  // of lb::PortMask that route_masks.h intersects masks with.
  lb::PortMask usable_uplinks = 0;
};

FabricRoles ClassifyPorts(const lb::FatTree& tree, lb::SwitchId self,
                          const std::vector<LldpNeighbor>& neighbors);

}  // namespace ofan::agent
