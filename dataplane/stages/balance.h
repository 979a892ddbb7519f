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
// per-packet dispatch (docs/design.md, rule 3). Two kinds:
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
// Each lane also says which (policy, Ofan mode) it Serves and how its LB
// objects are built: Lanes below is the one table the switch picks from.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dataplane/lb/any_policy.h"
#include "dataplane/lb/packet_key.h"
#include "dataplane/lb/policies/ofan_shared.h"
#include "dataplane/lb/policy.h"
#include "dataplane/lb_choice.h"
#include "dataplane/vector_constants.h"

namespace ofan::dp {

static_assert(lb::OfanCombined::kMaxBurst >= kMaxVector, "Ofan-combined takes a whole vector");

// What a lane's LB objects are built from, once per forwarding state.
struct LaneBuild {
  const lb::UplinkTable* table = nullptr;
  lb::PolicyConfig policy;  // kind as resolved, pipe_size, seed, ...
  uint32_t num_ports = 0;   // k
  uint32_t switch_id = 0;
  uint32_t workers = 1;
};

// A forwarding state's LB objects (shared tables and one set per worker),
// owned by the state. The vector pass casts it back to its lane's own State
// (the lane chose the type, once per state): no virtual call per packet.
struct LaneState {
  virtual ~LaneState() = default;
  // Ofan's shared per-key counters, for the control side's "pointers" view.
  virtual const lb::SharedOfanTable* shared() const { return nullptr; }
};

// What the vector pass gives a lane of one worker, per vector.
struct LaneEnv {
  uint32_t worker = 0;
  lb::LbView* view = nullptr;
  lb::PacketKey* keys = nullptr;  // kMaxVector of them: the worker's scratch
};

// Per-worker policy objects of the library policies: every worker gets the
// same seed per switch: a pipe belongs to one worker, so its POfan row is
// only ever used by that worker.
struct PerWorkerPolicies : LaneState {
  explicit PerWorkerPolicies(const LaneBuild& b);
  std::vector<std::unique_ptr<lb::AnyPolicy>> any;  // apart: no line shared between workers
};

template <class P>
struct PolicyLane {
  static constexpr bool kDeferred = false;
  static constexpr bool kReadsPortState = false;
  using State = PerWorkerPolicies;
  static bool Serves(const LbChoice& c) { return c.kind == lb::kKindOf<P>; }
  static std::unique_ptr<LaneState> Build(const LaneBuild& b) { return std::make_unique<State>(b); }
  static PolicyLane Make(State& s, const LaneEnv& e) {
    return PolicyLane{std::get<P>(s.any[e.worker]->variant()), *e.view};
  }
  P& policy;
  lb::LbView& view;
  uint8_t Pick(const lb::PacketKey& k) { return policy.Pick(k, view); }
};

struct SharedOfanState : LaneState {
  explicit SharedOfanState(const LaneBuild& b) : table(*b.table, b.policy.seed ^ b.switch_id) {}
  const lb::SharedOfanTable* shared() const override { return &table; }
  lb::SharedOfanTable table;
};

struct AtomicLane {
  static constexpr bool kDeferred = false;
  static constexpr bool kReadsPortState = false;
  struct State : SharedOfanState {
    explicit State(const LaneBuild& b) : SharedOfanState(b) {
      for (uint32_t i = 0; i < b.workers; ++i)
        atomic.push_back(std::make_unique<lb::OfanAtomic>(&table));
    }
    std::vector<std::unique_ptr<lb::OfanAtomic>> atomic;
  };
  static bool Serves(const LbChoice& c) {
    return c.kind == lb::PolicyKind::kOfan && c.mode == OfanMode::kAtomic;
  }
  static std::unique_ptr<LaneState> Build(const LaneBuild& b) { return std::make_unique<State>(b); }
  static AtomicLane Make(State& s, const LaneEnv& e) {
    return AtomicLane{*s.atomic[e.worker], *e.view};
  }
  lb::OfanAtomic& atomic;
  lb::LbView& view;
  uint8_t Pick(const lb::PacketKey& k) { return atomic.Pick(k, view); }
};

struct CombinedLane {
  static constexpr bool kDeferred = true;
  static constexpr bool kReadsPortState = false;
  struct State : SharedOfanState {
    explicit State(const LaneBuild& b) : SharedOfanState(b) {
      for (uint32_t i = 0; i < b.workers; ++i)
        combined.push_back(std::make_unique<lb::OfanCombined>(&table));
    }
    std::vector<std::unique_ptr<lb::OfanCombined>> combined;  // large, line-aligned
  };
  static bool Serves(const LbChoice& c) {
    return c.kind == lb::PolicyKind::kOfan && c.mode == OfanMode::kCombined;
  }
  static std::unique_ptr<LaneState> Build(const LaneBuild& b) { return std::make_unique<State>(b); }
  static CombinedLane Make(State& s, const LaneEnv& e) {
    return CombinedLane(*s.combined[e.worker]);
  }
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
  // Queue-aware policies read the uplinks' backlogs, flowlets the time: the
  // vector pass fills the view for this lane only.
  static constexpr bool kReadsPortState = true;
  using State = PerWorkerPolicies;
  static bool Serves(const LbChoice& /*c*/) { return true; }
  static std::unique_ptr<LaneState> Build(const LaneBuild& b) { return std::make_unique<State>(b); }
  static AnyLane Make(State& s, const LaneEnv& e) {
    return AnyLane(*s.any[e.worker], *e.view, e.keys);
  }
  AnyLane(lb::AnyPolicy& p, lb::LbView& v, lb::PacketKey* k) : policy(p), view(v), keys(k) {}
  lb::AnyPolicy& policy;
  lb::LbView& view;
  lb::PacketKey* keys;
  uint8_t out[kMaxVector];

  void Defer(uint32_t j, const lb::PacketKey& k) { keys[j] = k; }
  void Resolve(uint32_t n) { policy.PickBurst(keys, out, n, view); }
  uint8_t Take(uint32_t j) const { return out[j]; }
};

// THE place a policy is registered with the dataplane: the lanes, tried in
// order, the first that Serves a (policy, Ofan mode) runs it. A library
// policy needs no entry (AnyLane runs any of them, one dispatch per vector);
// one that earns a lane of its own (an inline Pick in the per-packet pass, a
// deferred decision over the vector) is added here, before AnyLane.
template <class... L>
struct LaneList {
  static constexpr size_t kSize = sizeof...(L);
};
using Lanes =
    LaneList<PolicyLane<lb::Ecmp>, PolicyLane<lb::Pofan>, AtomicLane, CombinedLane, AnyLane>;

// Calls f.template operator()<Lane>() for the lane that serves `c`, and
// returns what it returns; *index = the lane's position in Lanes.
template <class F, class... L>
decltype(auto) WithLane(LaneList<L...>, const LbChoice& c, F&& f, size_t* index = nullptr) {
  using R = decltype(f.template operator()<AnyLane>());
  R r{};
  size_t i = 0;
  const bool found =
      ((L::Serves(c) ? (r = f.template operator()<L>(), true) : (++i, false)) || ...);
  (void)found;  // AnyLane serves everything: always found
  if (index) *index = i;
  return r;
}

}  // namespace ofan::dp
