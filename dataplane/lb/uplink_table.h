// UplinkTable: what the control side computes for one switch and the LB only
// looks up (Katran's split: control computes, dataplane looks up).
//
// For every destination d (destination edge switch at an edge, destination
// pod at an aggregation switch) it holds the valid-uplink mask, and for every
// pointer key (d, size class) the valid uplinks listed in that pointer's Ofan
// order pi (App. F.2) with invalid ports removed. Removing them up front is the
// paper's "keep incrementing until yielding a valid port" (§4.1, Failures)
// done once at table build time: walking the filtered list visits each valid
// port exactly once per round, in the same cyclic order as skipping would.
//
// Tables are immutable once built; a new failure set means a new table,
// published by pointer swap.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/ofan_order.h"
#include "dataplane/lb/types.h"

namespace ofan::lb {

// The valid uplinks of one key, in the key's Ofan order.
struct UplinkList {
  const uint8_t* ports;  // uplink indices
  uint32_t n;            // 0: no valid uplink (the packet is dropped)
};

class UplinkTable {
 public:
  // masks[d] = valid uplinks towards destination d; w = number of uplinks.
  UplinkTable(uint32_t w, std::vector<PortMask> masks);
  static UplinkTable ForSwitch(const FatTree& t, SwitchId s, const LinkSet& failed);

  uint32_t w() const { return w_; }
  uint32_t num_dests() const { return static_cast<uint32_t>(masks_.size()); }
  uint32_t num_keys() const { return num_dests() * kNumSizeClasses; }
  static uint32_t KeyOf(uint32_t dest, uint32_t num_dests, SizeClass c) {
    return OfanPointerId(dest, num_dests, static_cast<uint32_t>(c));
  }
  uint32_t key(uint32_t dest, SizeClass c) const { return KeyOf(dest, num_dests(), c); }

  PortMask mask(uint32_t dest) const { return masks_[dest]; }
  UplinkList list(uint32_t key) const {
    const uint8_t* row = &lists_[static_cast<size_t>(key) * stride_];
    return {row + 1, row[0]};
  }
  // Position of the first valid port at or after raw pointer value `pos`
  // (cyclically) in key's filtered list: how a pointer initialised to `pos`
  // in the paper's unfiltered order maps onto the filtered list.
  uint32_t RankOf(uint32_t key, uint32_t pos) const;
  const OfanOrder& order() const { return order_; }

 private:
  uint32_t w_;
  uint32_t stride_;
  std::vector<PortMask> masks_;
  std::vector<uint8_t> lists_;  // per key: n, then up to w ports
  OfanOrder order_;
};

}  // namespace ofan::lb
