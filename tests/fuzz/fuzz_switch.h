// A switch for the fuzz targets that need one: EAL without hugepages, a k=4
// edge switch (ports 0-1 down, 2-3 up) whose ports are ring pairs this file
// owns, run by hand (PollWorker / ServiceControl, one thread).
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/switch.h"
#include "tests/dataplane/ring_ports.h"

namespace ofan::dp::fuzz {

struct FuzzSwitch {
  std::unique_ptr<Switch> sw;
  std::vector<testing::RingPort> ports;  // index = fat-tree port
  rte_mempool* pool = nullptr;           // for frames a target injects
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
    auto r = testing::CreateRingPort("fz" + std::to_string(p), p);
    if (!r) Fail("ring port");
    c.ports.push_back(r->config);
    f.ports.push_back(*r);
  }
  auto sw = Switch::Create(c, 1);
  if (!sw.ok()) Fail(sw.error().message.c_str());
  f.sw = std::move(*sw);
  return f;
}

}  // namespace ofan::dp::fuzz
