// The exception path on whole frames: ARP and ICMP echo replies (pure
// functions), neighbour learning, and frames handed to the subscriber.
// Expected frames are built independently with PacketBuilder (checksums from
// scratch) or written out by hand.
#include "dataplane/exception/exception_path.h"

#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <array>
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

// The RFC 1812 4.3.2.7 cases: no ICMP error about these. (The whole frames
// of the errors sent are scapy's, in tests/golden/stages.golden.)
TEST(ExceptionPath, IcmpErrorsOnlyWhereARouterSendsThem) {
  constexpr uint32_t kSw = 0x0AFF0001;  // 10.255.0.1
  const Frame udp = pkt::PacketBuilder()
                        .Eth(kPort, kHost)
                        .Ipv4(kHostIp, 0x0A030103, 1, 0, pkt::ipproto::kUdp)
                        .Udp(40000, 33434)
                        .Payload(32)
                        .Build();
  const auto te = IcmpError(udp, pkt::icmp::kTimeExceeded, 0, kPort, kSw);
  ASSERT_TRUE(te);
  // Ethernet back to the sender, IPv4 from the switch, ICMP 11/0, then the
  // quoted IPv4 header and 8 bytes (the UDP header).
  ASSERT_EQ(te->size(), 14u + 20 + 8 + 28);
  EXPECT_TRUE(std::equal(te->begin(), te->begin() + 6, kHost.b.begin()));
  EXPECT_TRUE(std::equal(te->begin() + 6, te->begin() + 12, kPort.b.begin()));
  EXPECT_EQ(pkt::Ipv4Checksum(te->data() + 14, 20), 0);
  EXPECT_EQ(pkt::Ipv4Checksum(te->data() + 34, 36), 0) << "ICMP checksum";
  EXPECT_EQ((*te)[34], 11);
  EXPECT_TRUE(std::equal(te->begin() + 42, te->end(), udp.begin() + 14));
  EXPECT_FALSE(IcmpError(udp, 11, 0, kPort, 0)) << "a switch without an address";

  auto variant = [&](auto edit) {
    Frame f = udp;
    edit(f);
    pkt::SetIpv4Checksum20(&f[14]);
    return IcmpError(f, pkt::icmp::kTimeExceeded, 0, kPort, kSw);
  };
  EXPECT_FALSE(variant([](Frame& f) { f[0] = 0xFF; })) << "link broadcast";
  EXPECT_FALSE(variant([](Frame& f) { f[0] = 0x01; })) << "link multicast";
  EXPECT_FALSE(variant([](Frame& f) { f[30] = 224; })) << "IP multicast destination";
  EXPECT_FALSE(variant([](Frame& f) { f[30] = 255; })) << "IP broadcast destination";
  EXPECT_FALSE(variant([](Frame& f) { f[26] = 0, f[27] = 0, f[28] = 0, f[29] = 0; }))
      << "source 0.0.0.0";
  EXPECT_FALSE(variant([](Frame& f) { f[26] = 127; })) << "loopback source";
  EXPECT_FALSE(variant([](Frame& f) { f[26] = 230; })) << "multicast source";
  EXPECT_FALSE(variant([](Frame& f) { f[20] = 0x20, f[21] = 185; })) << "a later fragment";
  EXPECT_TRUE(variant([](Frame& f) { f[20] = 0x20; })) << "the first fragment: answered";
  const Frame err = pkt::PacketBuilder()
                        .Eth(kPort, kHost)
                        .Ipv4(kHostIp, 0x0A030103, 1, 0, pkt::ipproto::kIcmp)
                        .Icmp(pkt::icmp::kDestUnreachable, 0, 0)
                        .Payload(28)
                        .Build();
  EXPECT_FALSE(IcmpError(err, 11, 0, kPort, kSw)) << "about an ICMP error";
  const Frame echo = Echo(kPort, kHost, kHostIp, 0x0A030103, 1, pkt::icmp::kEchoRequest);
  EXPECT_TRUE(IcmpError(echo, 11, 0, kPort, kSw)) << "about an echo request: answered";
  EXPECT_FALSE(IcmpError(Frame(udp.begin(), udp.begin() + 30), 11, 0, kPort, kSw)) << "cut short";
  // An echo request in fragments (ping -s 5000 to the switch): the switch
  // reassembles nothing, so its first fragment gets no reply of a part.
  Frame frag = Echo(kPort, kHost, kHostIp, kGw, 64, pkt::icmp::kEchoRequest);
  frag[14 + 6] = 0x20;  // MF
  pkt::SetIpv4Checksum20(&frag[14]);
  EXPECT_FALSE(IcmpEchoReply(frag, kPort, kGw));
  EXPECT_TRUE(
      IcmpEchoReply(Echo(kPort, kHost, kHostIp, kGw, 64, pkt::icmp::kEchoRequest), kPort, kGw));
}

TEST(ExceptionPath, IcmpRateLimitIsATokenBucket) {
  IcmpRateLimit r(1000, 3);  // 1000 a second, 3 at once
  const uint64_t t0 = 1'000'000'000;
  EXPECT_TRUE(r.Take(t0));
  EXPECT_TRUE(r.Take(t0));
  EXPECT_TRUE(r.Take(t0));
  EXPECT_FALSE(r.Take(t0)) << "the burst is spent";
  EXPECT_FALSE(r.Take(t0 + 500'000)) << "half a token after 0.5 ms";
  EXPECT_TRUE(r.Take(t0 + 1'000'000)) << "one token per ms";
  EXPECT_FALSE(r.Take(t0 + 1'000'000));
  EXPECT_TRUE(r.Take(t0 + 1'000'000'000));
  EXPECT_TRUE(r.Take(t0 + 1'000'000'000));
  EXPECT_TRUE(r.Take(t0 + 1'000'000'000));
  EXPECT_FALSE(r.Take(t0 + 1'000'000'000)) << "refills to the burst, not beyond";
}

// Handed frames through the control thread: expired TTLs get Time
// Exceeded, UDP to the switch port unreachable, GRE protocol unreachable,
// all from the switch's address; a flood is cut at the burst and counted.
TEST(ExceptionPath, ExpiredAndUnservedFramesGetIcmpErrors) {
  std::vector<PortQueue> queues(2);
  Queued out;
  PortQueueConfig qc;
  qc.limit_bytes = 1 << 20;
  qc.ring_slots = 256;
  ASSERT_TRUE(queues[1].Init("exc3", 0, qc, TxHook{&Queued::Send, &out}, nullptr, 0).ok());
  std::vector<int32_t> port_of_dpdk = {-1, 1};
  NeighborTable nb(2);
  ExceptionPath x;
  ExceptionPath::Setup s;
  s.name = "xtest3";
  s.gateway_ip = kGw;
  s.switch_ip = 0x0AFF0001;
  s.icmp_burst = 4;
  s.port_mac = {pkt::MacAddr{}, kPort};
  s.port_of_dpdk = &port_of_dpdk;
  s.neighbors = &nb;
  s.sender = ControlSender(testing::TestPool(), &queues);
  ASSERT_TRUE(x.Init(std::move(s)).ok());
  auto udp = [](uint32_t dst, uint8_t ttl) {
    return pkt::PacketBuilder()
        .Eth(kPort, kHost)
        .Ipv4(kHostIp, dst, ttl, 0, pkt::ipproto::kUdp)
        .Udp(40000, 33434)
        .Payload(8)
        .Build();
  };
  const Frame gre = pkt::PacketBuilder()
                        .Eth(kPort, kHost)
                        .Ipv4(kHostIp, 0x0AFF0001, 64, 0, 47)
                        .Payload(24)
                        .Build();
  LcoreCounters ctr;
  // The control thread's bell rings for each hand-over: it serves them at
  // once instead of at its next poll.
  IdleWait bell;
  ASSERT_TRUE(bell.InitAlways({}));
  x.set_bell(&bell);
  const uint64_t notes = bell.notes();
  rte_mbuf* expired[] = {MbufOf(udp(0x0A030103, 1), 1)};
  x.HandExpired(expired, 1, ctr);
  EXPECT_EQ(bell.notes(), notes + 1);
  rte_mbuf* local[] = {MbufOf(udp(kGw, 64), 1), MbufOf(gre, 1)};
  x.Hand(local, 2, ctr);
  EXPECT_EQ(bell.notes(), notes + 2);
  EXPECT_EQ(ctr.Get(Counter::kException), 2u) << "HandExpired counts no exception";
  EXPECT_EQ(x.Service(ctr), 3u);
  queues[1].Drain(1, ctr);
  ASSERT_EQ(out.sent.size(), 3u);
  const std::array<std::pair<uint8_t, uint8_t>, 3> want = {{{11, 0}, {3, 3}, {3, 2}}};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out.sent[i][14 + 20], want[i].first) << i;
    EXPECT_EQ(out.sent[i][14 + 21], want[i].second) << i;
    EXPECT_TRUE(std::equal(out.sent[i].begin() + 26, out.sent[i].begin() + 30,
                           std::array<uint8_t, 4>{10, 255, 0, 1}.begin()))
        << "from the switch's address";
  }
  EXPECT_EQ(ctr.Get(Counter::kIcmpErrorSent), 3u);
  // A flood: the one token left of the burst of 4, then counted.
  std::vector<rte_mbuf*> flood;
  for (int i = 0; i < 10; ++i) flood.push_back(MbufOf(udp(0x0A030103, 1), 1));
  x.HandExpired(flood.data(), 10, ctr);
  x.Service(ctr);
  EXPECT_EQ(ctr.Get(Counter::kIcmpErrorSent) + ctr.Get(Counter::kIcmpRateLimited), 13u);
  EXPECT_GE(ctr.Get(Counter::kIcmpRateLimited), 8u);
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
