// CCT lower bounds.
//
// AppendixABound: the paper's App. A bound for one flow of m packets over H
// hops when every host is at once a sender and a receiver (permutation):
// mode 1 (data only), mode 2 (data and ACKs interleaved round-robin), mode 3
// (ACKs only). With the §6 defaults, m = 256 and H = 6 it gives 17.05694 us.
// For a pacing rate rho < 1 the data spacing becomes Td'/rho.
//
// NaiveBound: for other workloads (§3.5 "naive lower bounds"): the busiest
// host NIC must serialise all its data and ACK frames, and the last ACK still
// needs one hop-by-hop traversal; likewise the busiest host downlink must
// carry every frame to that host (incast: MoE's busiest receiver).
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/lb/fat_tree.h"
#include "sim/config.h"
#include "sim/workload.h"

namespace ofan::sim {

struct Timing {
  double td;   // data frame serialisation (s)
  double ta;   // ACK frame serialisation
  double tg;   // inter-frame gap
  double hop;  // propagation per link
  static Timing From(const SimConfig& c);
};

double AppendixABound(const Timing& t, uint64_t packets, int hops, double rho);

struct LowerBound {
  double seconds = 0;
  const char* kind = "appendix_a";  // or "naive"
};

LowerBound CctLowerBound(const SimConfig& c, const lb::FatTree& tree,
                         const std::vector<Flow>& flows);

}  // namespace ofan::sim
