// libFuzzer target: ofan-sim's traffic-matrix parser, the MoE token-matrix
// parser (with the dispatch of what it accepts) and the size parser must
// reject any input with an error, never crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/units.h"
#include "sim/workload.h"
#include "workload/moe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ofan::lb::FatTree tree = *ofan::lb::FatTree::Make(8, 3);
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto flows = ofan::sim::ParseMatrix(text, tree);
  if (flows.ok()) {
    for (const auto& f : *flows) {
      if (f.src >= 128 || f.dst >= 128 || f.src == f.dst || f.bytes == 0) __builtin_trap();
    }
  }
  auto moe = ofan::workload::ParseMoeTokens(text, 16);
  if (moe.ok()) {
    auto t = ofan::workload::MoeDispatch(*moe, ofan::workload::RandomPlacement(16, 1));
    if (t.ok()) {
      for (const auto& f : t->flows) {
        if (f.src >= 16 || f.dst >= 16 || f.src / 8 == f.dst / 8 || f.bytes == 0) __builtin_trap();
      }
    }
  }
  (void)ofan::ParseSize(text);
  return 0;
}
