#include "emu/verbs/hw_counters.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <fstream>
#include <thread>

namespace ofan::verbs {
namespace fs = std::filesystem;

namespace {

std::optional<uint64_t> ReadNumber(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  uint64_t v = 0;
  if (!in || !(in >> s)) return std::nullopt;
  auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (err != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

Result<Counters> ReadCounters(const fs::path& dir) {
  std::error_code ec;
  // The RDMA core serves a reading from a cache refreshed at most once per
  // `lifespan` ms (10 by default), shared by every reader of the device: a
  // run shorter than that read twice gave the same values, a delta of 0
  // (seen on collectives of a few ms). Waiting it out, plus a jiffy at
  // HZ=100, makes this reading fresh.
  if (auto ms = ReadNumber(dir / kLifespanFile); ms && *ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<uint64_t>(*ms, 1000) + 10));
  }
  fs::directory_iterator it(dir, ec);
  if (ec) {
    return MakeError(ErrorCode::kNotFound,
                     fmt::format("cannot list {}: {}", dir.string(), ec.message()));
  }
  Counters c;
  for (const auto& e : it) {
    const std::string name = e.path().filename().string();
    if (name == kLifespanFile) continue;  // a setting, not a counter
    if (auto v = ReadNumber(e.path())) c[name] = *v;
  }
  return c;
}

Counters CounterDeltas(const Counters& before, const Counters& after) {
  Counters d;
  for (const auto& [name, v] : after) {
    auto b = before.find(name);
    if (b == before.end()) continue;
    d[name] = v >= b->second ? v - b->second : v;
  }
  return d;
}

nlohmann::json CountersJson(const Counters& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, v] : c) j[name] = v;
  return j;
}

}  // namespace ofan::verbs
