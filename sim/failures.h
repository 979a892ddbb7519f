// Random link failures (paper §6.2): each edge-agg and agg-core link fails
// independently with probability p; hosts then pace at rho_max, the highest
// rate at which every flow could send if its traffic were balanced perfectly
// over its valid shortest paths.
#pragma once

#include <vector>

#include "common/result.h"
#include "dataplane/lb/fat_tree.h"
#include "sim/workload.h"

namespace ofan::sim {

// Draws failure sets until every flow keeps a path (at most 1000 draws; the
// paper assumes the operator handles dead ends).
Result<lb::LinkSet> DrawFailures(const lb::FatTree& t, double p, uint64_t seed,
                                 const std::vector<Flow>& flows);

// True when every flow has a valid path under `failed`.
bool AllFlowsRoutable(const lb::FatTree& t, const lb::LinkSet& failed,
                      const std::vector<Flow>& flows);

// rho_max in (0, 1]: 1 / the most loaded link's load when each host sends its
// bytes at line rate and every switch splits each destination's traffic
// equally over its valid uplinks (what a destination-based rotation does).
double RhoMax(const lb::FatTree& t, const lb::LinkSet& failed, const std::vector<Flow>& flows);

}  // namespace ofan::sim
