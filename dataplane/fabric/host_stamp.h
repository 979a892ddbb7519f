// HostStamp: when the shared engine (dataplane/engine.h) puts a host's frame
// on the host's emulated wire: at the time the host port's XDP program saw
// it arrive (dataplane/hostio/xsk_program.h: within microseconds of the
// host's send), or at the time the engine took it from the socket (up to a
// pass later: bench/RESULTS.md, "Host frames: send time against the
// engine's stamp"). Names from one list: the fabric file's
// engine.host_stamp, status's engine.host_stamp, `ofan-emu up --host-stamp`
// (which asks `ofan-topo facts` for them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

namespace ofan::fabric {

#define OFAN_HOST_STAMPS(X) \
  X(kKernel, "kernel")      \
  X(kPoll, "poll")

enum class HostStamp : uint8_t {
#define OFAN_X(e, n) e,
  OFAN_HOST_STAMPS(OFAN_X)
#undef OFAN_X
};

inline constexpr HostStamp kDefaultHostStamp = HostStamp::kKernel;

inline constexpr std::string_view kHostStampNames[] = {
#define OFAN_X(e, n) n,
    OFAN_HOST_STAMPS(OFAN_X)
#undef OFAN_X
};

constexpr std::string_view HostStampName(HostStamp s) {
  return kHostStampNames[static_cast<size_t>(s)];
}

constexpr std::optional<HostStamp> ParseHostStamp(std::string_view name) {
  for (size_t i = 0; i < std::size(kHostStampNames); ++i) {
    if (kHostStampNames[i] == name) return static_cast<HostStamp>(i);
  }
  return std::nullopt;
}

}  // namespace ofan::fabric
