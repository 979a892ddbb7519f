// The control plane of tofino_p4/pofan.p4: every table entry and initial
// register value the program needs for one switch of a fat tree with a set
// of failed links, computed by the LB library that ofan-dp and ofan-sim use
// (Katran's split: control computes, the program only looks up).
//
// expects:   a FatTree, a switch of it, failed inter-switch links, and how
//            the switch's fat-tree ports sit on Tofino device ports
// gives:     PofanTables, the program's tables in the program's own terms
//            (its table, action and field names; device ports; the register
//            per pipe); bfrt_writer.h writes them for the SDE, the pipeline
//            model (tofino_p4/model/) executes them
// errors:    typed, with a message: a switch, link, port map or size the
//            program cannot take
//
// Where each entry comes from, so that the program agrees with ofan-dp by
// construction:
//  - route: lb::RoutePlan (dataplane/lb/route_plan.h, what ofan-dp's route
//    stage builds its table from) for every host address, and its gateway;
//  - pofan_key, uplink_list: the switch's UplinkTable (the valid uplinks of
//    every key in its App. F.2 order); f2_xorw, f2_add: OfanOrder's P and
//    its xorw and addition mod w, with the key's id1 and id2 in pofan_key;
//  - the pointer register: lb::Pofan's initial pointers, per pipe, with the
//    same seed and salt (lb keeps the state the register keeps: the rank
//    used last, dataplane/lb/policies/ofan.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/names.h"
#include "dataplane/lb/policy.h"
#include "tofino_p4/include/pofan_defs.h"

namespace ofan::p4 {

// How the control plane is asked for one switch's tables.
struct PofanOptions {
  // The policy the program runs: kPofan (a pointer table per pipe), or
  // kOfan (one table for the switch: every fat-tree port in one pipe, since
  // a Tofino register lives in its pipe, §5.1); no other policy has a
  // program here.
  lb::PolicyKind policy = lb::PolicyKind::kPofan;
  // lb::Pofan's pipe size: consecutive fat-tree ports per pipe (kOfan: k).
  uint32_t pipe_size = 4;
  // Pipes of the device (Tofino 1: 2 or 4).
  uint32_t num_pipes = 4;
  // Device port of each fat-tree port 0..k-1; empty: DefaultDevPorts.
  std::vector<uint16_t> dev_ports = {};
  // The CPU port; unset: Tofino 1's PCIe port (320 on a 4-pipe part, 192 on
  // a 2-pipe part).
  std::optional<uint16_t> cpu_port = std::nullopt;
  // ECN: CE-mark ECT packets that find more than this many bytes queued
  // (ofan-dp's egress `ecn`, default 100 KiB); 0: no marking.
  uint64_t ecn_bytes = uint64_t{100} * 1024;
  uint64_t seed = 1;  // lb::PolicyConfig::seed
  // lb::SwitchLbSetup::salt; DefaultSalt(switch) unless set.
  bool salt_set = false;
  uint32_t salt = 0;
};

// ofan-dp's salt for its first worker (dataplane/stages/balance.cc): the
// pointers of a one-worker ofan-dp switch. (With more workers, each worker
// draws the rows of its own pipes with its own salt.)
uint32_t DefaultSalt(lb::SwitchId s);

// Fat-tree port p on pipe p / pipe_size, 100G ports every 4 lanes (every 2 or
// 1 when a pipe holds more than 16 or 32 ports).
std::vector<uint16_t> DefaultDevPorts(uint32_t k, uint32_t pipe_size);

inline constexpr uint32_t PipeOfDevPort(uint16_t dev_port) {
  return dev_port >> OFAN_P4_PIPE_SHIFT;
}

// Table entries, one struct per table of pofan.p4, field names as there.
enum class RouteAction : uint8_t { kDown, kUp, kLocal };
struct RouteEntry {
  uint32_t dst_addr = 0;
  RouteAction action = RouteAction::kDown;
  uint16_t port = 0;  // kDown
  uint16_t dest = 0;  // kUp
};

enum class KeyAction : uint8_t { kSetKey, kSetKeyDegraded, kNoUplink };
struct KeyEntry {
  uint16_t dest = 0;
  uint8_t cls = 0;
  KeyAction action = KeyAction::kSetKey;
  uint16_t ptr = 0;
  uint8_t last = 0;
  uint8_t id1 = 0, id2 = 0;  // kSetKey only
};

struct ListEntry {
  uint16_t ptr = 0;
  uint8_t rank = 0;
  uint16_t port = 0;  // set_uplink
};

struct XorwEntry {  // f2_xorw: (rank, id1) -> xorw(P[rank], id1)
  uint8_t rank = 0, id1 = 0;
  uint8_t x = 0;
};

struct AddEntry {  // f2_add: (x, id2) -> the port of uplink (x + id2) mod w
  uint8_t x = 0, id2 = 0;
  uint16_t port = 0;
};

struct PortMacEntry {
  uint16_t port = 0;
  lb::MacBytes src{}, dst{};
};

struct EcnEntry {  // Egress.ecn_threshold: mark at or above `cells` queued
  uint16_t port = 0;
  uint32_t cells = 0;
};

// The queue depth in cells at which a packet is marked, for "more than
// ecn_bytes queued" (Tofino's depth is whole cells).
constexpr uint32_t EcnCells(uint64_t ecn_bytes) {
  return static_cast<uint32_t>(ecn_bytes / OFAN_P4_QUEUE_CELL_BYTES + 1);
}

struct PofanTables {
  // What they were computed for.
  int k = 0, levels = 3;
  lb::SwitchId sw;
  std::string switch_name;
  lb::Role role = lb::Role::kEdge;
  std::vector<uint32_t> failed_links;
  PofanOptions options;  // with dev_ports and salt filled in

  uint8_t w = 0;          // uplinks (for the record: the entries hold it)
  uint16_t cpu_port = 0;  // switch_config's default action

  std::vector<RouteEntry> route;
  std::vector<KeyEntry> pofan_key;
  std::vector<XorwEntry> f2_xorw;
  std::vector<AddEntry> f2_add;
  std::vector<ListEntry> uplink_list;
  std::vector<PortMacEntry> port_mac;
  std::vector<EcnEntry> ecn_threshold;  // in Egress
  // pointers[pipe][index], every pipe of the device (a pipe without ports of
  // this switch keeps zeros).
  std::vector<std::vector<uint8_t>> pointers;
};

Result<PofanTables> ComputePofanTables(const lb::FatTree& tree, lb::SwitchId sw,
                                       const std::vector<uint32_t>& failed_links,
                                       const PofanOptions& options);

}  // namespace ofan::p4
