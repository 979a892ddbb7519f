// Simulator speed: events per second of ofan-sim's engine per policy, on a
// k=8 permutation (128 hosts) with 1 MiB messages. Whole-run wall time and
// peak memory of the paper's default scenario are measured by
// bench/run-sim-bench (they need a fresh process each).
#include <benchmark/benchmark.h>

#include "sim/sim.h"

namespace ofan::sim {
namespace {

void BM_SimPermutation(benchmark::State& state, const char* lb, int k) {
  SimConfig c;
  c.k = k;
  c.msg_bytes = 1 << 20;
  c.policy.kind = *lb::ParsePolicy(lb);
  uint64_t events = 0;
  for (auto _ : state) {
    auto r = RunSim(c);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    events += r->events;
    benchmark::DoNotOptimize(r->cct_us);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(events) / static_cast<double>(state.iterations());
}

BENCHMARK_CAPTURE(BM_SimPermutation, ecmp_k8, "ecmp", 8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimPermutation, rps_k8, "rps", 8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimPermutation, jsq_k8, "jsq", 8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimPermutation, ofan_k8, "ofan", 8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimPermutation, pofan_k8, "pofan", 8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimPermutation, ofan_k12, "ofan", 12)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ofan::sim

BENCHMARK_MAIN();
