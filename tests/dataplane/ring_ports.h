// What in-process tests and fuzz targets run a switch on: an EAL without
// hugepages (everything in anonymous memory, no hugepage files to clean up;
// --no-huge cannot be combined with --in-memory), no PCI, quiet logs; and
// ports that are a pair of rings the caller owns.
#pragma once

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ring.h>

#include <optional>
#include <string>
#include <vector>

#include "dataplane/config.h"

namespace ofan::dp::testing {

// rte_eal_init for program `prog` on `lcores` ("0" or "0,1") with `mem_mb`
// of memory; false if it failed.
inline bool InitTestEal(const char* prog, const char* lcores, const char* mem_mb) {
  std::vector<std::string> args = {prog,
                                   "--no-huge",
                                   "--no-shconf",
                                   "-m",
                                   mem_mb,
                                   "--no-pci",
                                   "-l",
                                   lcores,
                                   "--log-level=lib.eal:error",
                                   "--log-level=pmd.*:error"};
  std::vector<char*> argv;
  argv.reserve(args.size());
  for (auto& a : args) argv.push_back(a.data());
  return rte_eal_init(static_cast<int>(argv.size()), argv.data()) >= 0;
}

// A port whose RX ring the caller fills and whose TX ring it drains.
struct RingPort {
  rte_ring* rx = nullptr;
  rte_ring* tx = nullptr;
  uint16_t id = 0;    // the ethdev
  PortConfig config;  // fat-tree port `port` on this device ("ring:<base>")
};

// Rings <base>rx and <base>tx of 1024 slots and the ethdev over them;
// nullopt if DPDK refused.
inline std::optional<RingPort> CreateRingPort(const std::string& base, uint32_t port) {
  RingPort r;
  r.rx = rte_ring_create((base + "rx").c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
  r.tx = rte_ring_create((base + "tx").c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (!r.rx || !r.tx) return std::nullopt;
  const int id = rte_eth_from_rings(base.c_str(), &r.rx, 1, &r.tx, 1, 0);
  if (id < 0) return std::nullopt;
  r.id = static_cast<uint16_t>(id);
  r.config.port = port;
  r.config.dev = "ring:" + base;
  return r;
}

}  // namespace ofan::dp::testing
