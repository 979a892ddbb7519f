// In-process switch harness over ring ports: EAL without hugepages, ethdevs
// made with rte_eth_from_rings() whose RX and TX rings the test owns. Frames
// go in with Inject(), the switch runs one worker step at a time
// (single-threaded and deterministic), frames come out with Collect().
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/switch.h"
#include "tests/dataplane/eal_env.h"
#include "tests/dataplane/ring_ports.h"

namespace ofan::dp::testing {

class RingSwitch {
 public:
  // Creates ring ports for `ports` of the config and the switch over them.
  RingSwitch(DpConfig c, const std::vector<uint32_t>& ports, uint32_t workers = 1) {
    static int instance = 0;
    ++instance;
    c.name = fmt::format("t{}", instance);
    c.socket_path = fmt::format("/tmp/ofan-test-{}-{}.sock", getpid(), instance);
    c.egress.ring_slots = c.egress.ring_slots > 256 ? 256 : c.egress.ring_slots;
    // Ports the config lists keep their MACs (golden frames name them); the
    // others get a peer MAC of 02:ee:00:00:00:<port>.
    std::map<uint32_t, PortConfig> given;
    for (const PortConfig& pc : c.ports) given[pc.port] = pc;
    c.ports.clear();
    for (uint32_t p : ports) {
      const std::string base = fmt::format("t{}p{}", instance, p);
      auto r = CreateRingPort(base, p);
      EXPECT_TRUE(r.has_value()) << "ring port " << base;
      if (!r) continue;
      r->config.peer_mac = pkt::MacAddr{{0x02, 0xEE, 0, 0, 0, static_cast<uint8_t>(p)}};
      if (auto g = given.find(p); g != given.end()) {
        r->config.mac = g->second.mac;
        if (g->second.peer_mac) r->config.peer_mac = g->second.peer_mac;
      }
      c.ports.push_back(r->config);
      rings_[p] = *r;
    }
    auto sw = Switch::Create(c, workers);
    EXPECT_TRUE(sw.ok()) << (sw.ok() ? "" : sw.error().message);
    if (sw.ok()) sw_ = std::move(*sw);
  }
  ~RingSwitch() {
    sw_.reset();
    for (auto& [p, r] : rings_) {
      rte_mbuf* m;
      while (rte_ring_dequeue(r.rx, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
      while (rte_ring_dequeue(r.tx, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
      rte_ring_free(r.rx);
      rte_ring_free(r.tx);
    }
  }

  Switch& sw() { return *sw_; }
  bool ok() const { return sw_ != nullptr; }

  void Inject(uint32_t port, const Frame& f) {
    rte_mbuf* m = MbufOf(f, rings_.at(port).id);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(rte_ring_enqueue(rings_.at(port).rx, m), 0) << "rx ring full";
  }

  // Runs worker steps (and the control thread) until nothing moves.
  void Run(int max_rounds = 1000) {
    for (int i = 0; i < max_rounds; ++i) {
      uint32_t work = 0;
      for (uint32_t w = 0; w < sw_->num_workers(); ++w) work += sw_->PollWorker(w);
      sw_->ServiceControl();
      if (work == 0) {
        uint32_t again = 0;
        for (uint32_t w = 0; w < sw_->num_workers(); ++w) again += sw_->PollWorker(w);
        if (again == 0) return;
      }
    }
  }

  // Worker steps alone, as if the control thread never ran.
  void RunWorkers(int rounds) {
    for (int i = 0; i < rounds; ++i) {
      for (uint32_t w = 0; w < sw_->num_workers(); ++w) sw_->PollWorker(w);
    }
  }

  // Frames offered on a port's RX that the switch has not taken yet.
  uint32_t RxWaiting(uint32_t port) const { return rte_ring_count(rings_.at(port).rx); }

  std::vector<Frame> Collect(uint32_t port) {
    std::vector<Frame> out;
    rte_mbuf* m;
    while (rte_ring_dequeue(rings_.at(port).tx, reinterpret_cast<void**>(&m)) == 0) {
      out.push_back(FrameOf(m));
      rte_pktmbuf_free(m);
    }
    return out;
  }
  std::map<uint32_t, std::vector<Frame>> CollectAll() {
    std::map<uint32_t, std::vector<Frame>> out;
    for (auto& [p, r] : rings_) {
      auto v = Collect(p);
      if (!v.empty()) out[p] = std::move(v);
    }
    return out;
  }
  uint64_t Counter(dp::Counter c) const { return sw_->TotalCounters().Get(c); }

 private:
  std::map<uint32_t, RingPort> rings_;
  std::unique_ptr<Switch> sw_;
};

// Edge switch 0 (pod 0, edge 0) of a k=4 fat tree: ports 0,1 hosts
// 10.0.0.2/.3; ports 2,3 uplinks to agg 0 and 1. No idle sleeps.
inline DpConfig EdgeK4() {
  DpConfig c;
  c.k = 4;
  c.levels = 3;
  c.switch_id = 0;
  c.max_sleep_us = 0;
  return c;
}

}  // namespace ofan::dp::testing
