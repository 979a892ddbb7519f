// Stage 2: route.
//
// expects:   ParsedPacket with verdict kForward (dst_ip, cls, flow hash)
// modifies:  nothing in the packet
// next:      RouteResult: down through a fixed port (the destination is below
//            this switch), up (the LB picks among the valid uplinks of
//            `dest`), local (addressed to the switch: exception path), or no
//            route (counted drop)
// parameters: the switch's place in the fat tree (FatTree + SwitchId)
//
// The address plan makes routing arithmetic (dataplane/lb/route_plan.h, the
// planning ofan-dp shares with the P4 control plane). The control side does
// that arithmetic once per /24 (Router's constructor) into a subnet table; a
// packet costs one lookup in it (RouteTable).
//
// Every switch also has an address of its own, 10.255.0.0 + id + 1
// (FatTree::switch_addr), so that traceroute's hops and pings to a switch
// work as on routers: its own is kLocal; another switch's is reached through
// one fixed port (kDown, also when that port is an uplink), the first port of
// a shortest path in the healthy tree. Each hop is one step closer, so the
// routes have no loop; they ignore failures (management traffic to a switch
// behind a failed link is dropped, counted drop_port_down).
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/packet_key.h"
#include "dataplane/lb/route_plan.h"

namespace ofan::dp {

using lb::RouteKind;
using lb::RouteResult;

// Calls f.template operator()<R>() with R = role as a compile-time value:
// code that runs per packet is instantiated once per role.
template <class F>
decltype(auto) WithRole(lb::Role role, F&& f) {
  switch (role) {
    case lb::Role::kAgg:
      return f.template operator()<lb::Role::kAgg>();
    case lb::Role::kCore:
      return f.template operator()<lb::Role::kCore>();
    case lb::Role::kEdge:
      break;
  }
  return f.template operator()<lb::Role::kEdge>();
}

// What the per-packet code routes with: the subnet table and three
// constants, trivially copyable, so that the worker takes a copy per vector
// (in registers, not reloaded after every byte store to a frame).
//
// The table has one entry per /24 under 10.pod (pod < pods): what the
// address plan says about 10.pod.edge.x, computed by the control side
// (Router's constructor) so that a packet costs one lookup (docs/design.md, rule 6). An
// entry is the RouteKind in its top two bits and, below, the output port
// (kDown at an agg or core switch; an edge switch's down port is the host's
// slot) or the destination d (kUp).
struct RouteTable {
  const uint16_t* subnet;
  uint32_t num_subnets;       // pods * 256
  uint32_t w;                 // hosts per edge switch: .2 .. .(w + 1)
  uint32_t gateway;           // an edge switch's own 10.pod.edge.1; 0 otherwise
  const uint16_t* to_switch;  // per switch id: the route to its address (entries as subnet's)
  uint32_t num_switches;

  static constexpr uint32_t kKindShift = 14;
  static constexpr uint16_t kValueMask = (1u << kKindShift) - 1;

  // The route to a switch's own address (FatTree::switch_addr), if dst_ip
  // is one: kLocal for this switch's, kDown through a fixed port for another's.
  bool SwitchRoute(uint32_t dst_ip, RouteResult& r) const {
    const uint32_t si = dst_ip - (lb::FatTree::kSwitchAddrBase + 1);
    if (si >= num_switches) return false;
    r.kind = static_cast<RouteKind>(to_switch[si] >> kKindShift);
    r.port = static_cast<uint8_t>(to_switch[si] & kValueMask);
    return true;
  }

  template <lb::Role R>
  RouteResult RouteAs(uint32_t dst_ip) const {
    RouteResult r;
    // 10.0.0 subtracted from the top three bytes: one unsigned compare also
    // rejects any first byte but 10 (num_subnets <= 255 * 256); the slot
    // wraps for .0 and .1.
    const uint32_t pe = (dst_ip >> 8) - (10u << 16);
    const uint32_t slot = (dst_ip & 0xFF) - 2u;
    if ((pe >= num_subnets) | (slot >= w)) [[unlikely]] {
      if (!SwitchRoute(dst_ip, r) && R == lb::Role::kEdge && dst_ip == gateway)
        r.kind = RouteKind::kLocal;
      return r;
    }
    const uint32_t e = subnet[pe];
    r.kind = static_cast<RouteKind>(e >> kKindShift);
    r.slice = static_cast<uint8_t>(slot);
    r.port = static_cast<uint8_t>(R == lb::Role::kEdge ? slot : e);
    r.dest = static_cast<uint16_t>(e & kValueMask);
    return r;
  }
};

class Router {
 public:
  Router(const lb::FatTree& tree, lb::SwitchId self);

  RouteResult Route(uint32_t dst_ip) const {
    return WithRole(role(), [&]<lb::Role R>() { return RouteAs<R>(dst_ip); });
  }

  // Route for a switch whose role is R (== role()): the dataplane picks R
  // once per vector, so the per-packet code has no branch on the role.
  template <lb::Role R>
  RouteResult RouteAs(uint32_t dst_ip) const {
    return table().RouteAs<R>(dst_ip);
  }
  RouteTable table() const {
    return RouteTable{subnet_.data(),    static_cast<uint32_t>(subnet_.size()),
                      plan_.w(),         plan_.gateway_ip(),
                      to_switch_.data(), static_cast<uint32_t>(to_switch_.size())};
  }

  // The address plan itself, in arithmetic: what the table is built from,
  // and the reference the tests hold it to.
  // A switch's address: the shortest-path table the constructor computed.
  RouteResult RouteByPlan(uint32_t dst_ip) const;

  lb::Role role() const { return plan_.role(); }
  uint32_t num_dests() const { return plan_.num_dests(); }
  // The gateway address of an edge switch's hosts (10.pod.edge.1); 0 otherwise.
  uint32_t gateway_ip() const { return plan_.gateway_ip(); }
  // The switch's own address (FatTree::switch_addr).
  uint32_t switch_ip() const { return switch_ip_; }

 private:
  lb::RoutePlan plan_;
  uint32_t switch_ip_;
  std::vector<uint16_t> subnet_;     // RouteTable::subnet
  std::vector<uint16_t> to_switch_;  // RouteTable::to_switch
};

}  // namespace ofan::dp
