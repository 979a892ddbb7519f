// A switch for the fuzz targets that need one: EAL without hugepages, a k=4
// edge switch (ports 0-1 down, 2-3 up) whose ports are ring pairs this file
// owns, run by hand (PollWorker / ServiceControl, one thread).
#pragma once

#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/switch.h"
#include "tests/dataplane/test_eal.h"

namespace ofan::dp::fuzz {

struct FuzzSwitch {
  std::unique_ptr<Switch> sw;
  std::vector<rte_ring*> rx, tx;  // per port: what the switch receives, what it sends
  rte_mempool* pool = nullptr;    // for frames a target injects
};

[[noreturn]] inline void Fail(const char* what) {
  std::fprintf(stderr, "fuzz switch: %s\n", what);
  std::abort();
}

inline FuzzSwitch MakeFuzzSwitch() {
  if (!testing::InitTestEal("ofan_fuzz", "0", "512")) Fail("EAL initialisation");
  FuzzSwitch f;
  f.pool = rte_pktmbuf_pool_create("fz_inject", 4095, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                   static_cast<int>(rte_socket_id()));
  if (!f.pool) Fail("mbuf pool");
  DpConfig c;
  c.name = "fuzz";
  c.k = 4;
  c.levels = 3;
  c.max_sleep_us = 0;
  c.egress.ring_slots = 256;
  c.socket_path = "/tmp/ofan-fuzz.sock";  // never listened on
  for (uint32_t p = 0; p < 4; ++p) {
    const std::string base = "fz" + std::to_string(p);
    rte_ring* rx = rte_ring_create((base + "rx").c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    rte_ring* tx = rte_ring_create((base + "tx").c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (!rx || !tx || rte_eth_from_rings(base.c_str(), &rx, 1, &tx, 1, 0) < 0) Fail("ring port");
    f.rx.push_back(rx);
    f.tx.push_back(tx);
    PortConfig pc;
    pc.port = p;
    pc.dev = "ring:" + base;
    c.ports.push_back(pc);
  }
  auto sw = Switch::Create(c, 1);
  if (!sw.ok()) Fail(sw.error().message.c_str());
  f.sw = std::move(*sw);
  return f;
}

}  // namespace ofan::dp::fuzz
