// AnyPolicy: one switch's policy, chosen at run time, dispatched once per
// burst. The burst loop below is instantiated per policy type, so the per
// packet call is direct and inlined; std::visit runs once per burst.
//
// expects:   keys[0..n) filled by the parse/route stage (dest, key, pipe, ...)
// modifies:  the policy's state (pointers, RNG, flowlet table)
// next:      out[i] = uplink index or kNoUplink (dropped: no valid uplink)
#pragma once

#include <type_traits>
#include <variant>

#include "dataplane/lb/policy.h"

namespace ofan::lb {

namespace detail {
template <class First, class... Ts>
struct VariantOfRest {
  using type = std::variant<Ts...>;
};
}  // namespace detail

// Every policy class of policy_list.h, in the list's order.
#define OFAN_LB_POLICY_CLASS(e, cls, name, aliases, flags, help) , cls
using PolicyVariant =
    typename detail::VariantOfRest<void OFAN_LB_POLICIES(OFAN_LB_POLICY_CLASS)>::type;
#undef OFAN_LB_POLICY_CLASS

// Calls f(std::type_identity<P>{}) for the policy type of `kind`: the one
// place that maps a run-time kind to a compile-time type.
template <class F>
decltype(auto) WithPolicyType(PolicyKind kind, F&& f) {
  switch (kind) {
#define OFAN_LB_POLICY_CASE(e, cls, name, aliases, flags, help) \
  case PolicyKind::e:                                           \
    return f(std::type_identity<cls>{});
    OFAN_LB_POLICIES(OFAN_LB_POLICY_CASE)
#undef OFAN_LB_POLICY_CASE
  }
  return f(std::type_identity<std::variant_alternative_t<0, PolicyVariant>>{});
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
