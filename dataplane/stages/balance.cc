#include "dataplane/stages/balance.h"

namespace ofan::dp {

PerWorkerPolicies::PerWorkerPolicies(const LaneBuild& b) {
  for (uint32_t i = 0; i < b.workers; ++i) {
    const lb::SwitchLbSetup setup{b.table, b.num_ports, lb::SwitchSalt(b.switch_id, i)};
    any.push_back(std::make_unique<lb::AnyPolicy>(b.policy, setup));
  }
}

}  // namespace ofan::dp
