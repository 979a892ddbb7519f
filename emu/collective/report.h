// The result of one collective run and its JSON form.
//
// expects:  what the driver measured (per-rank times) and the schedule
// gives:    CollectiveResult with nccl-tests' bandwidths: algbw = S / CCT,
//           busbw = algbw x BusBwFactor (schedule.h), both in Gb/s (10^9
//           bits per second, to compare with link rates; nccl-tests prints
//           GB/s, i.e. ours / 8); ResultJson, one object per run
// next:     ofan-emu's CLI prints or collects it
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "emu/collective/schedule.h"

namespace ofan::emu {

struct CollectiveResult {
  Workload workload = Workload::kPermutation;
  uint32_t num_ranks = 0;
  std::vector<uint32_t> hosts;  // engine rank -> fabric host
  uint64_t msg_bytes = 0;       // S, as schedule.h defines it per workload
  uint32_t qps_per_peer = 0;
  uint64_t seed = 0;
  // The ranks this run drove (all of them unless the collective was split
  // over processes: then partial() and the CCT is only theirs).
  std::vector<Rank> local_ranks;
  double cct_us = 0;            // max over ranks of rank_us
  std::vector<double> rank_us;  // first post to last completion, per local rank
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::optional<double> cct_lower_bound_us;  // NIC-bound (lower_bound.h), when asked for
  bool verified = false;
  uint32_t bad_ranks = 0;  // ranks whose receive buffer failed verification
  // CTS (schedule.h's cts_*; channels 0: off): the channels; every wait of
  // a ready chunk for its receiver's clear-to-send and every clear-to-send's
  // flight (rank_engine.h), in microseconds, of the ranks this result
  // covers. Flights are kept only from one process's ranks (one clock): a
  // merge of several parts drops them.
  uint32_t cts_channels = 0;
  uint64_t cts_channel_bytes = 0;
  bool cts_priority = true;
  std::vector<double> cts_waits_us, cts_flights_us;
  std::string error;  // empty when the run completed and verified
  bool ok() const { return error.empty(); }
  bool partial() const { return local_ranks.size() < num_ranks; }
};

// One result from the partial results of the processes that ran the same
// collective: per-rank times in rank order, CCT = max over all ranks,
// bandwidths from it, verified when all were, the first error. An error if
// they are not one collective (workload, ranks, size, QPs, seed), a rank is
// in two parts or, when none failed, in none; the bound is the first part's
// that has one.
Result<CollectiveResult> MergeResults(std::span<const CollectiveResult> parts);

// algbw in Gb/s for S bytes in t microseconds (0 when t is 0).
double AlgBwGbps(uint64_t bytes, double us);

// Fills cct_us, algbw_gbps and busbw_gbps from rank_us.
void ComputeBandwidths(CollectiveResult* r);

// The q-quantile (0..1) of `v`, by nearest rank; 0 for none.
double Quantile(std::vector<double> v, double q);

nlohmann::json ResultJson(const CollectiveResult& r);
// The inverse of ResultJson, for merging the outputs of processes (ofan-coll
// merge): every field's presence and type checked; the bandwidths and CCT
// are recomputed from rank_us, not trusted.
Result<CollectiveResult> ParseResultJson(const nlohmann::json& j);

}  // namespace ofan::emu
