#include "sim/runner.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <optional>

namespace ofan::sim {

Result<std::vector<SimResult>> RunBatch(const std::vector<BatchRun>& runs, unsigned jobs,
                                        const std::string& what) {
  std::vector<size_t> order(runs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return runs[a].cost > runs[b].cost; });
  std::vector<SimResult> out(runs.size());
  std::mutex mu;
  std::optional<Error> first_error;
  size_t done = 0;
  const bool tty = isatty(STDERR_FILENO);
  ParallelFor(runs.size(), jobs, [&](size_t oi) {
    const BatchRun& run = runs[order[oi]];
    auto r = RunSim(run.cfg);
    std::lock_guard<std::mutex> l(mu);
    if (!r) {
      if (!first_error) first_error = r.error();
      return;
    }
    out[order[oi]] = *r;
    const size_t d = ++done;
    if (what.empty()) return;
    std::fprintf(stderr, "%s  %s %zu/%zu: %s  max queue %.1f pkts  (%.2f s)%s",
                 tty ? "\r\033[K" : "", what.c_str(), d, runs.size(), run.label.c_str(),
                 r->queue_max_pkts, r->wall_s, tty && d < runs.size() ? "" : "\n");
  });
  if (first_error) return *first_error;
  return out;
}

}  // namespace ofan::sim
