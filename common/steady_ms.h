// Milliseconds on the monotonic clock: for timeouts, backoffs and ages on
// control paths (never the per-packet path, which reads the TSC).
#pragma once

#include <chrono>
#include <cstdint>

namespace ofan {

inline int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace ofan
