// Parsing of human quantities on control paths: sizes ("256KiB", "1MiB",
// "4096"), with clear errors.
#pragma once

#include <cstdint>
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

}  // namespace ofan
