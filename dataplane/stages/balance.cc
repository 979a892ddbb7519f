#include "dataplane/stages/balance.h"

#include "common/rng.h"

namespace ofan::dp {

PerWorkerPolicies::PerWorkerPolicies(const LaneBuild& b) {
  for (uint32_t i = 0; i < b.workers; ++i) {
    const lb::SwitchLbSetup setup{b.table, b.num_ports,
                                  static_cast<uint32_t>(SplitMix64(b.switch_id * 7919ull + i))};
    any.push_back(std::make_unique<lb::AnyPolicy>(b.policy, setup));
  }
}

}  // namespace ofan::dp
