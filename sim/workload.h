// ofan-sim's workloads (paper §2.1, §6): random permutation (derangement),
// all-to-all with constant per-flow size (Fig. 5b) or constant per-host size
// (Fig. 5c), the App. A pair check, a traffic matrix read from a file, MoE
// dispatch (§6.6, workload/moe.h) and FSDP2's backward pass (§6.7,
// workload/fsdp.h).
// Expects a validated SimConfig and its tree. Gives the flows and, for moe
// and fsdp, a note on where the traffic came from (ofan-sim prints it).
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

struct WorkloadInfo {
  std::string note;            // e.g. "MoE token matrix generated (...)"; empty for the others
  double mean_sent_bytes = 0;  // moe: per GPU over the fabric
  double busiest_ratio = 0;    // moe: busiest fabric receiver / mean
  uint64_t local_bytes = 0;    // moe: tokens that stayed inside servers
};

// The flows of c's workload on this tree; info (if given) gets the note.
Result<std::vector<Flow>> MakeWorkload(const SimConfig& c, const lb::FatTree& tree,
                                       WorkloadInfo* info = nullptr);

// The payload a workload runs with unless --payload is given: 64 KiB for moe
// (§6.6), else c.payload.
uint32_t DefaultPayload(WorkloadKind w, uint32_t payload);

}  // namespace ofan::sim
