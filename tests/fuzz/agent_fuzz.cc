// libFuzzer target: what ofan-agent does with lldpcli's output, a
// namespace's `ip -j route show` and FRR's `show bgp summary json` and `show
// bfd peers json` (control/agent/). Every parser must accept or
// refuse with a message, never crash, and what they accept must go through
// the agent's next steps (roles, masks) on a k=4 fat tree.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "control/agent/fabric_roles.h"
#include "control/agent/frr_state.h"
#include "control/agent/lldp_neighbors.h"
#include "control/agent/route_masks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ofan;
  static const lb::FatTree tree = *lb::FatTree::Make(4, 3);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const lb::SwitchId self(size > 0 ? data[0] % static_cast<uint32_t>(tree.num_switches()) : 0);
  auto n = agent::ParseLldpNeighbors(text);
  if (!n.ok()) {
    if (n.error().message.empty()) __builtin_trap();
  } else {
    (void)agent::ClassifyPorts(tree, self, *n);
  }
  auto r = agent::ParseIpRouteJson(text);
  if (!r.ok()) {
    if (r.error().message.empty()) __builtin_trap();
  } else {
    (void)agent::ComputeMasks(tree, self, *r);
  }
  if (auto b = agent::ParseBgpSummary(text); !b && b.error().message.empty()) __builtin_trap();
  if (auto b = agent::ParseBfdPeers(text); !b && b.error().message.empty()) __builtin_trap();
  return 0;
}
