// A resource estimate of pofan.p4 on Tofino 1 for a network of a given size,
// table by table, from the program's own tables and field widths (the
// README puts it beside the paper's Table 2). An estimate, not the
// compiler's report: the SDE's bf-p4c allocates RAMs, hash ways and stages
// itself, and its resource summary is the authority where it can be run.
//
// The Tofino 1 figures it assumes, per pipe (tofino_p4/README.md says where
// each stands): 12 match-action stages; SRAM in 1,024 x 128-bit RAMs (16 KiB),
// 80 per stage; exact-match entries packed whole into 128-bit words with 4
// bits of version/valid each; a hash way of n RAMs takes 10 + log2(n) hash
// bits; one stateful (meter) ALU per register action.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ofan::p4 {

struct NetworkSize {
  uint32_t edges = 64;    // destination edge switches (keys at an edge: 2 per edge)
  uint32_t uplinks = 32;  // w
  uint32_t hosts = 0;     // route entries; 0: edges * uplinks
  uint32_t pipes = 4;
  uint32_t list_entries = 0;  // uplink_list budget; 0: the program's OFAN_P4_LIST_TABLE_SIZE
};

struct TableEstimate {
  std::string name;
  std::string kind;  // "exact", "exact (egress)", "register", "counter", "keyless"
  uint32_t stage = 0;
  uint64_t entries = 0;
  uint32_t entry_bits = 0;  // key + immediate data + action + version
  uint32_t per_word = 0;    // entries per 128-bit word
  uint64_t rams = 0;        // 16 KiB RAMs, per pipe
  uint64_t bytes = 0;       // bits in use / 8, per pipe
  uint32_t hash_bits = 0;
  uint32_t xbar_bytes = 0;  // exact-match crossbar bytes of the key
};

struct ResourceEstimate {
  NetworkSize size;
  std::vector<TableEstimate> tables;
  uint32_t stages = 0, meter_alus = 0, gateways = 0, vliw_actions = 0;
  uint64_t sram_rams = 0, sram_bytes = 0, hash_bits = 0, xbar_bytes = 0;
  uint64_t pointer_bytes_per_pipe = 0;
  uint64_t edges_per_pointer_ram = 0;  // edge switches one pointer RAM holds
};

ResourceEstimate EstimateResources(const NetworkSize& n);

}  // namespace ofan::p4
