// The paper's §6 figures as data: for each of Figs. 5-14, its setup, the
// points it runs at each size (tiny for tests, default for this machine,
// full for the paper's sizes and seeds), and which claim function of
// claims.h judges its rows. `ofan-sim paper` (paper.h) runs them.
//
// Contract: Figures() is the one registry, in the paper's order; adding a
// figure (or enabling one whose engine feature is missing) is one entry.
// A point is a PointKey (rows.h), what the figure varies; PointConfig turns
// it into the SimConfig it runs, so every figure maps keys to scenarios the
// same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "sim/config.h"
#include "sim/paper/claims.h"
#include "sim/paper/rows.h"

namespace ofan::sim::paper {

// tiny: seconds per figure (tests); default: minutes on 2 cores; full: the
// paper's sizes and seeds.
enum class Size : uint8_t { kTiny, kDefault, kFull };
std::string_view SizeName(Size s);
Result<Size> ParseRunSize(std::string_view s);

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
