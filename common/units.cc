#include "common/units.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

namespace ofan {

Result<uint64_t> ParseSize(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr == s.data()) {
    return InvalidArgument(
        fmt::format("'{}' is not a size (expected e.g. 4096, 256KiB, 1MiB)", text));
  }
  std::string suffix(ptr, s.data() + s.size());
  for (auto& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  uint64_t mult = 1;
  if (suffix.empty() || suffix == "b") {
    mult = 1;
  } else if (suffix == "k" || suffix == "kb" || suffix == "kib") {
    mult = kKiB;
  } else if (suffix == "m" || suffix == "mb" || suffix == "mib") {
    mult = kMiB;
  } else if (suffix == "g" || suffix == "gb" || suffix == "gib") {
    mult = kGiB;
  } else {
    return InvalidArgument(
        fmt::format("'{}': unknown size suffix '{}' (use B, KiB, MiB or GiB)", text, suffix));
  }
  if (value > UINT64_MAX / mult) {
    return InvalidArgument(fmt::format("'{}' is too large", text));
  }
  return value * mult;
}

std::string FormatSize(uint64_t bytes) {
  if (bytes != 0 && bytes % kGiB == 0) return fmt::format("{}GiB", bytes / kGiB);
  if (bytes != 0 && bytes % kMiB == 0) return fmt::format("{}MiB", bytes / kMiB);
  if (bytes != 0 && bytes % kKiB == 0) return fmt::format("{}KiB", bytes / kKiB);
  return fmt::format("{}B", bytes);
}

Result<LinkRate> LinkRate::FromGbps(double gbps, std::string_view what) {
  if (!InRange(gbps)) {
    return InvalidArgument(
        fmt::format("{} must be in (0, {}] Gb/s, got {}", what, kMaxLinkGbps, gbps));
  }
  return LinkRate(gbps);
}

Result<std::optional<LinkRate>> LinkRate::FromGbpsOrZero(double gbps, std::string_view what) {
  if (gbps == 0) return std::optional<LinkRate>();
  if (!InRange(gbps)) {
    return InvalidArgument(
        fmt::format("{} must be in [0, {}] Gb/s (0: none), got {}", what, kMaxLinkGbps, gbps));
  }
  return std::optional<LinkRate>(LinkRate(gbps));
}

}  // namespace ofan
