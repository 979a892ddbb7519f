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
// The address plan of dataplane/lb/fat_tree.h makes routing arithmetic: from
// 10.<pod>.<edge>.<slot+2> every switch knows, without a table, whether the
// destination is below it and on which port, and otherwise its pointer key
// (destination edge switch at an edge, destination pod at an agg, §4).
// x.x.x.1 of a host subnet is the edge switch's own (gateway) address.
#pragma once

#include <cstdint>

#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/packet_key.h"

namespace ofan::dp {

enum class RouteKind : uint8_t { kDown, kUp, kLocal, kNoRoute };

struct RouteResult {
  RouteKind kind = RouteKind::kNoRoute;
  uint8_t port = 0;   // kDown: the output port
  uint16_t dest = 0;  // kUp: d, the destination in this switch's key space
  uint8_t slice = 0;  // the destination host's edge port (path pinning)
};

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

class Router {
 public:
  Router(const lb::FatTree& tree, lb::SwitchId self);

  RouteResult Route(uint32_t dst_ip) const {
    return WithRole(role_, [&]<lb::Role R>() { return RouteAs<R>(dst_ip); });
  }

  // Route for a switch whose role is R (== role()): the dataplane picks R
  // once per vector, so the per-packet code has no branch on the role.
  template <lb::Role R>
  RouteResult RouteAs(uint32_t dst_ip) const {
    RouteResult r;
    // A host address 10.pod.edge.(slot + 2) with every field in range. With
    // 10.0.0 subtracted from the top three bytes, one unsigned compare on
    // pod (pe >> 8) also rejects any first byte but 10; slot wraps for .0
    // and .1. The three tests are combined without a branch each.
    const uint32_t pe = (dst_ip >> 8) - (10u << 16);
    const uint32_t pod = pe >> 8, eip = pe & 0xFF;
    const uint32_t slot = (dst_ip & 0xFF) - 2u;
    const bool host = (pod < pods_) & (eip < epp_) & (slot < w_);
    if (!host) [[unlikely]] {
      // x.x.x.1 of this edge switch's host subnet is its own (gateway) address.
      if (R == lb::Role::kEdge && dst_ip == gateway_) r.kind = RouteKind::kLocal;
      return r;
    }
    r.slice = static_cast<uint8_t>(slot);
    if constexpr (R == lb::Role::kEdge) {
      if ((dst_ip >> 8) == own_prefix_) {  // 10.pod.edge of this switch
        r.kind = RouteKind::kDown;
        r.port = static_cast<uint8_t>(slot);
        return r;
      }
      r.kind = RouteKind::kUp;
      r.dest = static_cast<uint16_t>(pod * epp_ + eip);
    } else if constexpr (R == lb::Role::kAgg) {
      if (levels_ == 2 || pod == pod_) {
        r.kind = RouteKind::kDown;
        r.port = static_cast<uint8_t>(eip);
        return r;
      }
      r.kind = RouteKind::kUp;
      r.dest = static_cast<uint16_t>(pod);
    } else {
      r.kind = RouteKind::kDown;
      r.port = static_cast<uint8_t>(pod);
    }
    return r;
  }

  lb::Role role() const { return role_; }
  uint32_t num_dests() const { return num_dests_; }
  // The gateway address of an edge switch's hosts (10.pod.edge.1); 0 otherwise.
  uint32_t gateway_ip() const { return gateway_; }

 private:
  lb::Role role_;
  uint32_t levels_, pods_, epp_, w_, pod_, index_, num_dests_, gateway_;
  uint32_t own_prefix_;  // an edge's 10.pod.edge (its hosts' addresses >> 8)
};

}  // namespace ofan::dp
