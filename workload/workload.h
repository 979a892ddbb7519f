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
// evenly spaced so that they spread over the pods (0, or more than there
// are: every one of them). Empty for n < 2. With a victim flow, neither of
// its ends sends: the candidates are 2..n-2.
std::vector<uint32_t> IncastSenders(uint32_t n, uint32_t senders, bool victim = false);

// The incast's victim flow (ofan-emu run --victim): the last host sends as
// much as an incast sender to host 1, the receiver's neighbour on its edge
// in a fat tree's host order. It crosses the ports upstream of the
// receiver's edge that the incast pauses, but not the receiver's link. n >= 4.
inline constexpr uint32_t kVictimDst = 1;
inline uint32_t VictimSrc(uint32_t n) { return n - 1; }

}  // namespace ofan::workload
