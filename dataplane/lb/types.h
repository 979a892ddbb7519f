// Strong ids and small value types shared by the LB library, the dataplane,
// the simulator and the P4 reference model. No DPDK here.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>

namespace ofan::lb {

// A switch's uplink ports are numbered 0..w-1 ("uplink index"); w <= 64.
using PortMask = uint64_t;
inline constexpr int kMaxUplinks = 64;
inline constexpr uint8_t kNoUplink = 0xFF;

inline constexpr int PopCount(PortMask m) { return std::popcount(m); }

// Picoseconds: 20 B of inter-frame gap at 800 Gb/s is 0.2 ns, so the
// simulator needs sub-nanosecond time. 2^64 ps is 213 days.
using TimePs = uint64_t;

template <class Tag, class Rep = uint32_t>
struct Id {
  Rep v{};
  constexpr Id() = default;
  constexpr explicit Id(Rep value) : v(value) {}
  constexpr Rep value() const { return v; }
  friend constexpr bool operator==(Id a, Id b) { return a.v == b.v; }
  friend constexpr auto operator<=>(Id a, Id b) { return a.v <=> b.v; }
};

using HostId = Id<struct HostTag>;      // 0..n-1, pod-major order
using SwitchId = Id<struct SwitchTag>;  // edges, then aggs, then cores

// Size class of §4 ("quantized packet size"): data frames and the small
// control packets (ACK/NAK/CNP) get separate pointers (DRB, [16]).
enum class SizeClass : uint8_t { kData = 0, kAck = 1 };
inline constexpr int kNumSizeClasses = 2;

enum class Role : uint8_t { kEdge, kAgg, kCore };

constexpr std::string_view RoleName(Role r) {
  switch (r) {
    case Role::kEdge:
      return "edge";
    case Role::kAgg:
      return "agg";
    case Role::kCore:
      return "core";
  }
  return "?";
}

}  // namespace ofan::lb
