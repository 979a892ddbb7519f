// Test vectors of pofan.p4: sequences of frames in (device port, bytes) and
// what must come out (device port, bytes, or a drop), made by running the
// pipeline model (pofan_model.h) over the tables of the control plane, for
// the switches DefaultVectorSpecs names. Stored under tofino_p4/vectors/ as
//   NAME.golden        the frames, in tests/golden/golden.h's format, in
//                      the order they must be sent (the pointers advance)
//   NAME.tables.json   the tables and registers they were made with
//                      (bfrt_writer.h's JSON), which the PTF test loads
// `ofan-p4 vectors --out DIR` writes them; the tests check that what is on
// disk is what the model makes now, and tofino_p4/ptf/ replays them.
//
// In these files every port number is a device port: `port` lines give
// each one's fabric port (fabric_port=) and MACs, and the CPU port (cpu=1);
// a frame's in_port and out lines are device ports, and to_cpu=1 marks a
// frame for the CPU port.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "tofino_p4/control/pofan_tables.h"

namespace ofan::p4 {

struct VectorSpec {
  std::string name;  // file stem
  std::string what;  // one line for the file's header
  int k = 8, levels = 3;
  std::string switch_name;
  std::vector<uint32_t> failed_links;
  uint32_t pipe_size = 2;
  uint32_t frames = 400;
  uint64_t seed = 1;
};

// k = 8: edge e0-0 and aggregation switch a0-0, each without failures and
// with failures that leave keys with 0, some and all of their uplinks.
std::vector<VectorSpec> DefaultVectorSpecs();

struct VectorSet {
  PofanTables tables;
  std::string golden;       // NAME.golden
  std::string tables_json;  // NAME.tables.json
};

Result<VectorSet> MakeVectors(const VectorSpec& spec);

}  // namespace ofan::p4
