// RoCEv2 transport headers and the ICRC: scapy's golden frames
// (tests/golden/roce.golden) read back with the typed headers, remade by
// PacketBuilder byte for byte, and ICRC-checked (every changed byte outside
// the masked fields detected); builder -> typed read-back of BTH, RETH, AETH
// and ImmDt; opcode classification against IBA's table; PSN arithmetic
// across the 24-bit wrap.
#include "dataplane/packet/roce.h"

#include <gtest/gtest.h>

#include <set>

#include "dataplane/packet/builder.h"
#include "tests/golden/golden.h"

namespace ofan::pkt {
namespace {

constexpr uint32_t kBthAt = sizeof(EtherHdr) + sizeof(Ipv4Hdr) + sizeof(UdpHdr);
constexpr uint32_t kExtAt = kBthAt + sizeof(BthHdr);

PacketBuilder RoceBase() {
  PacketBuilder b;
  b.Eth(MacAddr{{2, 0, 0, 0, 0, 1}}, MacAddr{{2, 0, 0, 0, 0, 2}})
      .Ipv4(0x0A000002, 0x0A030103, 64, ecn::kEct0)
      .Udp(0xC000, kRoceV2Port);
  return b;
}

TEST(Roce, BuilderBthRoundTripsEveryField) {
  BthHdr h = BthHdr::Make(Opcode::kSendOnlyWithImm, 0xABCDEF, 0xFFFFFE);
  h.set_solicited(true);
  h.set_migreq(true);
  h.set_pad_count(3);
  h.set_tver(0);
  h.set_p_key(0x8001);
  h.set_ack_req(true);
  h.set_becn(true);
  const auto f = RoceBase().Bth(h).ImmDt(0x01020304).Payload(13).Build();
  const auto got = Load<BthHdr>(&f[kBthAt]);
  EXPECT_EQ(got.op(), Opcode::kSendOnlyWithImm);
  EXPECT_TRUE(got.solicited());
  EXPECT_TRUE(got.migreq());
  EXPECT_EQ(got.pad_count(), 3);
  EXPECT_EQ(got.tver(), 0);
  EXPECT_EQ(got.p_key(), 0x8001);
  EXPECT_TRUE(got.becn());
  EXPECT_FALSE(got.fecn());
  EXPECT_EQ(got.dqpn(), 0xABCDEFu);
  EXPECT_TRUE(got.ack_req());
  EXPECT_EQ(got.psn24(), 0xFFFFFEu);
  // The wire bytes, as IBA 9.2 lays them out.
  const uint8_t want[12] = {0x05, 0xF0, 0x80, 0x01, 0x40, 0xAB, 0xCD, 0xEF, 0x80, 0xFF, 0xFF, 0xFE};
  EXPECT_TRUE(std::equal(want, want + 12, &f[kBthAt]));
  EXPECT_EQ(Load<ImmDtHdr>(&f[kExtAt]).imm.host(), 0x01020304u);
  EXPECT_EQ(BthOpcodeAt(&f[kBthAt]), Raw(Opcode::kSendOnlyWithImm));
  EXPECT_EQ(BthDqpnAt(&f[kBthAt]), 0xABCDEFu);
  // Clearing flags clears only them.
  h.set_solicited(false);
  h.set_ack_req(false);
  h.set_becn(false);
  EXPECT_FALSE(h.solicited());
  EXPECT_TRUE(h.migreq());
  EXPECT_FALSE(h.ack_req());
  EXPECT_EQ(h.psn24(), 0xFFFFFEu);
  EXPECT_EQ(h.dest_qp.host(), 0xABCDEFu);
}

TEST(Roce, BuilderRethAndAethRoundTrip) {
  const auto w = RoceBase()
                     .Bth(Raw(Opcode::kRdmaWriteFirst), 0x11, 1)
                     .Reth(0x00007F00DEADBEEFull, 0x1234ABCD, 8192)
                     .Payload(64)
                     .Build();
  const auto reth = Load<RethHdr>(&w[kExtAt]);
  EXPECT_EQ(reth.va(), 0x00007F00DEADBEEFull);
  EXPECT_EQ(reth.r_key(), 0x1234ABCDu);
  EXPECT_EQ(reth.length(), 8192u);
  EXPECT_EQ(w.size(), kExtAt + 16 + 64 + kIcrcBytes);

  const auto a = RoceBase()
                     .Bth(Raw(Opcode::kAcknowledge), 0x22, 5)
                     .Aeth(0x60 | AethHdr::kNakPsnSequenceError, 0x010203)
                     .Build();
  const auto aeth = Load<AethHdr>(&a[kExtAt]);
  EXPECT_EQ(aeth.syndrome(), 0x60);
  EXPECT_EQ(aeth.kind(), AethHdr::Kind::kNak);
  EXPECT_EQ(aeth.value(), AethHdr::kNakPsnSequenceError);
  EXPECT_EQ(aeth.msn(), 0x010203u);
  EXPECT_EQ(a.size(), kExtAt + 4 + kIcrcBytes);

  const auto ack = AethHdr::Make(AethHdr::Kind::kAck, 0x1F, 0xFFFFFF);
  EXPECT_EQ(ack.syndrome(), 0x1F);
  EXPECT_EQ(ack.kind(), AethHdr::Kind::kAck);
  EXPECT_EQ(ack.msn(), 0xFFFFFFu);
  const auto rnr = AethHdr::Make(AethHdr::Kind::kRnrNak, 14, 7);
  EXPECT_EQ(rnr.syndrome(), 0x2E);
  EXPECT_EQ(rnr.kind(), AethHdr::Kind::kRnrNak);
  EXPECT_EQ(rnr.value(), 14);
}

// IBA vol. 1 table 38 (RC), column by column: which extension headers each
// opcode carries, and the ACK class the LB and egress treat apart.
TEST(Roce, OpcodeClassificationFollowsIba) {
  struct Row {
    Opcode op;
    bool reth, aeth, imm, ack_class;
    uint32_t ext_bytes;
  };
  const Row rows[] = {
      {Opcode::kSendFirst, false, false, false, false, 0},
      {Opcode::kSendMiddle, false, false, false, false, 0},
      {Opcode::kSendLast, false, false, false, false, 0},
      {Opcode::kSendLastWithImm, false, false, true, false, 4},
      {Opcode::kSendOnly, false, false, false, false, 0},
      {Opcode::kSendOnlyWithImm, false, false, true, false, 4},
      {Opcode::kRdmaWriteFirst, true, false, false, false, 16},
      {Opcode::kRdmaWriteMiddle, false, false, false, false, 0},
      {Opcode::kRdmaWriteLast, false, false, false, false, 0},
      {Opcode::kRdmaWriteLastWithImm, false, false, true, false, 4},
      {Opcode::kRdmaWriteOnly, true, false, false, false, 16},
      {Opcode::kRdmaWriteOnlyWithImm, true, false, true, false, 20},
      {Opcode::kRdmaReadRequest, true, false, false, false, 16},
      {Opcode::kRdmaReadResponseFirst, false, true, false, false, 4},
      {Opcode::kRdmaReadResponseMiddle, false, false, false, false, 0},
      {Opcode::kRdmaReadResponseLast, false, true, false, false, 4},
      {Opcode::kRdmaReadResponseOnly, false, true, false, false, 4},
      {Opcode::kAcknowledge, false, true, false, true, 4},
      {Opcode::kAtomicAcknowledge, false, true, false, true, 12},
      {Opcode::kCompareSwap, false, false, false, false, 28},
      {Opcode::kFetchAdd, false, false, false, false, 28},
      {Opcode::kCnp, false, false, false, true, 0},
  };
  int ack_class = 0;
  for (const Row& r : rows) {
    SCOPED_TRACE(static_cast<int>(Raw(r.op)));
    EXPECT_EQ(HasReth(r.op), r.reth);
    EXPECT_EQ(HasAeth(r.op), r.aeth);
    EXPECT_EQ(HasImmDt(r.op), r.imm);
    EXPECT_EQ(IsAckClass(r.op), r.ack_class);
    EXPECT_EQ(ExtHeaderBytes(Raw(r.op)), r.ext_bytes);
  }
  // Nothing else is ACK class (UC/RD/UD and reserved opcodes included).
  for (int op = 0; op < 256; ++op) ack_class += IsAckClass(static_cast<uint8_t>(op));
  EXPECT_EQ(ack_class, 3);
  EXPECT_FALSE(HasReth(uint8_t{0x2A}));  // UC RDMA WRITE ONLY: RC helpers only
}

TEST(Roce, PsnArithmeticWrapsAt24Bits) {
  EXPECT_EQ(PsnAdd(0xFFFFFF, 1), 0u);
  EXPECT_EQ(PsnAdd(0xFFFFFE, 5), 3u);
  EXPECT_EQ(PsnAdd(2, -3), 0xFFFFFFu);
  EXPECT_EQ(PsnDiff(0, 0xFFFFFF), 1);
  EXPECT_EQ(PsnDiff(0xFFFFFF, 0), -1);
  EXPECT_EQ(PsnDiff(3, 0xFFFFFE), 5);
  EXPECT_EQ(PsnDiff(100, 100), 0);
  EXPECT_TRUE(PsnBefore(0xFFFFF0, 0x10));  // across the wrap
  EXPECT_FALSE(PsnBefore(0x10, 0xFFFFF0));
  EXPECT_TRUE(PsnBefore(5, 6));
  EXPECT_FALSE(PsnBefore(6, 6));
  // Half the space is the edge: 2^23 ahead reads as 2^23 behind.
  EXPECT_EQ(PsnDiff(0x800000, 0), -0x800000);
  EXPECT_EQ(PsnDiff(0x7FFFFF, 0), 0x7FFFFF);
  for (uint32_t base : {0u, 1u, 0x7FFFFFu, 0x800000u, 0xFFFFFFu}) {
    for (int32_t n : {1, 2, 1000, 0x7FFFFF, -1, -1000, -0x800000}) {
      const uint32_t b = PsnAdd(base, n);
      EXPECT_LE(b, kPsnMask);
      EXPECT_EQ(PsnDiff(b, base), n) << base << " " << n;
    }
  }
}

// Where a golden frame's headers are.
struct Layout {
  uint32_t l3, ihl, udp, bth, total;
};
Layout LayoutOf(const golden::Frame& f) {
  Layout l{};
  l.l3 = f.Has("vlan") ? 18 : 14;
  l.ihl = (f.in[l.l3] & 0xFu) * 4;
  l.udp = l.l3 + l.ihl;
  l.bth = l.udp + sizeof(UdpHdr);
  l.total = Rd16(&f.in[l.l3 + offsetof(Ipv4Hdr, total_length)]);
  return l;
}

// Calls check(frame, layout) for every frame of roce.golden, its name traced.
template <class F>
void ForEachRoceFrame(F check) {
  const auto& g = golden::Fixture("roce.golden");
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_GE(g->frames.size(), 10u);
  for (const golden::Frame& f : g->frames) {
    SCOPED_TRACE(f.name);
    check(f, LayoutOf(f));
  }
}

TEST(RoceGolden, IcrcAgreesWithScapy) {
  ForEachRoceFrame([](const golden::Frame& f, const Layout& l) {
    const uint32_t n = static_cast<uint32_t>(f.in.size());
    const bool ok = f.Num("icrc_ok") == 1;
    EXPECT_EQ(RoceIcrcOk(f.in.data(), n), ok);
    const uint32_t computed = RoceIcrc(&f.in[l.l3], l.total - kIcrcBytes);
    EXPECT_EQ(computed == LoadIcrc(&f.in[l.l3 + l.total - kIcrcBytes]), ok);
  });
}

// scapy's field values, read back through the typed headers, and the
// extension headers where the opcode table says they are.
TEST(RoceGolden, TypedHeadersReadScapysFields) {
  ForEachRoceFrame([](const golden::Frame& f, const Layout& l) {
    const auto bth = Load<BthHdr>(&f.in[l.bth]);
    EXPECT_EQ(bth.opcode, f.Num("opcode"));
    EXPECT_EQ(bth.solicited(), f.Num("se") == 1);
    EXPECT_EQ(bth.migreq(), f.Num("m") == 1);
    EXPECT_EQ(bth.pad_count(), f.Num("pad"));
    EXPECT_EQ(bth.tver(), f.Num("tver"));
    EXPECT_EQ(bth.p_key(), f.Num("pkey"));
    EXPECT_EQ(bth.fecn(), f.Num("fecn") == 1);
    EXPECT_EQ(bth.becn(), f.Num("becn") == 1);
    EXPECT_EQ(bth.dqpn(), f.Num("dqpn"));
    EXPECT_EQ(bth.ack_req(), f.Num("ackreq") == 1);
    EXPECT_EQ(bth.psn24(), f.Num("psn"));
    const uint8_t op = bth.opcode;
    uint32_t at = l.bth + sizeof(BthHdr);
    ASSERT_EQ(HasReth(op), f.Has("va"));
    if (HasReth(op)) {
      const auto reth = Load<RethHdr>(&f.in[at]);
      EXPECT_EQ(reth.va(), f.Num("va"));
      EXPECT_EQ(reth.r_key(), f.Num("rkey"));
      EXPECT_EQ(reth.length(), f.Num("dmalen"));
      at += sizeof(RethHdr);
    }
    ASSERT_EQ(HasAeth(op), f.Has("syndrome"));
    if (HasAeth(op)) {
      const auto aeth = Load<AethHdr>(&f.in[at]);
      EXPECT_EQ(aeth.syndrome(), f.Num("syndrome"));
      EXPECT_EQ(aeth.msn(), f.Num("msn"));
      at += sizeof(AethHdr);
    }
    ASSERT_EQ(HasImmDt(op), f.Has("imm"));
    if (HasImmDt(op)) {
      EXPECT_EQ(Load<ImmDtHdr>(&f.in[at]).imm.host(), f.Num("imm"));
      at += sizeof(ImmDtHdr);
    }
    EXPECT_EQ(at - l.bth - sizeof(BthHdr), ExtHeaderBytes(op));
    // What is left before the ICRC is the payload (and pad / reserved bytes).
    EXPECT_EQ(l.l3 + l.total - kIcrcBytes - at, f.Num("payload") + f.Num("zeros"));
    EXPECT_EQ(IsAckClass(op), op == Raw(Opcode::kAcknowledge) || op == Raw(Opcode::kCnp));
  });
}

// PacketBuilder, given scapy's fields, makes scapy's bytes: lengths, IPv4
// checksum, BTH layout and ICRC all agree.
TEST(RoceGolden, BuilderRemakesScapysFrames) {
  int remade = 0;
  ForEachRoceFrame([&](const golden::Frame& f, const Layout&) {
    if (f.Num("builder") != 1) return;
    const auto dst = golden::ParseMac(f.Str("mac_dst")), src = golden::ParseMac(f.Str("mac_src"));
    ASSERT_TRUE(dst && src);
    PacketBuilder b;
    if (f.Has("vlan")) {
      b.Eth(*dst, *src, ethertype::kIpv4).Vlan(static_cast<uint16_t>(f.Num("vlan")));
    } else {
      b.Eth(*dst, *src);
    }
    b.Ipv4(static_cast<uint32_t>(f.Num("ip_src")), static_cast<uint32_t>(f.Num("ip_dst")),
           static_cast<uint8_t>(f.Num("ttl")), static_cast<uint8_t>(f.Num("tos")))
        .Udp(static_cast<uint16_t>(f.Num("sport")), kRoceV2Port);
    BthHdr h =
        BthHdr::Make(Opcode{static_cast<uint8_t>(f.Num("opcode"))},
                     static_cast<uint32_t>(f.Num("dqpn")), static_cast<uint32_t>(f.Num("psn")));
    h.set_solicited(f.Num("se") == 1);
    h.set_migreq(f.Num("m") == 1);
    h.set_pad_count(static_cast<uint8_t>(f.Num("pad")));
    h.set_tver(static_cast<uint8_t>(f.Num("tver")));
    h.set_p_key(static_cast<uint16_t>(f.Num("pkey")));
    h.set_fecn(f.Num("fecn") == 1);
    h.set_becn(f.Num("becn") == 1);
    h.set_ack_req(f.Num("ackreq") == 1);
    b.Bth(h);
    if (f.Has("va")) {
      b.Reth(f.Num("va"), static_cast<uint32_t>(f.Num("rkey")),
             static_cast<uint32_t>(f.Num("dmalen")));
    }
    if (f.Has("syndrome")) {
      b.Aeth(static_cast<uint8_t>(f.Num("syndrome")), static_cast<uint32_t>(f.Num("msn")));
    }
    if (f.Has("imm")) b.ImmDt(static_cast<uint32_t>(f.Num("imm")));
    b.Payload(static_cast<uint32_t>(f.Num("payload")));
    b.Raw(std::vector<uint8_t>(f.Num("zeros"), 0));
    if (f.Has("eth_pad")) b.PadTo(static_cast<uint32_t>(f.in.size()));
    EXPECT_EQ(b.Build(), f.in);
    ++remade;
  });
  EXPECT_GE(remade, 10);
}

// The ICRC covers everything from the IPv4 header to the end of the payload
// but TOS, TTL, the two checksums and the BTH's FECN/BECN/reserved byte: a
// one-bit change of any other byte there is a mismatch (or no longer RoCE);
// the Ethernet addresses, the VLAN TCI and padding are not covered.
TEST(RoceGolden, EveryChangeOutsideTheMaskedFieldsIsDetected) {
  ForEachRoceFrame([](const golden::Frame& f, const Layout& l) {
    if (f.Num("icrc_ok") != 1) return;
    const std::set<uint32_t> masked = {l.l3 + 1,  l.l3 + 8,  l.l3 + 10, l.l3 + 11,
                                       l.udp + 6, l.udp + 7, l.bth + 4};
    const std::set<uint32_t> ethertypes = {12, 13, l.l3 - 2, l.l3 - 1};
    auto frame = f.in;
    const auto n = static_cast<uint32_t>(frame.size());
    for (uint32_t i = 0; i < n; ++i) {
      const bool covered = i >= l.l3 && i < l.l3 + l.total && masked.count(i) == 0;
      frame[i] ^= 1;
      EXPECT_EQ(RoceIcrcOk(frame.data(), n), !covered && ethertypes.count(i) == 0) << "byte " << i;
      frame[i] ^= 1;
    }
    // Cut short anywhere inside the datagram, it is refused (never read past).
    for (uint32_t cut = 0; cut < l.l3 + l.total; ++cut) {
      const std::vector<uint8_t> part(frame.begin(), frame.begin() + cut);
      EXPECT_FALSE(RoceIcrcOk(part.data(), cut)) << "cut " << cut;
    }
  });
}

}  // namespace
}  // namespace ofan::pkt
