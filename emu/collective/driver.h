// RunCollective: many rank engines in one process (a uroce process drives
// many hosts), one transport each, to completion, a failure or a deadline.
//
// expects:  a Schedule and the Transports of the ranks this process drives
//           (all n, or any subset: one rank per VM with libibverbs, the
//           hosts of one uroce process), each knowing its rank; the other
//           ranks run the same schedule elsewhere, started together (the
//           caller's barrier); nothing else polls these transports meanwhile
// gives:    a CollectiveResult: per-rank times, CCT, algbw / busbw, the
//           NIC-bound when options.bound is set, and verification of every
//           receive buffer; on failure (a bad transport, a post refused, a
//           kError, an unexpected completion, the deadline, a mismatch) its
//           error says which rank and why, and nothing hangs
// next:     ResultJson (report.h); the partial results of the processes
//           that ran one collective together combine with MergeResults
//
// Polling: every transport is polled in turn, also those of finished ranks
// (a userspace stack still has to ACK its peers), with max_wait_us = 0 while
// the previous sweep found work. After an idle sweep one transport, in turn,
// may wait idle_wait_us for a completion, so an idle run sleeps about that
// long per sweep instead of spinning, and no single transport starves the
// others by sleeping in its Poll.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "emu/collective/lower_bound.h"
#include "emu/collective/report.h"
#include "emu/collective/schedule.h"
#include "emu/collective/transport.h"

namespace ofan::emu {

struct RunOptions {
  std::chrono::milliseconds deadline{60'000};
  uint32_t idle_wait_us = 20;
  // Called with bytes arrived / bytes expected over all ranks, at most once
  // per progress_every and once at the end.
  std::function<void(uint64_t done, uint64_t total)> progress;
  std::chrono::milliseconds progress_every{250};
  std::vector<uint32_t> hosts;          // engine rank -> fabric host; empty: identity
  std::optional<NicBoundParams> bound;  // compute cct_lower_bound_us
  bool verify = true;
};

CollectiveResult RunCollective(const Schedule& s, std::span<Transport* const> transports,
                               const RunOptions& o);

}  // namespace ofan::emu
