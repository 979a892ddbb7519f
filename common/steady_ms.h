// Milliseconds on the monotonic clock: for timeouts, backoffs and ages on
// control paths (never the per-packet path, which reads the TSC). And
// CLOCK_MONOTONIC in nanoseconds: the clock the kernel stamps frames with
// (bpf_ktime_get_ns), which uroce's send log, the shared-memory host links
// and the engine's host stamps share.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace ofan {

inline int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline uint64_t MonotonicNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
}

}  // namespace ofan
