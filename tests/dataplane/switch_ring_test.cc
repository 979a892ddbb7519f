// ofan-dp end to end, in process: golden packets in on ring ports, expected
// packets out on the expected ports (router rewrite, TTL, checksum, ECN,
// priority), LB distribution per policy and Ofan mode, malformed input,
// the exception path (ARP, ICMP to the gateway), PFC, and the control API.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "common/units.h"
#include "dataplane/control_socket.h"
#include "dataplane/control_views.h"
#include "dataplane/packet/builder.h"
#include "dataplane/stages/parse.h"
#include "tests/dataplane/ring_harness.h"
#include "tests/golden/golden.h"

namespace ofan::dp {
namespace {

using pkt::MacAddr;
using pkt::PacketBuilder;
using testing::EdgeK4;
using testing::Frame;
using testing::RingSwitch;

constexpr MacAddr kHostMac{{0x02, 0xAA, 0, 0, 0, 1}};
constexpr uint32_t Ip(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return a << 24 | b << 16 | c << 8 | d;
}

Frame Roce(uint32_t src, uint32_t dst, uint8_t opcode = 0x0A, uint16_t sport = 0xC000,
           uint8_t ttl = 64, uint8_t tos = pkt::ecn::kEct0, uint32_t payload = 512,
           uint32_t qp = 0x111) {
  return PacketBuilder()
      .Eth(MacAddr{{0x02, 0, 0, 0, 0, 0xFE}}, kHostMac)
      .Ipv4(src, dst, ttl, tos)
      .Udp(sport, 4791)
      .Bth(opcode, qp, 1)
      .Payload(payload)
      .Build();
}

TEST(SwitchRing, GoldenRocePacketGoesUpRewrittenWithIcrcIntact) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  ASSERT_TRUE(rs.ok());
  const Frame in = Roce(Ip(10, 0, 0, 2), Ip(10, 3, 1, 3));
  rs.Inject(0, in);
  rs.Run();
  auto out = rs.CollectAll();
  ASSERT_EQ(out.size(), 1u);
  const uint32_t port = out.begin()->first;
  EXPECT_TRUE(port == 2 || port == 3) << port;
  ASSERT_EQ(out.begin()->second.size(), 1u);
  const Frame& f = out.begin()->second[0];
  ASSERT_EQ(f.size(), in.size());
  // Ethernet: dst = next hop (peer_mac), src = the output port's MAC.
  const MacAddr peer{{0x02, 0xEE, 0, 0, 0, static_cast<uint8_t>(port)}};
  EXPECT_TRUE(std::equal(f.begin(), f.begin() + 6, peer.b.begin()));
  EXPECT_FALSE(std::equal(f.begin() + 6, f.begin() + 12, kHostMac.b.begin()));
  EXPECT_EQ(f[14 + 8], 63);                     // TTL - 1
  EXPECT_EQ(pkt::Ipv4Checksum(&f[14], 20), 0);  // checksum still valid
  EXPECT_TRUE(std::equal(f.begin() + 14 + 9, f.end(), in.begin() + 14 + 9,
                         [&](uint8_t, uint8_t) { return true; }));
  EXPECT_TRUE(std::equal(f.end() - 4, f.end(), in.end() - 4));        // ICRC unchanged
  EXPECT_TRUE(std::equal(f.begin() + 34, f.end(), in.begin() + 34));  // UDP, BTH, payload unchanged
  EXPECT_EQ(rs.Counter(Counter::kForwardedUp), 1u);
  EXPECT_EQ(rs.Counter(Counter::kTxPackets), 1u);
}

// Every frame of tests/golden/stages.golden (made by scapy, independently of
// this code) through a whole switch, the one the fixture names: it leaves
// on one of the fixture's ports as exactly the fixture's bytes, or is
// dropped and counted under the fixture's reason; nothing else comes out.
TEST(SwitchRing, GoldenFramesThroughTheWholeSwitch) {
  const auto& file = golden::Fixture("stages.golden");
  ASSERT_TRUE(file.ok()) << file.error().message;
  size_t checked = 0;
  for (const golden::Frame& f : file->frames) {
    SCOPED_TRACE(f.name);
    const golden::Switch* gs = file->FindSwitch(f.Str("switch"));
    ASSERT_NE(gs, nullptr);
    DpConfig c;
    c.k = gs->k;
    c.levels = gs->levels;
    c.switch_id = gs->id;
    c.max_sleep_us = 0;
    auto kind = lb::ParsePolicy(gs->policy);
    ASSERT_TRUE(kind.ok());
    c.policy.kind = *kind;
    std::vector<uint32_t> ports;
    for (const golden::Port& gp : gs->ports) {
      PortConfig pc;
      pc.port = gp.port;
      pc.mac = gp.mac;
      pc.peer_mac = gp.peer;
      c.ports.push_back(pc);
      ports.push_back(gp.port);
    }
    RingSwitch rs(c, ports);
    ASSERT_TRUE(rs.ok());
    rs.Inject(static_cast<uint32_t>(f.Num("in_port")), f.in);
    rs.Run();
    const auto out = rs.CollectAll();
    const std::string route = f.Str("route");
    // What the switch answers itself (ICMP errors, echo replies): exactly
    // the fixture's reply lines, on the port the frame came from.
    std::map<uint32_t, std::vector<Frame>> replies;
    for (const golden::Output& o : f.reply) replies[o.port].push_back(o.bytes);
    if (f.Has("drop")) {
      EXPECT_EQ(out, replies);
      const std::string want = f.Str("drop");
      size_t i = 0;
      while (i < kNumCounters && kCounterNames[i] != want) ++i;
      ASSERT_LT(i, kNumCounters) << "no counter " << want;
      EXPECT_EQ(rs.Counter(static_cast<Counter>(i)), 1u) << want;
      EXPECT_EQ(rs.Counter(Counter::kIcmpErrorSent), f.reply.size()) << "ICMP errors sent";
    } else if (route == "local") {
      // To the switch itself: answered on the port it came from, never
      // forwarded.
      EXPECT_EQ(out, replies);
    } else {
      ASSERT_FALSE(f.out.empty());
      ASSERT_EQ(out.size(), 1u);
      const auto& [port, frames] = *out.begin();
      ASSERT_EQ(frames.size(), 1u);
      bool matched = false;
      for (const golden::Output& o : f.out) {
        if (o.port == port) {
          EXPECT_EQ(frames[0], o.bytes) << "on port " << port;
          matched = true;
        }
      }
      EXPECT_TRUE(matched) << "left on port " << port << ", which the fixture does not allow";
    }
    ++checked;
  }
  EXPECT_GE(checked, 10u);
}

TEST(SwitchRing, DownRouteToTheHostPort) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  rs.Inject(3, Roce(Ip(10, 2, 0, 2), Ip(10, 0, 0, 3)));
  rs.Inject(2, Roce(Ip(10, 2, 0, 2), Ip(10, 0, 0, 2)));
  rs.Run();
  EXPECT_EQ(rs.Collect(1).size(), 1u);
  EXPECT_EQ(rs.Collect(0).size(), 1u);
  EXPECT_EQ(rs.Counter(Counter::kForwardedDown), 2u);
}

// The per-packet pass is compiled per switch role: aggregation and core
// switches route down by pod/edge and up through the LB.
TEST(SwitchRing, AggregationAndCoreSwitchesRoute) {
  const lb::FatTree t = *lb::FatTree::Make(4, 3);
  DpConfig agg = EdgeK4();
  agg.switch_id = t.agg(1, 0).value();  // ports 0,1: edges 0,1 of pod 1; ports 2,3: cores
  RingSwitch ra(agg, {0, 1, 2, 3});
  ASSERT_TRUE(ra.ok());
  ra.Inject(2, Roce(Ip(10, 0, 0, 2), Ip(10, 1, 1, 3)));  // from a core, down to edge 1
  for (uint16_t i = 0; i < 8; ++i)
    ra.Inject(0, Roce(Ip(10, 1, 0, 2), Ip(10, 3, 0, 2), 0x0A, i));  // up
  ra.Run();
  const auto down = ra.Collect(1);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0][14 + 8], 63);
  EXPECT_EQ(ra.Collect(2).size() + ra.Collect(3).size(), 8u);
  EXPECT_EQ(ra.Counter(Counter::kForwardedDown), 1u);
  EXPECT_EQ(ra.Counter(Counter::kForwardedUp), 8u);

  DpConfig core = EdgeK4();
  core.switch_id = t.core(0).value();  // port p: pod p
  RingSwitch rc(core, {0, 1, 2, 3});
  ASSERT_TRUE(rc.ok());
  rc.Inject(0, Roce(Ip(10, 0, 0, 2), Ip(10, 2, 1, 3)));
  rc.Inject(3, Roce(Ip(10, 3, 0, 2), Ip(10, 9, 1, 3)));  // no such pod: no route
  rc.Run();
  EXPECT_EQ(rc.Collect(2).size(), 1u);
  EXPECT_EQ(rc.Counter(Counter::kDropNoRoute), 1u);
}

TEST(SwitchRing, MalformedAndUnroutableAreCountedNeverForwarded) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  const Frame good = Roce(Ip(10, 0, 0, 2), Ip(10, 3, 1, 3));
  rs.Inject(0, {});                                      // empty
  rs.Inject(0, Frame(good.begin(), good.begin() + 30));  // truncated IPv4
  rs.Inject(0, PacketBuilder().Eth(MacAddr{}, kHostMac, 0x88B5).Payload(60).Build());  // unknown
  rs.Inject(
      0, PacketBuilder().Eth(MacAddr{}, kHostMac).Ipv4(1, 2).Payload(30).KeepIpChecksum(7).Build());
  rs.Inject(0, Roce(Ip(10, 0, 0, 2), Ip(11, 0, 0, 2)));                      // outside the fabric
  rs.Inject(0, Roce(Ip(10, 0, 0, 2), Ip(10, 3, 1, 3), 0x0A, 1, /*ttl=*/1));  // expires here
  rs.Run();
  // Nothing forwarded; only the Time Exceeded for the expired one, back on
  // its port.
  const auto out = rs.CollectAll();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out.count(0), 1u);
  ASSERT_EQ(out.at(0).size(), 1u);
  EXPECT_EQ(out.at(0)[0][14 + 20], pkt::icmp::kTimeExceeded);
  EXPECT_EQ(rs.Counter(Counter::kIcmpErrorSent), 1u);
  EXPECT_EQ(rs.Counter(Counter::kDropRunt), 1u);
  EXPECT_EQ(rs.Counter(Counter::kDropIpv4TotalLength) + rs.Counter(Counter::kDropIpv4Truncated),
            1u);
  EXPECT_EQ(rs.Counter(Counter::kDropUnknownEthertype), 1u);
  EXPECT_EQ(rs.Counter(Counter::kDropIpv4Checksum), 1u);
  EXPECT_EQ(rs.Counter(Counter::kDropNoRoute), 1u);
  EXPECT_EQ(rs.Counter(Counter::kDropTtlExceeded), 1u);
  EXPECT_EQ(rs.Counter(Counter::kRxPackets), 6u);
}

TEST(SwitchRing, RandomGarbageNeverCrashesAndIsAllAccountedFor) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  Rng rng(42);
  const Frame good = Roce(Ip(10, 0, 0, 2), Ip(10, 3, 1, 3));
  uint64_t injected = 0;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 50; ++i) {
      Frame f = good;
      const int flips = 1 + static_cast<int>(rng.Below(8));
      for (int j = 0; j < flips; ++j)
        f[rng.Below(static_cast<uint32_t>(f.size()))] ^= static_cast<uint8_t>(1 + rng.Below(255));
      if (rng.Below(4) == 0) f.resize(rng.Below(static_cast<uint32_t>(f.size())));
      rs.Inject(rng.Below(4), f);
      ++injected;
    }
    rs.Run();
    rs.CollectAll();
  }
  const Counters c = rs.sw().TotalCounters();
  uint64_t drops = 0;
  for (size_t i = 0; i < kNumCounters; ++i) {
    if (IsDrop(static_cast<Counter>(i))) drops += c.v[i];
  }
  EXPECT_EQ(c.Get(Counter::kRxPackets), injected);
  EXPECT_EQ(c.Get(Counter::kTxPackets) + drops + c.Get(Counter::kException), injected);
}

// A poll takes up to a vector of packets, an equal share per port: a busy
// port cannot starve the others, and frames keep their order across polls.
// The UDP source port the tests below number their frames with.
uint16_t Sport(const Frame& f) { return static_cast<uint16_t>(f[34] << 8 | f[35]); }

// `count` frames on each of ports 0..nports-1, numbered port * 1000 + i in
// their source port, all to host 10.0.0.2 (port 0) or, from port 0, to
// 10.0.0.3 (port 1).
void LoadNumbered(RingSwitch& rs, uint32_t nports, uint16_t count) {
  for (uint32_t port = 0; port < nports; ++port) {
    const uint32_t dst = port == 0 ? Ip(10, 0, 0, 3) : Ip(10, 0, 0, 2);
    for (uint16_t i = 0; i < count; ++i) {
      rs.Inject(port, Roce(Ip(10, 3, 1, 2), dst, 0x0A, static_cast<uint16_t>(port * 1000 + i), 64,
                           0, 64));
    }
  }
}

TEST(SwitchRing, OnePollTakesAFairShareOfEveryPortInOrder) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});  // one pipe of 4 ports: share 256 / 4
  ASSERT_TRUE(rs.ok());
  for (uint16_t i = 0; i < 200; ++i)
    rs.Inject(0, Roce(Ip(10, 0, 0, 2), Ip(10, 0, 0, 3), 0x0A, i, 64, 0, 64));
  for (uint16_t i = 0; i < 5; ++i)
    rs.Inject(2, Roce(Ip(10, 2, 0, 2), Ip(10, 0, 0, 2), 0x0A, i, 64, 0, 64));
  // Every port its share first (64 and the quiet port's 5); the room the
  // quiet ports left then goes to the busy one, one more share at most.
  EXPECT_EQ(rs.sw().PollWorker(0), 64u + 5u + 64u);
  const auto quiet = rs.Collect(0);
  EXPECT_EQ(quiet.size(), 5u);  // the quiet port went in the same vector
  auto busy = rs.Collect(1);
  EXPECT_EQ(busy.size(), 128u);
  rs.Run();
  const auto rest = rs.Collect(1);
  busy.insert(busy.end(), rest.begin(), rest.end());
  ASSERT_EQ(busy.size(), 200u);
  for (uint16_t i = 0; i < 200; ++i)
    EXPECT_EQ(Sport(busy[i]), i) << "frame " << i << " out of order";
}

TEST(SwitchRing, EveryBusyPortGetsExactlyItsShare) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  ASSERT_TRUE(rs.ok());
  LoadNumbered(rs, 4, 100);
  // A full vector, 64 from each port: no room for a second share.
  EXPECT_EQ(rs.sw().PollWorker(0), 256u);
  const auto to_port0 = rs.Collect(0);
  ASSERT_EQ(to_port0.size(), 3u * 64u);
  std::map<uint32_t, uint32_t> per_ingress;
  for (const Frame& f : to_port0) ++per_ingress[Sport(f) / 1000];
  EXPECT_EQ(per_ingress[1], 64u);
  EXPECT_EQ(per_ingress[2], 64u);
  EXPECT_EQ(per_ingress[3], 64u);
  EXPECT_EQ(rs.Collect(1).size(), 64u);
}

TEST(SwitchRing, LeftoverRoomGoesRoundRobinToTheBusyPorts) {
  // Three busy ports and a quiet one: every poll takes 64 from each busy
  // port and shares the 64 left over, a burst of 32 at a time, round robin.
  // Over 6 polls each busy port gets the same, in order.
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  ASSERT_TRUE(rs.ok());
  LoadNumbered(rs, 3, 600);
  std::map<uint32_t, std::vector<uint16_t>>
      seen;  // ingress port -> sequence numbers, in output order
  for (int poll = 0; poll < 6; ++poll) {
    EXPECT_EQ(rs.sw().PollWorker(0), 256u) << "poll " << poll;
    for (uint32_t out : {0u, 1u}) {  // collected every poll: the output rings never fill
      for (const Frame& f : rs.Collect(out)) {
        seen[Sport(f) / 1000].push_back(Sport(f) % 1000);
      }
    }
  }
  for (uint32_t port = 0; port < 3; ++port) {
    // 6 x 64 from the shares, and 6 x 64 / 3 from the room.
    ASSERT_EQ(seen[port].size(), 6u * 64u + 128u) << "port " << port;
    for (size_t i = 0; i < seen[port].size(); ++i) ASSERT_EQ(seen[port][i], i) << "port " << port;
  }
}

TEST(SwitchRing, OfanSendsEachKeyRoundRobinOverTheUplinks) {
  for (LbChoice lb : {LbChoice{lb::PolicyKind::kOfan, OfanMode::kCombined},
                      LbChoice{lb::PolicyKind::kOfan, OfanMode::kAtomic},
                      LbChoice{lb::PolicyKind::kPofan, OfanMode::kCombined}}) {
    DpConfig c = EdgeK4();
    c.set_lb(lb);
    RingSwitch rs(c, {0, 1, 2, 3});
    // 40 data packets to one destination edge, from both hosts (pipe 0).
    for (int i = 0; i < 40; ++i) {
      rs.Inject(i % 2,
                Roce(Ip(10, 0, 0, 2 + i % 2), Ip(10, 1, 0, 2), 0x0A, static_cast<uint16_t>(i)));
    }
    rs.Run();
    EXPECT_EQ(rs.Collect(2).size(), 20u) << lb::PolicyName(lb.kind) << ReportedOfanMode(lb);
    EXPECT_EQ(rs.Collect(3).size(), 20u) << lb::PolicyName(lb.kind) << ReportedOfanMode(lb);
  }
}

TEST(SwitchRing, OfanExactlyOncePerRoundPerKeyOnAWiderSwitch) {
  // k=8 edge: 4 uplinks (ports 4..7). Every 4 consecutive packets of a key
  // take all 4 uplinks, whatever else is interleaved.
  DpConfig c;
  c.k = 8;
  c.switch_id = 0;
  c.policy.kind = lb::PolicyKind::kOfan;
  c.ofan_mode = OfanMode::kCombined;
  RingSwitch rs(c, {0, 1, 2, 3, 4, 5, 6, 7});
  std::map<uint32_t, std::vector<uint32_t>> ports_by_dst;  // dst edge -> uplink sequence
  for (int round = 0; round < 10; ++round) {
    for (uint32_t d = 1; d <= 3; ++d) {
      for (int i = 0; i < 4; ++i) {
        rs.Inject(static_cast<uint32_t>(i),
                  Roce(Ip(10, 0, 0, 2 + static_cast<uint32_t>(i)), Ip(10, d, 0, 2)));
      }
    }
    rs.Run();
    for (uint32_t p = 4; p < 8; ++p) {
      for (const Frame& f : rs.Collect(p)) ports_by_dst[f[14 + 17]].push_back(p);  // dst pod byte
    }
  }
  ASSERT_EQ(ports_by_dst.size(), 3u);
  for (auto& [d, seq] : ports_by_dst) {
    ASSERT_EQ(seq.size(), 40u);
    std::map<uint32_t, int> count;
    for (uint32_t p : seq) ++count[p];
    for (uint32_t p = 4; p < 8; ++p) EXPECT_EQ(count[p], 10) << "dst " << d << " uplink " << p;
  }
}

TEST(SwitchRing, PofanTablesArePerPipe) {
  // k=8 edge, pipe_size 2: hosts on ports 0,1 are pipe 0 and 2,3 pipe 1.
  // Each pipe's packets of one key rotate over the 4 uplinks on their own.
  DpConfig c;
  c.k = 8;
  c.switch_id = 0;
  c.policy.kind = lb::PolicyKind::kPofan;
  c.pipe_size = c.policy.pipe_size = 2;
  RingSwitch rs(c, {0, 1, 2, 3, 4, 5, 6, 7});
  std::map<uint32_t, int> pipe0, pipe1;
  for (int i = 0; i < 8; ++i)
    rs.Inject(0, Roce(Ip(10, 0, 0, 2), Ip(10, 5, 1, 2), 0x0A, static_cast<uint16_t>(i)));
  rs.Run();
  for (uint32_t p = 4; p < 8; ++p) pipe0[p] = static_cast<int>(rs.Collect(p).size());
  for (int i = 0; i < 8; ++i)
    rs.Inject(2, Roce(Ip(10, 0, 0, 4), Ip(10, 5, 1, 2), 0x0A, static_cast<uint16_t>(i)));
  rs.Run();
  for (uint32_t p = 4; p < 8; ++p) pipe1[p] = static_cast<int>(rs.Collect(p).size());
  for (uint32_t p = 4; p < 8; ++p) {
    EXPECT_EQ(pipe0[p], 2) << p;
    EXPECT_EQ(pipe1[p], 2) << p;
  }
}

TEST(SwitchRing, CombinedAndAtomicHandOutTheSameMultisetOfPorts) {
  std::map<uint32_t, int> got[2];
  for (int m = 0; m < 2; ++m) {
    DpConfig c;
    c.k = 8;
    c.switch_id = 0;
    c.policy.kind = lb::PolicyKind::kOfan;
    c.ofan_mode = m == 0 ? OfanMode::kCombined : OfanMode::kAtomic;
    RingSwitch rs(c, {0, 1, 2, 3, 4, 5, 6, 7});
    Rng rng(7);
    for (int i = 0; i < 300; ++i) {
      const uint32_t d = 1 + rng.Below(7);
      const bool ack = rng.Below(4) == 0;
      // One draw per statement: the order of a call's arguments is the compiler's.
      const uint32_t in_port = rng.Below(4), host = rng.Below(4);
      rs.Inject(in_port, Roce(Ip(10, 0, 0, 2), Ip(10, d, host, 2), ack ? 0x11 : 0x0A));
      if (i % 37 == 0) rs.Run();
    }
    rs.Run();
    for (uint32_t p = 4; p < 8; ++p) {
      for (const Frame& f : rs.Collect(p)) ++got[m][p * 1000 + f[14 + 17] * 10 + (f[42] == 0x11)];
    }
  }
  EXPECT_EQ(got[0], got[1]);
}

// Edge switch 0 of a k=8 fat tree under policy `kind` (ports 0-3 hosts,
// 4-7 uplinks).
DpConfig EdgeK8(int kind) {
  DpConfig c;
  c.k = 8;
  c.switch_id = 0;
  c.policy.kind = static_cast<lb::PolicyKind>(kind);
  return c;
}

// Destination edge 17 (pod 4, edge 1: 10.4.1.x) may only use the uplinks in
// `mask`; every other destination all four.
::testing::AssertionResult RestrictEdge17(RingSwitch& rs, lb::PortMask mask) {
  std::vector<lb::PortMask> masks(32, 0xF);
  masks[17] = mask;
  if (const auto st = rs.sw().LoadMasks(masks); !st) {
    return ::testing::AssertionFailure() << st.error().message;
  }
  return ::testing::AssertionSuccess();
}

TEST(SwitchRing, EveryPolicyForwardsOnlyOnValidUplinks) {
  for (int kind = 0; kind < lb::kNumPolicyKinds; ++kind) {
    const DpConfig c = EdgeK8(kind);
    RingSwitch rs(c, {0, 1, 2, 3, 4, 5, 6, 7});
    ASSERT_TRUE(RestrictEdge17(rs, 0b1010));  // uplinks 1 and 3
    for (int i = 0; i < 64; ++i) {
      rs.Inject(i % 4,
                Roce(Ip(10, 0, 0, 2), Ip(10, 4, 1, 2), 0x0A, static_cast<uint16_t>(i * 977)));
    }
    rs.Run();
    const auto name = lb::PolicyName(c.policy.kind);
    EXPECT_EQ(rs.Collect(4).size() + rs.Collect(6).size(), 0u) << name;
    EXPECT_EQ(rs.Collect(5).size() + rs.Collect(7).size(), 64u) << name;
  }
}

// IPv4 fragments are forwarded under every policy, each datagram's
// fragments on one valid uplink (per-packet policies too), counted.
TEST(SwitchRing, EveryPolicyKeepsADatagramsFragmentsOnOnePath) {
  for (int kind = 0; kind < lb::kNumPolicyKinds; ++kind) {
    const DpConfig c = EdgeK8(kind);
    const auto name = lb::PolicyName(c.policy.kind);
    RingSwitch rs(c, {0, 1, 2, 3, 4, 5, 6, 7});
    ASSERT_TRUE(RestrictEdge17(rs, 0b1101));  // uplinks 0, 2, 3 (ports 4, 6, 7)
    constexpr int kDatagrams = 16, kFragments = 4;
    for (int f = 0; f < kFragments; ++f) {
      for (int id = 0; id < kDatagrams; ++id) {
        Frame fr = PacketBuilder()
                       .Eth(MacAddr{}, kHostMac)
                       .Ipv4(Ip(10, 0, 0, 2), Ip(10, 4, 1, 2), 64, 0, pkt::ipproto::kUdp)
                       .Payload(64, static_cast<uint8_t>(id))
                       .Build();
        fr[14 + 4] = 0;
        fr[14 + 5] = static_cast<uint8_t>(id);  // the datagram's IP id
        const uint16_t frag = static_cast<uint16_t>((f < kFragments - 1 ? 0x2000 : 0) | f * 8);
        fr[14 + 6] = static_cast<uint8_t>(frag >> 8);
        fr[14 + 7] = static_cast<uint8_t>(frag);
        pkt::SetIpv4Checksum20(&fr[14]);
        rs.Inject(0, fr);
      }
    }
    rs.Run();
    std::map<int, std::set<uint32_t>> ports_of;  // datagram -> ports its fragments left by
    size_t n = 0;
    for (const auto& [port, frames] : rs.CollectAll()) {
      for (const Frame& fr : frames) {
        ports_of[fr[14 + 5]].insert(port);
        ++n;
      }
      EXPECT_NE(port, 5u) << name << ": uplink 1 is not valid";
    }
    EXPECT_EQ(n, static_cast<size_t>(kDatagrams * kFragments)) << name;
    std::set<uint32_t> used;
    for (const auto& [id, ports] : ports_of) {
      EXPECT_EQ(ports.size(), 1u) << name << ": datagram " << id;
      used.insert(ports.begin(), ports.end());
    }
    EXPECT_GE(used.size(), 2u) << name << ": datagrams spread over the uplinks";
    EXPECT_EQ(rs.Counter(Counter::kForwardedFragment), static_cast<uint64_t>(n)) << name;
    EXPECT_EQ(rs.Counter(Counter::kForwardedUp), static_cast<uint64_t>(n)) << name;
  }
}

TEST(SwitchRing, AdminDownUplinkIsSkippedAndDownPortDrops) {
  DpConfig c = EdgeK4();
  RingSwitch rs(c, {0, 1, 2, 3});
  ASSERT_TRUE(rs.sw().SetPortAdmin(3, false).ok());
  for (int i = 0; i < 10; ++i)
    rs.Inject(0, Roce(Ip(10, 0, 0, 2), Ip(10, 2, 0, 2), 0x0A, static_cast<uint16_t>(i)));
  ASSERT_TRUE(rs.sw().SetPortAdmin(1, false).ok());
  rs.Inject(2, Roce(Ip(10, 2, 0, 2), Ip(10, 0, 0, 3)));  // to the host behind the downed port
  rs.Run();
  EXPECT_EQ(rs.Collect(2).size(), 10u);
  EXPECT_EQ(rs.Collect(3).size(), 0u);
  EXPECT_EQ(rs.Counter(Counter::kDropPortDown), 1u);
  ASSERT_TRUE(rs.sw().SetPortAdmin(2, false).ok());  // no uplink left
  rs.Inject(0, Roce(Ip(10, 0, 0, 2), Ip(10, 2, 0, 2)));
  rs.Run();
  EXPECT_EQ(rs.Counter(Counter::kDropNoUplink), 1u);
  EXPECT_FALSE(rs.sw().SetPortAdmin(9, false).ok());
}

// A cut wire is a silent failure: the switch still balances over the port,
// counts what it sends there as sent and as lost, and nothing arrives.
TEST(SwitchRing, CutWireLosesWhatThePortSendsAndTheSwitchKeepsUsingIt) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  ASSERT_TRUE(rs.sw().SetPortWire(3, true).ok());
  for (int i = 0; i < 10; ++i)
    rs.Inject(0, Roce(Ip(10, 0, 0, 2), Ip(10, 2, 0, 2), 0x0A, static_cast<uint16_t>(i)));
  rs.Run();
  const size_t via2 = rs.Collect(2).size();
  EXPECT_EQ(rs.Collect(3).size(), 0u);
  EXPECT_EQ(via2, 5u);  // Ofan alternates over both uplinks: the cut one too
  EXPECT_EQ(rs.Counter(Counter::kDropLinkLoss), 5u);
  EXPECT_EQ(rs.Counter(Counter::kTxPackets), 10u);
  auto ports = HandleControlRequest(rs.sw(), R"({"v":1,"cmd":"ports"})")["result"];
  EXPECT_EQ(ports[3]["wire"], "cut");
  EXPECT_EQ(ports[3]["admin"], "up");
  EXPECT_EQ(ports[2]["wire"], "ok");
  // Whole again (through the control socket): everything arrives.
  auto r = HandleControlRequest(rs.sw(), R"({"v":1,"cmd":"set_port","port":3,"wire":"ok"})");
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(r["result"][3]["wire"], "ok");
  for (int i = 0; i < 10; ++i)
    rs.Inject(0, Roce(Ip(10, 0, 0, 2), Ip(10, 2, 0, 2), 0x0A, static_cast<uint16_t>(i)));
  rs.Run();
  EXPECT_EQ(rs.Collect(2).size() + rs.Collect(3).size(), 10u);
  EXPECT_EQ(rs.Counter(Counter::kDropLinkLoss), 5u);
  EXPECT_FALSE(rs.sw().SetPortWire(9, true).ok());
}

TEST(SwitchRing, EcnMarksEctPacketsAboveTheThreshold) {
  DpConfig c = EdgeK4();
  c.egress.rate_gbps = 0.001;  // the queue cannot drain during the test
  c.egress.ecn_bytes = 4096;
  c.egress.buffer_bytes = 1 << 20;
  c.egress.priority_control = false;
  RingSwitch rs(c, {0, 1, 2, 3});
  for (int i = 0; i < 20; ++i) {
    rs.Inject(2, Roce(Ip(10, 1, 0, 2), Ip(10, 0, 0, 2), 0x0A, 1, 64,
                      i % 2 ? pkt::ecn::kEct0 : pkt::ecn::kNotEct, 1000));
  }
  rs.Run(3);
  const uint64_t marked = rs.Counter(Counter::kEcnMarked);
  EXPECT_GE(marked, 6u);   // ECT packets beyond ~4 KB of backlog
  EXPECT_LE(marked, 10u);  // never the Not-ECT ones
  c.egress.rate_gbps = 0;
}

TEST(SwitchRing, TailDropAtTheBufferLimitAndAccountingReturnsToZero) {
  DpConfig c = EdgeK4();
  c.egress.rate_gbps = 0.001;
  c.egress.buffer_bytes = 8 * kKiB;
  RingSwitch rs(c, {0, 1, 2, 3});
  for (int i = 0; i < 30; ++i)
    rs.Inject(2, Roce(Ip(10, 1, 0, 2), Ip(10, 0, 0, 2), 0x0A, 1, 64, 2, 1000));
  rs.Run(3);
  const uint64_t drops = rs.Counter(Counter::kDropBufferFull);
  EXPECT_GE(drops, 20u);
  auto q = QueuesJson(rs.sw().TakeSnapshot());
  for (const auto& e : q) {
    if (e["port"] == 0) {
      EXPECT_LE(e["bytes"].get<uint64_t>(), 8u * 1024);
      EXPECT_LE(e["max_bytes"].get<uint64_t>(), 8u * 1024);
      EXPECT_EQ(e["drops_buffer"].get<uint64_t>(), drops);
    }
  }
}

TEST(SwitchRing, QueueAccountingReturnsToZeroOnceDrained) {
  DpConfig c = EdgeK4();
  c.egress.rate_gbps = 2;  // ~120 KB of frames take ~0.5 ms: a queue builds, then drains
  RingSwitch rs(c, {0, 1, 2, 3});
  for (int i = 0; i < 200; ++i) {
    rs.Inject(static_cast<uint32_t>(i % 4),
              Roce(Ip(10, 1, 0, 2), Ip(10, 0, 0, 2 + static_cast<uint32_t>(i % 2))));
  }
  size_t out = 0;
  for (int t = 0; t < 1000 && out < 200; ++t) {
    rs.Run(4);
    out += rs.Collect(0).size() + rs.Collect(1).size();
    rte_delay_us_block(20);
  }
  EXPECT_EQ(out, 200u);
  for (const auto& e : QueuesJson(rs.sw().TakeSnapshot())) {
    EXPECT_EQ(e["bytes"].get<uint64_t>(), 0u) << e.dump();
    EXPECT_EQ(e["packets"].get<uint64_t>(), 0u) << e.dump();
  }
  uint64_t maxb = 0;
  for (const auto& e : QueuesJson(rs.sw().TakeSnapshot()))
    maxb = std::max(maxb, e["max_bytes"].get<uint64_t>());
  EXPECT_GT(maxb, 0u);
  EXPECT_TRUE(HandleControlRequest(rs.sw(), R"({"v":1,"cmd":"reset_queues"})")["ok"].get<bool>());
  for (const auto& e : QueuesJson(rs.sw().TakeSnapshot()))
    EXPECT_EQ(e["max_bytes"].get<uint64_t>(), 0u);
}

TEST(SwitchRing, StrictPriorityForAcksOverQueuedData) {
  DpConfig c = EdgeK4();
  c.egress.rate_gbps = 0.05;  // ~1 data frame per 100 us
  RingSwitch rs(c, {0, 1, 2, 3});
  for (int i = 0; i < 24; ++i)
    rs.Inject(2, Roce(Ip(10, 1, 0, 2), Ip(10, 0, 0, 2), 0x0A, 1, 64, 2, 1000));
  rs.Run(2);  // the bucket's initial credit lets a few frames go at once
  for (int i = 0; i < 4; ++i)
    rs.Inject(3, Roce(Ip(10, 1, 0, 2), Ip(10, 0, 0, 2), pkt::bth_opcode::kRcAck, 2, 64, 0, 0));
  std::vector<Frame> out;
  for (int t = 0; t < 2000 && out.size() < 28; ++t) {
    rs.Run(1);
    for (auto& f : rs.Collect(0)) out.push_back(f);
    rte_delay_us_block(50);
  }
  ASSERT_EQ(out.size(), 28u);
  // The 4 ACKs overtake the data still queued when they arrived.
  int last_ack = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i][42] == pkt::bth_opcode::kRcAck) last_ack = static_cast<int>(i);
  }
  EXPECT_GE(last_ack, 3);
  EXPECT_LT(last_ack, 16) << "ACKs waited behind queued data";
  EXPECT_GE(rs.Counter(Counter::kPriorityQueued), 4u);
}

TEST(SwitchRing, ArpForTheGatewayIsAnsweredAndTheHostLearned) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  const MacAddr bcast{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}};
  const MacAddr h1{{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}};
  rs.Inject(1, PacketBuilder()
                   .Eth(bcast, h1)
                   .Arp(1, h1, Ip(10, 0, 0, 3), MacAddr{}, Ip(10, 0, 0, 1))
                   .PadTo(60)
                   .Build());
  rs.Run();
  auto reply = rs.Collect(1);
  ASSERT_EQ(reply.size(), 1u);
  const pkt::ArpHdr a = pkt::Load<pkt::ArpHdr>(reply[0].data() + 14);
  EXPECT_EQ(a.oper.host(), 2);
  EXPECT_EQ(a.spa.host(), Ip(10, 0, 0, 1));
  EXPECT_EQ(a.tpa.host(), Ip(10, 0, 0, 3));
  EXPECT_EQ(a.tha, h1);
  // The host's MAC is now the next hop for traffic to it.
  rs.Inject(2, Roce(Ip(10, 2, 0, 2), Ip(10, 0, 0, 3)));
  rs.Run();
  auto down = rs.Collect(1);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_TRUE(std::equal(h1.b.begin(), h1.b.end(), down[0].begin()));
  // The host comes back with another MAC (a gratuitous ARP): the workers'
  // MAC tables follow, from the next vector on.
  const MacAddr h2{{0x02, 0x66, 0x77, 0x88, 0x99, 0xAA}};
  rs.Inject(1, PacketBuilder()
                   .Eth(bcast, h2)
                   .Arp(2, h2, Ip(10, 0, 0, 3), bcast, Ip(10, 0, 0, 3))
                   .PadTo(60)
                   .Build());
  rs.Run();
  (void)rs.Collect(1);
  rs.Inject(2, Roce(Ip(10, 2, 0, 2), Ip(10, 0, 0, 3)));
  rs.Run();
  down = rs.Collect(1);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_TRUE(std::equal(h2.b.begin(), h2.b.end(), down[0].begin()));
  EXPECT_EQ(rs.Counter(Counter::kNeighborUnknown), 0u);
}

TEST(SwitchRing, PingToTheGatewayIsAnswered) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  rs.Inject(0, PacketBuilder()
                   .Eth(MacAddr{}, kHostMac)
                   .Ipv4(Ip(10, 0, 0, 2), Ip(10, 0, 0, 1))
                   .Icmp(8, 9, 1)
                   .Payload(32)
                   .Build());
  rs.Run();
  auto r = rs.Collect(0);
  ASSERT_EQ(r.size(), 1u);
  const ParsedPacket p = ParseFrame(r[0].data(), static_cast<uint32_t>(r[0].size()));
  EXPECT_EQ(p.verdict, Verdict::kForward);
  EXPECT_EQ(p.dst_ip, Ip(10, 0, 0, 2));
  EXPECT_EQ(p.src_ip, Ip(10, 0, 0, 1));
  EXPECT_EQ(r[0][34], 0);  // echo reply
  EXPECT_EQ(pkt::Ipv4Checksum(&r[0][34], static_cast<uint32_t>(r[0].size() - 34)), 0);
}

TEST(SwitchRing, ReceivedPfcPausesTheNormalQueueButNotPriority) {
  DpConfig c = EdgeK4();
  RingSwitch rs(c, {0, 1, 2, 3});
  // Pause port 0's class 3 for 0xFFFF quanta (about 3.4 ms at 10 Gb/s).
  rs.Inject(0,
            PacketBuilder().Eth(pkt::kPfcDstMac, kHostMac).Pfc(1u << 3, 0xFFFF).PadTo(60).Build());
  rs.Run();
  for (int i = 0; i < 4; ++i) rs.Inject(2, Roce(Ip(10, 1, 0, 2), Ip(10, 0, 0, 2)));
  rs.Inject(2, Roce(Ip(10, 1, 0, 2), Ip(10, 0, 0, 2), pkt::bth_opcode::kRcAck, 2, 64, 0, 0));
  rs.Run();
  auto during = rs.Collect(0);
  ASSERT_EQ(during.size(), 1u);  // only the ACK (priority queue) passes
  EXPECT_EQ(during[0][42], pkt::bth_opcode::kRcAck);
  EXPECT_EQ(rs.Counter(Counter::kPfcRx), 1u);
  // Resume (quanta 0).
  rs.Inject(0, PacketBuilder().Eth(pkt::kPfcDstMac, kHostMac).Pfc(1u << 3, 0).PadTo(60).Build());
  rs.Run();
  EXPECT_EQ(rs.Collect(0).size(), 4u);
}

// Runs `step` every 100 us until `done` or `rounds` have passed.
template <class Step, class Done>
void Poll(int rounds, Step&& step, Done&& done) {
  for (int t = 0; t < rounds && !done(); ++t) {
    step();
    rte_delay_us_block(100);
  }
}

// A RoCE request of QP `qp` with PSN `psn` from 10.1.0.2 to host 10.0.0.2
// (the edge's port 0), a message of its own (RDMA WRITE ONLY).
Frame ToHost(uint32_t psn, uint32_t qp = 0x111) {
  return PacketBuilder()
      .Eth(MacAddr{{0x02, 0, 0, 0, 0, 0xFE}}, kHostMac)
      .Ipv4(Ip(10, 1, 0, 2), Ip(10, 0, 0, 2), 64, pkt::ecn::kEct0)
      .Udp(0xC000, 4791)
      .Bth(pkt::Raw(pkt::Opcode::kRdmaWriteOnly), qp, psn)
      .Payload(256)
      .Build();
}
uint32_t PsnOf(const Frame& f) { return pkt::Rd32(&f[42 + 8]) & pkt::kPsnMask; }
uint32_t QpOf(const Frame& f) { return pkt::Rd32(&f[42 + 4]) & 0xFFFFFF; }

// The per-switch engine's reorder stage (egress/reorder.h on the TSC): an
// edge's host port gives each QP's frames to the host in PSN order, lets
// other QPs and ACKs pass, and reports in the port's JSON.
TEST(SwitchRing, AHostPortResequencesEachQpOnTheTsc) {
  DpConfig c = EdgeK4();
  c.reorder.enabled = true;
  c.reorder.timeout_us = 1'000'000;  // nothing times out here
  RingSwitch rs(c, {0, 1, 2, 3});
  rs.Inject(2, ToHost(100));  // the flow starts
  rs.Inject(2, ToHost(102));
  rs.Inject(3, ToHost(103));
  rs.Inject(2, ToHost(7, 0x222));  // another QP: its own flow
  rs.Inject(2, Roce(Ip(10, 1, 0, 2), Ip(10, 0, 0, 2), pkt::bth_opcode::kRcAck, 2, 64, 0, 0));
  rs.Run();
  std::vector<Frame> out = rs.Collect(0);
  ASSERT_EQ(out.size(), 3u) << "102 and 103 wait for 101";
  std::multiset<uint32_t> first;
  for (const Frame& f : out) first.insert(f[42] == pkt::bth_opcode::kRcAck ? 0 : PsnOf(f));
  EXPECT_EQ(first, (std::multiset<uint32_t>{0, 7, 100}));
  rs.Inject(3, ToHost(101));
  rs.Run();
  out = rs.Collect(0);
  ASSERT_EQ(out.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(PsnOf(out[i]), 101 + i);
    EXPECT_EQ(QpOf(out[i]), 0x111u);
  }
  EXPECT_EQ(rs.Collect(1).size(), 0u);
  const nlohmann::json ports = PortsJson(rs.sw().TakeSnapshot());
  for (const nlohmann::json& p : ports) {
    if (p.at("port") == 0) {
      const nlohmann::json& r = p.at("reorder");
      EXPECT_EQ(r.at("held"), 2);
      EXPECT_EQ(r.at("in_order"), 5);
      EXPECT_EQ(r.at("max_frames"), 2);
      EXPECT_EQ(r.at("timeouts"), 0);
      EXPECT_EQ(r.at("timeout_us"), 1'000'000);
    } else if (p.at("port") == 1) {  // the other host port: a stage, idle
      EXPECT_EQ(p.at("reorder").at("in_order"), 0);
    } else {
      EXPECT_TRUE(p.at("reorder").is_null()) << "uplink " << p.at("port");
    }
  }
}

TEST(SwitchRing, AGapThatNeverFillsEndsItsWaitAtTheTimeout) {
  DpConfig c = EdgeK4();
  c.reorder.enabled = true;
  // 20 ms: far longer than one Run() of three frames even under ASan (at
  // 2 ms a sanitizer build's first Run() outlasted the wait).
  c.reorder.timeout_us = 20'000;
  RingSwitch rs(c, {0, 1, 2, 3});
  rs.Inject(2, ToHost(10));
  rs.Inject(2, ToHost(12));  // 11 is lost
  rs.Inject(2, ToHost(13));
  rs.Run();
  EXPECT_EQ(rs.Collect(0).size(), 1u);
  std::vector<Frame> later;
  Poll(
      2000, [&] { rs.Run(); },
      [&] {
        for (Frame& f : rs.Collect(0)) later.push_back(std::move(f));
        return later.size() >= 2;
      });
  ASSERT_EQ(later.size(), 2u) << "released after 20 ms";
  EXPECT_EQ(PsnOf(later[0]), 12u);
  EXPECT_EQ(PsnOf(later[1]), 13u);
  for (const nlohmann::json& p : PortsJson(rs.sw().TakeSnapshot())) {
    if (p.at("port") != 0) continue;
    EXPECT_EQ(p.at("reorder").at("timeouts"), 2);
    EXPECT_GE(p.at("reorder").at("max_hold_us").get<double>(), 20'000.0);
  }
  rs.Inject(2, ToHost(11));  // late: its gap was given up
  rs.Run();
  EXPECT_EQ(rs.Collect(0).size(), 1u);
}

// An edge switch with PFC at 8 KiB xoff / 4 KiB xon and links at `gbps`,
// 12 frames of 1000 B (`tos`) from uplink port 2 to host port 0 offered.
std::unique_ptr<RingSwitch> PfcEdge(double gbps, uint8_t tos = pkt::ecn::kEct0,
                                    uint32_t frames = 12) {
  DpConfig c = EdgeK4();
  c.egress.rate_gbps = gbps;
  c.egress.buffer_bytes = 1 << 20;
  c.pfc.enabled = true;
  c.pfc.xoff_bytes = 8 * kKiB;
  c.pfc.xon_bytes = 4 * kKiB;
  auto rs = std::make_unique<RingSwitch>(c, std::vector<uint32_t>{0, 1, 2, 3});
  for (uint32_t i = 0; i < frames; ++i)
    rs->Inject(2, Roce(Ip(10, 1, 0, 2), Ip(10, 0, 0, 2), 0x0A, 0xC000, 64, tos, 1000));
  return rs;
}

TEST(SwitchRing, PfcIsGeneratedTowardsAnIngressThatFillsTheBuffer) {
  auto rsp = PfcEdge(0.001);  // port 0 cannot drain during the test
  RingSwitch& rs = *rsp;
  // The PAUSE frame takes its wire time on port 2 too (the shaper is
  // physical): give the bucket a few milliseconds.
  std::vector<Frame> up;
  Poll(
      100,
      [&] {
        rs.Run(2);
        up = rs.Collect(2);
      },
      [&] { return !up.empty(); });
  ASSERT_EQ(up.size(), 1u) << "one PAUSE towards the port the traffic came in on";
  const Frame& f = up[0];
  EXPECT_TRUE(std::equal(pkt::kPfcDstMac.b.begin(), pkt::kPfcDstMac.b.end(), f.begin()));
  const pkt::PfcFrame pfc = pkt::Load<pkt::PfcFrame>(f.data() + 14);
  EXPECT_EQ(pkt::Rd16(f.data() + 12), pkt::ethertype::kMacControl);
  EXPECT_EQ(pfc.opcode.host(), pkt::kPfcOpcode);
  EXPECT_EQ(pfc.class_enable.host(), 1u << 3);
  EXPECT_EQ(pfc.quanta[3].host(), 0xFFFF);
  EXPECT_EQ(rs.Counter(Counter::kPfcTx), 1u);
  EXPECT_TRUE(rs.Collect(3).empty());  // not towards ports that did not send
}

// The XOFF leaves with the frame that took the ingress port past xoff:
// the worker that queued it sends it, without the control thread's poll
// (which only refreshes it and sends the XON). Then the port drains and
// the control thread resumes the peer.
TEST(SwitchRing, TheWorkerSendsXoffAtTheCrossing) {
  auto rsp = PfcEdge(0.01);  // port 0 drains 12 frames in about 10 ms
  RingSwitch& rs = *rsp;
  std::vector<Frame> up;
  Poll(
      100,
      [&] {
        rs.RunWorkers(2);
        up = rs.Collect(2);
      },
      [&] { return !up.empty(); });
  ASSERT_EQ(up.size(), 1u) << "the XOFF, sent by the worker alone";
  EXPECT_EQ(pkt::Load<pkt::PfcFrame>(up[0].data() + 14).quanta[3].host(), 0xFFFF);
  EXPECT_EQ(rs.Counter(Counter::kPfcTx), 1u);
  // Port 0 drains below xon; the control thread's poll sends XON.
  size_t down = 0;
  Poll(
      400,
      [&] {
        rs.Run(2);
        for (Frame& f : rs.Collect(2)) up.push_back(std::move(f));
        down += rs.Collect(0).size();
      },
      [&] { return up.size() >= 2 && down >= 12; });
  ASSERT_EQ(up.size(), 2u) << "XOFF, then XON; no second XOFF";
  EXPECT_EQ(pkt::Load<pkt::PfcFrame>(up[1].data() + 14).quanta[3].host(), 0u);
  EXPECT_EQ(down, 12u) << "nothing lost";
}

// Past what its lossless account can hold (xoff + headroom), a port's RX
// leaves frames in its ring instead of dropping them, as a late peer's
// frames would wait on the wire; once the account drains they are taken,
// and every frame arrives.
TEST(SwitchRing, AFullLosslessAccountLeavesFramesInTheRxRing) {
  constexpr uint32_t kFrames = 60;  // 63 KB against about 38 KB of account
  auto rsp = PfcEdge(0.01, static_cast<uint8_t>(pkt::kRoceDscp << 2 | pkt::ecn::kEct0), kFrames);
  RingSwitch& rs = *rsp;
  rs.RunWorkers(4);
  EXPECT_GT(rs.RxWaiting(2), 0u) << "the rest wait in the port's ring";
  EXPECT_GE(rs.Counter(Counter::kPfcRxHeld), 1u);
  size_t down = 0;
  Poll(
      2000,
      [&] {
        rs.Run(2);
        down += rs.Collect(0).size();
        rs.Collect(2);
      },
      [&] { return down >= kFrames; });
  EXPECT_EQ(down, kFrames);
  EXPECT_EQ(rs.RxWaiting(2), 0u);
  EXPECT_EQ(rs.Counter(Counter::kDropLossless), 0u);
  EXPECT_EQ(rs.Counter(Counter::kDropBufferFull), 0u);
}

TEST(SwitchRing, ControlRequests) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  auto call = [&](const std::string& s) { return HandleControlRequest(rs.sw(), s); };
  for (const char* cmd :
       {"version", "status", "counters", "ports", "queues", "pointers", "reset_queues"}) {
    auto r = call(fmt::format(R"({{"v":1,"cmd":"{}"}})", cmd));
    EXPECT_TRUE(r["ok"].get<bool>()) << cmd << ": " << r.dump();
  }
  EXPECT_EQ(call(R"({"v":1,"cmd":"ports"})")["result"].size(), 4u);
  auto st = call(R"({"v":1,"cmd":"set_policy","policy":"ecmp"})");
  ASSERT_TRUE(st["ok"].get<bool>()) << st.dump();
  EXPECT_EQ(st["result"]["policy"], "ecmp");
  st = call(R"({"v":1,"cmd":"set_policy","policy":"ofan","ofan_mode":"atomic"})");
  EXPECT_EQ(st["result"]["ofan_mode"], "atomic");
  EXPECT_TRUE(call(R"({"v":1,"cmd":"set_port","port":3,"admin":"down"})")["ok"].get<bool>());
  EXPECT_TRUE(
      call(R"({"v":1,"cmd":"load_tables","masks":["0x3","0x1",2,3,3,3,3,3]})")["ok"].get<bool>());
  for (const char* bad : {"", "nope", "[]", "{}", R"({"v":2,"cmd":"status"})", R"({"v":1})",
                          R"({"v":1,"cmd":"frobnicate"})", R"({"v":1,"cmd":"set_policy"})",
                          R"({"v":1,"cmd":"set_policy","policy":"x"})",
                          R"({"v":1,"cmd":"set_policy","policy":"ofan","ofan_mode":7})",
                          R"({"v":1,"cmd":"set_port","port":99,"admin":"down"})",
                          R"({"v":1,"cmd":"set_port","port":1,"admin":"sideways"})",
                          R"({"v":1,"cmd":"set_port","port":1})",
                          R"({"v":1,"cmd":"set_port","port":1,"wire":"frayed"})",
                          R"({"v":1,"cmd":"set_port","port":1,"wire":true})",
                          R"({"v":1,"cmd":"set_port","port":1,"wire":"cut","admin":7})",
                          R"({"v":1,"cmd":"set_port","port":-1,"admin":"up"})",
                          R"({"v":1,"cmd":"load_tables","masks":[1,2]})",
                          R"({"v":1,"cmd":"load_tables","masks":["zz",1,1,1,1,1,1,1]})",
                          R"({"v":1,"cmd":"load_tables","masks":[16,1,1,1,1,1,1,1]})",
                          R"({"v":1,"cmd":"load_tables"})",
                          // Exact integers, not truncated to the field's type:
                          // 2^32 + 1 is not version 1, 2^32 is not port 0.
                          R"({"v":4294967297,"cmd":"status"})", R"({"v":1.0,"cmd":"status"})",
                          R"({"v":1,"cmd":"set_port","port":4294967296,"admin":"down"})",
                          R"({"v":1,"cmd":"set_port","port":18446744073709551615,"admin":"down"})",
                          R"({"v":1,"cmd":"load_tables","masks":[[1],1,1,1,1,1,1,1]})",
                          R"({"v":1,"cmd":"load_tables","masks":[{"a":1},1,1,1,1,1,1,1]})"}) {
    auto r = call(bad);
    EXPECT_FALSE(r["ok"].get<bool>()) << bad;
    EXPECT_TRUE(r["error"].is_string()) << bad;
    EXPECT_EQ(r["v"], 1);
  }
  // Port 0 was never touched by the out-of-range set_port requests.
  EXPECT_EQ(call(R"({"v":1,"cmd":"ports"})")["result"][0]["admin"], "up");
}

// The agent's report is kept as it came and given back with its age.
TEST(SwitchRing, AgentReportIsKeptForAgent) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  auto call = [&](const std::string& s) { return HandleControlRequest(rs.sw(), s); };
  auto none = call(R"({"v":1,"cmd":"agent"})");
  ASSERT_TRUE(none["ok"].get<bool>()) << none.dump();
  EXPECT_TRUE(none["result"]["report"].is_null());
  EXPECT_TRUE(none["result"]["age_ms"].is_null());
  for (const char* bad :
       {R"({"v":1,"cmd":"agent_report"})", R"({"v":1,"cmd":"agent_report","report":[1,2]})",
        R"({"v":1,"cmd":"agent_report","report":"x"})"}) {
    auto r = call(bad);
    EXPECT_FALSE(r["ok"].get<bool>()) << bad;
    EXPECT_EQ(r["code"], "bad_argument") << bad;
  }
  ASSERT_TRUE(call(R"({"v":1,"cmd":"agent_report","report":{"switch":"e0-0","cycle":3,)"
                   R"("bgp":[{"interface":"p2","state":"Established"}]}})")["ok"]
                  .get<bool>());
  auto got = call(R"({"v":1,"cmd":"agent"})")["result"];
  EXPECT_EQ(got["report"]["switch"], "e0-0");
  EXPECT_EQ(got["report"]["bgp"][0]["state"], "Established");
  EXPECT_GE(got["age_ms"].get<int64_t>(), 0);
  // A newer report replaces it.
  ASSERT_TRUE(call(R"({"v":1,"cmd":"agent_report","report":{"cycle":4}})")["ok"].get<bool>());
  EXPECT_EQ(call(R"({"v":1,"cmd":"agent"})")["result"]["report"], nlohmann::json({{"cycle", 4}}));
}

// Each error reply says its kind in "code", next to the message.
TEST(SwitchRing, ControlErrorsCarryACode) {
  using control::ReplyError;
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  const std::pair<const char*, ReplyError> cases[] = {
      {"nope", ReplyError::kBadRequest},
      {"[]", ReplyError::kBadRequest},
      {R"({"v":1})", ReplyError::kBadRequest},
      {R"({"cmd":"status"})", ReplyError::kUnsupportedVersion},
      {R"({"v":2,"cmd":"status"})", ReplyError::kUnsupportedVersion},
      {R"({"v":1,"cmd":"frobnicate"})", ReplyError::kUnknownCommand},
      {R"({"v":1,"cmd":"set_policy"})", ReplyError::kBadArgument},
      {R"({"v":1,"cmd":"set_policy","policy":"x"})", ReplyError::kBadArgument},
      {R"({"v":1,"cmd":"set_port","port":99,"admin":"down"})", ReplyError::kBadArgument},
      {R"({"v":1,"cmd":"load_tables","masks":["zz"]})", ReplyError::kBadArgument},
      {R"({"v":1,"cmd":"load_tables","masks":[1,2]})", ReplyError::kBadArgument}};
  for (const auto& [bad, code] : cases) {
    const auto r = HandleControlRequest(rs.sw(), bad);
    EXPECT_FALSE(r["ok"].get<bool>()) << bad;
    EXPECT_FALSE(r["error"].get<std::string>().empty()) << bad;
    EXPECT_EQ(r["code"], control::ReplyErrorName(code)) << bad << ": " << r.dump();
  }
  EXPECT_FALSE(HandleControlRequest(rs.sw(), R"({"v":1,"cmd":"status"})").contains("code"));
}

// Requests no well-behaved client sends still get a reply line that is JSON.
TEST(SwitchRing, ControlRepliesToHostileRequests) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  auto reply = [&](const std::string& s) {
    const std::string line = ControlReplyLine(HandleControlRequest(rs.sw(), s));
    EXPECT_EQ(line.back(), '\n');
    return nlohmann::json::parse(line);  // throws (fails the test) if not JSON
  };
  // Not UTF-8: the parse error quotes the bytes, which go out as U+FFFD.
  for (const char* bytes : {"\xff\xfe", "{\"v\":1,\"cmd\":\"\xc3\x28\"}", "\x80"}) {
    const auto r = reply(bytes);
    EXPECT_FALSE(r["ok"].get<bool>());
    EXPECT_NE(r["error"].get<std::string>().find("not JSON"), std::string::npos) << r.dump();
  }
  // A mask nested 100000 arrays deep is refused without being printed.
  const std::string deep = R"({"v":1,"cmd":"load_tables","masks":[)" + std::string(100000, '[') +
                           std::string(100000, ']') + "]}";
  const auto r = reply(deep);
  EXPECT_FALSE(r["ok"].get<bool>());
  EXPECT_NE(r["error"].get<std::string>().find("not array"), std::string::npos) << r.dump();
  // A long non-mask string is quoted in part.
  const auto s = reply(R"({"v":1,"cmd":"load_tables","masks":[")" + std::string(5000, 'z') +
                       R"(",1,1,1,1,1,1,1]})");
  EXPECT_LT(s["error"].get<std::string>().size(), 100u) << s.dump();
}

TEST(SwitchRing, ControlSocketServesOverUnixStream) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  const std::string path = rs.sw().config().socket_path;
  auto srv = ControlServer::Listen(path, &rs.sw());
  ASSERT_TRUE(srv.ok()) << srv.error().message;
  struct stat stt {};
  ASSERT_EQ(stat(path.c_str(), &stt), 0);
  EXPECT_EQ(stt.st_mode & 0777, 0600u);
  // A second switch cannot steal a live socket.
  EXPECT_FALSE(ControlServer::Listen(path, &rs.sw()).ok());
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const std::string req = "{\"v\":1,\"cmd\":\"status\"}\n\xff not json\n";
  ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string got;
  for (int i = 0; i < 200 && std::count(got.begin(), got.end(), '\n') < 2; ++i) {
    (*srv)->Poll(5);
    char buf[65536];
    const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const auto nl = got.find('\n');
  ASSERT_NE(nl, std::string::npos);
  auto first = nlohmann::json::parse(got.substr(0, nl));
  EXPECT_TRUE(first["ok"].get<bool>());
  EXPECT_EQ(first["result"]["fabric"]["role"], "edge");
  auto second = nlohmann::json::parse(got.substr(nl + 1, got.find('\n', nl + 1) - nl - 1));
  EXPECT_FALSE(second["ok"].get<bool>());
  srv->reset();
  EXPECT_NE(access(path.c_str(), F_OK), 0);  // removed on close
}

TEST(SwitchRing, LaunchedWorkerForwardsWhileTheControlThreadSwapsTables) {
  DpConfig c = EdgeK4();
  c.max_sleep_us = 50;
  RingSwitch rs(c, {0, 1, 2, 3}, /*workers=*/1);
  ASSERT_TRUE(rs.sw().Launch().ok());
  size_t got = 0;
  for (int i = 0; i < 2000; ++i) {
    rs.Inject(i % 2,
              Roce(Ip(10, 0, 0, 2 + static_cast<uint32_t>(i % 2)),
                   Ip(10, 1 + static_cast<uint32_t>(i % 3), 0, 2), 0x0A, static_cast<uint16_t>(i)));
    if (i % 100 == 0) {
      const lb::PolicyKind kinds[] = {lb::PolicyKind::kEcmp, lb::PolicyKind::kOfan,
                                      lb::PolicyKind::kRps, lb::PolicyKind::kPofan};
      ASSERT_TRUE(rs.sw().SetPolicy({kinds[(i / 100) % 4], OfanMode::kCombined}).ok());
    }
    if (i % 50 == 0) got += rs.Collect(2).size() + rs.Collect(3).size();
  }
  for (int t = 0; t < 2000 && got < 2000; ++t) {
    rte_delay_us_sleep(200);
    got += rs.Collect(2).size() + rs.Collect(3).size();
  }
  rs.sw().Stop();
  EXPECT_EQ(got, 2000u);
  EXPECT_EQ(rs.sw().TotalCounters().Get(Counter::kTxPackets), 2000u);
}

}  // namespace
}  // namespace ofan::dp

int main(int argc, char** argv) {
  ofan::golden::TakeDirArgument(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new ofan::dp::testing::EalEnvironment);
  return RUN_ALL_TESTS();
}
