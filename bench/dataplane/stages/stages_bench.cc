// Cost per packet of the DPDK-free pipeline stages over bursts of 32 golden
// frames: parse, route, key building + LB, rewrite, and the three together.
// Reported as ns per packet and cycles per packet (TSC). The DPDK parts
// (RX/TX, egress rings) are measured end to end by bench/run-forwarding.
#include <benchmark/benchmark.h>
#include <x86intrin.h>

#include <chrono>
#include <thread>
#include <vector>

#include "dataplane/lb/any_policy.h"
#include "dataplane/lb/policies/ofan_shared.h"
#include "dataplane/packet/builder.h"
#include "dataplane/stages/parse.h"
#include "dataplane/stages/rewrite.h"
#include "dataplane/stages/route.h"

namespace ofan::dp {
namespace {

constexpr uint32_t kBurst = 32;

double TscPerNs() {
  static const double v = [] {
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t c0 = __rdtsc();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const uint64_t c1 = __rdtsc();
    const auto t1 = std::chrono::steady_clock::now();
    return static_cast<double>(c1 - c0) / std::chrono::duration<double, std::nano>(t1 - t0).count();
  }();
  return v;
}

struct Frames {
  std::vector<std::vector<uint8_t>> store;
  std::vector<const uint8_t*> data;
  std::vector<uint8_t*> mut;
  std::vector<uint16_t> len;
  explicit Frames(uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t dst = (10u << 24) | ((1 + i % 11) << 16) | ((i % 6) << 8) | (2 + i % 6);
      store.push_back(pkt::PacketBuilder()
                          .Eth(pkt::MacAddr{{2, 0, 0, 0, 0, 1}}, pkt::MacAddr{{2, 0, 0, 0, 0, 2}})
                          .Ipv4((10u << 24) | 2u, dst, 64, pkt::ecn::kEct0)
                          .Udp(static_cast<uint16_t>(0xC000 + i), pkt::kRoceV2Port)
                          .Bth(i % 8 == 0 ? 0x11 : 0x0A, i, i)
                          .PadTo(64)
                          .Build());
    }
    for (auto& f : store) {
      data.push_back(f.data());
      mut.push_back(f.data());
      len.push_back(static_cast<uint16_t>(f.size()));
    }
  }
};

void Report(benchmark::State& state, uint64_t cycles) {
  const double pkts = static_cast<double>(state.iterations()) * kBurst;
  state.SetItemsProcessed(static_cast<int64_t>(pkts));
  state.counters["cycles_per_pkt"] = static_cast<double>(cycles) / pkts;
  state.counters["ns_per_pkt"] = static_cast<double>(cycles) / pkts / TscPerNs();
}

const lb::FatTree& Tree() {
  static const lb::FatTree t = *lb::FatTree::Make(12, 3);
  return t;
}

void BM_Parse(benchmark::State& state) {
  Frames f(kBurst);
  ParsedPacket out[kBurst];
  uint64_t cycles = 0;
  for (auto _ : state) {
    const uint64_t c0 = __rdtsc();
    ParseBurst(f.data.data(), f.len.data(), kBurst, out);
    benchmark::DoNotOptimize(out);
    cycles += __rdtsc() - c0;
  }
  Report(state, cycles);
}
BENCHMARK(BM_Parse);

void BM_Route(benchmark::State& state) {
  Frames f(kBurst);
  ParsedPacket p[kBurst];
  ParseBurst(f.data.data(), f.len.data(), kBurst, p);
  Router r(Tree(), Tree().edge(0, 0));
  RouteResult out[kBurst];
  uint64_t cycles = 0;
  for (auto _ : state) {
    const uint64_t c0 = __rdtsc();
    // By role at compile time and through the table, as the worker routes.
    for (uint32_t i = 0; i < kBurst; ++i) out[i] = r.RouteAs<lb::Role::kEdge>(p[i].dst_ip);
    benchmark::DoNotOptimize(out);
    cycles += __rdtsc() - c0;
  }
  Report(state, cycles);
}
BENCHMARK(BM_Route);

template <bool kCombined>
void BM_KeysAndLb(benchmark::State& state) {
  Frames f(kBurst);
  ParsedPacket p[kBurst];
  ParseBurst(f.data.data(), f.len.data(), kBurst, p);
  const lb::SwitchId self = Tree().edge(0, 0);
  Router r(Tree(), self);
  const lb::UplinkTable table =
      lb::UplinkTable::ForSwitch(Tree(), self, lb::LinkSet(Tree().num_links()));
  lb::SharedOfanTable shared(table, 1);
  lb::OfanCombined combined(&shared);
  lb::PolicyConfig pc;
  pc.kind = lb::PolicyKind::kPofan;
  lb::AnyPolicy pofan(pc, lb::SwitchLbSetup{&table, 12, 1});
  lb::PacketKey keys[kBurst];
  uint8_t out[kBurst];
  uint64_t cycles = 0;
  for (auto _ : state) {
    const uint64_t c0 = __rdtsc();
    for (uint32_t i = 0; i < kBurst; ++i) {
      // As the worker routes (an out-of-line Router::Route here once cost
      // Ofan-combined's loop twice its cycles).
      const RouteResult rr = r.RouteAs<lb::Role::kEdge>(p[i].dst_ip);
      lb::PacketKey& k = keys[i];
      k.flow_hash = p[i].flow_hash;
      k.dst_qp = p[i].dst_qp;
      k.dest = rr.dest;
      k.cls = p[i].cls;
      k.key = static_cast<uint16_t>(rr.dest + r.num_dests() * static_cast<uint32_t>(p[i].cls));
      k.slice = rr.slice;
      k.pipe = 0;
    }
    if constexpr (kCombined) {
      combined.PickBurst(keys, out, kBurst);
    } else {
      lb::LbView v{&table, nullptr, 0};
      pofan.PickBurst(keys, out, kBurst, v);
    }
    benchmark::DoNotOptimize(out);
    cycles += __rdtsc() - c0;
  }
  Report(state, cycles);
}
BENCHMARK_TEMPLATE(BM_KeysAndLb, true)->Name("BM_RouteKeysLb/ofan_combined");
BENCHMARK_TEMPLATE(BM_KeysAndLb, false)->Name("BM_RouteKeysLb/pofan");

void BM_Rewrite(benchmark::State& state) {
  Frames f(kBurst);
  const pkt::MacAddr a{{2, 0, 0, 0, 0, 9}}, b{{2, 0, 0, 0, 0, 8}};
  uint64_t cycles = 0;
  for (auto _ : state) {
    for (auto* d : f.mut) d[14 + 8] = 64;  // keep TTL from running out (not timed)
    const uint64_t c0 = __rdtsc();
    for (uint32_t i = 0; i < kBurst; ++i)
      benchmark::DoNotOptimize(RewriteForward(f.mut[i], 14, a, b));
    cycles += __rdtsc() - c0;
  }
  Report(state, cycles);
}
BENCHMARK(BM_Rewrite);

}  // namespace
}  // namespace ofan::dp

BENCHMARK_MAIN();
