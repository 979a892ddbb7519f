// The parts of uroce's Qp on their own (qp_test.cc drives them together
// through two Hosts): entropy, rate control, the ACK owed, the frame
// headers.
#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "dataplane/packet/roce.h"
#include "emu/uroce/ack_state.h"
#include "emu/uroce/dcqcn.h"
#include "emu/uroce/entropy.h"
#include "emu/uroce/framer.h"

namespace ofan::uroce {
namespace {

QpPeer Peer() {
  QpPeer p;
  p.local_mac = pkt::MacAddr{{0x02, 0, 0, 0, 0, 0x0A}};
  p.next_hop_mac = pkt::MacAddr{{0x02, 0, 0, 0, 0, 0x0B}};
  p.local_ip = 0x0A000102;
  p.remote_ip = 0x0A000202;
  p.local_qpn = 0x11;
  p.remote_qpn = 0x22;
  return p;
}

TEST(Entropy, PerQpIsTheRxePort) {
  EngineConfig cfg;
  Entropy e(cfg);
  e.Connect(Peer(), RxeUdpSport(0x11, 0x22));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(e.Next(), RxeUdpSport(0x11, 0x22));
  e.OnAck(0xD000, false);  // no effect outside REPS
  EXPECT_EQ(e.Next(), RxeUdpSport(0x11, 0x22));
}

TEST(Entropy, RepsRecyclesCleanPortsOnceInOrder) {
  EngineConfig cfg;
  cfg.entropy = EntropyMode::kReps;
  Entropy e(cfg);
  e.Connect(Peer(), 0xC001);
  e.OnAck(0xC100, false);
  e.OnAck(0xC200, true);  // BECN: the path was congested, not recycled
  e.OnAck(0xC300, false);
  EXPECT_EQ(e.Next(), 0xC100);
  EXPECT_EQ(e.Next(), 0xC300);
  // Then fresh ports, each in 0xC000..0xFFFF.
  for (int i = 0; i < 16; ++i) EXPECT_GE(e.Next(), 0xC000);
}

TEST(RateLimiter, CutOnCnpRecoverOverTime) {
  EngineConfig cfg;
  cfg.dcqcn = true;
  cfg.line_rate_gbps = 8;  // 1 byte per ns at the line rate
  QpCounters c;
  RateLimiter r(cfg, &c);
  EXPECT_FALSE(r.limiting());
  EXPECT_EQ(r.NextDeadline(), ~Ns{0});
  r.OnCnp(1000);
  EXPECT_EQ(c.cnps_rx, 1u);
  EXPECT_TRUE(r.limiting());
  EXPECT_DOUBLE_EQ(r.rate(), 0.5);  // alpha stays 1 after the first cut
  // 1000 bytes + 24 of preamble, FCS and gap at half of 1 byte/ns.
  EXPECT_EQ(r.Spacing(1000), 2048u);
  // 55 us at 40 Gb/s: five times as long at 8 Gb/s.
  EXPECT_EQ(r.NextDeadline(), 1000u + 275'000u);
  r.OnTimer(1000 + 274'999);
  EXPECT_DOUBLE_EQ(r.rate(), 0.5);
  r.OnTimer(1000 + 275'000);
  EXPECT_DOUBLE_EQ(r.rate(), 0.75);
}

TEST(RateLimiter, TimersAreTheReferenceLineTime) {
  EXPECT_EQ(DcqcnTime(55'000, 100), 55'000u);  // as given at 40 Gb/s and above
  EXPECT_EQ(DcqcnTime(55'000, 40), 55'000u);
  EXPECT_EQ(DcqcnTime(55'000, 0.025), 88'000'000u);  // ofan-emu's 25 Mb/s: 88 ms
  EXPECT_EQ(DcqcnTime(55'000, 0), 55'000u);          // no rate known: as given
}

TEST(RateLimiter, CountsCnpsButIgnoresThemWithoutDcqcn) {
  EngineConfig cfg;
  QpCounters c;
  RateLimiter r(cfg, &c);
  r.OnCnp(1000);
  EXPECT_EQ(c.cnps_rx, 1u);
  EXPECT_FALSE(r.limiting());
  EXPECT_DOUBLE_EQ(r.rate(), 1.0);
}

TEST(CnpSender, OnePerIntervalNotEcnCapable) {
  EngineConfig cfg;
  cfg.cnp_interval_ns = 50'000;
  cfg.line_rate_gbps = 40;  // the interval as given
  QpCounters c;
  Framer f(cfg);
  f.Connect(Peer());
  CnpSender s(cfg, &f, &c);
  std::array<uint8_t, kMaxFrame> out{};
  EXPECT_EQ(s.Build(out.data(), 0), 0u);
  s.OnCe(100'000);
  const uint32_t len = s.Build(out.data(), 100'000);
  ASSERT_EQ(len, kL2L4 + kBth + 16 + pkt::kIcrcBytes);
  EXPECT_TRUE(pkt::RoceIcrcOk(out.data(), len));
  EXPECT_EQ(out[15] & 3, 0);  // not ECT
  EXPECT_EQ(pkt::Ipv4Checksum20(out.data() + 14), 0);
  const auto bth = pkt::Load<pkt::BthHdr>(out.data() + kL2L4);
  EXPECT_EQ(bth.op(), pkt::Opcode::kCnp);
  EXPECT_TRUE(bth.becn());
  EXPECT_EQ(bth.dqpn(), 0x22u);
  s.OnCe(120'000);  // inside the interval: none owed
  EXPECT_FALSE(s.owed());
  s.OnCe(150'000);
  EXPECT_TRUE(s.owed());
  EXPECT_EQ(c.ce_rx, 3u);
  EXPECT_EQ(c.cnps_tx, 1u);
}

TEST(AckState, CoalescedAckKeepsTheHighestPsnAndANakReplacesIt) {
  EngineConfig cfg;
  QpCounters c;
  Framer f(cfg);
  f.Connect(Peer());
  AckState a(&f, &c);
  a.Start(0xFFFFFE);
  std::array<uint8_t, kMaxFrame> out{};
  EXPECT_EQ(a.Build(out.data()), 0u);
  a.OweAck(0xFFFFFF, 0xC123, true);
  a.OweAck(0xFFFFFE, f.base_sport(), false);  // a duplicate's lower PSN
  EXPECT_EQ(a.acks_owed(), 1u);
  a.EndMessage();
  uint32_t len = a.Build(out.data());
  ASSERT_EQ(len, kL2L4 + kBth + sizeof(pkt::AethHdr) + pkt::kIcrcBytes);
  EXPECT_TRUE(pkt::RoceIcrcOk(out.data(), len));
  auto bth = pkt::Load<pkt::BthHdr>(out.data() + kL2L4);
  auto aeth = pkt::Load<pkt::AethHdr>(out.data() + kL2L4 + kBth);
  EXPECT_EQ(bth.psn24(), 0xFFFFFFu);
  EXPECT_TRUE(bth.becn());
  EXPECT_EQ(pkt::Rd16(out.data() + 34), 0xC123);
  EXPECT_EQ(aeth.syndrome(), static_cast<uint8_t>(Syndrome::kAck));
  EXPECT_EQ(aeth.msn(), 1u);
  EXPECT_EQ(c.acks_tx, 1u);
  EXPECT_EQ(a.Build(out.data()), 0u);  // paid

  a.Advance();  // wraps to 0xFFFFFF
  a.OweAck(0xFFFFFE, 0xC123, false);
  a.OweNak(Syndrome::kNakPsnSequence);
  len = a.Build(out.data());
  bth = pkt::Load<pkt::BthHdr>(out.data() + kL2L4);
  aeth = pkt::Load<pkt::AethHdr>(out.data() + kL2L4 + kBth);
  EXPECT_EQ(bth.psn24(), 0xFFFFFFu);  // the expected PSN
  EXPECT_FALSE(bth.becn());
  EXPECT_EQ(pkt::Rd16(out.data() + 34), f.base_sport());
  EXPECT_EQ(aeth.kind(), pkt::AethHdr::Kind::kNak);
  EXPECT_EQ(aeth.value(), pkt::AethHdr::kNakPsnSequenceError);
  EXPECT_EQ(c.naks_tx, 1u);
}

TEST(Framer, HeadersAndIdsAcrossFrames) {
  EngineConfig cfg;
  cfg.dscp = 26;
  Framer f(cfg);
  f.Connect(Peer());
  EXPECT_EQ(f.base_sport(), RxeUdpSport(0x11, 0x22));
  std::array<uint8_t, kMaxFrame> a{}, b{};
  const uint32_t ip_len = 20 + 8 + kBth + pkt::kIcrcBytes;
  EXPECT_EQ(f.Header(a.data(), ip_len, 0xC777), kL2L4);
  EXPECT_EQ(f.Header(b.data(), ip_len, 0xC777, /*ect=*/false), kL2L4);
  EXPECT_EQ(a[15], 26 << 2 | pkt::ecn::kEct0);
  EXPECT_EQ(b[15], 26 << 2);
  EXPECT_EQ(pkt::Rd16(b.data() + 18), pkt::Rd16(a.data() + 18) + 1);  // one id counter
  EXPECT_EQ(pkt::Ipv4Checksum20(a.data() + 14), 0);
  EXPECT_EQ(pkt::Rd16(a.data() + 34), 0xC777);
  EXPECT_EQ(pkt::Rd16(a.data() + 36), pkt::kRoceV2Port);
  EXPECT_EQ(pkt::Rd16(a.data() + 40), 0);  // UDP checksum: the ICRC covers it
}

}  // namespace
}  // namespace ofan::uroce
