// A model of tofino_p4/pofan.p4 in C++: its parser, its ingress control
// (tables, the pointer register of every pipe and its RegisterAction, the
// App. F.2 arithmetic in bit<8>) and its deparser, step for step and in the
// program's order, so that what the tests check of the model is what the
// program does. No SDE here: CI runs the model; tofino_p4/ptf/ replays the
// same vectors on Intel's Tofino model or on a switch.
//
// expects:   the tables of tofino_p4/control/ (ComputePofanTables), and
//            frames in through a device port of the switch
// modifies:  the pointer register of the packet's ingress pipe, the drop
//            counters
// next:      ModelOutput: the output device port and the frame's bytes as
//            the egress deparser emits them, or the drop reason. The traffic
//            manager is not modelled: the caller says how deep the output
//            queue was (in cells) when the packet was enqueued.
//
// Tables change as the control plane changes them (UpdateTables): entries
// are replaced, registers are not, as on the device after a link failure.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tofino_p4/control/pofan_tables.h"
#include "tofino_p4/include/pofan_defs.h"

namespace ofan::p4 {

// OFAN_P4_DROP_* by value, as the drop counter's index.
std::string_view DropReasonName(uint8_t reason);

struct ModelOutput {
  uint8_t drop_reason = OFAN_P4_DROP_NONE;  // not NONE: dropped, nothing else below holds
  uint16_t port = 0;                        // ucast_egress_port
  bool to_cpu = false;
  std::vector<uint8_t> bytes;  // the frame as the deparser emits it
  // What the ingress decided, for tests and vectors.
  uint32_t pipe = 0;
  bool balanced = false;  // went through the pointer (routed up)
  uint8_t cls = 0;
  uint16_t dest = 0, ptr = 0;
  uint8_t rank = 0;

  bool dropped() const { return drop_reason != OFAN_P4_DROP_NONE; }
};

class PofanModel {
 public:
  // Loads the tables and the registers (what `ofan-p4 tables` writes).
  explicit PofanModel(const PofanTables& t);

  // Replaces every table's entries; registers stay as they are.
  void UpdateTables(const PofanTables& t);

  // One frame in through `ingress_port`, through ingress, then egress with
  // `enq_qdepth` cells in its queue; nullopt when the device has no such
  // port (a 9-bit port on one of its pipes).
  std::optional<ModelOutput> Process(uint16_t ingress_port, std::span<const uint8_t> frame,
                                     uint32_t enq_qdepth = 0);

  // The egress pipe alone, on a frame as the ingress deparser emits it
  // (egress parses it again, as on the device). Stateless.
  std::vector<uint8_t> Egress(std::span<const uint8_t> frame, uint16_t egress_port,
                              uint32_t enq_qdepth) const;

  uint8_t pointer(uint32_t pipe, uint16_t index) const { return pointers_[pipe][index]; }
  uint32_t num_pipes() const { return static_cast<uint32_t>(pointers_.size()); }
  const std::array<uint64_t, OFAN_P4_NUM_DROP_REASONS>& drops() const { return drops_; }

 private:
  uint16_t cpu_port_ = 0;
  std::unordered_map<uint32_t, RouteEntry> route_;
  std::unordered_map<uint32_t, KeyEntry> key_;
  std::unordered_map<uint32_t, uint8_t> xorw_;   // (rank, id1) -> x
  std::unordered_map<uint32_t, uint16_t> add_;   // (x, id2) -> port
  std::unordered_map<uint32_t, uint16_t> list_;  // (ptr, rank) -> port
  std::unordered_map<uint16_t, PortMacEntry> port_mac_;
  std::unordered_map<uint16_t, uint32_t> ecn_cells_;  // Egress.ecn_threshold
  std::vector<std::vector<uint8_t>> pointers_;        // [pipe][index], the Register
  std::array<uint64_t, OFAN_P4_NUM_DROP_REASONS> drops_{};
};

}  // namespace ofan::p4
