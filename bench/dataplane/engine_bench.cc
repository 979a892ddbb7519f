// What a frame-hop costs the shared fabric engine in process: a k=4 fat tree
// (20 switches) in one fabric::Engine, hosts on ring ports, a cross-pod
// permutation kept going (each frame a host receives is answered by a fresh
// one), the engine's clock a fake one advanced a step at a time so that the
// figure is the engine's work, not its sleeps. Reports TSC cycles of
// Engine::RunDue per frame-hop (frames the switches forwarded) and per window;
// under valgrind --tool=callgrind --toggle-collect='*Engine::RunDue*' the
// instructions per frame-hop (this guest has no hardware counters).
//
//   engine_bench [--steps N=2000] [--step-us F=100] [--gbps F=0.4] [--latency-us F=0]
//                [--frame N=1024] [--population N=64] [--json] [--no-huge]
#include <fmt/format.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/engine.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/packet/builder.h"

namespace ofan::dp {
namespace {

pkt::MacAddr SwitchMac(uint32_t sw, uint32_t port) {
  return pkt::MacAddr{{0x02, 0x0F, 0, static_cast<uint8_t>(sw), static_cast<uint8_t>(port), 0}};
}
pkt::MacAddr HostMac(uint32_t h) {
  return pkt::MacAddr{{0x02, 0xAA, 0, 0, 0, static_cast<uint8_t>(h)}};
}

// Frees every frame in a host's receive ring; how many there were.
uint64_t Drain(rte_ring* r) {
  rte_mbuf* m = nullptr;
  uint64_t n = 0;
  while (rte_ring_dequeue(r, reinterpret_cast<void**>(&m)) == 0) {
    rte_pktmbuf_free(m);
    ++n;
  }
  return n;
}

struct BenchArgs {
  uint32_t steps = 2000, frame = 1024, population = 64;
  double step_us = 100, gbps = 0.4, latency_us = 0;
  bool json = false, no_huge = false;
};

// The command line: 0 parsed, otherwise the exit code (0 for --help).
std::optional<int> ParseArgs(int argc, char** argv, BenchArgs& b) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "engine_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--steps") {
      b.steps = static_cast<uint32_t>(std::strtoul(val(), nullptr, 10));
    } else if (a == "--step-us") {
      b.step_us = std::strtod(val(), nullptr);
    } else if (a == "--gbps") {
      b.gbps = std::strtod(val(), nullptr);
    } else if (a == "--latency-us") {
      b.latency_us = std::strtod(val(), nullptr);
    } else if (a == "--frame") {
      b.frame = static_cast<uint32_t>(std::strtoul(val(), nullptr, 10));
    } else if (a == "--population") {
      b.population = static_cast<uint32_t>(std::strtoul(val(), nullptr, 10));
    } else if (a == "--json") {
      b.json = true;
    } else if (a == "--no-huge") {
      b.no_huge = true;
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: engine_bench [--steps N=2000] [--step-us F=100] [--gbps F=0.4] "
          "[--latency-us F=0]\n"
          "                    [--frame N=1024] [--population N=64] [--json] [--no-huge]\n");
      return 0;
    } else {
      std::fprintf(stderr, "engine_bench: unknown argument %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (b.steps == 0 || !(b.step_us > 0) || !(b.gbps > 0) || !(b.latency_us >= 0) || b.frame < 80 ||
      b.frame > 3000 || b.population == 0 || b.population > 512) {
    std::fprintf(stderr, "engine_bench: a value is out of range (see --help)\n");
    return 2;
  }
  return std::nullopt;
}

bool InitEal(bool no_huge) {
  std::vector<std::string> eal = {
      "engine_bench",           "--no-pci", "-l", "0", "--log-level=lib.eal:error",
      "--log-level=pmd.*:error"};
  if (no_huge) {
    eal.insert(eal.end(), {"--no-huge", "--no-shconf", "-m", "1024"});
  } else {
    eal.insert(eal.end(), {"--in-memory", "--file-prefix", fmt::format("engbench{}", getpid())});
  }
  std::vector<char*> eargv;
  for (auto& s : eal) eargv.push_back(s.data());
  return rte_eal_init(static_cast<int>(eargv.size()), eargv.data()) >= 0;
}

// The k=4 fabric's switches, each host port a ring pair (host_rx: what the
// host sends, host_tx: what it receives), the links between switches mem:.
bool FabricConfig(const lb::FatTree& tree, const BenchArgs& b, EngineConfig& ec,
                  std::vector<rte_ring*>& host_rx, std::vector<rte_ring*>& host_tx) {
  auto name = [](uint32_t s) { return fmt::format("s{}", s); };
  for (uint32_t s = 0; s < static_cast<uint32_t>(tree.num_switches()); ++s) {
    const lb::SwitchId id(s);
    DpConfig c;
    c.name = name(s);
    c.k = 4;
    c.levels = 3;
    c.switch_id = s;
    c.egress.rate_gbps = b.gbps;
    c.egress.latency_us = b.latency_us;
    c.egress.buffer_bytes = 4 << 20;
    c.socket_path = fmt::format("/tmp/ofan-engbench-{}-{}.sock", getpid(), s);
    for (int p = 0; p < tree.num_ports(id); ++p) {
      const lb::Peer peer = tree.peer(id, p);
      PortConfig pc;
      pc.port = static_cast<uint32_t>(p);
      pc.mac = SwitchMac(s, pc.port);
      if (peer.is_host) {
        const std::string base = fmt::format("eb{}", peer.id);
        host_rx[peer.id] =
            rte_ring_create((base + "rx").c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
        host_tx[peer.id] =
            rte_ring_create((base + "tx").c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
        if (rte_eth_from_rings(base.c_str(), &host_rx[peer.id], 1, &host_tx[peer.id], 1, 0) < 0) {
          std::fprintf(stderr, "engine_bench: ring port %s\n", base.c_str());
          return false;
        }
        pc.dev = "ring:" + base;
        pc.peer_mac = HostMac(peer.id);
      } else {
        pc.dev = fmt::format("mem:{}:{}", name(peer.id), peer.port);
        pc.peer_mac = SwitchMac(peer.id, static_cast<uint32_t>(peer.port));
      }
      c.ports.push_back(pc);
    }
    ec.switches.push_back(std::move(c));
  }
  return true;
}

// Each host's frame: host h sends to h + 8 (the other half of the pods),
// five switch hops.
std::vector<std::vector<uint8_t>> HostFrames(const lb::FatTree& tree, uint32_t frame) {
  const uint32_t nh = static_cast<uint32_t>(tree.num_hosts());
  std::vector<std::vector<uint8_t>> frames(nh);
  for (uint32_t h = 0; h < nh; ++h) {
    const lb::HostId src(h), dst((h + nh / 2) % nh);
    frames[h] = pkt::PacketBuilder()
                    .Eth(SwitchMac(0, 0), HostMac(h))
                    .Ipv4(tree.host_addr(src), tree.host_addr(dst), 64, pkt::ecn::kEct0)
                    .Udp(static_cast<uint16_t>(0xC000 + h), 4791)
                    .Bth(0x0A, 0x100 + h, 1)
                    .Payload(frame - 62)
                    .Build();
  }
  return frames;
}

struct Figures {
  uint64_t cycles = 0, windows = 0, delivered = 0, frame_hops = 0;
};

// The permutation kept going for warm-up + b.steps steps of the fake clock;
// TSC cycles of RunDue counted after the warm-up.
Figures Measure(Engine& e, ManualClock& clk, const BenchArgs& b, rte_mempool* pool,
                const std::vector<std::vector<uint8_t>>& frames,
                const std::vector<rte_ring*>& host_rx, const std::vector<rte_ring*>& host_tx) {
  const uint32_t nh = static_cast<uint32_t>(frames.size());
  auto top_up = [&](uint32_t h) {
    while (rte_ring_count(host_rx[h]) < b.population) {
      rte_mbuf* m = rte_pktmbuf_alloc(pool);
      if (!m) return;
      std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(frames[h].size())), frames[h].data(),
                  frames[h].size());
      if (rte_ring_enqueue(host_rx[h], m) != 0) {
        rte_pktmbuf_free(m);
        return;
      }
    }
  };
  auto hops = [&] {
    uint64_t n = 0;
    for (auto& sw : e.switches()) {
      const Counters t = sw->TotalCounters();
      n += t.Get(Counter::kForwardedUp) + t.Get(Counter::kForwardedDown);
    }
    return n;
  };
  const uint64_t step_ps = static_cast<uint64_t>(b.step_us * 1e6);
  Figures f;
  const uint32_t warm = b.steps / 10;
  uint64_t hops0 = 0;
  for (uint32_t i = 0; i < warm + b.steps; ++i) {
    if (i == warm) hops0 = hops();
    for (uint32_t h = 0; h < nh; ++h) top_up(h);
    clk.ps += step_ps;
    const uint64_t t0 = __rdtsc();
    const uint32_t w = e.RunDue();
    if (i >= warm) {
      f.cycles += __rdtsc() - t0;
      f.windows += w;
    }
    for (uint32_t h = 0; h < nh; ++h) {
      const uint64_t d = Drain(host_tx[h]);
      if (i >= warm) f.delivered += d;
    }
  }
  f.frame_hops = hops() - hops0;
  return f;
}

void Print(const BenchArgs& b, const lb::FatTree& tree, const Figures& f, const Engine& e) {
  const uint32_t nsw = static_cast<uint32_t>(tree.num_switches());
  const uint32_t nh = static_cast<uint32_t>(tree.num_hosts());
  const double per_hop = f.frame_hops ? static_cast<double>(f.cycles) / f.frame_hops : 0;
  const double per_window = f.windows ? static_cast<double>(f.cycles) / f.windows : 0;
  const double emulated_s = static_cast<double>(b.steps) * b.step_us * 1e-6;
  if (b.json) {
    std::printf(
        "{\"switches\":%u,\"hosts\":%u,\"gbps\":%g,\"latency_us\":%g,\"frame\":%u,\"steps\":%u,"
        "\"frame_hops\":%lu,\"delivered\":%lu,\"windows\":%lu,\"cycles_per_frame_hop\":%.1f,"
        "\"cycles_per_window\":%.1f,\"emulated_s\":%g,\"lookahead_us\":%.3f}\n",
        nsw, nh, b.gbps, b.latency_us, b.frame, b.steps, f.frame_hops, f.delivered, f.windows,
        per_hop, per_window, emulated_s, static_cast<double>(e.lookahead_ps()) / 1e6);
  } else {
    std::printf(
        "k=4 fabric, %u switches, %u hosts, %g Gb/s links, latency %g us, %u B frames\n"
        "%lu frame-hops, %lu frames delivered, %lu windows in %g emulated s\n"
        "%.1f TSC cycles per frame-hop, %.1f per window (lookahead %.3f us)\n",
        nsw, nh, b.gbps, b.latency_us, b.frame, f.frame_hops, f.delivered, f.windows, emulated_s,
        per_hop, per_window, static_cast<double>(e.lookahead_ps()) / 1e6);
  }
}

// The fabric built, measured and torn down on an initialised EAL.
int Run(const BenchArgs& b) {
  const lb::FatTree tree = *lb::FatTree::Make(4, 3);
  const uint32_t nh = static_cast<uint32_t>(tree.num_hosts());
  EngineConfig ec;
  std::vector<rte_ring*> host_rx(nh), host_tx(nh);
  if (!FabricConfig(tree, b, ec, host_rx, host_tx)) return 3;
  ManualClock clk;
  auto eng = Engine::Create(ec, clk.clock());
  if (!eng) {
    std::fprintf(stderr, "engine_bench: %s\n", eng.error().message.c_str());
    return 3;
  }
  Engine& e = **eng;
  for (auto& sw : e.switches()) {
    const LbChoice ofan{lb::PolicyKind::kOfan, OfanMode::kCombined};
    if (sw->num_uplinks() > 0) (void)sw->SetPolicy(ofan);
  }
  const std::vector<std::vector<uint8_t>> frames = HostFrames(tree, b.frame);
  rte_mempool* pool = rte_pktmbuf_pool_create("engbench_hosts", 16383, 256, 0, 4096,
                                              static_cast<int>(rte_socket_id()));
  if (!pool) {
    std::fprintf(stderr, "engine_bench: no pool\n");
    return 3;
  }
  const Figures f = Measure(e, clk, b, pool, frames, host_rx, host_tx);
  Print(b, tree, f, e);
  eng->reset();
  for (uint32_t h = 0; h < nh; ++h) {
    rte_mbuf* m = nullptr;
    while (rte_ring_dequeue(host_rx[h], reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
    Drain(host_tx[h]);
  }
  return f.frame_hops == 0 ? 1 : 0;
}

int Main(int argc, char** argv) {
  BenchArgs b;
  if (auto rc = ParseArgs(argc, argv, b)) return *rc;
  if (!InitEal(b.no_huge)) {
    std::fprintf(stderr, "engine_bench: EAL initialisation failed (hugepages? --no-huge)\n");
    return 3;
  }
  const int rc = Run(b);
  rte_eal_cleanup();
  return rc;
}

}  // namespace
}  // namespace ofan::dp

int main(int argc, char** argv) { return ofan::dp::Main(argc, argv); }
