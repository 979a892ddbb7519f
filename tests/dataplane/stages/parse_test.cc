// Stage 1 (parse.h): golden packets of every kind through the parser, its
// fast path against the full parser, and every malformed frame counted by
// its reason. Route and rewrite have their own files.
#include "dataplane/stages/parse.h"

#include <gtest/gtest.h>

#include "dataplane/packet/builder.h"
#include "tests/dataplane/stages/stage_frames.h"

namespace ofan::dp {
namespace {

using pkt::MacAddr;
using pkt::PacketBuilder;
using namespace testing;  // stage_frames.h

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
  // A clear-to-send (a zero-length WRITE ONLY WITH IMMEDIATE) marked CS6 is
  // of the ACK class, on the fast path and the full parser alike; the same
  // frame at DSCP 26 is data.
  for (const uint8_t dscp : {pkt::kPriorityDscp, uint8_t{26}}) {
    // WRITE ONLY WITH IMMEDIATE, no payload.
    const auto f = Roce(0x0B, 0x123456, static_cast<uint8_t>(dscp << 2 | pkt::ecn::kEct0), 9, 0);
    const auto n = static_cast<uint32_t>(f.size());
    const ParsedPacket p = ParseFrame(f.data(), n);
    EXPECT_EQ(p.verdict, Verdict::kForward);
    EXPECT_EQ(p.cls, dscp == 26 ? lb::SizeClass::kData : lb::SizeClass::kAck) << int{dscp};
    EXPECT_TRUE(SameParse(p, ParseFrameReference(f.data(), n)));
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

// An IPv4 fragment of a datagram: `frag` (flags and offset) and `id` set,
// the checksum made right again.
std::vector<uint8_t> Fragment(std::vector<uint8_t> f, uint16_t frag, uint16_t id) {
  f[14 + 4] = static_cast<uint8_t>(id >> 8);
  f[14 + 5] = static_cast<uint8_t>(id);
  f[14 + 6] = static_cast<uint8_t>(frag >> 8);
  f[14 + 7] = static_cast<uint8_t>(frag);
  pkt::SetIpv4Checksum20(&f[14]);
  return f;
}

// Fragments are forwarded (RFC 1812), and every fragment of a datagram
// hashes alike: the hash takes the IP id, not the ports, which only the
// first fragment has.
TEST(Parse, FragmentsAreForwardedAndHashByDatagram) {
  const auto udp = PacketBuilder()
                       .Eth(kB, kA)
                       .Ipv4(Ip(10, 0, 0, 2), Ip(10, 3, 1, 3), 64, 0, pkt::ipproto::kUdp)
                       .Udp(5000, 9000)
                       .Payload(64)
                       .Build();
  const auto first = Parse(Fragment(udp, 0x2000, 77));         // MF, offset 0
  const auto later = Parse(Fragment(udp, 0x0000 | 185, 77));   // last, offset 1480
  const auto middle = Parse(Fragment(udp, 0x2000 | 185, 77));  // MF, offset 1480
  const auto other = Parse(Fragment(udp, 0x2000, 78));         // another datagram
  const auto whole = Parse(udp);
  for (const ParsedPacket* p : {&first, &later, &middle, &other}) {
    EXPECT_EQ(p->verdict, Verdict::kForward);
    EXPECT_TRUE(p->fragment);
    EXPECT_EQ(p->dst_ip, Ip(10, 3, 1, 3));
    EXPECT_FALSE(p->roce);
  }
  EXPECT_EQ(first.flow_hash, later.flow_hash);
  EXPECT_EQ(first.flow_hash, middle.flow_hash);
  EXPECT_NE(first.flow_hash, other.flow_hash);
  EXPECT_FALSE(whole.fragment);
  // A fragmented RoCE packet (RoCE never fragments): not the fast path,
  // forwarded as a fragment, data class.
  const auto roce = Parse(Fragment(Roce(0x0A), 0x2000, 5));
  EXPECT_TRUE(roce.fragment);
  EXPECT_FALSE(roce.roce);
  EXPECT_EQ(roce.verdict, Verdict::kForward);
  ParsedPacket q;
  const auto rf = Fragment(Roce(0x0A), 0x2000, 5);
  EXPECT_FALSE(detail::ParseFastRoce(rf.data(), static_cast<uint32_t>(rf.size()), q));
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

TEST(Parse, ExceptionsAndPfc) {
  auto arp = PacketBuilder()
                 .Eth(MacAddr{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}}, kA)
                 .Arp(1, kA, Ip(10, 0, 0, 2), MacAddr{}, Ip(10, 0, 0, 1))
                 .Build();
  EXPECT_EQ(Parse(arp).verdict, Verdict::kException);
  auto lldp = PacketBuilder().Eth(pkt::kLldpDstMac, kA, pkt::ethertype::kLldp).Payload(30).Build();
  EXPECT_EQ(Parse(lldp).verdict, Verdict::kException);
  // IPv6 (ND, BGP unnumbered, BFD): the control plane's.
  auto ipv6 = PacketBuilder().Eth(kB, kA, pkt::ethertype::kIpv6).Payload(40).Build();
  EXPECT_EQ(Parse(ipv6).verdict, Verdict::kException);
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
      {"ethertype 88B5", PacketBuilder().Eth(kB, kA, 0x88B5).Payload(40).Build(),
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

}  // namespace
}  // namespace ofan::dp
