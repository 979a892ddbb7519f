// Golden packets through the parse, route and rewrite stages.
#include "dataplane/stages/parse.h"

#include <gtest/gtest.h>

#include "dataplane/packet/builder.h"
#include "dataplane/stages/rewrite.h"
#include "dataplane/stages/route.h"

namespace ofan::dp {
namespace {

using pkt::MacAddr;
using pkt::PacketBuilder;

constexpr MacAddr kA{{0x02, 0, 0, 0, 0, 0xA}};
constexpr MacAddr kB{{0x02, 0, 0, 0, 0, 0xB}};
constexpr uint32_t Ip(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return a << 24 | b << 16 | c << 8 | d;
}

std::vector<uint8_t> Roce(uint8_t opcode, uint32_t qp = 0x123456, uint8_t tos = 2, uint8_t ttl = 64,
                          uint32_t payload = 256) {
  return PacketBuilder()
      .Eth(kB, kA)
      .Ipv4(Ip(10, 0, 0, 2), Ip(10, 3, 1, 3), ttl, tos)
      .Udp(0xC000, 4791)
      .Bth(opcode, qp, 7)
      .Payload(payload)
      .Build();
}

ParsedPacket Parse(const std::vector<uint8_t>& f) {
  return ParseFrame(f.data(), static_cast<uint32_t>(f.size()));
}

// The fast path agrees with the full parser on valid RoCE frames of every
// size and opcode and on every single-byte change and truncation of one.
TEST(Parse, FastPathMatchesTheFullParser) {
  uint32_t fast = 0, total = 0;
  auto check = [&](const std::vector<uint8_t>& f) {
    const auto n = static_cast<uint32_t>(f.size());
    ParsedPacket q;
    fast += detail::ParseFastRoce(f.data(), n, q);
    ++total;
    ASSERT_TRUE(SameParse(ParseFrame(f.data(), n), ParseFrameReference(f.data(), n)))
        << "frame of " << n;
  };
  for (uint8_t op : {0x0A, 0x11, 0x12, 0x81, 0x04}) {
    for (uint32_t payload : {0u, 1u, 64u, 2048u}) check(Roce(op, 0xABCDEF, 1, 9, payload));
  }
  const auto base = Roce(0x0A, 0x123456, 2, 64, 16);
  for (size_t i = 0; i < 60; ++i) {
    for (int v : {0x00, 0x01, 0x3F, 0x40, 0x45, 0x80, 0xB7, 0x12, 0xFF}) {
      auto f = base;
      f[i] = static_cast<uint8_t>(v);
      check(f);
      f[i] = static_cast<uint8_t>(base[i] ^ 0x20);
      check(f);
    }
  }
  for (size_t n = 0; n <= base.size(); ++n)
    check(std::vector<uint8_t>(base.begin(), base.begin() + static_cast<long>(n)));
  EXPECT_GT(fast, 20u);  // the fast path did take the valid ones
  EXPECT_LT(fast, total);
}

TEST(Parse, RoceDataAndAckClasses) {
  auto data = Parse(Roce(0x0A));  // RDMA WRITE ONLY
  EXPECT_EQ(data.verdict, Verdict::kForward);
  EXPECT_TRUE(data.roce);
  EXPECT_EQ(data.cls, lb::SizeClass::kData);
  EXPECT_EQ(data.dst_qp, 0x123456u);
  EXPECT_EQ(data.dst_ip, Ip(10, 3, 1, 3));
  EXPECT_EQ(data.src_ip, Ip(10, 0, 0, 2));
  EXPECT_EQ(data.l3_offset, 14);
  EXPECT_EQ(data.ecn, pkt::ecn::kEct0);
  for (uint8_t op :
       {pkt::bth_opcode::kRcAck, pkt::bth_opcode::kRcAtomicAck, pkt::bth_opcode::kCnp}) {
    EXPECT_EQ(Parse(Roce(op)).cls, lb::SizeClass::kAck) << static_cast<int>(op);
  }
}

TEST(Parse, FlowHashFollowsTheFiveTuple) {
  auto a = Parse(Roce(0x0A));
  auto b = Parse(Roce(0x0A, 0x999));  // same 5-tuple, other QP
  EXPECT_EQ(a.flow_hash, b.flow_hash);
  auto c = Parse(PacketBuilder()
                     .Eth(kB, kA)
                     .Ipv4(Ip(10, 0, 0, 2), Ip(10, 3, 1, 3))
                     .Udp(0xC001, 4791)
                     .Bth(0x0A, 1, 1)
                     .Build());
  EXPECT_NE(a.flow_hash, c.flow_hash);  // other entropy (UDP source port)
}

TEST(Parse, VlanTaggedIpv4) {
  auto f = PacketBuilder()
               .Eth(kB, kA, pkt::ethertype::kIpv4)
               .Vlan(0x6005)
               .Ipv4(Ip(10, 0, 0, 2), Ip(10, 0, 0, 3))
               .Icmp(8, 1, 1)
               .Build();
  auto p = Parse(f);
  EXPECT_EQ(p.verdict, Verdict::kForward);
  EXPECT_EQ(p.l3_offset, 18);
}

// Egress marks ECN on frames it gets from the pass without their parse
// result: ForwardedL3Offset must find the IPv4 header where parse did, behind
// a VLAN tag too, and the mark must land on the TOS byte with the checksum
// kept valid.
TEST(Rewrite, EgressFindsTheIpv4HeaderAndMarksCeTaggedOrNot) {
  for (bool tagged : {false, true}) {
    PacketBuilder b;
    b.Eth(kB, kA, pkt::ethertype::kIpv4);
    if (tagged) b.Vlan(0x6005);
    auto f = b.Ipv4(Ip(10, 0, 0, 2), Ip(10, 3, 1, 3), 64, pkt::ecn::kEct0)
                 .Udp(0xC000, 4791)
                 .Bth(0x0A, 0x123456, 1)
                 .Payload(64)
                 .Build();
    const auto p = Parse(f);
    ASSERT_EQ(p.verdict, Verdict::kForward);
    const uint16_t l3 = ForwardedL3Offset(f.data());
    ASSERT_EQ(l3, p.l3_offset) << "tagged " << tagged;
    ASSERT_TRUE(RewriteForward(f.data(), l3, kA, kB));
    ASSERT_TRUE(MarkCe(f.data(), ForwardedL3Offset(f.data())));
    EXPECT_EQ(f[l3 + 1] & 3, pkt::ecn::kCe) << "tagged " << tagged;
    EXPECT_EQ(f[l3 + 8], 63) << "tagged " << tagged;
    EXPECT_EQ(pkt::Ipv4Checksum(&f[l3], 20), 0) << "tagged " << tagged;
    EXPECT_EQ(Parse(f).verdict, Verdict::kForward);
  }
}

TEST(Parse, ExceptionsAndPfc) {
  auto arp = PacketBuilder()
                 .Eth(MacAddr{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}}, kA)
                 .Arp(1, kA, Ip(10, 0, 0, 2), MacAddr{}, Ip(10, 0, 0, 1))
                 .Build();
  EXPECT_EQ(Parse(arp).verdict, Verdict::kException);
  auto lldp = PacketBuilder().Eth(pkt::kLldpDstMac, kA, pkt::ethertype::kLldp).Payload(30).Build();
  EXPECT_EQ(Parse(lldp).verdict, Verdict::kException);
  auto pfc = PacketBuilder().Eth(pkt::kPfcDstMac, kA).Pfc(0x08, 0xFFFF).PadTo(60).Build();
  EXPECT_EQ(Parse(pfc).verdict, Verdict::kPfc);
}

struct Bad {
  const char* name;
  std::vector<uint8_t> frame;
  Counter why;
};

TEST(Parse, MalformedFramesAreCountedByReason) {
  auto good = Roce(0x0A);
  // The good frame with one byte changed.
  auto with_byte = [&](size_t at, uint8_t v) {
    auto f = good;
    f[at] = v;
    return f;
  };
  std::vector<Bad> bad = {
      {"empty", {}, Counter::kDropRunt},
      {"runt", std::vector<uint8_t>(good.begin(), good.begin() + 10), Counter::kDropRunt},
      {"ipv6", PacketBuilder().Eth(kB, kA, 0x86DD).Payload(40).Build(),
       Counter::kDropUnknownEthertype},
      {"vlan cut", PacketBuilder().Eth(kB, kA, pkt::ethertype::kVlan).Build(),
       Counter::kDropVlanTruncated},
      {"ip cut", std::vector<uint8_t>(good.begin(), good.begin() + 20),
       Counter::kDropIpv4Truncated},
      {"ip version", with_byte(14, 0x65), Counter::kDropIpv4Version},
      {"ihl < 5", with_byte(14, 0x44), Counter::kDropIpv4HeaderLength},
      {"total > frame",
       PacketBuilder().Eth(kB, kA).Ipv4(1, 2).Payload(10).KeepIpTotalLength(900).Build(),
       Counter::kDropIpv4TotalLength},
      {"checksum",
       PacketBuilder().Eth(kB, kA).Ipv4(1, 2).Payload(10).KeepIpChecksum(0x1234).Build(),
       Counter::kDropIpv4Checksum},
      {"udp cut",
       PacketBuilder().Eth(kB, kA).Ipv4(1, 2, 64, 0, pkt::ipproto::kUdp).Payload(4).Build(),
       Counter::kDropUdpTruncated},
      {"bth cut", PacketBuilder().Eth(kB, kA).Ipv4(1, 2).Udp(1, 4791).Payload(6).Build(),
       Counter::kDropBthTruncated},
      {"pfc cut",
       PacketBuilder().Eth(pkt::kPfcDstMac, kA, pkt::ethertype::kMacControl).Payload(4).Build(),
       Counter::kDropPfcMalformed},
  };
  // A fragment (MF set) with a valid checksum.
  {
    auto f = PacketBuilder().Eth(kB, kA).Ipv4(1, 2).Payload(10).Build();
    f[14 + 6] = 0x20;
    f[24] = f[25] = 0;
    const uint16_t c = pkt::Ipv4Checksum(&f[14], 20);
    f[24] = static_cast<uint8_t>(c >> 8);
    f[25] = static_cast<uint8_t>(c);
    bad.push_back({"fragment", f, Counter::kDropIpv4Fragment});
  }
  for (const Bad& b : bad) {
    auto p = Parse(b.frame);
    EXPECT_EQ(p.verdict, Verdict::kDrop) << b.name;
    EXPECT_EQ(p.drop, b.why) << b.name << ": got " << CounterName(p.drop);
    EXPECT_TRUE(IsDrop(p.drop)) << b.name;
  }
}

TEST(Parse, EveryTruncationOfAGoodFrameIsSafe) {
  for (auto f : {Roce(0x0A), Roce(0x11, 1, 0, 64, 0)}) {
    for (size_t n = 0; n < f.size(); ++n) {
      std::vector<uint8_t> cut(f.begin(), f.begin() + static_cast<long>(n));
      auto p = Parse(cut);
      if (p.verdict == Verdict::kForward) {
        // Only cuts inside the payload/ICRC keep a consistent IP length... which
        // they cannot, since total_length covers the whole frame.
        ADD_FAILURE() << "truncated to " << n << " bytes still forwards";
      }
    }
  }
}

TEST(Route, EdgeSwitchDownUpLocalAndMartians) {
  auto tree = *lb::FatTree::Make(4, 3);
  Router r(tree, tree.edge(0, 1));  // pod 0, edge 1: hosts 10.0.1.2 and 10.0.1.3
  auto down = r.Route(Ip(10, 0, 1, 3));
  EXPECT_EQ(down.kind, RouteKind::kDown);
  EXPECT_EQ(down.port, 1);
  auto up = r.Route(Ip(10, 3, 0, 2));
  EXPECT_EQ(up.kind, RouteKind::kUp);
  EXPECT_EQ(up.dest, 6);  // pod 3, edge 0: global edge 6
  EXPECT_EQ(r.Route(Ip(10, 0, 1, 1)).kind, RouteKind::kLocal);
  EXPECT_EQ(r.gateway_ip(), Ip(10, 0, 1, 1));
  for (uint32_t a : {Ip(11, 0, 1, 2), Ip(10, 4, 0, 2), Ip(10, 0, 2, 2), Ip(10, 0, 1, 4),
                     Ip(10, 0, 1, 0), Ip(10, 1, 0, 1)}) {
    EXPECT_EQ(r.Route(a).kind, RouteKind::kNoRoute) << std::hex << a;
  }
}

TEST(Route, AgreesWithTheFatTreeForEverySwitchAndHost) {
  for (int levels : {2, 3}) {
    for (int k : {4, 8}) {
      auto tree = *lb::FatTree::Make(k, levels);
      for (int s = 0; s < tree.num_switches(); ++s) {
        const lb::SwitchId sw(static_cast<uint32_t>(s));
        Router r(tree, sw);
        for (int h = 0; h < tree.num_hosts(); ++h) {
          const lb::HostId host(static_cast<uint32_t>(h));
          auto res = r.Route(tree.host_addr(host));
          if (tree.is_below(sw, host)) {
            ASSERT_EQ(res.kind, RouteKind::kDown);
            EXPECT_EQ(res.port, tree.down_port(sw, host));
          } else {
            ASSERT_EQ(res.kind, RouteKind::kUp);
            EXPECT_EQ(res.dest, tree.dest_of(sw, host));
          }
          EXPECT_EQ(res.slice, tree.slot_of(host));
        }
      }
    }
  }
}

// The subnet table the dataplane routes with gives what the address plan
// gives, for every switch of small trees and addresses across 10.x.y.z
// (every /24 of the pods and beyond, every last byte) and outside 10/8.
TEST(Route, TableAgreesWithThePlanOnEveryAddress) {
  for (int levels : {2, 3}) {
    for (int k : {4, 8}) {
      auto tree = *lb::FatTree::Make(k, levels);
      for (int s = 0; s < tree.num_switches(); ++s) {
        const Router r(tree, lb::SwitchId(static_cast<uint32_t>(s)));
        auto check = [&](uint32_t a) {
          const RouteResult got = r.Route(a), want = r.RouteByPlan(a);
          ASSERT_EQ(got.kind, want.kind) << "switch " << s << " addr " << std::hex << a;
          if (want.kind == RouteKind::kDown) {
            ASSERT_EQ(got.port, want.port) << std::hex << a;
          }
          if (want.kind == RouteKind::kUp) {
            ASSERT_EQ(got.dest, want.dest) << std::hex << a;
          }
          if (want.kind == RouteKind::kDown || want.kind == RouteKind::kUp) {
            ASSERT_EQ(got.slice, want.slice) << std::hex << a;
          }
        };
        for (uint32_t pod = 0; pod <= static_cast<uint32_t>(tree.num_pods()) + 1; ++pod) {
          for (uint32_t e = 0; e < 256; e += (e < 8 ? 1 : 61)) {
            for (uint32_t last = 0; last < 256; ++last) check(Ip(10, pod, e, last));
          }
        }
        for (uint32_t a : {Ip(9, 0, 0, 2), Ip(11, 0, 0, 2), Ip(0, 0, 0, 0), Ip(255, 255, 255, 255),
                           Ip(10, 255, 0, 2), Ip(138, 0, 0, 2)}) {
          check(a);
        }
      }
    }
  }
}

TEST(Rewrite, DecrementsTtlKeepsChecksumValidAndIcrcUnchanged) {
  auto f = Roce(0x0A, 5, pkt::ecn::kEct0, 64);
  const std::vector<uint8_t> icrc(f.end() - 4, f.end());
  ASSERT_TRUE(RewriteForward(f.data(), 14, kB, kA));
  EXPECT_EQ(f[14 + 8], 63);
  EXPECT_EQ(pkt::Ipv4Checksum(&f[14], 20), 0);
  EXPECT_TRUE(std::equal(f.begin(), f.begin() + 6, kA.b.begin()));
  EXPECT_TRUE(std::equal(f.begin() + 6, f.begin() + 12, kB.b.begin()));
  EXPECT_EQ(std::vector<uint8_t>(f.end() - 4, f.end()), icrc);
  // The ICRC is still the right one for the rewritten packet.
  const uint32_t want = pkt::RoceIcrc(&f[14], static_cast<uint32_t>(f.size() - 14 - 4));
  uint32_t got = 0;
  for (int i = 0; i < 4; ++i)
    got |= static_cast<uint32_t>(f[f.size() - 4 + static_cast<size_t>(i)]) << (8 * i);
  EXPECT_EQ(got, want);
  EXPECT_EQ(Parse(f).verdict, Verdict::kForward);
}

TEST(Rewrite, TtlOneOrZeroExpires) {
  for (uint8_t ttl : {0, 1}) {
    auto f = Roce(0x0A, 5, 0, ttl);
    auto before = f;
    EXPECT_FALSE(RewriteForward(f.data(), 14, kB, kA));
    EXPECT_EQ(f, before);  // untouched
  }
}

// DecrementTtl's constant-folded update is RFC 1624 eqn. 3 exactly, for every
// checksum value (including the 0x0000 / 0xFFFF corner) and TTL.
TEST(Rewrite, TtlUpdateMatchesTheGeneralIncrementalUpdate) {
  uint8_t ip[20] = {0x45, 0, 0, 40, 0, 0, 0, 0, 0, 17, 0, 0, 10, 0, 0, 2, 10, 1, 0, 2};
  for (int ttl = 2; ttl < 256; ttl += 41) {
    for (uint32_t hc = 0; hc <= 0xFFFF; ++hc) {
      ip[8] = static_cast<uint8_t>(ttl);
      ip[10] = static_cast<uint8_t>(hc >> 8);
      ip[11] = static_cast<uint8_t>(hc);
      const uint16_t want =
          pkt::ChecksumAdjust(static_cast<uint16_t>(hc), static_cast<uint16_t>(ttl << 8 | 17),
                              static_cast<uint16_t>((ttl - 1) << 8 | 17));
      ASSERT_TRUE(DecrementTtl(ip));
      ASSERT_EQ(ip[8], ttl - 1);
      ASSERT_EQ(static_cast<uint16_t>(ip[10] << 8 | ip[11]), want) << "ttl " << ttl << " hc " << hc;
    }
  }
}

TEST(Rewrite, ChecksumStaysValidForEveryTtlAndTos) {
  for (int ttl = 2; ttl < 256; ttl += 3) {
    for (int tos : {0, 1, 2, 3, 0xB8, 0xBA, 0xFD}) {
      auto f = Roce(0x0A, 5, static_cast<uint8_t>(tos), static_cast<uint8_t>(ttl), 8);
      ASSERT_TRUE(RewriteForward(f.data(), 14, kB, kA));
      const bool ect = (tos & 3) == 1 || (tos & 3) == 2;
      EXPECT_EQ(MarkCe(f.data(), 14), ect);
      EXPECT_EQ(pkt::Ipv4Checksum(&f[14], 20), 0) << ttl << " " << tos;
      if (ect) {
        EXPECT_EQ(f[15] & 3, pkt::ecn::kCe);
        EXPECT_EQ(f[15] & 0xFC, tos & 0xFC);  // DSCP kept
      }
    }
  }
}

}  // namespace
}  // namespace ofan::dp
