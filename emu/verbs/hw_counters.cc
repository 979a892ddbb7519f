#include "emu/verbs/hw_counters.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>

namespace ofan::verbs {
namespace fs = std::filesystem;

Result<Counters> ReadCounters(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    return MakeError(ErrorCode::kNotFound,
                     fmt::format("cannot list {}: {}", dir.string(), ec.message()));
  }
  Counters c;
  for (const auto& e : it) {
    std::ifstream in(e.path());
    std::string s;
    uint64_t v = 0;
    if (!in || !(in >> s)) continue;
    auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (err != std::errc() || end != s.data() + s.size()) continue;
    c[e.path().filename().string()] = v;
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
