// Cost of one LB decision, for every policy, over bursts of 32 packets.
//
// Target (project issue): Ofan, POfan and ECMP decide in <= 5 ns per packet on
// one core. Every benchmark reports items/s (items = packets) and a counter
// ns_per_pkt (CPU time per packet; printed with an SI prefix, e.g. "1.8ns").
//
// Setup, per switch (k=12 and k=64 3-level fat trees; an edge and an agg):
//  - UplinkTable::ForSwitch with no failed link, as the control side would
//    publish it;
//  - a ring of kRing pre-generated PacketKeys, northbound: uniformly random
//    destination edge/pod other than the switch's own, 7/8 data (4158 B
//    frames) and 1/8 ACKs (64 B), random flow hash, QP, slice, source uplink
//    and ingress pipe (in POfan's pipe range, pipe_size 4);
//  - a second ring, "1dst": every burst of 32 goes to ONE random destination
//    (7/8 data, 1/8 ACK: two keys per burst), as when one collective step
//    sends a whole burst to one peer. It is Ofan's worst case (each packet's
//    pointer update depends on the previous one through memory) and
//    OfanCombined's best case (two fetch-adds per burst);
//  - for queue-aware policies (JSQ, AR, DRILL) a ring of queue-depth
//    snapshots; each burst first copies one snapshot (w entries) into the
//    scratch LbView::queue_bytes, as the dataplane would copy its queue
//    depths, and that copy is timed.
//
// Benchmarks:
//  BM_Pick/<policy>/<switch>        AnyPolicy::PickBurst (one std::visit per burst)
//  BM_PickDirect/<policy>/<switch>  PickBurstOf<P> on the concrete type (no variant),
//                                   inlined into the benchmark loop
//  BM_PickCall/<policy>/<switch>    PickBurstOf<P> behind an opaque call, no variant
//                                   (ECMP, Ofan, POfan only)
//  BM_Pick/<policy>/<switch>/1dst   the same on the one-destination-per-burst ring
//                                   (ECMP, Ofan, POfan only)
//  BM_Floor/<switch>                the loop with a trivial "decision": harness floor
//  BM_Shared/{atomic,combined,percore}/<switch>[/threads:N]
//      Ofan shared by cores (ofan_shared.h): OfanAtomic (one fetch-add per
//      packet) and OfanCombined::PickBurst (one fetch-add per key per burst)
//      on one SharedOfanTable; "percore" is a private Ofan per thread (no
//      sharing) for reference. Suffix /1dst: the one-destination ring.
//      With threads:2 each thread has its own policy object and ring
//      position; the table is shared, so the cost of cache-line ping-pong on
//      the counters shows up as CPU time per packet.
//      Contention only shows when both threads really ran at once: check that
//      the CPU column is ~2x the Time column (on a shared 2-core VM the
//      threads are often time-sliced on one core instead).
#include <benchmark/benchmark.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "common/rng.h"
#include "dataplane/lb/any_policy.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/packet_key.h"
#include "dataplane/lb/policies/ofan_shared.h"
#include "dataplane/lb/policy.h"
#include "dataplane/lb/uplink_table.h"

namespace ofan::lb {
namespace {

constexpr uint32_t kBurst = 32;
constexpr uint32_t kRing = 4096;       // packets; power of two
constexpr uint32_t kSnapshots = 64;    // queue-depth snapshots; power of two
constexpr uint16_t kDataBytes = 4158;  // 4096 B RoCEv2 payload + headers
constexpr uint16_t kAckBytes = 64;
// Time between bursts for the flowlet table: 32 data frames at 400 Gb/s.
constexpr TimePs kBurstPs = TimePs{kBurst} * kDataBytes * 8 * 1000 / 400;
static_assert((kRing & (kRing - 1)) == 0 && kRing % kBurst == 0);
static_assert((kSnapshots & (kSnapshots - 1)) == 0);

struct SwitchCase {
  const char* name;
  int k;
  Role role;
};
constexpr std::array<SwitchCase, 4> kSwitches = {{
    {"k12_edge", 12, Role::kEdge},
    {"k12_agg", 12, Role::kAgg},
    {"k64_edge", 64, Role::kEdge},
    {"k64_agg", 64, Role::kAgg},
}};

// One switch's LB world: table, setup, packets, queue snapshots.
struct Fixture {
  std::string name;
  std::unique_ptr<FatTree> tree;
  SwitchId sw;
  std::unique_ptr<UplinkTable> table;
  SwitchLbSetup setup;
  PolicyConfig base;                 // kind filled per benchmark
  std::vector<PacketKey> ring;       // uniform random destinations
  std::vector<PacketKey> ring_1dst;  // one destination per burst
  std::vector<uint32_t> queues;      // kSnapshots x w
  std::unique_ptr<SharedOfanTable> shared;

  uint32_t w() const { return table->w(); }
  const uint32_t* snapshot(uint64_t burst) const {
    return &queues[(burst & (kSnapshots - 1)) * w()];
  }
};

std::unique_ptr<Fixture> MakeFixture(const SwitchCase& c) {
  auto f = std::make_unique<Fixture>();
  f->name = c.name;
  Result<FatTree> t = FatTree::Make(c.k, 3);
  if (!t.ok()) {
    std::fprintf(stderr, "FatTree::Make(%d, 3): %s\n", c.k, t.error().message.c_str());
    std::exit(1);
  }
  f->tree = std::make_unique<FatTree>(std::move(t).value());
  const FatTree& tree = *f->tree;
  // The first switch of its role in pod 1 (not pod 0, to avoid a special case).
  f->sw = c.role == Role::kEdge ? tree.edge(1, 0) : tree.agg(1, 0);
  const LinkSet no_failures(tree.num_links());
  f->table = std::make_unique<UplinkTable>(UplinkTable::ForSwitch(tree, f->sw, no_failures));
  const UplinkTable& table = *f->table;

  f->setup.table = f->table.get();
  f->setup.num_ports = static_cast<uint32_t>(tree.num_ports(f->sw));
  f->setup.salt = static_cast<uint32_t>(SplitMix64(f->sw.value() + 0x5EEDull));
  f->base.seed = 42;

  const uint32_t w = table.w();
  const uint32_t nd = table.num_dests();
  const uint32_t own =
      c.role == Role::kEdge ? f->sw.value() : static_cast<uint32_t>(tree.info(f->sw).pod);
  const uint32_t ps = f->base.pipe_size ? f->base.pipe_size : 1;
  const uint32_t pipes = (f->setup.num_ports + ps - 1) / ps;

  Rng rng(0xBE4C4ull + static_cast<uint64_t>(c.k) * 7 + static_cast<uint64_t>(c.role));
  auto random_dest = [&] {
    uint32_t d = rng.Below(nd - 1);
    return d >= own ? d + 1 : d;  // northbound only: never the switch's own edge/pod
  };
  auto fill = [&](PacketKey& p, uint32_t d) {
    p.dest = static_cast<uint16_t>(d);
    p.cls = rng.Below(8) == 0 ? SizeClass::kAck : SizeClass::kData;
    p.key = static_cast<uint16_t>(table.key(d, p.cls));
    p.frame_bytes = p.cls == SizeClass::kAck ? kAckBytes : kDataBytes;
    p.flow_hash = rng.Next32();
    p.dst_qp = rng.Next32() & 0xFFFFFFu;
    p.slice = static_cast<uint8_t>(rng.Below(w));
    p.pipe = static_cast<uint8_t>(rng.Below(pipes));
    p.source_uplink = static_cast<uint8_t>(rng.Below(w));
  };
  f->ring.resize(kRing);
  for (PacketKey& p : f->ring) fill(p, random_dest());
  f->ring_1dst.resize(kRing);
  for (uint32_t b = 0; b < kRing; b += kBurst) {
    const uint32_t d = random_dest();
    for (uint32_t i = 0; i < kBurst; ++i) fill(f->ring_1dst[b + i], d);
  }
  // Queue depths: a quarter idle (ties for JSQ), the rest up to 200 KB
  // (spanning AR's 40/80/160 KB levels).
  f->queues.resize(static_cast<size_t>(kSnapshots) * w);
  for (uint32_t& q : f->queues) q = rng.Below(4) == 0 ? 0 : rng.Below(200'000);

  f->shared = std::make_unique<SharedOfanTable>(table, f->base.seed);
  return f;
}

// Runs every key of the ring through `pick` once and fails the benchmark if
// any packet was dropped (every destination is reachable: no failures).
template <class PickFn>
bool CheckNoDrops(benchmark::State& state, const Fixture& f, const std::vector<PacketKey>& ring,
                  PickFn&& pick) {
  std::array<uint8_t, kBurst> out{};
  for (uint32_t pos = 0; pos < kRing; pos += kBurst) {
    pick(&ring[pos], out.data(), pos / kBurst);
    for (uint8_t u : out) {
      if (u == kNoUplink || u >= f.w()) {
        state.SkipWithError("policy dropped a packet or picked an invalid uplink");
        return false;
      }
    }
  }
  return true;
}

void SetCounters(benchmark::State& state) {
  const auto pkts = static_cast<int64_t>(state.iterations()) * kBurst;
  state.SetItemsProcessed(pkts);
  // Per thread: packets / (this thread's CPU time), inverted = s per packet.
  // Summed over threads and divided by the summed CPU time, it stays the
  // per-core cost with Threads(N).
  state.counters["ns_per_pkt"] = benchmark::Counter(
      static_cast<double>(pkts), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The burst loop shared by every benchmark: `pick(keys, out, burst_index)`.
template <class PickFn>
void RunBursts(benchmark::State& state, const std::vector<PacketKey>& ring, PickFn&& pick) {
  std::array<uint8_t, kBurst> out{};
  uint32_t pos = (static_cast<uint32_t>(state.thread_index()) * (kRing / 4 + kBurst)) % kRing;
  uint64_t burst = 0;
  for (auto _ : state) {
    pick(&ring[pos], out.data(), burst);
    benchmark::DoNotOptimize(out);
    pos = (pos + kBurst) & (kRing - 1);
    ++burst;
  }
  SetCounters(state);
}

// The dataplane's per-burst LB step for one policy, given a burst callable
// `run(keys, out, view)`: fill the queue scratch (queue-aware policies only),
// advance the clock, decide.
template <class RunFn>
auto BurstStep(const Fixture& f, bool queue_aware, LbView& view, uint32_t* scratch, RunFn run) {
  return [&f, queue_aware, &view, scratch, run](const PacketKey* keys, uint8_t* out,
                                                uint64_t burst) mutable {
    if (queue_aware) std::memcpy(scratch, f.snapshot(burst), f.w() * sizeof(uint32_t));
    view.now += kBurstPs;
    run(keys, out, view);
  };
}

enum class RingKind { kUniform, kOneDest };

const std::vector<PacketKey>& RingOf(const Fixture& f, RingKind r) {
  return r == RingKind::kOneDest ? f.ring_1dst : f.ring;
}
std::string Suffix(RingKind r) { return r == RingKind::kOneDest ? "/1dst" : ""; }

void BM_Pick(benchmark::State& state, const Fixture* f, PolicyKind kind, RingKind r) {
  const std::vector<PacketKey>& ring = RingOf(*f, r);
  PolicyConfig c = f->base;
  c.kind = kind;
  const bool qa = IsQueueAware(kind);
  std::array<uint32_t, kMaxUplinks> scratch{};
  {
    AnyPolicy check(c, f->setup);
    LbView v{f->table.get(), qa ? scratch.data() : nullptr, 0};
    auto step = BurstStep(
        *f, qa, v, scratch.data(),
        [&](const PacketKey* k, uint8_t* o, LbView& vv) { check.PickBurst(k, o, kBurst, vv); });
    if (!CheckNoDrops(state, *f, ring, step)) return;
  }
  AnyPolicy policy(c, f->setup);
  LbView view{f->table.get(), qa ? scratch.data() : nullptr, 0};
  RunBursts(state, ring,
            BurstStep(*f, qa, view, scratch.data(), [&](const PacketKey* k, uint8_t* o, LbView& v) {
              policy.PickBurst(k, o, kBurst, v);
            }));
}

// PickBurstOf<P> on the concrete policy type: no std::variant, no std::visit.
template <class P>
void BM_PickDirect(benchmark::State& state, const Fixture* f) {
  PolicyConfig c = f->base;
  c.kind = kKindOf<P>;
  constexpr bool qa = IsQueueAware(kKindOf<P>);
  std::array<uint32_t, kMaxUplinks> scratch{};
  P policy(c, f->setup);
  LbView view{f->table.get(), qa ? scratch.data() : nullptr, 0};
  RunBursts(state, f->ring,
            BurstStep(*f, qa, view, scratch.data(), [&](const PacketKey* k, uint8_t* o, LbView& v) {
              PickBurstOf(policy, k, o, kBurst, v);
            }));
}

// PickBurstOf<P> behind an opaque call (noipa: not inlined, not cloned for
// n = 32, nothing known about its arguments), i.e. the same call boundary as
// AnyPolicy::PickBurst but without the variant. Pick - Call = the visit
// itself; Call - Direct = what inlining into the caller buys.
template <class P>
__attribute__((noipa)) void CallBurst(P& p, const PacketKey* keys, uint8_t* out, uint32_t n,
                                      LbView& v) {
  PickBurstOf(p, keys, out, n, v);
}

template <class P>
void BM_PickCall(benchmark::State& state, const Fixture* f) {
  static_assert(!IsQueueAware(kKindOf<P>));
  PolicyConfig c = f->base;
  c.kind = kKindOf<P>;
  P policy(c, f->setup);
  LbView view{f->table.get(), nullptr, 0};
  RunBursts(state, f->ring, [&](const PacketKey* k, uint8_t* o, uint64_t) {
    view.now += kBurstPs;
    CallBurst(policy, k, o, kBurst, view);
  });
}

// The harness floor: read each key, write a byte.
void BM_Floor(benchmark::State& state, const Fixture* f) {
  RunBursts(state, f->ring, [](const PacketKey* k, uint8_t* o, uint64_t) {
    for (uint32_t i = 0; i < kBurst; ++i) o[i] = static_cast<uint8_t>(k[i].dest);
  });
}

// Ofan-atomic: one relaxed fetch-add per packet on the shared table.
void BM_SharedAtomic(benchmark::State& state, const Fixture* f, RingKind r) {
  const std::vector<PacketKey>& ring = RingOf(*f, r);
  OfanAtomic policy(f->shared.get());
  LbView view{f->table.get(), nullptr, 0};
  LbView check_view = view;
  if (!CheckNoDrops(state, *f, ring, [&](const PacketKey* k, uint8_t* o, uint64_t) {
        PickBurstOf(policy, k, o, kBurst, check_view);
      })) {
    return;
  }
  RunBursts(state, ring, [&](const PacketKey* k, uint8_t* o, uint64_t) {
    PickBurstOf(policy, k, o, kBurst, view);
  });
}

// Ofan-combined: one fetch-add per distinct key per burst.
void BM_SharedCombined(benchmark::State& state, const Fixture* f, RingKind r) {
  const std::vector<PacketKey>& ring = RingOf(*f, r);
  auto policy = std::make_unique<OfanCombined>(f->shared.get());
  if (!CheckNoDrops(state, *f, ring, [&](const PacketKey* k, uint8_t* o, uint64_t) {
        policy->PickBurst(k, o, kBurst);
      })) {
    return;
  }
  RunBursts(state, ring,
            [&](const PacketKey* k, uint8_t* o, uint64_t) { policy->PickBurst(k, o, kBurst); });
}

// Reference: a private Ofan per thread (nothing shared but the read-only table).
void BM_SharedPercore(benchmark::State& state, const Fixture* f, RingKind r) {
  const std::vector<PacketKey>& ring = RingOf(*f, r);
  PolicyConfig c = f->base;
  c.kind = PolicyKind::kOfan;
  c.seed += static_cast<uint64_t>(state.thread_index());
  Ofan policy(c, f->setup);
  LbView view{f->table.get(), nullptr, 0};
  RunBursts(state, ring, [&](const PacketKey* k, uint8_t* o, uint64_t) {
    PickBurstOf(policy, k, o, kBurst, view);
  });
}

void RegisterAll(const std::vector<std::unique_ptr<Fixture>>& fixtures) {
  for (int i = 0; i < kNumPolicyKinds; ++i) {
    const auto kind = static_cast<PolicyKind>(i);
    for (const auto& f : fixtures) {
      const std::string name = "BM_Pick/" + std::string(PolicyName(kind)) + "/" + f->name;
      benchmark::RegisterBenchmark(name.c_str(), BM_Pick, f.get(), kind, RingKind::kUniform);
    }
  }
  for (PolicyKind kind : {PolicyKind::kEcmp, PolicyKind::kOfan, PolicyKind::kPofan}) {
    for (const auto& f : fixtures) {
      const std::string name =
          "BM_Pick/" + std::string(PolicyName(kind)) + "/" + f->name + Suffix(RingKind::kOneDest);
      benchmark::RegisterBenchmark(name.c_str(), BM_Pick, f.get(), kind, RingKind::kOneDest);
    }
  }
  for (int i = 0; i < kNumPolicyKinds; ++i) {
    const auto kind = static_cast<PolicyKind>(i);
    for (const auto& f : fixtures) {
      const std::string name = "BM_PickDirect/" + std::string(PolicyName(kind)) + "/" + f->name;
      WithPolicyType(kind, [&](auto t) {
        using P = typename decltype(t)::type;
        benchmark::RegisterBenchmark(name.c_str(), BM_PickDirect<P>, f.get());
      });
    }
  }
  for (const auto& f : fixtures) {
    benchmark::RegisterBenchmark(("BM_PickCall/ecmp/" + f->name).c_str(), BM_PickCall<Ecmp>,
                                 f.get());
    benchmark::RegisterBenchmark(("BM_PickCall/ofan/" + f->name).c_str(), BM_PickCall<Ofan>,
                                 f.get());
    benchmark::RegisterBenchmark(("BM_PickCall/pofan/" + f->name).c_str(), BM_PickCall<Pofan>,
                                 f.get());
  }
  for (const auto& f : fixtures) {
    benchmark::RegisterBenchmark(("BM_Floor/" + f->name).c_str(), BM_Floor, f.get());
  }
  for (RingKind r : {RingKind::kUniform, RingKind::kOneDest}) {
    for (const auto& f : fixtures) {
      const std::string sw = f->name + Suffix(r);
      benchmark::RegisterBenchmark(("BM_Shared/atomic/" + sw).c_str(), BM_SharedAtomic, f.get(), r)
          ->Threads(1)
          ->Threads(2);
      benchmark::RegisterBenchmark(("BM_Shared/combined/" + sw).c_str(), BM_SharedCombined, f.get(),
                                   r)
          ->Threads(1)
          ->Threads(2);
      benchmark::RegisterBenchmark(("BM_Shared/percore/" + sw).c_str(), BM_SharedPercore, f.get(),
                                   r)
          ->Threads(1)
          ->Threads(2);
    }
  }
}

}  // namespace
}  // namespace ofan::lb

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::vector<std::unique_ptr<ofan::lb::Fixture>> fixtures;
  fixtures.reserve(std::size(ofan::lb::kSwitches));
  for (const auto& c : ofan::lb::kSwitches) fixtures.push_back(ofan::lb::MakeFixture(c));
  ofan::lb::RegisterAll(fixtures);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
