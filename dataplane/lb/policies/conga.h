// CONGA [3] adapted to packet spraying, as the paper does (§3.1, Table 1:
// "the initial CONGA fits flowlets, and we adapt it to packet spraying").
//
// expects:   LbView::remote = the switch's Congestion-To-Leaf table, one level
//            per (destination, uplink), filled from the destination edge's
//            feedback (RemoteFeed::kLeafFeedback; null: local only)
// modifies:  the DRE of the uplink it picks (its own bytes), its RNG
// next:      an uplink index with the least max(local, remote) level, or
//            kNoUplink when the destination has no valid uplink
//
// CONGA's decision, made for every packet instead of every flowlet: uplink u
// costs max(local DRE level of u, Congestion-To-Leaf[d][u]) (3-bit levels,
// congestion.h) and the packet takes a least-cost valid uplink, ties broken
// uniformly at random (CONGA breaks them at random too; with no flowlet
// there is no cached port to prefer). The DRE of the uplinks is the policy's
// own: every byte on an uplink is a packet this policy sent there.
//
// Assumptions where [3] (a leaf-spine design) says nothing of a 3-level fat
// tree or of spraying:
//  - Every switch that balances runs CONGA over its own uplinks: an edge
//    keys its table by destination edge, an aggregation switch by
//    destination pod (the LB library's keys, §4).
//  - The packet carries CONGA's overlay fields: the uplink chosen at the
//    edge and at the aggregation switch, and for each the maximum level of
//    the links it crossed after that choice (CE). The destination edge
//    feeds the CE of each data packet back on that packet's ACK, the
//    reverse packet every data packet has in ofan-sim (CONGA piggybacks on
//    any reverse packet, round-robin over a per-source-leaf table; with one
//    ACK per packet this is the same information without the table). The
//    source edge reads it into its table; an aggregation switch reads it
//    only when the ACK happens to come down through it (the one that chose).
//  - No table aging: CONGA ages entries after milliseconds, and runs here
//    last tens of microseconds.
//  - ACKs are balanced by the same rule and tables; only data is fed back.
// The sim's side of this is in sim/sim.cc (Enqueue's CE stamping, the
// feedback in SwitchReceive).
#pragma once

#include <array>

#include "common/rng.h"
#include "dataplane/lb/congestion.h"
#include "dataplane/lb/policies/queue_aware.h"
#include "dataplane/lb/policy_params.h"

namespace ofan::lb {

class Conga {
 public:
  static constexpr RemoteFeed kRemoteFeed = RemoteFeed::kLeafFeedback;
  Conga(const PolicyParams& c, const SwitchLbSetup& s)
      : rng_(c.seed ^ SplitMix64(s.salt ^ 0xC09Au)), meter_(c) {}
  uint8_t Pick(const PacketKey& k, LbView& v) {
    const PortMask m = v.table->mask(k.dest);
    if (m == 0) return kNoUplink;
    const uint8_t* remote = v.remote ? v.remote + size_t{k.dest} * v.table->w() : nullptr;
    const uint32_t best = PickLeast(m, rng_, [&](uint32_t u) {
      const uint32_t local = meter_.CongaLevel(meter_.Read(dre_[u], v.now));
      return remote ? std::max<uint32_t>(local, remote[u]) : local;
    });
    meter_.Charge(dre_[best], k.frame_bytes, v.now);
    return static_cast<uint8_t>(best);
  }

 private:
  Rng rng_;
  LinkMeter meter_;
  std::array<Dre, kMaxUplinks> dre_{};
};

}  // namespace ofan::lb
