// The reorder stage's reader (dataplane/egress/reorder.h) on whole frames:
// a RoCEv2 request's flow and PSN, untagged and tagged; READ responses a
// flow apart, with the ACKs; a message's place, its payload, a READ
// request's length; CNPs, UD, UC and non-RoCE frames go on; a BTH or
// extension header the lengths cannot hold is kBadLength.
#include "dataplane/egress/reorder.h"

#include <gtest/gtest.h>

#include <vector>

#include "dataplane/packet/builder.h"

namespace ofan::dp {
namespace {

using pkt::PacketBuilder;

std::vector<uint8_t> Roce(uint8_t opcode, uint32_t qp, uint32_t psn, uint32_t payload = 256) {
  return PacketBuilder()
      .Eth(pkt::MacAddr{{0x02, 0, 0, 0, 0, 1}}, pkt::MacAddr{{0x02, 0, 0, 0, 0, 2}})
      .Ipv4(0x0A000102, 0x0A000002, 64, pkt::ecn::kEct0)
      .Udp(0xC123, 4791)
      .Bth(opcode, qp, psn)
      .Payload(payload)
      .Build();
}

RoceSeqKind Read(const std::vector<uint8_t>& f, RoceSeq& s) {
  return ReadRoceSeq(f.data(), static_cast<uint32_t>(f.size()), s);
}

TEST(ReorderStage, ARequestGivesItsFlowAndPsn) {
  RoceSeq s;
  ASSERT_EQ(Read(Roce(0x0A, 0x123456, 0xABCDEF), s), RoceSeqKind::kData);
  EXPECT_EQ(s.key.src_ip, 0x0A000102u);
  EXPECT_EQ(s.key.dst_qp, 0x123456u);
  EXPECT_EQ(s.at.psn, 0xABCDEFu);
  const std::vector<uint8_t> tagged =
      PacketBuilder()
          .Eth(pkt::MacAddr{{0x02, 0, 0, 0, 0, 1}}, pkt::MacAddr{{0x02, 0, 0, 0, 0, 2}})
          .Vlan(7)
          .Ipv4(0x0A000103, 0x0A000002, 64, 0)
          .Udp(0xC000, 4791)
          .Bth(0x0A, 9, 77)
          .Payload(64)
          .Build();
  ASSERT_EQ(Read(tagged, s), RoceSeqKind::kData) << "one 802.1Q tag";
  EXPECT_EQ(s.key.src_ip, 0x0A000103u);
  EXPECT_EQ(s.at.psn, 77u);
  // SEND and WRITE middle/last are requests too.
  for (const uint8_t op : {0x00, 0x04, 0x07, 0x08, 0x0B})
    EXPECT_EQ(Read(Roce(op, 1, 2), s), RoceSeqKind::kData) << int{op};
}

TEST(ReorderStage, AFrameSaysWhereItSitsInItsMessage) {
  RoceSeq s;
  ASSERT_EQ(Read(Roce(0x00, 5, 100, 1024), s), RoceSeqKind::kData) << "SEND FIRST";
  EXPECT_FALSE(s.key.response);
  EXPECT_FALSE(s.at.continues);
  EXPECT_TRUE(s.at.more);
  EXPECT_EQ(s.at.payload, 1024u) << "a FIRST's payload is the path MTU";
  EXPECT_FALSE(s.at.read);
  ASSERT_EQ(Read(Roce(0x07, 5, 101, 1024), s), RoceSeqKind::kData) << "WRITE MIDDLE";
  EXPECT_TRUE(s.at.continues);
  EXPECT_TRUE(s.at.more);
  ASSERT_EQ(Read(Roce(0x02, 5, 102, 300), s), RoceSeqKind::kData) << "SEND LAST";
  EXPECT_TRUE(s.at.continues);
  EXPECT_FALSE(s.at.more);
  EXPECT_EQ(s.at.payload, 300u);
}

TEST(ReorderStage, ReadResponsesAreAFlowApartAndAReadGivesItsLength) {
  const auto frame = [](uint8_t op, uint32_t psn, bool reth, bool aeth, uint32_t payload) {
    PacketBuilder b;
    b.Eth(pkt::MacAddr{{0x02, 0, 0, 0, 0, 1}}, pkt::MacAddr{{0x02, 0, 0, 0, 0, 2}})
        .Ipv4(0x0A000102, 0x0A000002, 64, 0)
        .Udp(0xC123, 4791)
        .Bth(op, 0x42, psn);
    if (reth) b.Reth(0x1000, 7, 5000);
    if (aeth) b.Aeth(0, 3);
    return b.Payload(payload).Build();
  };
  RoceSeq s;
  ASSERT_EQ(Read(frame(0x0C, 900, true, false, 0), s), RoceSeqKind::kData) << "READ request";
  EXPECT_FALSE(s.key.response) << "a READ request is a request";
  EXPECT_TRUE(s.at.read);
  EXPECT_EQ(s.at.read_bytes, 5000u);
  EXPECT_EQ(s.at.psn, 900u);
  for (const uint8_t op : {0x0D, 0x0E, 0x0F, 0x10}) {
    const bool aeth = op != 0x0E;  // a MIDDLE has no AETH
    ASSERT_EQ(Read(frame(op, 900, false, aeth, 1024), s), RoceSeqKind::kData) << int{op};
    EXPECT_TRUE(s.key.response) << int{op};
    EXPECT_EQ(s.key.dst_qp, 0x42u);
    EXPECT_EQ(s.at.payload, 1024u) << int{op};
    EXPECT_EQ(s.at.more, op == 0x0D || op == 0x0E) << int{op};
    EXPECT_EQ(s.at.continues, op == 0x0E || op == 0x0F) << int{op};
    EXPECT_FALSE(s.at.read);
  }
}

TEST(ReorderStage, AcksAreOfTheResponseFlowAndTakeNoPsn) {
  RoceSeq s;
  for (const uint8_t op : {0x11, 0x12}) {  // ACK, atomic ACK
    ASSERT_EQ(Read(Roce(op, 0x42, 9, op == 0x11 ? 4 : 12), s), RoceSeqKind::kData) << int{op};
    EXPECT_TRUE(s.at.ack);
    EXPECT_TRUE(s.key.response) << "an ACK carries the reader's PSNs, as READ responses do";
    EXPECT_EQ(s.key.dst_qp, 0x42u);
    EXPECT_EQ(s.at.psn, 9u);
  }
  ASSERT_EQ(Read(Roce(0x04, 0x42, 9), s), RoceSeqKind::kData);
  EXPECT_FALSE(s.at.ack) << "a SEND ONLY";
}

TEST(ReorderStage, CnpsUdUcAndOtherFramesGoOn) {
  RoceSeq s;
  EXPECT_EQ(Read(Roce(0x81, 1, 5, 16), s), RoceSeqKind::kOther) << "CNP";
  EXPECT_EQ(Read(Roce(0x64, 1, 5, 64), s), RoceSeqKind::kOther) << "UD SEND ONLY";
  EXPECT_EQ(Read(Roce(0x24, 1, 5, 64), s), RoceSeqKind::kOther) << "UC SEND ONLY";
  const std::vector<uint8_t> udp =
      PacketBuilder()
          .Eth(pkt::MacAddr{{0x02, 0, 0, 0, 0, 1}}, pkt::MacAddr{{0x02, 0, 0, 0, 0, 2}})
          .Ipv4(1, 2, 64, 0)
          .Udp(1000, 53)
          .Payload(64)
          .Build();
  EXPECT_EQ(Read(udp, s), RoceSeqKind::kOther) << "not RoCE";
  EXPECT_EQ(ReadRoceSeq(udp.data(), 20, s), RoceSeqKind::kOther) << "short";
}

TEST(ReorderStage, ABthTheLengthsCannotHoldIsBadLength) {
  RoceSeq s;
  std::vector<uint8_t> f = Roce(0x0A, 1, 2);
  EXPECT_EQ(ReadRoceSeq(f.data(), 14 + 20 + 8 + 6, s), RoceSeqKind::kBadLength)
      << "cut in the BTH (the IPv4 total length runs past it)";
  f[14 + 20 + 4] = 0;  // UDP length 12: no room for BTH and ICRC
  f[14 + 20 + 5] = 12;
  EXPECT_EQ(Read(f, s), RoceSeqKind::kBadLength);
  // A UDP length past the IPv4 packet (the fuzz target's find): its payload
  // would be more than the frame holds.
  std::vector<uint8_t> u = Roce(0x0A, 1, 2);
  u[14 + 20 + 4] = 0x23;
  u[14 + 20 + 5] = 0x68;
  EXPECT_EQ(Read(u, s), RoceSeqKind::kBadLength);
  // A READ request whose UDP length has room for the BTH and ICRC, not the
  // RETH its opcode says follows.
  std::vector<uint8_t> r = Roce(0x0C, 1, 2, 0);
  r[14 + 20 + 5] = 8 + 12 + 4;
  EXPECT_EQ(Read(r, s), RoceSeqKind::kBadLength);
}

}  // namespace
}  // namespace ofan::dp
