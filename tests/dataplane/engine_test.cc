// dataplane/engine.h driven by a fake clock: two switches in a line
// (edge e0-0 and aggregation a0-0 of a k=4 fat tree, an in-memory link
// between them, ring ports for hosts). Frames offered at once leave at
// exactly the times serialisation gives, and the queue depths are those the
// simulator's model (EgressTimeline) computes for the same input: whatever
// the wall clock did, time is emulated. A stopped switch drops and counts.
// With PFC, the line pauses as the simulator's pieces chained the same way
// (PfcLineModel) pause it: the same pause frames, paused time and frame
// times, to the picosecond.
#include "dataplane/engine.h"

#include <gtest/gtest.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/netns.h"
#include "dataplane/fabric/egress_timeline.h"
#include "dataplane/fabric/frame_time.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/packet/builder.h"
#include "tests/dataplane/eal_env.h"

namespace ofan::dp {
namespace {

using fabric::TimePs;
using testing::Frame;

constexpr double kGbps = 1.0;  // 8 ns a byte
constexpr double kLatencyUs = 1.0;

uint32_t Ip(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return a << 24 | b << 16 | c << 8 | d;
}

Frame Roce(uint32_t src, uint32_t dst, uint32_t payload, uint32_t psn = 1) {
  return pkt::PacketBuilder()
      .Eth(pkt::MacAddr{{0x02, 0, 0, 0, 0, 0xFE}}, pkt::MacAddr{{0x02, 0xAA, 0, 0, 0, 1}})
      .Ipv4(src, dst, 64, pkt::ecn::kEct0)
      .Udp(0xC000, 4791)
      .Bth(0x0A, 0x111, psn)
      .Payload(payload)
      .Build();
}

pkt::MacAddr Mac(uint8_t sw, uint8_t port) { return pkt::MacAddr{{0x02, 0x0F, 0, 0, sw, port}}; }

class EngineLine : public ::testing::Test {
 protected:
  void SetUp() override {
    static int instance = 0;
    const std::string tag = std::to_string(instance++);
    const lb::FatTree tree = *lb::FatTree::Make(4, 3);
    e0_ = tree.edge(0, 0).value();
    a0_ = tree.agg(0, 0).value();
    auto base = [&](const std::string& name, uint32_t id) {
      DpConfig c;
      c.name = name + "_" + tag;
      c.k = 4;
      c.levels = 3;
      c.switch_id = id;
      c.egress.rate_gbps = kGbps;
      c.egress.latency_us = kLatencyUs;
      c.egress.buffer_bytes = 1 << 20;
      c.egress.ecn_bytes = 0;
      c.socket_path = "/nonexistent";
      return c;
    };
    DpConfig e = base("e", e0_), a = base("a", a0_);
    for (uint32_t p = 0; p < 2; ++p) {
      auto r = testing::CreateRingPort("eng" + tag + "h" + std::to_string(p), p);
      ASSERT_TRUE(r);
      r->config.mac = Mac(0, static_cast<uint8_t>(p));
      r->config.peer_mac = pkt::MacAddr{{0x02, 0xAA, 0, 0, 0, static_cast<uint8_t>(p)}};
      e.ports.push_back(r->config);
      hosts_.push_back(*r);
    }
    PortConfig up;
    up.port = 2;
    up.dev = "mem:" + a.name + ":0";
    up.mac = Mac(0, 2);
    up.peer_mac = Mac(1, 0);
    AdjustUplink(up);
    e.ports.push_back(up);
    PortConfig down;
    down.port = 0;
    down.dev = "mem:" + e.name + ":2";
    down.mac = Mac(1, 0);
    down.peer_mac = Mac(0, 2);
    a.ports.push_back(down);
    auto r = testing::CreateRingPort("eng" + tag + "e1", 1);  // toward edge e0-1
    ASSERT_TRUE(r);
    r->config.mac = Mac(1, 1);
    r->config.peer_mac = Mac(2, 0);
    a.ports.push_back(r->config);
    out_ = *r;
    AdjustSwitches(e, a);
    if (HasFatalFailure() || IsSkipped()) return;
    EngineConfig ec;
    ec.switches = {e, a};
    auto eng = Engine::Create(ec, clock_.clock());
    ASSERT_TRUE(eng) << eng.error().message;
    engine_ = std::move(*eng);
    // e0-0 has only its first uplink: every destination's mask is uplink 0.
    Switch& es = *engine_->switches()[0];
    ASSERT_TRUE(es.LoadMasks(std::vector<lb::PortMask>(es.router().num_dests(), 1)).ok());
  }
  void TearDown() override {
    engine_.reset();
    if (hosts_.size() < 2) return;  // skipped before the ports were made
    for (auto* rp : {&hosts_[0], &hosts_[1], &out_}) {
      rte_mbuf* m;
      while (rte_ring_dequeue(rp->rx, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
      while (rte_ring_dequeue(rp->tx, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
    }
  }
  // A subclass's link attributes (loss, reordering) for e0-0's uplink.
  virtual void AdjustUplink(PortConfig&) {}
  // A subclass's switch settings (kernel ports), before the engine is made.
  virtual void AdjustSwitches(DpConfig&, DpConfig&) {}
  void Send(uint32_t host, const Frame& f) {
    rte_mbuf* m = testing::MbufOf(f);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(rte_ring_enqueue(hosts_[host].rx, m), 0);
  }
  // What left toward e0-1, each frame's emulated arrival there.
  std::vector<TimePs> Out() {
    std::vector<TimePs> t;
    rte_mbuf* m;
    while (rte_ring_dequeue(out_.tx, reinterpret_cast<void**>(&m)) == 0) {
      t.push_back(FrameTime(m));
      rte_pktmbuf_free(m);
    }
    return t;
  }
  // The BTH PSNs of what left toward e0-1, in the order it left.
  std::vector<uint32_t> OutPsns() {
    std::vector<uint32_t> psns;
    rte_mbuf* m;
    while (rte_ring_dequeue(out_.tx, reinterpret_cast<void**>(&m)) == 0) {
      const uint8_t* b = rte_pktmbuf_mtod(m, const uint8_t*) + 14 + 20 + 8;  // the BTH
      psns.push_back(uint32_t{b[9]} << 16 | uint32_t{b[10]} << 8 | b[11]);
      rte_pktmbuf_free(m);
    }
    return psns;
  }
  QueueStats Queue(uint32_t sw, uint32_t port) {
    for (const PortSnapshot& p : engine_->switches()[sw]->TakeSnapshot().ports) {
      if (p.port == port) return p.queue;
    }
    ADD_FAILURE() << "no port " << port;
    return {};
  }

  ManualClock clock_;
  std::unique_ptr<Engine> engine_;
  std::vector<testing::RingPort> hosts_;
  testing::RingPort out_;
  uint32_t e0_ = 0, a0_ = 0;
};

// The model of the same line: the host wires, e0-0's uplink, a0-0's
// downlink, each an EgressTimeline, as ofan-sim chains them.
struct LineModel {
  fabric::EmuWire w = fabric::EmuWire::At(LinkRate::Gbps(kGbps), kLatencyUs);
  fabric::EgressTimeline up, down;
  std::vector<TimePs> out;
  // Frames of `bytes` that entered the host wires at t0, `per_host` from
  // each of `hosts`, in the order the engine merges them (by time, ties to
  // the lower port).
  void Run(TimePs t0, uint32_t hosts, uint32_t per_host, uint32_t bytes) {
    const TimePs ser = w.Ser(bytes);
    std::vector<TimePs> arrive;
    for (uint32_t i = 0; i < per_host; ++i) {
      for (uint32_t h = 0; h < hosts; ++h)
        arrive.push_back(t0 + w.pre + ser + w.latency + i * (ser + w.gap));
    }
    for (const TimePs a : arrive) {
      const fabric::OfferResult r = up.Offer(a, bytes, ser, w.pre, w.gap, {}, false);
      const fabric::OfferResult d =
          down.Offer(r.last_bit + w.latency, bytes, ser, w.pre, w.gap, {}, false);
      out.push_back(d.last_bit + w.latency);
    }
  }
};

TEST_F(EngineLine, FramesOfferedAtOnceLeaveAtSerialisationTimes) {
  const Frame f = Roce(Ip(10, 0, 0, 2), Ip(10, 0, 1, 2), 1000);
  clock_.ps = 5'000'000;  // the engine sees the frames at 5 us
  for (int i = 0; i < 16; ++i) Send(0, f);
  engine_->RunDue();
  clock_.ps = 1'000'000'000'000;  // a second later: everything has happened
  engine_->RunDue();
  LineModel m;
  m.Run(5'000'000, 1, 16, static_cast<uint32_t>(f.size()));
  EXPECT_EQ(Out(), m.out);
  // One host at line rate: nothing waits at e0-0's uplink but the frame
  // being sent.
  EXPECT_EQ(Queue(0, 2).max_packets, 1u);
}

TEST_F(EngineLine, TwoHostsIntoOneUplinkBuildTheSimulatorsQueue) {
  const Frame f = Roce(Ip(10, 0, 0, 2), Ip(10, 0, 1, 2), 1000);
  const Frame g = Roce(Ip(10, 0, 0, 3), Ip(10, 0, 1, 2), 1000);
  clock_.ps = 5'000'000;
  for (int i = 0; i < 32; ++i) {
    Send(0, f);
    Send(1, g);
  }
  engine_->RunDue();
  // The wall clock advances in uneven steps, as a busy machine's would:
  // the result must not depend on them.
  for (uint64_t t : {7'000'000ull, 7'000'001ull, 90'000'000ull, 400'000'000ull, 1'000'000'000ull}) {
    clock_.ps = t;
    engine_->RunDue();
  }
  clock_.ps = 1'000'000'000'000;
  engine_->RunDue();
  LineModel m;
  m.Run(5'000'000, 2, 32, static_cast<uint32_t>(f.size()));
  EXPECT_EQ(Out(), m.out);
  const QueueStats q = Queue(0, 2);
  EXPECT_EQ(q.max_bytes, m.up.max_bytes());
  EXPECT_GT(q.max_packets, 16u);  // half the frames wait at some point
  EXPECT_EQ(q.tx_packets, 64u);
  EXPECT_EQ(Queue(1, 1).max_bytes, m.down.max_bytes());
}

TEST_F(EngineLine, AStoppedSwitchDropsAndCounts) {
  const Frame f = Roce(Ip(10, 0, 0, 2), Ip(10, 0, 1, 2), 1000);
  ASSERT_TRUE(engine_->switches()[1]->SetSwitchAdmin(false).ok());
  clock_.ps = 5'000'000;
  for (int i = 0; i < 8; ++i) Send(0, f);
  engine_->RunDue();
  clock_.ps = 1'000'000'000'000;
  engine_->RunDue();
  EXPECT_TRUE(Out().empty());
  EXPECT_EQ(engine_->switches()[1]->TotalCounters().Get(Counter::kDropSwitchDown), 8u);
  ASSERT_TRUE(engine_->switches()[1]->SetSwitchAdmin(true).ok());
  clock_.ps = 1'000'005'000'000;
  for (int i = 0; i < 8; ++i) Send(0, f);
  engine_->RunDue();
  clock_.ps = 2'000'000'000'000;
  engine_->RunDue();
  EXPECT_EQ(Out().size(), 8u);
}

// The uplink e0-0 -> a0-0 with netem's loss or reordering, on an
// in-memory link: 200 frames with PSNs 0..199 go through it.
class EngineLossyLine : public EngineLine {
 protected:
  EngineLossyLine(double loss_pct, double reorder_pct) : loss_(loss_pct), reorder_(reorder_pct) {}
  void AdjustUplink(PortConfig& up) override {
    up.latency_us = 50;  // reordering needs a latency to skip
    up.loss_pct = loss_;
    up.reorder_pct = reorder_;
  }
  // The PSNs that came out, in the order they did.
  std::vector<uint32_t> Through(uint32_t n) {
    clock_.ps = 5'000'000;
    for (uint32_t i = 0; i < n; ++i) Send(0, Roce(Ip(10, 0, 0, 2), Ip(10, 0, 1, 2), 100, i));
    for (int pass = 0; pass < 4; ++pass) engine_->RunDue();  // a pass takes a burst per host
    clock_.ps = 1'000'000'000'000;
    engine_->RunDue();
    return OutPsns();
  }
  const double loss_, reorder_;
};

class EngineLoss : public EngineLossyLine {
 protected:
  EngineLoss() : EngineLossyLine(50, 0) {}
};

TEST_F(EngineLoss, LostFramesAreCountedAndTheRestArrive) {
  const std::vector<uint32_t> psns = Through(200);
  const uint64_t lost = engine_->switches()[0]->TotalCounters().Get(Counter::kDropLinkLoss);
  EXPECT_EQ(psns.size() + lost, 200u);
  EXPECT_GT(lost, 60u);  // about half, from a seeded generator
  EXPECT_LT(lost, 140u);
  EXPECT_TRUE(std::is_sorted(psns.begin(), psns.end()));  // loss alone keeps the order
}

class EngineReorder : public EngineLossyLine {
 protected:
  EngineReorder() : EngineLossyLine(0, 25) {}
};

TEST_F(EngineReorder, ReorderedFramesOvertakeAndNoneIsLost) {
  std::vector<uint32_t> psns = Through(200);
  ASSERT_EQ(psns.size(), 200u);
  EXPECT_FALSE(std::is_sorted(psns.begin(), psns.end()));
  std::sort(psns.begin(), psns.end());
  for (uint32_t i = 0; i < 200; ++i) ASSERT_EQ(psns[i], i);  // each exactly once
}

// Resequencing at the edge (reorder on e0-0): frames of one QP come down
// from a0-0 out of PSN order (offered so at e0-1's side); host 0 gets them
// in PSN order, an ACK at once; a gap that does not fill in the timeout is
// a loss, and what waited behind it goes at the timeout.
class EngineResequence : public EngineLine {
 protected:
  void AdjustSwitches(DpConfig& e, DpConfig&) override {
    e.reorder.enabled = true;
    e.reorder.timeout_us = 100;
  }
  void Down(uint32_t psn, uint8_t opcode = 0x0A) {
    const Frame f = pkt::PacketBuilder()
                        .Eth(pkt::MacAddr{{0x02, 0, 0, 0, 0, 0xFE}}, Mac(1, 1))
                        .Ipv4(Ip(10, 0, 1, 2), Ip(10, 0, 0, 2), 64, pkt::ecn::kEct0)
                        .Udp(0xC000, 4791)
                        .Bth(opcode, 0x111, psn)
                        .Payload(opcode == 0x0A ? 1000 : 4)
                        .Build();
    rte_mbuf* m = testing::MbufOf(f);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(rte_ring_enqueue(out_.rx, m), 0);
  }
  // Host 0's frames: (opcode, PSN, arrival).
  struct Got {
    uint8_t opcode;
    uint32_t psn;
    TimePs at;
  };
  std::vector<Got> AtHost0() {
    std::vector<Got> g;
    rte_mbuf* m;
    while (rte_ring_dequeue(hosts_[0].tx, reinterpret_cast<void**>(&m)) == 0) {
      const uint8_t* b = rte_pktmbuf_mtod(m, const uint8_t*) + 14 + 20 + 8;
      g.push_back({b[0], uint32_t{b[9]} << 16 | uint32_t{b[10]} << 8 | b[11], FrameTime(m)});
      rte_pktmbuf_free(m);
    }
    return g;
  }
  void RunAll() {
    for (uint64_t t = 5'000'000; t < 5'000'000'000; t += 20'000'000) {
      clock_.ps = t;
      engine_->RunDue();
    }
  }
};

TEST_F(EngineResequence, AHostGetsItsQpsFramesInPsnOrder) {
  for (const uint32_t psn : {1u, 3u, 2u, 5u, 4u, 6u}) Down(psn);
  Down(77, 0x11);  // an ACK: never waits
  RunAll();
  const std::vector<Got> got = AtHost0();
  std::vector<uint32_t> data;
  for (const Got& g : got)
    if (g.opcode == 0x0A) data.push_back(g.psn);
  EXPECT_EQ(data, (std::vector<uint32_t>{1, 2, 3, 4, 5, 6}));
  ASSERT_EQ(got.size(), 7u);
  const Snapshot s = engine_->switches()[0]->TakeSnapshot();
  ASSERT_TRUE(s.ports[0].queue.reorder);
  const QueueStats::Reorder& r = *s.ports[0].queue.reorder;
  EXPECT_EQ(r.held, 2u) << "3 and 5 waited";
  EXPECT_EQ(r.in_order, 6u);
  EXPECT_EQ(r.timeouts, 0u);
  EXPECT_EQ(r.max_frames, 1u);
  EXPECT_GT(r.max_hold_us, 0.0);
  EXPECT_TRUE(s.ports[1].queue.reorder) << "every host port";
  EXPECT_FALSE(s.ports[2].queue.reorder) << "not the uplink";
  EXPECT_FALSE(engine_->switches()[1]->TakeSnapshot().ports[0].queue.reorder) << "nor a0-0";
}

TEST_F(EngineResequence, AGapThatDoesNotFillIsALossAfterTheTimeout) {
  for (const uint32_t psn : {1u, 3u, 4u}) Down(psn);  // 2 is lost
  RunAll();
  const std::vector<Got> got = AtHost0();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].psn, 3u);
  EXPECT_EQ(got[2].psn, 4u);
  // 3 reached e0-0 a frame time after 1 (about 8 us at 1 Gb/s); it left
  // 100 us after that, with 4 behind it.
  EXPECT_GE(got[1].at - got[0].at, 100'000'000u);
  EXPECT_LE(got[1].at - got[0].at, 120'000'000u);
  const QueueStats::Reorder r = *engine_->switches()[0]->TakeSnapshot().ports[0].queue.reorder;
  EXPECT_EQ(r.timeouts, 2u);
  EXPECT_EQ(r.in_order, 1u);
  EXPECT_NEAR(r.max_hold_us, 100.0, 0.01);
}

// linux-cp: with control.kernel_ports each switch's in-memory port has a TAP
// of its name in the switch's namespace. What a daemon sends on e0-0's p2
// crosses the in-memory link and comes up on a0-0's p0 (root: namespaces).
class EngineKernelPorts : public EngineLine {
 protected:
  void AdjustSwitches(DpConfig& e, DpConfig& a) override {
    if (geteuid() != 0 || access("/dev/net/tun", R_OK | W_OK) != 0)
      GTEST_SKIP() << "needs root and /dev/net/tun";
    const std::string tag = "ofkp" + std::to_string(getpid()) + "-" + std::to_string(n_++);
    for (const char* side : {"e", "a"}) {
      const std::string ns = tag + side;
      ASSERT_EQ(std::system(("ip netns add " + ns).c_str()), 0) << ns;
      made_.push_back(ns);
    }
    e.netns = made_[0];
    a.netns = made_[1];
    e.kernel_ports = a.kernel_ports = true;
  }
  void TearDown() override {
    for (int fd : socks_) close(fd);
    EngineLine::TearDown();  // the TAPs go with their fds
    for (const std::string& ns : made_) std::system(("ip netns del " + ns).c_str());
  }
  // An AF_PACKET socket on `ifname` in namespace `ns` (frames it receives
  // include what the kernel sends there: PACKET_OUTGOING).
  int PacketSocket(const std::string& ns, const char* ifname) {
    int fd = -1;
    const Status st = InNetns(ns, [&]() -> Status {
      fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
      sockaddr_ll sll{};
      sll.sll_family = AF_PACKET;
      sll.sll_protocol = htons(ETH_P_ALL);
      sll.sll_ifindex = static_cast<int>(if_nametoindex(ifname));
      if (fd < 0 || sll.sll_ifindex == 0 ||
          bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0)
        return MakeError(ErrorCode::kIo, std::string("packet socket on ") + ifname);
      return {};
    });
    EXPECT_TRUE(st.ok()) << st.error().message;
    if (fd >= 0) socks_.push_back(fd);
    return fd;
  }
  // Whether `want` came in on `fd` (waiting at most 10 ms for each frame);
  // other frames (the kernel's own IPv6 ND and MLD on a new interface) are
  // skipped.
  static bool Receive(int fd, const Frame& want) {
    std::vector<uint8_t> buf(4096);
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 10) <= 0) return false;
      sockaddr_ll from{};
      socklen_t fl = sizeof from;
      const ssize_t n =
          recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
      if (n == static_cast<ssize_t>(want.size()) && from.sll_pkttype != PACKET_OUTGOING &&
          std::equal(want.begin(), want.end(), buf.begin()))
        return true;
    }
  }
  static inline int n_ = 0;
  std::vector<std::string> made_;
  std::vector<int> socks_;
};

TEST_F(EngineKernelPorts, ADaemonsFramesCrossTheLinkBetweenKernelInterfaces) {
  Switch& es = *engine_->switches()[0];
  Switch& as = *engine_->switches()[1];
  ASSERT_NE(es.kernel_ports(), nullptr);
  ASSERT_TRUE(es.kernel_ports()->has(2)) << "e0-0's uplink is in memory";
  EXPECT_FALSE(es.kernel_ports()->has(0)) << "a host port has its own device";
  EXPECT_EQ(es.kernel_ports()->name(2), "p2");
  const int tx = PacketSocket(made_[0], "p2");
  const int rx = PacketSocket(made_[1], "p0");
  ASSERT_GE(tx, 0);
  ASSERT_GE(rx, 0);
  // LLDP, ARP (60 B: what a port sends is padded to 60) and IPv6 (BGP
  // unnumbered's sessions are link-local).
  const Frame lldp = pkt::PacketBuilder()
                         .Eth(pkt::kLldpDstMac, Mac(0, 2), pkt::ethertype::kLldp)
                         .PadTo(60)
                         .Build();
  const Frame arp = pkt::PacketBuilder()
                        .Eth(pkt::MacAddr{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}}, Mac(0, 2))
                        .Arp(1, Mac(0, 2), Ip(169, 254, 0, 1), pkt::MacAddr{}, Ip(169, 254, 0, 2))
                        .PadTo(60)
                        .Build();
  const Frame v6 =
      pkt::PacketBuilder().Eth(Mac(1, 0), Mac(0, 2), pkt::ethertype::kIpv6).Payload(66).Build();
  uint64_t t = 1'000'000;
  for (const Frame* f : {&lldp, &arp, &v6}) {
    ASSERT_EQ(send(tx, f->data(), f->size(), 0), static_cast<ssize_t>(f->size()));
    // The control thread's part, then the engine's, then the other
    // switch's control thread: e0-0's TAP -> port 2 -> a0-0 port 0 -> TAP.
    bool seen = false;
    for (int i = 0; i < 200 && !seen; ++i) {
      es.ServiceControl();
      clock_.ps = (t += 1'000'000);
      engine_->RunDue();
      as.ServiceControl();
      seen = Receive(rx, *f);
    }
    EXPECT_TRUE(seen) << "frame of ethertype " << std::hex << (int{(*f)[12]} << 8 | (*f)[13]);
  }
  EXPECT_GE(es.kernel_ports()->counters(2).from_kernel, 3u);
  EXPECT_GE(as.kernel_ports()->counters(0).to_kernel, 3u);
  EXPECT_EQ(as.kernel_ports()->counters(0).to_kernel_lost, 0u);
  // The ports view says where each port's control frames went.
  for (const PortSnapshot& p : as.TakeSnapshot().ports) {
    if (p.port != 0) {
      EXPECT_FALSE(p.kernel) << "port " << p.port << " is a ring port";
      continue;
    }
    ASSERT_TRUE(p.kernel);
    EXPECT_EQ(p.kernel->name, "p0");
    EXPECT_GE(p.kernel->to_kernel, 3u);
  }
}

// PFC on the line: a0-0's port toward e0-1 runs at a quarter of the rest,
// so two hosts at line rate fill a0-0; a0-0 pauses e0-0's uplink, e0-0
// fills and pauses the hosts' NICs (the engine emulates their MACs). Buffers
// of 32 KiB a port: without PFC most frames would be tail-dropped.
class EnginePfc : public EngineLine {
 protected:
  void AdjustSwitches(DpConfig& e, DpConfig& a) override {
    for (DpConfig* c : {&e, &a}) {
      c->pfc.enabled = pfc_;
      c->pfc.response_quanta = 0;  // the engine's MACs respond at the frame boundary
      c->egress.buffer_bytes = 32 * 1024;
    }
    a.ports[1].rate_gbps = kGbps / 4;
  }
  // `per_host` lossless frames (DSCP 26) from each host, read by the engine
  // in passes 20 us apart from kFirstPass, then a second for the rest.
  static constexpr uint64_t kFirstPass = 5'000'000;
  void Drive(uint32_t per_host) {
    for (uint32_t i = 0; i < per_host; ++i) {
      Send(0, Lossless(Ip(10, 0, 0, 2), i));
      Send(1, Lossless(Ip(10, 0, 0, 3), i));
    }
    for (uint64_t t = kFirstPass; t < 50'000'000'000; t += 20'000'000) {
      clock_.ps = t;
      engine_->RunDue();
    }
    clock_.ps = 1'000'000'000'000;
    engine_->RunDue();
  }
  // Drive, then how many frames left toward e0-1.
  uint32_t Run(uint32_t per_host) {
    Drive(per_host);
    return static_cast<uint32_t>(OutPsns().size());
  }
  // A lossless RoCE write from `src` to `dst` (default: the far host, behind
  // a0-0).
  static Frame Lossless(uint32_t src, uint32_t psn, uint32_t dst = Ip(10, 0, 1, 2)) {
    return pkt::PacketBuilder()
        .Eth(pkt::MacAddr{{0x02, 0, 0, 0, 0, 0xFE}}, pkt::MacAddr{{0x02, 0xAA, 0, 0, 0, 1}})
        .Ipv4(src, dst, 64, static_cast<uint8_t>(fabric::kRoceDscp << 2 | 2))
        .Udp(0xC000, 4791)
        .Bth(0x0A, 0x111, psn)
        .Payload(1000)
        .Build();
  }
  QueueStats::Pfc PfcOf(uint32_t sw, uint32_t port) { return Queue(sw, port).pfc; }
  bool pfc_ = true;
};

TEST_F(EnginePfc, PausesInsteadOfDroppingAndEveryFrameArrives) {
  ASSERT_EQ(Run(200), 400u);
  const Counters ce = engine_->switches()[0]->TotalCounters();
  const Counters ca = engine_->switches()[1]->TotalCounters();
  EXPECT_EQ(ce.Drops() + ca.Drops(), 0u);
  // a0-0 paused e0-0's uplink; e0-0 paused both hosts.
  const QueueStats::Pfc a_in = PfcOf(1, 0), e_up = PfcOf(0, 2);
  EXPECT_GT(a_in.xoff_events, 0u);
  EXPECT_GT(a_in.sent, 0u);
  EXPECT_EQ(e_up.received, a_in.sent) << "every pause a0-0 sent reached e0-0";
  EXPECT_GT(e_up.paused_us, 0.0);
  for (uint32_t h = 0; h < 2; ++h) {
    const QueueStats::Pfc e_host = PfcOf(0, h);
    EXPECT_GT(e_host.sent, 0u) << "host " << h;
    EXPECT_EQ(e_host.lossless_drops, 0u);
    // Never more than xoff + headroom from one ingress port.
    const fabric::PfcThresholds th =
        *engine_->switches()[0]->TakeSnapshot().ports[h].pfc_thresholds;
    EXPECT_LE(e_host.max_bytes, th.xoff + th.headroom);
    EXPECT_GT(e_host.max_bytes, th.xoff);  // it did go above xoff
  }
  EXPECT_EQ(a_in.lossless_drops, 0u);
  // Paused at e0-0's uplink, the frames waited past its own buffer's size
  // nowhere: a0-0's port toward e0-1 holds at most its ingress's share.
  EXPECT_LE(Queue(1, 1).max_bytes, 32u * 1024);
  // The switch's buffer (status "buffer"): its ports' 32 KiB each; a0-0
  // held at least what its paused port did, short of the 80 % alarm.
  const Snapshot sa = engine_->switches()[1]->TakeSnapshot();
  EXPECT_EQ(sa.buffer.capacity_bytes, 32u * 1024 * sa.ports.size());
  EXPECT_GE(sa.buffer.max_bytes, Queue(1, 1).max_bytes);
  EXPECT_GT(Queue(1, 1).max_bytes, 0u);
  EXPECT_EQ(sa.buffer.alarm_pct, fabric::kBufferAlarmPct);
  EXPECT_EQ(sa.buffer.alarms, 0u);
  EXPECT_FALSE(sa.buffer.alarm_active);
  EXPECT_LE(sa.buffer.bytes, sa.buffer.max_bytes);
}

// A PFC storm: host 0's NIC pauses e0-0's port 0 without end (as a broken
// NIC does). Frames host 1 sends host 0 wait there; 200 ms of emulated
// time later the watchdog fires and (action drop) discards them, and
// restores 200 ms after the storm ends. Host 1's traffic to the far host,
// which does not cross the stormed port, keeps moving throughout.
TEST_F(EnginePfc, AStormFiresTheWatchdogAndSparesTheOtherTraffic) {
  Switch& e = *engine_->switches()[0];
  const uint64_t t0 = 1'000'000'000;  // 1 ms
  clock_.ps = t0;
  engine_->RunDue();
  ASSERT_TRUE(e.SetPortPfcStorm(0, 500).ok());  // 500 ms
  EXPECT_FALSE(e.SetPortPfcStorm(2, 500).ok()) << "an uplink has no host NIC";
  for (uint32_t i = 0; i < 20; ++i) {
    Send(1, Lossless(Ip(10, 0, 0, 3), i));                   // to the far host, as Run's
    Send(1, Lossless(Ip(10, 0, 0, 3), i, Ip(10, 0, 0, 2)));  // to host 0, behind the storm
  }
  auto run_to = [&](uint64_t until) {
    for (; clock_.ps < until; clock_.ps += 1'000'000'000) engine_->RunDue();
  };
  run_to(t0 + 150 * 1'000'000'000ull);
  QueueStats::Pfc p0 = PfcOf(0, 0);
  EXPECT_GT(p0.received, 100u) << "a pause a millisecond";
  EXPECT_EQ(p0.wd_fired, 0u) << "not yet 200 ms";
  EXPECT_EQ(OutPsns().size(), 20u) << "the traffic that does not cross port 0 went on";
  run_to(t0 + 300 * 1'000'000'000ull);
  p0 = PfcOf(0, 0);
  EXPECT_EQ(p0.wd_fired, 1u);
  EXPECT_TRUE(p0.wd_active);
  // Fired 200 ms (the detection time) after the storm's first pause found
  // frames waiting: they were there from its start.
  const Snapshot se = e.TakeSnapshot();
  ASSERT_TRUE(se.ports[0].pfc_storm);
  const uint64_t started = se.ports[0].pfc_storm->started_ps;
  EXPECT_EQ(se.ports[0].pfc_storm->until_ps, started + 500'000'000'000ull);
  EXPECT_GE(p0.wd_fired_at_ps, started + 200'000'000'000ull);
  EXPECT_LE(p0.wd_fired_at_ps, started + 201'000'000'000ull) << "within a ms of 200 ms";
  EXPECT_EQ(p0.wd_restored_at_ps, fabric::kNever);
  EXPECT_FALSE(se.ports[1].pfc_storm) << "no storm asked of host 1";
  EXPECT_EQ(p0.wd_dropped, 20u) << "action drop: the queue's lossless frames";
  EXPECT_EQ(e.TotalCounters().Get(Counter::kDropPfcWatchdog), 20u);
  EXPECT_EQ(e.TotalCounters().Get(Counter::kPfcWatchdog), 1u);
  EXPECT_EQ(p0.lossless_drops, 0u);
  // The storm ends at 501 ms; 200 ms without pause later, restored.
  run_to(t0 + 800 * 1'000'000'000ull);
  p0 = PfcOf(0, 0);
  EXPECT_EQ(p0.wd_restored, 1u);
  EXPECT_FALSE(p0.wd_active);
  EXPECT_GT(p0.wd_restored_at_ps, started + 500'000'000'000ull + 200'000'000'000ull - 1)
      << "200 ms after the storm's last pause ended";
}

// A host that falls behind: host 1 takes nothing for a while (its ring of
// 1,023 frames fills), so frames due at it wait in the engine; past the
// NIC's receive buffer (fabric::kHostRxBufferBytes) its NIC pauses e0-0's
// port toward it, and resumes it once the host takes them again. Host 0's
// 1,200 frames all arrive, nothing is dropped.
TEST_F(EnginePfc, AHostThatFallsBehindPausesItsEdge) {
  uint64_t t = 1'000'000;
  auto run_for = [&](uint64_t ps) {
    for (const uint64_t end = t + ps; t < end; t += 20'000'000) {
      clock_.ps = t;
      engine_->RunDue();
    }
  };
  for (uint32_t i = 0; i < 1000; ++i) Send(0, Lossless(Ip(10, 0, 0, 2), i, Ip(10, 0, 0, 3)));
  run_for(20'000'000'000);  // 20 ms: 1,000 frames of 1 us each, and more
  for (uint32_t i = 1000; i < 1200; ++i) Send(0, Lossless(Ip(10, 0, 0, 2), i, Ip(10, 0, 0, 3)));
  run_for(20'000'000'000);
  const QueueStats::Pfc paused = PfcOf(0, 1);
  EXPECT_GE(paused.received, 1u) << "host 1's NIC sent XOFF";
  EXPECT_GT(paused.paused_us, 0.0);
  // Host 1 takes its frames again: all of them arrive, and it resumes e0-0.
  uint32_t got = 0;
  for (int round = 0; round < 20 && got < 1200; ++round) {
    rte_mbuf* m;
    while (rte_ring_dequeue(hosts_[1].tx, reinterpret_cast<void**>(&m)) == 0) {
      rte_pktmbuf_free(m);
      ++got;
    }
    run_for(5'000'000'000);
  }
  EXPECT_EQ(got, 1200u);
  EXPECT_GE(PfcOf(0, 1).received, paused.received + 1) << "and XON when it caught up";
  const Counters ce = engine_->switches()[0]->TotalCounters();
  EXPECT_EQ(ce.Drops(), 0u);
}

// The simulator's PFC on the same line, built from the pieces ofan-sim
// chains (sim/sim.cc, --pfc): each egress an EmuPort, a0-0's ingress
// accounting a PfcIngress with the thresholds PortPfcThresholds gives,
// its XOFF/XON a frame on a0-0's strict-priority queue toward e0-0, which
// pauses e0-0's uplink from its last bit's arrival for its quanta (a
// PauseClock keeps the paused time). Hosts send their frames back to back
// (LineModel's host wires). Events in time order; ties: arrivals at e0-0,
// then starts, then arrivals at a0-0, then pause frames.
struct PfcLineModel {
  using Q = fabric::EmuPort<uint32_t>;
  fabric::EmuWire w = fabric::EmuWire::At(LinkRate::Gbps(kGbps), kLatencyUs);
  fabric::EmuWire slow = fabric::EmuWire::At(LinkRate::Gbps(kGbps / 4), kLatencyUs);
  Q up, down, back;  // e0-0 -> a0-0, a0-0 -> e0-1, a0-0 -> e0-0 (PFC frames)
  fabric::PfcIngress in;
  fabric::PauseClock paused;
  std::vector<fabric::PfcAction> actions;
  std::vector<TimePs> out;
  uint32_t pfc_frames = 0;
  uint16_t quanta = fabric::kPfcMaxQuanta;

  explicit PfcLineModel(const fabric::PfcThresholds& th) {
    up.Configure(w, {1 << 20, 0});
    down.Configure(slow, {32 * 1024, 0});
    back.Configure(w, {32 * 1024, 0});
    in =
        fabric::PfcIngress({th, th}, {fabric::PauseQuantaPs(quanta, w.ps_per_byte) / 2, 0}, quanta);
  }

  void Run(TimePs t0, uint32_t per_host, uint32_t bytes) {
    std::vector<TimePs> host;  // arrivals at e0-0, as LineModel's
    const TimePs ser = w.Ser(bytes);
    for (uint32_t i = 0; i < per_host; ++i) {
      for (uint32_t h = 0; h < 2; ++h)
        host.push_back(t0 + w.pre + ser + w.latency + i * (ser + w.gap));
    }
    std::multimap<TimePs, uint32_t> at_agg;   // frame arrivals at a0-0
    std::multimap<TimePs, uint16_t> at_edge;  // PFC frames' arrivals at e0-0
    auto emit_up = [&](uint32_t, TimePs, TimePs last) { at_agg.emplace(last + w.latency, bytes); };
    auto emit_down = [&](uint32_t, TimePs start, TimePs last) {
      in.Release(0, bytes, start, actions);
      out.push_back(last + slow.latency);
    };
    auto emit_back = [&](uint32_t q, TimePs, TimePs last) {
      at_edge.emplace(last + w.latency, static_cast<uint16_t>(q));
    };
    auto send_actions = [&] {
      for (const fabric::PfcAction& a : actions) {
        back.Offer(std::max(a.t, back.integrated_to()), 0, fabric::kPfcFrameBytes, false, a.quanta,
                   emit_back);
        ++pfc_frames;
      }
      actions.clear();
    };
    size_t next_host = 0;
    for (;;) {
      const TimePs th = next_host < host.size() ? host[next_host] : fabric::kNever;
      const TimePs ts = std::min({up.NextStart(), down.NextStart(), back.NextStart()});
      const TimePs ta = at_agg.empty() ? fabric::kNever : at_agg.begin()->first;
      const TimePs tp = at_edge.empty() ? fabric::kNever : at_edge.begin()->first;
      const TimePs tr = in.NextRefresh();
      const TimePs t = std::min({th, ts, ta, tp, tr});
      if (t == fabric::kNever) break;
      if (t == th) {
        up.Offer(t, 1, bytes, false, 0, emit_up, true);
        ++next_host;
      } else if (t == ts) {
        up.StartBefore(t + 1, emit_up);
        down.StartBefore(t + 1, emit_down);
        back.StartBefore(t + 1, emit_back);
      } else if (t == ta) {
        at_agg.erase(at_agg.begin());
        EXPECT_TRUE(in.Admit(0, bytes, t, actions)) << "a lossless drop in the model at " << t;
        down.Offer(t, 1, bytes, false, 0, emit_down, true);
      } else if (t == tp) {
        const uint16_t q = at_edge.begin()->second;
        at_edge.erase(at_edge.begin());
        up.StartBefore(t, emit_up);
        const TimePs until = t + fabric::PauseQuantaPs(q, w.ps_per_byte);
        paused.Received(t, until);
        up.PauseUntil(until);
      } else {
        in.Due(t + 1, actions);
      }
      send_actions();
    }
  }
};

// The engine's PFC against the simulator's on the line: a0-0 alone
// pauses (e0-0's buffers, 1 MiB, never reach their xoff), every frame
// leaves when the model says, and the pause frames, XOFF events and the
// paused time of e0-0's uplink are the model's (when written: 106 pause
// frames, 53 XOFF events, 9,807.536 us paused, all 400 frames to the ps).
class EnginePfcVsSim : public EnginePfc {
 protected:
  void AdjustSwitches(DpConfig& e, DpConfig& a) override {
    EnginePfc::AdjustSwitches(e, a);
    e.egress.buffer_bytes = 1 << 20;
  }
};

TEST_F(EnginePfcVsSim, PausesWhereTheSimulatorDoes) {
  const Frame f = Lossless(Ip(10, 0, 0, 2), 0);
  const auto bytes = static_cast<uint32_t>(f.size());
  constexpr uint32_t kPerHost = 200;
  Drive(kPerHost);
  const std::vector<TimePs> got = Out();
  const fabric::PfcThresholds th = *engine_->switches()[1]->TakeSnapshot().ports[0].pfc_thresholds;
  PfcLineModel sim(th);
  sim.Run(kFirstPass, kPerHost, bytes);
  ASSERT_EQ(got.size(), 2 * kPerHost);
  ASSERT_EQ(sim.out.size(), 2 * kPerHost);
  // The same pieces in the same order: the same times, to the picosecond.
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], sim.out[i]) << "frame " << i << " (ps)";
  }
  const QueueStats::Pfc a_in = PfcOf(1, 0), e_up = PfcOf(0, 2);
  EXPECT_EQ(a_in.sent, sim.pfc_frames);
  EXPECT_EQ(e_up.received, sim.pfc_frames);
  EXPECT_EQ(a_in.xoff_events, sim.in.counters(0).xoff_events);
  const double sim_paused_us = static_cast<double>(sim.paused.paused_ps(clock_.ps)) / 1e6;
  EXPECT_GT(sim_paused_us, 0.0);
  EXPECT_DOUBLE_EQ(e_up.paused_us, sim_paused_us) << "paused time of e0-0's uplink, us";
  EXPECT_GT(sim.pfc_frames, 10u) << "the line paused and resumed many times";
  for (uint32_t h = 0; h < 2; ++h) EXPECT_EQ(PfcOf(0, h).sent, 0u) << "host " << h << " not paused";
}

// The baseline PausesInsteadOfDroppingAndEveryFrameArrives is measured
// against: the same line, lossy.
class EngineNoPfc : public EnginePfc {
 protected:
  EngineNoPfc() { pfc_ = false; }
};

TEST_F(EngineNoPfc, TheSameLoadWithoutPfcDrops) {
  const uint32_t arrived = Run(200);
  EXPECT_LT(arrived, 400u);
  EXPECT_GT(engine_->switches()[1]->TotalCounters().Get(Counter::kDropBufferFull) +
                engine_->switches()[0]->TotalCounters().Get(Counter::kDropBufferFull),
            0u);
}

TEST(EngineConfigCheck, MemPortsMustNameEachOther) {
  DpConfig a;
  a.name = "x";
  a.k = 4;
  a.levels = 3;
  a.switch_id = 0;
  a.egress.rate_gbps = 1;
  PortConfig p;
  p.port = 2;
  p.dev = "mem:nobody:0";
  p.mac = Mac(9, 2);
  a.ports.push_back(p);
  EngineConfig ec;
  ec.switches = {a};
  auto e = Engine::Create(ec);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("no switch nobody"), std::string::npos) << e.error().message;
}

}  // namespace
}  // namespace ofan::dp
