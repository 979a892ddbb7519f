// The exception path on whole frames: ARP and ICMP echo replies (pure
// functions), neighbour learning, and frames handed to the subscriber.
// Expected frames are built independently with PacketBuilder (checksums from
// scratch) or written out by hand.
#include "dataplane/exception/exception_path.h"

#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <vector>

#include "dataplane/packet/builder.h"
#include "tests/dataplane/eal_env.h"

namespace ofan::dp {
namespace {

using testing::Frame;
using testing::MbufOf;

const pkt::MacAddr kPort{{0x02, 0, 0, 0, 0x0a, 0x01}};
const pkt::MacAddr kHost{{0x02, 0, 0, 0, 0xb0, 0x07}};
const pkt::MacAddr kBcast{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}};
constexpr uint32_t kGw = 0x0A000001;  // 10.0.0.1
constexpr uint32_t kHostIp = 0x0A000002;

Frame ArpFrame(uint16_t oper, const pkt::MacAddr& dst, const pkt::MacAddr& sha, uint32_t spa,
               const pkt::MacAddr& tha, uint32_t tpa) {
  return pkt::PacketBuilder().Eth(dst, sha).Arp(oper, sha, spa, tha, tpa).Build();
}

Frame Echo(const pkt::MacAddr& dst, const pkt::MacAddr& src, uint32_t sip, uint32_t dip,
           uint8_t ttl, uint8_t type, std::optional<uint16_t> vlan = std::nullopt) {
  pkt::PacketBuilder b;
  b.Eth(dst, src);
  if (vlan) b.Vlan(*vlan);
  return b.Ipv4(sip, dip, ttl, 0, pkt::ipproto::kIcmp).Icmp(type, 0x1234, 7).Payload(40).Build();
}

TEST(ExceptionPath, AnswersArpForTheGatewayOnly) {
  const Frame req = ArpFrame(1, kBcast, kHost, kHostIp, pkt::MacAddr{}, kGw);
  const auto reply = ArpReply(req, kPort, kGw);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(*reply, ArpFrame(2, kHost, kPort, kGw, kHost, kHostIp));
  // The whole reply, by hand: Ethernet to the host, ARP reply from the gateway.
  const Frame want = {0x02, 0,    0,    0,    0xb0, 0x07, 0x02, 0,    0, 0,
                      0x0a, 0x01, 0x08, 0x06,                                 // eth
                      0x00, 0x01, 0x08, 0x00, 6,    4,    0x00, 0x02,         // ARP hdr
                      0x02, 0,    0,    0,    0x0a, 0x01, 10,   0,    0, 1,   // sender
                      0x02, 0,    0,    0,    0xb0, 0x07, 10,   0,    0, 2};  // target
  EXPECT_EQ(*reply, want);
  EXPECT_FALSE(ArpReply(ArpFrame(1, kBcast, kHost, kHostIp, {}, kGw + 1), kPort, kGw));
  EXPECT_FALSE(ArpReply(ArpFrame(2, kPort, kHost, kHostIp, kPort, kGw), kPort, kGw));
  EXPECT_FALSE(ArpReply(req, kPort, 0)) << "a switch without an address answers nothing";
  EXPECT_FALSE(ArpReply(Frame(req.begin(), req.begin() + 30), kPort, kGw)) << "cut short";
}

TEST(ExceptionPath, LearnsOnlyUnicastSenders) {
  EXPECT_EQ(ArpSender(ArpFrame(1, kBcast, kHost, kHostIp, {}, kGw)), kHost);
  EXPECT_FALSE(ArpSender(ArpFrame(1, kBcast, kBcast, kHostIp, {}, kGw)));
  EXPECT_FALSE(ArpSender(ArpFrame(1, kBcast, pkt::MacAddr{}, kHostIp, {}, kGw)));
}

TEST(ExceptionPath, AnswersIcmpEchoToTheGateway) {
  const Frame req = Echo(kPort, kHost, kHostIp, kGw, 64, pkt::icmp::kEchoRequest);
  const auto reply = IcmpEchoReply(req, kPort, kGw);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(*reply, Echo(kHost, kPort, kGw, kHostIp, 64, pkt::icmp::kEchoReply));
  // Behind a VLAN tag, the tag stays; Ethernet padding is not echoed.
  Frame tagged = Echo(kPort, kHost, kHostIp, kGw, 9, pkt::icmp::kEchoRequest, 0x0064);
  tagged.resize(tagged.size() + 6, 0);
  EXPECT_EQ(IcmpEchoReply(tagged, kPort, kGw),
            Echo(kHost, kPort, kGw, kHostIp, 64, pkt::icmp::kEchoReply, 0x0064));
  // Not for the switch, not a request, not ICMP, no address: no reply.
  EXPECT_FALSE(IcmpEchoReply(Echo(kPort, kHost, kHostIp, kGw + 5, 64, 8), kPort, kGw));
  EXPECT_FALSE(IcmpEchoReply(Echo(kPort, kHost, kHostIp, kGw, 64, 0), kPort, kGw));
  EXPECT_FALSE(IcmpEchoReply(req, kPort, 0));
  const Frame udp =
      pkt::PacketBuilder().Eth(kPort, kHost).Ipv4(kHostIp, kGw).Udp(1, 2).Payload(20).Build();
  EXPECT_FALSE(IcmpEchoReply(udp, kPort, kGw));
}

struct Queued {
  std::vector<Frame> sent;
  static uint16_t Send(void* ctx, rte_mbuf** pkts, uint16_t n) {
    for (uint16_t i = 0; i < n; ++i) {
      static_cast<Queued*>(ctx)->sent.push_back(testing::FrameOf(pkts[i]));
      rte_pktmbuf_free(pkts[i]);
    }
    return n;
  }
};

TEST(ExceptionPath, ServesHandedFramesRepliesLearnsAndPunts) {
  std::vector<PortQueue> queues(4);
  Queued out;
  PortQueueConfig qc;
  qc.limit_bytes = 1 << 20;
  qc.ring_slots = 64;
  ASSERT_TRUE(queues[1].Init("exc1", 0, qc, TxHook{&Queued::Send, &out}, nullptr, 0).ok());
  std::vector<int32_t> port_of_dpdk = {-1, -1, -1, 1};  // DPDK port 3 is fat-tree port 1
  NeighborTable nb(4);
  ExceptionPath x;
  ExceptionPath::Setup s;
  s.name = "xtest";
  s.gateway_ip = kGw;
  s.port_mac = {pkt::MacAddr{}, kPort, pkt::MacAddr{}, pkt::MacAddr{}};
  s.port_of_dpdk = &port_of_dpdk;
  s.neighbors = &nb;
  s.sender = ControlSender(testing::TestPool(), &queues);
  ASSERT_TRUE(x.Init(std::move(s)).ok());
  std::vector<std::pair<uint32_t, Frame>> punted;
  x.Subscribe([&](uint32_t port, std::span<const uint8_t> f) {
    punted.emplace_back(port, Frame(f.begin(), f.end()));
  });
  const Frame lldp =
      pkt::PacketBuilder().Eth(pkt::kLldpDstMac, kHost, pkt::ethertype::kLldp).PadTo(60).Build();
  rte_mbuf* in[] = {MbufOf(ArpFrame(1, kBcast, kHost, kHostIp, {}, kGw), 3),
                    MbufOf(Echo(kPort, kHost, kHostIp, kGw, 64, 8), 3), MbufOf(lldp, 3),
                    MbufOf(lldp, 0)};  // from no port of the switch: ignored
  LcoreCounters ctr;
  x.Hand(in, 4, ctr);
  EXPECT_EQ(ctr.Get(Counter::kException), 4u);
  EXPECT_EQ(nb.Get(1), std::nullopt);  // nothing happens until the control thread runs
  EXPECT_EQ(x.Service(ctr), 4u);
  EXPECT_EQ(nb.Get(1), kHost);
  ASSERT_EQ(punted.size(), 1u);
  EXPECT_EQ(punted[0].first, 1u);
  EXPECT_EQ(punted[0].second, lldp);
  queues[1].Drain(1, ctr);
  Frame arp_reply = ArpFrame(2, kHost, kPort, kGw, kHost, kHostIp);
  arp_reply.resize(60, 0);  // padded to the Ethernet minimum
  ASSERT_EQ(out.sent.size(), 2u);
  EXPECT_EQ(out.sent[0], arp_reply);
  EXPECT_EQ(out.sent[1], Echo(kHost, kPort, kGw, kHostIp, 64, 0));
  EXPECT_EQ(ctr.Get(Counter::kDropControlFull), 0u);
}

TEST(ExceptionPath, AControlFrameThatCannotBeQueuedIsCounted) {
  std::vector<PortQueue> queues(2);
  PortQueueConfig qc;
  qc.limit_bytes = 1 << 20;
  qc.ring_slots = 2;  // a ring of 2 slots holds one frame
  Queued out;
  ASSERT_TRUE(queues[0].Init("exc2", 0, qc, TxHook{&Queued::Send, &out}, nullptr, 0).ok());
  const ControlSender send(testing::TestPool(), &queues);
  LcoreCounters ctr;
  const Frame f(60, 0xAB);
  EXPECT_TRUE(send.Send(0, f, ctr));
  EXPECT_FALSE(send.Send(0, f, ctr));
  EXPECT_EQ(ctr.Get(Counter::kDropControlFull), 1u);
  EXPECT_FALSE(send.Send(1, f, ctr)) << "a port that is not configured";
}

}  // namespace
}  // namespace ofan::dp
