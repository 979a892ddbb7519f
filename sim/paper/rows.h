// What a point of one of the paper's §6 figures is (PointKey: what the figure
// varies) and what it measured (Row: means over its seeds), and the names of
// the schemes §6 compares, as --lb takes them.
//
// expects:   nothing; plain data shared by the plans (figures.h), the claims
//            (claims.h) and `ofan-sim paper` (paper.cc)
// modifies:  nothing
// next:      figures.h turns keys into runs, paper.cc runs them into rows,
//            claims.h judges the rows
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/lb/policy.h"
#include "sim/config.h"

namespace ofan::sim::paper {

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

// One point's results, means over its seeds. A row with no seeds, no lower
// bound or flows that did not complete has no CCT: claims take it as not
// measured (claims.h), never as zero.
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

// The schemes §6 compares, named as --lb takes them (config.h's ApplyLbName).
inline std::string Ofan() { return std::string(lb::PolicyName(lb::PolicyKind::kOfan)); }
inline std::string Ar() { return std::string(lb::PolicyName(lb::PolicyKind::kAr)); }
inline std::string Reps() { return std::string(HostSchemeName(HostScheme::kReps)); }
inline std::string Drb() { return std::string(HostSchemeName(HostScheme::kDrb)); }
// POfan with pipes of `pipe` ports: "4ofan".
inline std::string NOfan(int pipe) { return fmt::format("{}{}", pipe, Ofan()); }
inline std::vector<std::string> PaperLbs() { return {Reps(), Ar(), Ofan(), NOfan(4)}; }

}  // namespace ofan::sim::paper
