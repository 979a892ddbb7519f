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

int Main(int argc, char** argv) {
  uint32_t steps = 2000, frame = 1024, population = 64;
  double step_us = 100, gbps = 0.4, latency_us = 0;
  bool json = false, no_huge = false;
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
      steps = static_cast<uint32_t>(std::strtoul(val(), nullptr, 10));
    } else if (a == "--step-us") {
      step_us = std::strtod(val(), nullptr);
    } else if (a == "--gbps") {
      gbps = std::strtod(val(), nullptr);
    } else if (a == "--latency-us") {
      latency_us = std::strtod(val(), nullptr);
    } else if (a == "--frame") {
      frame = static_cast<uint32_t>(std::strtoul(val(), nullptr, 10));
    } else if (a == "--population") {
      population = static_cast<uint32_t>(std::strtoul(val(), nullptr, 10));
    } else if (a == "--json") {
      json = true;
    } else if (a == "--no-huge") {
      no_huge = true;
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
  if (steps == 0 || !(step_us > 0) || !(gbps > 0) || !(latency_us >= 0) || frame < 80 ||
      frame > 3000 || population == 0 || population > 512) {
    std::fprintf(stderr, "engine_bench: a value is out of range (see --help)\n");
    return 2;
  }
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
  if (rte_eal_init(static_cast<int>(eargv.size()), eargv.data()) < 0) {
    std::fprintf(stderr, "engine_bench: EAL initialisation failed (hugepages? --no-huge)\n");
    return 3;
  }
  int rc = 0;
  {
    const lb::FatTree tree = *lb::FatTree::Make(4, 3);
    const uint32_t nsw = static_cast<uint32_t>(tree.num_switches());
    const uint32_t nh = static_cast<uint32_t>(tree.num_hosts());
    auto name = [](uint32_t s) { return fmt::format("s{}", s); };
    EngineConfig ec;
    std::vector<rte_ring*> host_rx(nh), host_tx(nh);
    for (uint32_t s = 0; s < nsw; ++s) {
      const lb::SwitchId id(s);
      DpConfig c;
      c.name = name(s);
      c.k = 4;
      c.levels = 3;
      c.switch_id = s;
      c.egress.rate_gbps = gbps;
      c.egress.latency_us = latency_us;
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
            return 3;
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
    // Host h sends to h + 8 (the other half of the pods): five switch hops.
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
    rte_mempool* pool = rte_pktmbuf_pool_create("engbench_hosts", 16383, 256, 0, 4096,
                                                static_cast<int>(rte_socket_id()));
    if (!pool) {
      std::fprintf(stderr, "engine_bench: no pool\n");
      return 3;
    }
    auto top_up = [&](uint32_t h) {
      while (rte_ring_count(host_rx[h]) < population) {
        rte_mbuf* m = rte_pktmbuf_alloc(pool);
        if (!m) return;
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(frames[h].size())),
                    frames[h].data(), frames[h].size());
        if (rte_ring_enqueue(host_rx[h], m) != 0) {
          rte_pktmbuf_free(m);
          return;
        }
      }
    };
    auto drain = [&](uint32_t h) {
      rte_mbuf* m = nullptr;
      uint64_t n = 0;
      while (rte_ring_dequeue(host_tx[h], reinterpret_cast<void**>(&m)) == 0) {
        rte_pktmbuf_free(m);
        ++n;
      }
      return n;
    };
    auto hops = [&] {
      uint64_t n = 0;
      for (auto& sw : e.switches()) {
        const Counters t = sw->TotalCounters();
        n += t.Get(Counter::kForwardedUp) + t.Get(Counter::kForwardedDown);
      }
      return n;
    };
    const uint64_t step_ps = static_cast<uint64_t>(step_us * 1e6);
    uint64_t cycles = 0, windows = 0, delivered = 0;
    const uint32_t warm = steps / 10;
    uint64_t hops0 = 0;
    for (uint32_t i = 0; i < warm + steps; ++i) {
      if (i == warm) hops0 = hops();
      for (uint32_t h = 0; h < nh; ++h) top_up(h);
      clk.ps += step_ps;
      const uint64_t t0 = __rdtsc();
      const uint32_t w = e.RunDue();
      if (i >= warm) {
        cycles += __rdtsc() - t0;
        windows += w;
      }
      for (uint32_t h = 0; h < nh; ++h) {
        const uint64_t d = drain(h);
        if (i >= warm) delivered += d;
      }
    }
    const uint64_t frame_hops = hops() - hops0;
    const double per_hop = frame_hops ? static_cast<double>(cycles) / frame_hops : 0;
    const double per_window = windows ? static_cast<double>(cycles) / windows : 0;
    const double emulated_s = static_cast<double>(steps) * step_us * 1e-6;
    if (json) {
      std::printf(
          "{\"switches\":%u,\"hosts\":%u,\"gbps\":%g,\"latency_us\":%g,\"frame\":%u,\"steps\":%u,"
          "\"frame_hops\":%lu,\"delivered\":%lu,\"windows\":%lu,\"cycles_per_frame_hop\":%.1f,"
          "\"cycles_per_window\":%.1f,\"emulated_s\":%g,\"lookahead_us\":%.3f}\n",
          nsw, nh, gbps, latency_us, frame, steps, frame_hops, delivered, windows, per_hop,
          per_window, emulated_s, static_cast<double>(e.lookahead_ps()) / 1e6);
    } else {
      std::printf(
          "k=4 fabric, %u switches, %u hosts, %g Gb/s links, latency %g us, %u B frames\n"
          "%lu frame-hops, %lu frames delivered, %lu windows in %g emulated s\n"
          "%.1f TSC cycles per frame-hop, %.1f per window (lookahead %.3f us)\n",
          nsw, nh, gbps, latency_us, frame, frame_hops, delivered, windows, emulated_s, per_hop,
          per_window, static_cast<double>(e.lookahead_ps()) / 1e6);
    }
    if (frame_hops == 0) rc = 1;
    eng->reset();
    for (uint32_t h = 0; h < nh; ++h) {
      rte_mbuf* m = nullptr;
      while (rte_ring_dequeue(host_rx[h], reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
      drain(h);
    }
  }
  rte_eal_cleanup();
  return rc;
}

}  // namespace
}  // namespace ofan::dp

int main(int argc, char** argv) { return ofan::dp::Main(argc, argv); }
