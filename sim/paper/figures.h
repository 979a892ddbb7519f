// The paper's §6 figures as data: for each of Figs. 5-14, its setup, the
// points it runs at each size (tiny for tests, default for this machine,
// full for the paper's sizes and seeds), and its claims as functions of the
// measured rows. `ofan-sim paper` (paper.h) runs them.
//
// Contract: Figures() is the one registry, in the paper's order; adding a
// figure (or enabling one whose engine feature is missing) is one entry.
// A point is a PointKey, what the figure varies; PointConfig turns it into
// the SimConfig it runs, so every figure maps keys to scenarios the same
// way. Claims are computed from the rows and never from expected outcomes;
// they look rows up by key and may be given rows of any size.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "sim/config.h"

namespace ofan::sim::paper {

// tiny: seconds per figure (tests); default: minutes on 2 cores; full: the
// paper's sizes and seeds.
enum class Size : uint8_t { kTiny, kDefault, kFull };
std::string_view SizeName(Size s);
Result<Size> ParseRunSize(std::string_view s);

// What a figure varies. Fields a figure does not vary keep these defaults,
// which are the paper's §6 scenario (k=12, 3 levels, 1 MiB permutation).
struct PointKey {
  std::string lb;  // an --lb name: reps, ar, ofan, 4ofan, drb, ...
  Cca cca = Cca::kNone;
  int k = 12;
  int levels = 3;
  WorkloadKind workload = WorkloadKind::kPerm;
  uint64_t msg_bytes = 1ULL << 20;  // per flow (a2a-host: per host)
  uint32_t payload = 4096;          // the figures' "packet size"
  double fail_prob = 0;
  std::string placement;  // Fig. 11: where the 4Ofan half of the switches is
  std::string model;      // Fig. 14: Llama-3 8b | 70b | 405b
  bool eplb = false;      // Fig. 13
  double moe_scale = 1.0;
  uint32_t fsdp_layers = 1;
};

// Hosts of the k-ary fat tree of `levels` levels (lb::FatTree); 0 if invalid.
uint32_t HostsOf(int k, int levels);

// The SimConfig a point runs with seed `seed`; errors are the --lb name's.
Result<SimConfig> PointConfig(const PointKey& key, uint64_t seed);

// The columns a figure's rows show besides lb (also the JSON row fields).
enum class Field : uint8_t {
  kCca,
  kK,
  kHosts,
  kMsg,
  kPacket,
  kFailProb,
  kPlacement,
  kModel,
  kEplb
};
std::string_view FieldName(Field f);

// One point's results, means over its seeds.
struct Row {
  PointKey key;
  uint32_t hosts = 0;
  uint32_t seeds = 0;
  double cct_us = 0;
  double cct_lower_bound_us = 0;
  double cct_inflation = 0;  // cct / bound - 1
  double cct_inflation_sem = 0;
  double queue_max_pkts = 0;
  double utilization = 0;
  double retransmits = 0;
  double flows_incomplete = 0;
  double frame_bytes = 0;       // payload + header
  double frame_wire_bytes = 0;  // + the inter-frame gap
};

struct Claim {
  std::string text;  // the paper's claim, as it is tested here
  bool holds = false;
  std::string measured;  // what we measured, and by how much it holds or misses
};

// What one size of a figure runs.
struct Plan {
  std::vector<PointKey> points;
  uint32_t seeds = 1;
  std::string setup;  // one line: the fabric, workload and sweep of this size
};

struct Figure {
  std::string_view id;     // "5a", ..., "14"
  std::string_view title;  // one line, for --list
  std::string_view paper_setup;
  std::vector<Field> fields;
  Field x;                    // the plot's x axis
  std::vector<Field> facets;  // one plot panel per value of these
  Plan (*plan)(Size);
  std::vector<Claim> (*claims)(const std::vector<Row>&);
  std::vector<std::string_view> model_notes;  // where our model differs from the paper's
  // Non-empty: what the engine lacks to run this figure (ofan-sim paper
  // exits 2 with it).
  std::string_view missing;
};

const std::vector<Figure>& Figures();
const Figure* FindFigure(std::string_view id);

}  // namespace ofan::sim::paper
