// The EAL of in-process DPDK tests (no hugepages: tests/dataplane/ring_ports.h)
// and a pool of test mbufs, as a GoogleTest environment; and frames <-> mbufs.
#pragma once

#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_mbuf.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/dataplane/ring_ports.h"

namespace ofan::dp::testing {

using Frame = std::vector<uint8_t>;

inline rte_mempool* TestPool() {
  static rte_mempool* pool = rte_pktmbuf_pool_create(
      "test_inject", 8191, 256, 0, 4096 + RTE_PKTMBUF_HEADROOM, static_cast<int>(rte_socket_id()));
  return pool;
}

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!InitTestEal("ring_test", "0,1", "1536") || TestPool() == nullptr) {
      // Not a skip: without EAL nothing here is tested, so the run fails.
      std::fprintf(stderr, "FATAL: EAL initialisation failed; the DPDK tests cannot run\n");
      std::exit(1);
    }
  }
  void TearDown() override { rte_eal_cleanup(); }
};

// An mbuf of the test pool holding f, as if received on DPDK port `port`.
inline rte_mbuf* MbufOf(const Frame& f, uint16_t port = RTE_MBUF_PORT_INVALID) {
  rte_mbuf* m = rte_pktmbuf_alloc(TestPool());
  if (!m) return nullptr;
  auto* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())));
  if (!d) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  if (!f.empty()) std::memcpy(d, f.data(), f.size());
  m->port = port;
  return m;
}

inline Frame FrameOf(const rte_mbuf* m) {
  const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
  return Frame(d, d + rte_pktmbuf_data_len(m));
}

}  // namespace ofan::dp::testing
