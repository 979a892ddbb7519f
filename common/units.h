// Parsing of human quantities on control paths: sizes ("256KiB", "1MiB",
// "4096"), with clear errors; a link's line rate, validated in one place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace ofan {

// Binary multiples, for sizes written in code as they are in configs.
inline constexpr uint64_t kKiB = 1024, kMiB = 1024 * kKiB, kGiB = 1024 * kMiB;

// Accepts an integer with an optional suffix: B, KiB/KB/K, MiB/MB/M, GiB/GB/G
// (all binary multiples, as message sizes in collectives are).
Result<uint64_t> ParseSize(std::string_view text);

// "1MiB", "256KiB", "4158B": the shortest exact binary form.
std::string FormatSize(uint64_t bytes);

// The largest line rate any tool takes, Gb/s (a 100 Tb/s link: beyond any;
// the paper's fabrics run 800 Gb/s).
inline constexpr double kMaxLinkGbps = 100'000;

// A link's line rate. Inside the C++ tools one unit, Gb/s: every identifier
// holding a rate as a number ends in _gbps (config keys, flags, JSON), and
// ofan-emu's command line, which takes Mb/s, hands Gb/s on. A LinkRate is
// valid by construction (finite, > 0, <= kMaxLinkGbps): FromGbps is the one
// check, and the conversions to the time a byte or a bit takes live here.
class LinkRate {
 public:
  // `what` names the value in the error: "<what> must be in (0, 100000]
  // Gb/s, got <gbps>".
  static Result<LinkRate> FromGbps(double gbps, std::string_view what);
  // 0 is "no rate" (an unshaped dataplane port, no NIC bound): nullopt;
  // anything else as FromGbps.
  static Result<std::optional<LinkRate>> FromGbpsOrZero(double gbps, std::string_view what);
  // A rate written in the code (a test's, a default): checked when it
  // compiles, so an invalid one does not build.
  static consteval LinkRate Gbps(double gbps) {
    if (!InRange(gbps)) throw "LinkRate::Gbps: not in (0, kMaxLinkGbps]";
    return LinkRate(gbps);
  }
  // The one range: NaN fails every comparison, an infinity the bound.
  static constexpr bool InRange(double gbps) { return gbps > 0 && gbps <= kMaxLinkGbps; }

  constexpr double gbps() const { return gbps_; }
  constexpr double bits_per_second() const { return gbps_ * 1e9; }
  constexpr double bytes_per_second() const { return gbps_ * 1e9 / 8.0; }
  // Picoseconds to serialise one byte: 8000 / Gb/s (80 ps at 100 Gb/s).
  constexpr double ps_per_byte() const { return 8000.0 / gbps_; }

 private:
  constexpr explicit LinkRate(double gbps) : gbps_(gbps) {}
  double gbps_;
};

}  // namespace ofan
