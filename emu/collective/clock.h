// The one clock of the collective engine: steady_clock in nanoseconds, for
// per-rank times, deadlines and the loopback's delays.
#pragma once

#include <chrono>
#include <cstdint>

namespace ofan::emu {

inline int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace ofan::emu
