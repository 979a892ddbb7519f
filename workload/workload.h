// Workloads (paper §2.1, §6) as flows between the hosts of a fat tree: the
// pieces ofan-sim (sim/workload.h) and ofan-emu's collective engine
// (emu/collective/schedule.cc) share, so that both run the same pairs for
// the same seed. No DPDK, nothing of either tool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "dataplane/lb/fat_tree.h"

namespace ofan::workload {

struct Flow {
  uint32_t src;
  uint32_t dst;
  uint64_t bytes;
};

// Matrix file: one flow per line, "SRC DST SIZE", SRC/DST a host index or a
// host address (10.pod.edge.slot), SIZE like 4096, 256KiB, 1MiB. '#' starts
// a comment.
Result<std::vector<Flow>> ParseMatrix(const std::string& text, const lb::FatTree& tree);

// The permutation workload's pairs: a uniform random derangement of 0..n-1
// (p[i] != i), a pure function of (n, seed). n >= 2.
std::vector<uint32_t> RandomDerangement(uint32_t n, uint64_t seed);

// The incast's senders to host (rank) 0, ascending: `senders` of 1..n-1,
// evenly spaced so that they spread over the pods (0, or more than n-1:
// every other one). Empty for n < 2.
std::vector<uint32_t> IncastSenders(uint32_t n, uint32_t senders);

}  // namespace ofan::workload
