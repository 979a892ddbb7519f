// libFuzzer target: a line `ofan-coll merge` reads (emu/collective/
// merge_cli.h), written by another process. Whatever it is, ParseResultJson
// accepts it or refuses with a message, never crashes; what it accepts
// survives the round trip through ResultJson, and merging it alone or with
// itself gives a result or an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "emu/collective/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ofan::emu;
  const std::string line(reinterpret_cast<const char*>(data), size);
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded()) return 0;
  auto r = ParseResultJson(j);
  if (!r.ok()) {
    if (r.error().message.empty()) __builtin_trap();
    return 0;
  }
  auto again = ParseResultJson(ResultJson(*r));
  if (!again.ok() || ResultJson(*again) != ResultJson(*r)) __builtin_trap();
  const std::vector<CollectiveResult> one = {*r}, two = {*r, *r};
  (void)MergeResults(one);
  (void)MergeResults(two);
  return 0;
}
