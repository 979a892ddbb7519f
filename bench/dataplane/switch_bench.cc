// Whole-pipeline cost of one ofan-dp worker, in process: a k=8 edge switch on
// eight loopback ring ports (a frame sent on port N comes back on port N), the
// same traffic as `ofan-dp --bench-inject` (bench/run-forwarding), one thread
// calling PollWorker in a loop. Reports TSC cycles per forwarded packet per
// policy, interleaving the policies over several rounds so that machine noise
// hits them alike. The DPDK-free stages alone: stages_bench; the out-of-process
// comparison with dpdk-testpmd: bench/run-forwarding.
//
//   switch_bench [--rounds N] [--polls N] [--population N] [--warmup N] [--json] [--no-huge]
//                [--policy NAME]   (only that one; e.g. under valgrind --tool=callgrind)
#include <fmt/format.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ring.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/bench_support/bench_traffic.h"
#include "dataplane/switch.h"

namespace ofan::dp {
namespace {

struct Variant {
  const char* name;
  LbChoice lb;
};

constexpr Variant kVariants[] = {
    {"ecmp", {lb::PolicyKind::kEcmp, OfanMode::kCombined}},
    {"pofan", {lb::PolicyKind::kPofan, OfanMode::kCombined}},
    {"ofan-atomic", {lb::PolicyKind::kOfan, OfanMode::kAtomic}},
    {"ofan-combined", {lb::PolicyKind::kOfan, OfanMode::kCombined}},
};

uint64_t HugepagesFree() {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  uint64_t n = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "HugePages_Free: %lu", &n) == 1) break;
  }
  std::fclose(f);
  return n;
}

struct BenchArgs {
  uint32_t rounds = 5, polls = 200000, population = 1024, warmup = 2000, cpu = 0;
  bool json = false, no_huge = false;
  std::string only;  // --policy: one variant only
};

// The command line: nullopt parsed, otherwise the exit code (0 for --help).
std::optional<int> ParseArgs(int argc, char** argv, BenchArgs& b) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto num = [&](uint32_t& v) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "switch_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      v = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    };
    if (a == "--rounds") {
      num(b.rounds);
    } else if (a == "--polls") {
      num(b.polls);
    } else if (a == "--population") {
      num(b.population);
    } else if (a == "--warmup") {
      num(b.warmup);
    } else if (a == "--cpu") {  // the CPU the worker runs on (run-forwarding's is 1)
      num(b.cpu);
    } else if (a == "--json") {
      b.json = true;
    } else if (a == "--no-huge") {  // under valgrind: instruction counts only (see usage)
      b.no_huge = true;
    } else if (a == "--policy") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "switch_bench: --policy needs a value\n");
        return 2;
      }
      b.only = argv[++i];
      if (std::none_of(std::begin(kVariants), std::end(kVariants),
                       [&](const Variant& v) { return b.only == v.name; })) {
        std::fprintf(
            stderr, "switch_bench: unknown --policy %s (ecmp, pofan, ofan-atomic, ofan-combined)\n",
            b.only.c_str());
        return 2;
      }
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: switch_bench [--rounds N=5] [--polls N=200000] [--population N=1024] [--warmup "
          "N=2000]\n"
          "                    [--cpu N=0] [--json] [--no-huge]\n"
          "                    [--policy ecmp|pofan|ofan-atomic|ofan-combined]\n"
          "--no-huge is for valgrind: without hugepages every mbuf starts its own 4 KiB page, so\n"
          "all frames share one L1 set and cycle figures are not comparable to a hugepage run.\n");
      return 0;
    } else {
      std::fprintf(stderr, "switch_bench: unknown argument %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  return std::nullopt;
}

// EAL on one CPU: false if it failed (said on stderr).
bool InitEal(const BenchArgs& b) {
  // Hugepages when there are some (as ofan-dp runs): with 4 KiB pages the
  // mbufs' TLB misses would dominate what is measured.
  const bool huge = !b.no_huge && HugepagesFree() >= 64;
  std::vector<std::string> eal = {"switch_bench",
                                  "--no-pci",
                                  "-l",
                                  std::to_string(b.cpu),
                                  "--log-level=lib.eal:error",
                                  "--log-level=pmd.*:error"};
  if (huge) {
    eal.insert(eal.end(), {"--in-memory", "--file-prefix", fmt::format("swbench{}", getpid())});
  } else {
    if (!b.no_huge) {
      std::fprintf(stderr,
                   "switch_bench: fewer than 64 free hugepages (scripts/hugepages.sh); using 4 KiB "
                   "pages, so cycle figures are pessimistic (see --help)\n");
    }
    eal.insert(eal.end(), {"--no-huge", "--no-shconf", "-m", "1024"});
  }
  std::vector<char*> eargv;
  eargv.reserve(eal.size());
  for (auto& s : eal) eargv.push_back(s.data());
  if (rte_eal_init(static_cast<int>(eargv.size()), eargv.data()) < 0) {
    std::fprintf(stderr, "switch_bench: EAL initialisation failed\n");
    return false;
  }
  return true;
}

// Cycles per packet per variant: median and min over the rounds.
void Print(const BenchArgs& b, const std::vector<std::vector<double>>& cycles,
           const std::vector<uint64_t>& packets) {
  const bool json = b.json;
  if (json) std::printf("[");
  bool first = true;
  for (size_t v = 0; v < std::size(kVariants); ++v) {
    if (cycles[v].empty()) continue;
    auto xs = cycles[v];
    std::sort(xs.begin(), xs.end());
    const double med = xs[xs.size() / 2];
    if (json) {
      std::printf(
          "%s{\"policy\": \"%s\", \"cycles_per_packet_median\": %.1f, \"cycles_per_packet_min\": "
          "%.1f, "
          "\"packets\": %lu}",
          first ? "" : ", ", kVariants[v].name, med, xs.front(),
          static_cast<unsigned long>(packets[v]));
      first = false;
    } else {
      std::printf("%-14s %6.1f cycles/packet (median of %u; min %.1f)\n", kVariants[v].name, med,
                  b.rounds, xs.front());
    }
  }
  if (json) std::printf("]\n");
}

int Main(int argc, char** argv) {
  BenchArgs b;
  if (auto rc = ParseArgs(argc, argv, b)) return *rc;
  if (!InitEal(b)) return 3;
  constexpr uint32_t kPorts = 8;
  std::vector<rte_ring*> rings;
  DpConfig c;
  c.name = "swbench";
  c.k = 8;
  c.levels = 3;
  c.pipe_size = 2;
  c.max_sleep_us = 0;
  c.socket_path = fmt::format("/tmp/ofan-swbench-{}.sock", getpid());
  for (uint32_t p = 0; p < kPorts; ++p) {
    const std::string base = fmt::format("swb{}", p);
    rte_ring* r = rte_ring_create(base.c_str(), 4096, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (!r || rte_eth_from_rings(base.c_str(), &r, 1, &r, 1, 0) < 0) {
      std::fprintf(stderr, "switch_bench: ring port %u\n", p);
      return 3;
    }
    rings.push_back(r);
    PortConfig pc;
    pc.port = p;
    pc.dev = "ring:" + base;
    pc.mac = pkt::MacAddr{{0x02, 0, 0, 0, 0x0a, static_cast<uint8_t>(p)}};
    pc.peer_mac = pkt::MacAddr{{0x02, 0, 0, 0, 0x0b, static_cast<uint8_t>(p)}};
    c.ports.push_back(pc);
  }
  auto sw = Switch::Create(c, 1);
  if (!sw.ok()) {
    std::fprintf(stderr, "switch_bench: %s\n", sw.error().message.c_str());
    return 3;
  }
  Switch& s = **sw;
  auto traffic = BenchTraffic::Start(s, b.population, 64);
  if (!traffic.ok()) {
    std::fprintf(stderr, "switch_bench: %s\n", traffic.error().message.c_str());
    return 3;
  }
  std::vector<std::vector<double>> cycles(std::size(kVariants));
  std::vector<uint64_t> packets(std::size(kVariants), 0);
  for (uint32_t r = 0; r < b.rounds; ++r) {
    for (size_t v = 0; v < std::size(kVariants); ++v) {
      if (!b.only.empty() && b.only != kVariants[v].name) continue;
      if (auto st = s.SetPolicy(kVariants[v].lb); !st.ok()) {
        std::fprintf(stderr, "switch_bench: %s\n", st.error().message.c_str());
        return 3;
      }
      for (uint32_t i = 0; i < b.warmup; ++i) s.PollWorker(0);  // polls to warm the new state
      const uint64_t tx0 = s.TotalCounters().Get(Counter::kTxPackets);
      const uint64_t t0 = __rdtsc();
      for (uint32_t i = 0; i < b.polls; ++i) {
        s.PollWorker(0);
        if ((i & 1023) == 0) s.ServiceControl();  // replaces TTL-expired frames
      }
      const uint64_t t1 = __rdtsc();
      const uint64_t tx = s.TotalCounters().Get(Counter::kTxPackets) - tx0;
      cycles[v].push_back(tx ? static_cast<double>(t1 - t0) / static_cast<double>(tx) : 0);
      packets[v] += tx;
    }
  }
  Print(b, cycles, packets);
  // The frames still in the loopback rings belong to the switch's pool: free
  // them before the switch (and its pool) goes.
  for (auto* r : rings) {
    rte_mbuf* m = nullptr;
    while (rte_ring_dequeue(r, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
  }
  sw->reset();
  rte_eal_cleanup();
  return 0;
}

}  // namespace
}  // namespace ofan::dp

int main(int argc, char** argv) { return ofan::dp::Main(argc, argv); }
