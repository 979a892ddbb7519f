// Stage 4 (rewrite.h) and egress/mark.h: the TTL and checksum update (against RFC 1624 for
// every checksum value), the MACs, ECN CE marking, and the golden frames of
// tests/golden/stages.golden: each forwarded frame rewritten for each port
// it may leave by must be, byte for byte, what scapy built as the router's
// output (and, marked CE, what scapy built with CE).
#include "dataplane/stages/rewrite.h"

#include <gtest/gtest.h>

#include "dataplane/egress/mark.h"
#include "dataplane/packet/builder.h"
#include "dataplane/packet/roce.h"
#include "dataplane/stages/parse.h"
#include "tests/dataplane/stages/stage_frames.h"
#include "tests/golden/golden.h"

namespace ofan::dp {
namespace {

using pkt::PacketBuilder;
using namespace testing;  // stage_frames.h

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
  EXPECT_TRUE(pkt::RoceIcrcOk(f.data(), static_cast<uint32_t>(f.size())));
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

// The golden frames: RewriteForward with the output port's MAC and its
// neighbour's gives scapy's output frame (TTL - 1, checksum recomputed, the
// ICRC recomputed and so unchanged), MarkCe then gives scapy's CE frame; a
// frame whose TTL expires is refused and left as it came.
TEST(RewriteGolden, ForwardedFramesAreScapysRouterOutput) {
  const auto& g = golden::Fixture("stages.golden");
  ASSERT_TRUE(g.ok()) << g.error().message;
  int rewritten = 0, marked = 0, expired = 0;
  for (const golden::Frame& f : g->frames) {
    SCOPED_TRACE(f.name);
    const golden::Switch& s = *g->FindSwitch(f.Str("switch"));
    if (f.Str("drop") == "drop_ttl_exceeded") {
      auto frame = f.in;
      EXPECT_FALSE(RewriteForward(frame.data(), ForwardedL3Offset(frame.data()), kA, kB));
      EXPECT_EQ(frame, f.in);
      ++expired;
    }
    for (const golden::Output& o : f.out) {
      SCOPED_TRACE(o.port);
      const golden::Port& port = *s.FindPort(o.port);
      auto frame = f.in;
      const uint16_t l3 = ForwardedL3Offset(frame.data());
      ASSERT_TRUE(RewriteForward(frame.data(), l3, port.mac, port.peer));
      EXPECT_EQ(frame, o.bytes);
      ++rewritten;
      const golden::Output* ce = nullptr;
      for (const golden::Output& c : f.ce) {
        if (c.port == o.port) ce = &c;
      }
      const auto forwarded = frame;
      EXPECT_EQ(MarkCe(frame.data(), l3), ce != nullptr);
      EXPECT_EQ(frame, ce ? ce->bytes : forwarded);
      marked += ce != nullptr;
    }
  }
  EXPECT_GE(rewritten, 20);
  EXPECT_GE(marked, 10);
  EXPECT_EQ(expired, 4);
}

}  // namespace
}  // namespace ofan::dp
