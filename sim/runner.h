// RunBatch: many independent ofan-sim runs on a pool of threads, the
// costliest first so that the pool stays busy to the end, one progress line
// per finished run on stderr (overwritten in place on a terminal). The sweep
// and `ofan-sim paper` share it; ParallelFor is its thread pool.
//
// Contract: results come back in the order of `runs`; the first error of any
// run is returned (the other runs still finish). A run's own progress bar
// (SimConfig::progress) is left as the caller set it.
#pragma once

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "sim/config.h"
#include "sim/sim.h"

namespace ofan::sim {

// Calls f(i) for every i in [0, n) on `threads` threads (at least one).
template <class F>
void ParallelFor(size_t n, unsigned threads, F&& f) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(1u, threads); ++t) {
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < n;) f(i);
    });
  }
  for (auto& th : pool) th.join();
}

struct BatchRun {
  SimConfig cfg;
  double cost = 0;    // relative; larger runs start first
  std::string label;  // shown in the progress line
};

// `what` names the batch in the progress lines ("sweep", "paper 5a");
// empty: no progress lines.
Result<std::vector<SimResult>> RunBatch(const std::vector<BatchRun>& runs, unsigned jobs,
                                        const std::string& what);

}  // namespace ofan::sim
