#include "tofino_p4/control/resources.h"

#include <algorithm>

#include "dataplane/lb/ofan_order.h"
#include "tofino_p4/include/pofan_defs.h"

namespace ofan::p4 {
namespace {

constexpr uint32_t kWordBits = 128, kRamWords = 1024, kVersionBits = 4;

uint32_t Log2Ceil(uint64_t v) {
  uint32_t b = 0;
  while ((uint64_t{1} << b) < v) ++b;
  return b;
}

// An exact-match table of `entries` with a key of key_bits and immediate
// action data of data_bits over `actions` actions.
TableEstimate Exact(std::string name, uint32_t stage, uint64_t entries, uint32_t key_bits,
                    uint32_t data_bits, uint32_t actions) {
  TableEstimate t;
  t.name = std::move(name);
  t.kind = "exact";
  t.stage = stage;
  t.entries = entries;
  t.entry_bits = key_bits + data_bits + Log2Ceil(actions) + kVersionBits;
  t.per_word = std::max<uint32_t>(1, kWordBits / t.entry_bits);
  const uint64_t words = (entries + t.per_word - 1) / t.per_word;
  t.rams = std::max<uint64_t>(1, (words + kRamWords - 1) / kRamWords);
  t.bytes = (entries * t.entry_bits + 7) / 8;
  // Cuckoo ways: up to 4, each of rams / ways RAMs.
  const uint64_t ways = std::min<uint64_t>(4, t.rams);
  t.hash_bits = static_cast<uint32_t>(ways * (10 + Log2Ceil((t.rams + ways - 1) / ways)));
  t.xbar_bytes = (key_bits + 7) / 8;
  return t;
}

}  // namespace

ResourceEstimate EstimateResources(const NetworkSize& in) {
  ResourceEstimate r;
  r.size = in;
  NetworkSize& n = r.size;
  if (n.hosts == 0) n.hosts = n.edges * n.uplinks;
  if (n.list_entries == 0) n.list_entries = OFAN_P4_LIST_TABLE_SIZE;
  const uint64_t keys = uint64_t{2} * n.edges;
  const uint32_t w = n.uplinks, b = static_cast<uint32_t>(lb::CeilLog2(w));
  // Stage 0: route on the destination address (and switch_config, the size
  // class and the TTL gateways).
  r.tables.push_back(Exact("route", 0, n.hosts + 1, 32, 16, 4));
  r.tables.push_back({"switch_config", "keyless", 0, 1, 9, 0, 0, 0, 0, 0});
  // Stage 1: the key.
  r.tables.push_back(Exact("pofan_key", 1, keys, 16 + 1, 16 + 8 + 8 + 8, 3));
  // Stage 2: the pointers, one 8-bit cell per key, 16 to a word.
  TableEstimate reg{"pointers", "register", 2, keys, 8, kWordBits / 8, 0, 0, 0, 0};
  const uint64_t reg_words = (keys + reg.per_word - 1) / reg.per_word;
  reg.rams = (reg_words + kRamWords - 1) / kRamWords;
  reg.bytes = keys;
  reg.hash_bits = Log2Ceil(keys);  // the cell's address
  r.tables.push_back(reg);
  // Stage 3: the key's order (f2_xorw) or its list (uplink_list), exclusive.
  r.tables.push_back(Exact("f2_xorw", 3, uint64_t{w} << b, 16, 8, 2));
  r.tables.push_back(Exact("uplink_list", 3, n.list_entries, 16 + 8, 9, 2));
  // Stage 4: the addition mod w and the uplink's port.
  r.tables.push_back(Exact("f2_add", 4, uint64_t{w} * w, 16, 9, 2));
  // Stage 5: the output port's MACs, and the drop counter.
  r.tables.push_back(Exact("port_mac", 5, 2 * w, 9, 96, 2));
  // Egress: the port's ECN threshold (19 bits of action data).
  r.tables.push_back(Exact("ecn_threshold", 0, 2 * w, 9, 19, 2));
  r.tables.back().kind = "exact (egress)";
  TableEstimate cnt{"drops", "counter", 5, OFAN_P4_NUM_DROP_REASONS, 64, 2, 1, 0, 0, 0};
  cnt.bytes = OFAN_P4_NUM_DROP_REASONS * 8;
  r.tables.push_back(cnt);

  for (const TableEstimate& t : r.tables) {
    r.stages = std::max(r.stages, t.stage + 1);
    r.sram_rams += t.rams;
    r.sram_bytes += t.bytes;
    r.hash_bits += t.hash_bits;
    r.xbar_bytes += t.xbar_bytes;
  }
  r.meter_alus = 1;  // `advance`: one stateful ALU, one per pipe
  // Gateways: parser error / IPv4 validity, the version-to-BTH checks folded
  // by the compiler into a few, the class, two TTL checks, the key's hit and
  // drop state, degraded, the CPU port, the final drop; in egress, ECT and
  // the threshold.
  r.gateways = 13;
  r.vliw_actions = 17;  // the program's actions that write PHV
  r.pointer_bytes_per_pipe = reg.rams * kRamWords * kWordBits / 8;
  r.edges_per_pointer_ram = uint64_t{kRamWords} * (kWordBits / 8) / 2;
  return r;
}

}  // namespace ofan::p4
