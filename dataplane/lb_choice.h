// What a switch balances with: the LB policy and, for Ofan, how its per-key
// pointers are shared among worker lcores (§5.1, App. I). POfan is a policy
// of its own (one table per pipe, no sharing), not a mode: "pofan" as an
// Ofan mode (--ofan-mode pofan, lb.ofan_mode: pofan, set_policy's
// ofan_mode) is accepted as the older spelling of policy pofan.
#pragma once

#include <string_view>

#include "common/result.h"
#include "dataplane/lb/policy.h"

namespace ofan::dp {

enum class OfanMode : uint8_t {
  kAtomic,    // one shared table, one fetch-add per packet
  kCombined,  // one shared table, one fetch-add per key per worker vector (App. I)
};
std::string_view OfanModeName(OfanMode m);

struct LbChoice {
  lb::PolicyKind kind = lb::PolicyKind::kOfan;
  OfanMode mode = OfanMode::kCombined;  // used by kOfan only
  friend bool operator==(const LbChoice&, const LbChoice&) = default;
};

// Applies an Ofan mode name to `c`: atomic | combined set the mode; pofan
// makes policy ofan into pofan (and leaves any other policy alone).
Status ApplyOfanMode(std::string_view name, LbChoice& c);
// The mode as the control socket reports it: "pofan" for policy pofan, the
// Ofan mode otherwise.
std::string_view ReportedOfanMode(const LbChoice& c);

}  // namespace ofan::dp
