// An RDMA port's hardware counters (rxe: /sys/class/infiniband/DEV/ports/1/
// hw_counters/*), by name, and their change over a run. The names differ
// between kernels (6.1's rxe has 16, older ones fewer), so they are
// whatever the directory lists, never a list built in here.
//
// expects:  a directory of files each holding one unsigned integer (a file
//           that does not is skipped: sysfs may add non-counter files);
//           its "lifespan" file, the RDMA core's caching of readings in
//           ms, is waited out before reading, and is not a counter
// gives:    name -> value; the delta of two readings (after - before for the
//           names in both; a counter that went down, reset by a device
//           re-creation, counts from zero); JSON of either
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/result.h"

namespace ofan::verbs {

using Counters = std::map<std::string, uint64_t>;

inline constexpr const char* kLifespanFile = "lifespan";

Result<Counters> ReadCounters(const std::filesystem::path& dir);
Counters CounterDeltas(const Counters& before, const Counters& after);
nlohmann::json CountersJson(const Counters& c);

}  // namespace ofan::verbs
