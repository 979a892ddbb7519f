#include "emu/collective/merge_cli.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/cli.h"
#include "common/json_text.h"
#include "emu/collective/report.h"

namespace ofan::emu {

int RunMerge(const std::vector<std::string>& files) {
  auto usage = [](const std::string& m) { return UsageError("ofan-coll merge", m); };
  std::vector<std::string> inputs = files.empty() ? std::vector<std::string>{"-"} : files;
  std::vector<CollectiveResult> parts;
  std::map<std::string, uint64_t> counters;
  bool any_counters = false;
  for (const std::string& f : inputs) {
    std::ifstream file;
    if (f != "-") {
      file.open(f);
      if (!file) return usage("cannot read " + f);
    }
    std::istream& in = f == "-" ? std::cin : file;
    const std::string name = f == "-" ? "stdin" : f;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded()) return usage(fmt::format("{}:{}: not JSON", name, n));
      auto r = ParseResultJson(j);
      if (!r) return usage(fmt::format("{}:{}: {}", name, n, r.error().message));
      parts.push_back(std::move(*r));
      if (j.contains("rxe_counters") && j["rxe_counters"].is_object()) {
        any_counters = true;
        for (const auto& [k, v] : j["rxe_counters"].items()) {
          if (v.is_number_unsigned()) counters[k] += v.get<uint64_t>();
        }
      }
    }
  }
  if (parts.empty()) return usage("no results to merge");
  auto m = MergeResults(parts);
  if (!m) {
    std::cout << JsonText({{"error", m.error().message}, {"parts", parts.size()}}) << "\n";
    std::cerr << "ofan-coll merge: " << m.error().message << "\n";
    return 1;
  }
  nlohmann::json out = ResultJson(*m);
  out["parts"] = parts.size();
  if (any_counters) out["rxe_counters"] = counters;
  std::cout << JsonText(out) << "\n";
  if (!m->ok()) {
    std::cerr << "ofan-coll merge: " << m->error << "\n";
    return 1;
  }
  return 0;
}

}  // namespace ofan::emu
