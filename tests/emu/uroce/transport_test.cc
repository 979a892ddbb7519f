// UroceTransport: the collective engine's interface (emu/collective/
// transport.h) over two uroce hosts on the loopback pair.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "emu/uroce/packet_io.h"
#include "emu/uroce/uroce_transport.h"

namespace ofan::uroce {
namespace {

constexpr pkt::MacAddr kMac0{{0x02, 0, 0, 0, 1, 0}};
constexpr pkt::MacAddr kMac1{{0x02, 0, 0, 0, 1, 1}};

struct Ranks {
  ManualClock clock;
  std::unique_ptr<Host> h[2];
  std::unique_ptr<UroceTransport> t[2];
  std::vector<uint8_t> send[2], recv[2];
  std::vector<emu::Completion> c[2];

  explicit Ranks(Impairment imp = {}, uint32_t qps = 3) {
    auto lp = MakeLoopbackPair(imp, imp);
    std::unique_ptr<PacketIo> io[2] = {std::move(lp.a), std::move(lp.b)};
    wire = lp.wire;
    for (int i = 0; i < 2; ++i) {
      HostConfig hc;
      hc.mac = i ? kMac1 : kMac0;
      hc.ip = 0x0A000002 + (i << 8);
      hc.pace_fraction = 0;
      hc.engine.rto_ns = 300'000;
      h[i] = std::make_unique<Host>(hc, std::move(io[i]), &clock);
      send[i].resize(1 << 20);
      recv[i].resize(1 << 20);
      for (size_t k = 0; k < send[i].size(); ++k) send[i][k] = static_cast<uint8_t>(k * 7 + i);
      PlanConfig pc;
      pc.rank = i;
      pc.num_ranks = 2;
      pc.qps_per_peer = qps;
      pc.max_outstanding = 4;
      pc.rank_ips = {0x0A000002, 0x0A000102};
      pc.next_hop_mac = i ? kMac0 : kMac1;
      pc.peer_recv_bytes = recv[i].size();
      auto tc = ComputedPlan(pc);
      EXPECT_TRUE(tc.ok());
      auto r = UroceTransport::Create(*tc, h[i].get(), send[i], recv[i]);
      EXPECT_TRUE(r.ok());
      t[i] = std::move(*r);
    }
  }
  bool Run(const std::function<bool()>& done, uint32_t rounds = 100000) {
    for (uint32_t k = 0; k < rounds && !done(); ++k) {
      t[0]->Poll(&c[0], 0);
      t[1]->Poll(&c[1], 0);
      clock.Advance(1000);
    }
    return done();
  }
  size_t Count(int i, emu::CompletionKind k) {
    size_t n = 0;
    for (const auto& x : c[i]) n += x.kind == k;
    return n;
  }
  std::shared_ptr<LoopbackWire> wire;
};

TEST(UroceTransport, WritesBothWaysOnEveryQp) {
  Impairment imp;
  imp.drop = 0.02;
  imp.seed = 3;
  Ranks r(imp);
  uint64_t id = 0;
  for (int from = 0; from < 2; ++from) {
    for (uint32_t q = 0; q < 3; ++q) {
      emu::WriteRequest w;
      w.peer = 1 - from;
      w.qp = q;
      w.src_off = q * 100000;
      w.dst_off = q * 200000 + 13;
      w.len = 70000 + q;
      w.imm = 0xABC0 + q;
      w.wr_id = ++id;
      ASSERT_TRUE(r.t[from]->Post(w).ok());
    }
  }
  ASSERT_TRUE(r.Run([&] {
    return r.Count(0, emu::CompletionKind::kWriteDone) == 3 &&
           r.Count(1, emu::CompletionKind::kWriteDone) == 3 &&
           r.Count(0, emu::CompletionKind::kWriteArrived) == 3 &&
           r.Count(1, emu::CompletionKind::kWriteArrived) == 3;
  }));
  for (int to = 0; to < 2; ++to) {
    std::map<uint32_t, emu::Completion> by_qp;
    for (const auto& c : r.c[to])
      if (c.kind == emu::CompletionKind::kWriteArrived) by_qp[c.qp] = c;
    ASSERT_EQ(by_qp.size(), 3u);
    for (uint32_t q = 0; q < 3; ++q) {
      EXPECT_EQ(by_qp[q].peer, static_cast<emu::Rank>(1 - to));
      EXPECT_EQ(by_qp[q].imm, 0xABC0 + q);
      EXPECT_EQ(by_qp[q].len, 70000 + q);
      EXPECT_EQ(0, std::memcmp(r.recv[to].data() + q * 200000 + 13,
                               r.send[1 - to].data() + q * 100000, 70000 + q));
    }
  }
  // Different QPs to one peer take different paths (rxe's per-QP port).
  const auto& qps = r.h[0]->qps();
  EXPECT_NE(qps[0]->base_sport(), qps[1]->base_sport());
}

TEST(UroceTransport, PostRejectsBadRequestsAndQueuesNothing) {
  Ranks r;
  emu::WriteRequest w;
  w.peer = 1;
  w.len = 10;
  EXPECT_FALSE(r.t[0]->Post({.peer = 0, .len = 10}).ok());  // itself
  EXPECT_FALSE(r.t[0]->Post({.peer = 2, .len = 10}).ok());
  EXPECT_FALSE(r.t[0]->Post({.peer = 1, .qp = 3, .len = 10}).ok());
  EXPECT_FALSE(r.t[0]->Post({.peer = 1, .src_off = (1 << 20) - 5, .len = 10}).ok());
  EXPECT_FALSE(r.t[0]->Post({.peer = 1, .dst_off = 1 << 20, .len = 1}).ok());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(r.t[0]->Post(w).ok());
  const Status full = r.t[0]->Post(w);
  EXPECT_FALSE(full.ok());
  EXPECT_NE(full.error().message.find("outstanding"), std::string::npos);
  ASSERT_TRUE(r.Run([&] { return r.Count(0, emu::CompletionKind::kWriteDone) == 4; }));
  EXPECT_EQ(r.Count(1, emu::CompletionKind::kWriteArrived), 4u);
}

// A write of its immediate alone (a collective's clear-to-send, marked for
// the strict-priority class): one packet, no payload, both completions.
TEST(UroceTransport, AnEmptyWriteCarriesItsImmediate) {
  Ranks r;
  ASSERT_TRUE(r.t[0]->Post({.peer = 1, .len = 0, .imm = 0x3FF, .wr_id = 9, .priority = true}).ok());
  ASSERT_TRUE(r.Run([&] {
    return r.Count(0, emu::CompletionKind::kWriteDone) == 1 &&
           r.Count(1, emu::CompletionKind::kWriteArrived) == 1;
  }));
  for (const auto& c : r.c[1]) {
    if (c.kind != emu::CompletionKind::kWriteArrived) continue;
    EXPECT_EQ(c.len, 0u);
    EXPECT_EQ(c.imm, 0x3FFu);
    EXPECT_EQ(c.peer, 0u);
  }
}

TEST(UroceTransport, UnreachablePeerEndsInKError) {
  Impairment imp;
  imp.drop = 1.0;
  Ranks r(imp, 1);
  ASSERT_TRUE(r.t[0]->Post({.peer = 1, .len = 100, .wr_id = 5}).ok());
  ASSERT_TRUE(r.Run([&] { return r.Count(0, emu::CompletionKind::kError) == 1; }));
  EXPECT_NE(r.c[0].back().error.find("retry count exceeded"), std::string::npos);
  EXPECT_FALSE(r.t[0]->Post({.peer = 1, .len = 100}).ok());
}

TEST(UroceTransport, CreateRejectsInconsistentConfigs) {
  ManualClock clock;
  auto lp = MakeLoopbackPair({}, {});
  HostConfig hc;
  Host h(hc, std::move(lp.a), &clock);
  std::vector<uint8_t> s(100), rv(100);
  PlanConfig pc;
  pc.rank = 2;
  pc.num_ranks = 2;
  pc.rank_ips = {1, 2};
  EXPECT_FALSE(ComputedPlan(pc).ok());
  pc.rank = 0;
  pc.rank_ips = {1};
  EXPECT_FALSE(ComputedPlan(pc).ok());
  pc.rank_ips = {1, 2};
  auto tc = ComputedPlan(pc);
  ASSERT_TRUE(tc.ok());
  tc->peers[1].qps.pop_back();  // a peer that lists fewer QPs than asked for
  EXPECT_FALSE(UroceTransport::Create(*tc, &h, s, rv).ok());
  tc->peers.pop_back();
  EXPECT_FALSE(UroceTransport::Create(*tc, &h, s, rv).ok());
}

// What an ofan-rc-1 exchange gives instead of the plan: the peer's own QP
// numbers, PSNs, rkey, buffer address and a smaller path MTU. WRITEs must
// carry the peer's address + offset and rkey, and segment at the smaller MTU.
TEST(UroceTransport, ExplicitPeerValuesAddressThePeersBuffer) {
  ManualClock clock;
  auto lp = MakeLoopbackPair({}, {});
  std::unique_ptr<PacketIo> io[2] = {std::move(lp.a), std::move(lp.b)};
  std::unique_ptr<Host> h[2];
  std::unique_ptr<UroceTransport> t[2];
  std::vector<uint8_t> send[2], recv[2];
  const uint32_t ips[2] = {0x0A000002, 0x0A000102};
  const QpEnd ends[2] = {{0x11, 0xFFFFF0}, {0x77, 0x123}};  // PSN 0xFFFFF0 wraps
  const uint64_t addrs[2] = {0x7F0000000000, 0x10000};
  const uint32_t rkeys[2] = {0x4242, 0x99};
  for (int i = 0; i < 2; ++i) {
    HostConfig hc;
    hc.mac = i ? kMac1 : kMac0;
    hc.ip = ips[i];
    hc.pace_fraction = 0;
    h[i] = std::make_unique<Host>(hc, std::move(io[i]), &clock);
    send[i].assign(1 << 16, static_cast<uint8_t>(0x30 + i));
    recv[i].assign(1 << 16, 0);
  }
  for (int i = 0; i < 2; ++i) {
    TransportConfig tc;
    tc.rank = i;
    tc.num_ranks = 2;
    tc.local_ip = ips[i];
    tc.mtu = i ? 1024 : 4096;
    tc.rkey = rkeys[i];
    tc.addr = addrs[i];
    tc.local_qps.resize(2);
    tc.peers.resize(2);
    tc.local_qps[1 - i] = {ends[i]};
    PeerInfo& p = tc.peers[1 - i];
    p.ip = ips[1 - i];
    p.next_hop_mac = i ? kMac0 : kMac1;
    p.rkey = rkeys[1 - i];
    p.addr = addrs[1 - i];
    p.len = recv[1 - i].size();
    p.mtu = i ? 4096 : 1024;
    p.qps = {ends[1 - i]};
    auto r = UroceTransport::Create(tc, h[i].get(), send[i], recv[i]);
    ASSERT_TRUE(r.ok()) << r.error().message;
    t[i] = std::move(*r);
  }
  ASSERT_TRUE(t[0]->Post({.peer = 1, .src_off = 0, .dst_off = 100, .len = 5000, .imm = 7}).ok());
  std::vector<emu::Completion> c[2];
  for (int k = 0; k < 10000 && c[0].empty(); ++k) {
    t[0]->Poll(&c[0], 0);
    t[1]->Poll(&c[1], 0);
    clock.Advance(1000);
  }
  ASSERT_EQ(c[0].size(), 1u);
  EXPECT_EQ(c[0][0].kind, emu::CompletionKind::kWriteDone);
  ASSERT_EQ(c[1].size(), 1u);
  EXPECT_EQ(c[1][0].imm, 7u);
  EXPECT_EQ(c[1][0].len, 5000u);
  EXPECT_EQ(recv[1][99], 0);
  EXPECT_EQ(recv[1][100], 0x30);
  EXPECT_EQ(recv[1][5099], 0x30);
  EXPECT_EQ(recv[1][5100], 0);
  // 5000 bytes at MTU 1024: five packets, from PSN 0xFFFFF0 on.
  EXPECT_EQ(h[0]->qps()[0]->counters().tx_pkts, 5u);
  EXPECT_EQ(h[1]->qps()[0]->counters().rx_pkts, 5u);
}

}  // namespace
}  // namespace ofan::uroce
