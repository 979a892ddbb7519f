// ofan-sim's workloads (paper §2.1, §6): random permutation (derangement),
// all-to-all, the App. A pair check, or a traffic matrix read from a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "dataplane/lb/fat_tree.h"
#include "sim/config.h"
#include "workload/workload.h"

namespace ofan::sim {

// The shared pieces (workload/workload.h), under ofan-sim's names.
using workload::Flow;
using workload::ParseMatrix;
using workload::RandomDerangement;

// The flows of c's workload on this tree.
Result<std::vector<Flow>> MakeWorkload(const SimConfig& c, const lb::FatTree& tree);

}  // namespace ofan::sim
