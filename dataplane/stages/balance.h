// Stage 3: balance (the LB), applied across a worker's vector.
//
// expects:   a PacketKey per up-bound packet, built by the vector pass from
//            the parse and route results (dest, key, pipe, flow hash, ...)
// modifies:  the policy's state: pointers, RNG, flowlet table, and for the
//            shared Ofan modes the shared per-key counters (App. I)
// next:      an uplink index per packet, or lb::kNoUplink (counted drop)
// parameters: the switch's policy and Ofan mode, fixed per forwarding state
//
// A lane is how one policy is applied over a vector; the forwarding state
// picks one lane, and the vector pass is compiled per lane, so there is no
// per-packet dispatch (rule 3). Two kinds:
//  - immediate (kDeferred = false): Pick decides inside the per-packet pass,
//    while the packet's fields are still in registers. PolicyLane<P> for a
//    library policy with an inline Pick (ECMP, POfan), AtomicLane for
//    Ofan-atomic (one fetch-add per packet).
//  - deferred (kDeferred = true): the pass hands each packet's key to Defer;
//    after the pass, Resolve decides for all of them and Take(j) returns the
//    j-th decision. CombinedLane is Ofan-combined, App. I's sort / combine /
//    update / decombine over the whole vector: one fetch-add per distinct key.
//    AnyLane runs any policy through AnyPolicy, one dispatch per vector.
// Every lane gives the same ports, for the same keys in the same order, as
// the policy's own Pick / PickBurst (tests/dataplane/stages/balance_test.cc).
#pragma once

#include <cstdint>

#include "dataplane/egress.h"
#include "dataplane/lb/any_policy.h"
#include "dataplane/lb/packet_key.h"
#include "dataplane/lb/policies/ofan_shared.h"
#include "dataplane/lb/policy.h"

namespace ofan::dp {

static_assert(lb::OfanCombined::kMaxBurst >= kMaxVector, "Ofan-combined takes a whole vector");

template <class P>
struct PolicyLane {
  static constexpr bool kDeferred = false;
  P& policy;
  lb::LbView& view;
  uint8_t Pick(const lb::PacketKey& k) { return policy.Pick(k, view); }
};

struct AtomicLane {
  static constexpr bool kDeferred = false;
  lb::OfanAtomic& atomic;
  lb::LbView& view;
  uint8_t Pick(const lb::PacketKey& k) { return atomic.Pick(k, view); }
};

struct CombinedLane {
  static constexpr bool kDeferred = true;
  // The tickets are left uninitialised: each is written before it is read.
  explicit CombinedLane(lb::OfanCombined& c) : combined(c) {}
  lb::OfanCombined& combined;
  lb::OfanCombined::Ticket ticket[kMaxVector];  // per deferred packet

  void Defer(uint32_t j, const lb::PacketKey& k) { ticket[j] = combined.Add(k.key); }
  void Resolve(uint32_t /*n*/) { combined.Commit(); }
  uint8_t Take(uint32_t j) const { return combined.Next(ticket[j]); }
};

struct AnyLane {
  static constexpr bool kDeferred = true;
  AnyLane(lb::AnyPolicy& p, lb::LbView& v, lb::PacketKey* k) : policy(p), view(v), keys(k) {}
  lb::AnyPolicy& policy;
  lb::LbView& view;
  lb::PacketKey* keys;  // kMaxVector of them: scratch the caller owns
  uint8_t out[kMaxVector];

  void Defer(uint32_t j, const lb::PacketKey& k) { keys[j] = k; }
  void Resolve(uint32_t n) { policy.PickBurst(keys, out, n, view); }
  uint8_t Take(uint32_t j) const { return out[j]; }
};

// Which lane a forwarding state runs: chosen once per state.
enum class LaneKind : uint8_t { kEcmp, kPofan, kAtomic, kCombined, kAny };

}  // namespace ofan::dp
