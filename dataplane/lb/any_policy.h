// AnyPolicy: one switch's policy, chosen at run time, dispatched once per
// burst. The burst loop below is instantiated per policy type, so the per
// packet call is direct and inlined; std::visit runs once per burst.
//
// expects:   keys[0..n) filled by the parse/route stage (dest, key, pipe, ...)
// modifies:  the policy's state (pointers, RNG, flowlet table)
// next:      out[i] = uplink index or kNoUplink (dropped: no valid uplink)
#pragma once

#include <variant>

#include "dataplane/lb/policies/flowlet.h"
#include "dataplane/lb/policies/hash_based.h"
#include "dataplane/lb/policies/ofan.h"
#include "dataplane/lb/policies/queue_aware.h"
#include "dataplane/lb/policies/random_spray.h"
#include "dataplane/lb/policies/simple_rr.h"
#include "dataplane/lb/policy.h"

namespace ofan::lb {

using PolicyVariant = std::variant<Ecmp, EEcmp, PathPin, Rps, SimpleRr, Jsq, Ar, Drill, Flowlet,
                                   Ofan, Pofan, SourceRouted>;

// Calls f(std::type_identity<P>{}) for the policy type of `kind`: the one
// place that maps a run-time kind to a compile-time type.
template <class F>
decltype(auto) WithPolicyType(PolicyKind kind, F&& f) {
  switch (kind) {
    case PolicyKind::kEcmp:
      return f(std::type_identity<Ecmp>{});
    case PolicyKind::kEEcmp:
      return f(std::type_identity<EEcmp>{});
    case PolicyKind::kPin:
      return f(std::type_identity<PathPin>{});
    case PolicyKind::kRps:
      return f(std::type_identity<Rps>{});
    case PolicyKind::kSimpleRr:
      return f(std::type_identity<SimpleRr>{});
    case PolicyKind::kJsq:
      return f(std::type_identity<Jsq>{});
    case PolicyKind::kAr:
      return f(std::type_identity<Ar>{});
    case PolicyKind::kDrill:
      return f(std::type_identity<Drill>{});
    case PolicyKind::kFlowlet:
      return f(std::type_identity<Flowlet>{});
    case PolicyKind::kOfan:
      return f(std::type_identity<Ofan>{});
    case PolicyKind::kPofan:
      return f(std::type_identity<Pofan>{});
    case PolicyKind::kSourceRouted:
      return f(std::type_identity<SourceRouted>{});
  }
  return f(std::type_identity<Ecmp>{});
}

template <class P>
inline void PickBurstOf(P& p, const PacketKey* keys, uint8_t* out, uint32_t n, LbView& v) {
  for (uint32_t i = 0; i < n; ++i) out[i] = p.Pick(keys[i], v);
}

class AnyPolicy {
 public:
  AnyPolicy(const PolicyConfig& c, const SwitchLbSetup& s)
      : kind_(c.kind), v_(WithPolicyType(c.kind, [&](auto t) -> PolicyVariant {
          using P = typename decltype(t)::type;
          return PolicyVariant(std::in_place_type<P>, c, s);
        })) {}
  PolicyKind kind() const { return kind_; }
  void PickBurst(const PacketKey* keys, uint8_t* out, uint32_t n, LbView& v) {
    std::visit([&](auto& p) { PickBurstOf(p, keys, out, n, v); }, v_);
  }
  PolicyVariant& variant() { return v_; }

 private:
  PolicyKind kind_;
  PolicyVariant v_;
};

}  // namespace ofan::lb
