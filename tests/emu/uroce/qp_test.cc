// uroce's RC engine over the in-process loopback pair with a manual clock:
// every run is a function of its seed and of the number of steps.
#include "emu/uroce/qp.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "dataplane/hostio/loopback_wire.h"
#include "dataplane/packet/pfc_frame.h"
#include "emu/uroce/host.h"

namespace ofan::uroce {
namespace {

constexpr pkt::MacAddr kMacA{{0x02, 0, 0, 0, 0, 0x0A}};
constexpr pkt::MacAddr kMacB{{0x02, 0, 0, 0, 0, 0x0B}};
constexpr uint32_t kIpA = 0x0A000102, kIpB = 0x0A000202;
constexpr uint32_t kQpA = 0x11, kQpB = 0x22, kRkey = 0x77;
constexpr size_t kMem = 2 << 20;

// Two hosts on one lossy wire, one QP each, A the requester.
struct Pair {
  ManualClock clock;
  LoopbackPair lp;
  std::unique_ptr<Host> a, b;
  Qp *qa = nullptr, *qb = nullptr;
  std::vector<uint8_t> src, mem_a, mem_b;
  std::vector<QpEvent> ea, eb;

  explicit Pair(EngineConfig ec = {}, Impairment ab = {}, Impairment ba = {}, double pace = 0,
                uint32_t sq = 64, uint32_t start_psn = 0xFFFFF0,
                std::optional<uint8_t> pfc_a = std::nullopt, bool send_log_a = false) {
    lp = MakeLoopbackPair(ab, ba);
    HostConfig ha, hb;
    ha.engine = hb.engine = ec;
    ha.mac = kMacA;
    ha.ip = kIpA;
    hb.mac = kMacB;
    hb.ip = kIpB;
    ha.pace_fraction = hb.pace_fraction = pace;
    ha.pfc_priority = pfc_a;
    ha.send_log = send_log_a;
    a = std::make_unique<Host>(ha, std::move(lp.a), &clock);
    b = std::make_unique<Host>(hb, std::move(lp.b), &clock);
    src.resize(kMem);
    mem_a.resize(kMem);
    mem_b.resize(kMem);
    Rng r(7);
    for (auto& x : src) x = static_cast<uint8_t>(r.Next32());
    a->SetMemory({mem_a.data(), mem_a.size(), 0x1000, kRkey});
    b->SetMemory({mem_b.data(), mem_b.size(), 0x1000, kRkey});
    qa = a->AddQp(kQpA, sq, 64);
    qb = b->AddQp(kQpB, sq, 64);
    QpPeer pa{kMacA, kMacB, kIpA, kIpB, kQpA, kQpB, start_psn, 0x100};
    QpPeer pb{kMacB, kMacA, kIpB, kIpA, kQpB, kQpA, 0x100, start_psn};
    qa->Connect(pa);
    qb->Connect(pb);
  }
  // Steps both hosts, 1 us of virtual time per round, until done() or
  // `rounds` have passed. True if done() held.
  bool Run(const std::function<bool()>& done, uint32_t rounds = 200000) {
    for (uint32_t i = 0; i < rounds; ++i) {
      if (done()) return true;
      a->Step(&ea);
      b->Step(&eb);
      clock.Advance(1000);
    }
    return done();
  }
  size_t Count(const std::vector<QpEvent>& ev, QpEventKind k) const {
    size_t n = 0;
    for (const auto& e : ev) n += e.kind == k;
    return n;
  }
  SendWr Write(uint64_t src_off, uint64_t dst_off, uint32_t len, uint32_t imm, uint64_t id,
               WrOp op = WrOp::kWriteImm) const {
    SendWr w;
    w.op = op;
    w.local = src.data() + src_off;
    w.len = len;
    w.remote_va = 0x1000 + dst_off;
    w.rkey = kRkey;
    w.imm = imm;
    w.wr_id = id;
    return w;
  }
};

TEST(Qp, RxeSourcePortFormula) {
  // rdma_get_udp_sport(0, lqpn, rqpn) of include/rdma/ib_verbs.h, by hand:
  // fl = 0x11 * 0x22 = 0x242; no bits above 20; low 14 bits 0x242.
  EXPECT_EQ(RxeUdpSport(0x11, 0x22), 0xC242);
  EXPECT_EQ(RxeUdpSport(0x22, 0x11), 0xC242);  // both ends of the pair agree
  // fl = 0x123456 * 0x654321 = 0x7336bf4b8d6; folded and masked by hand.
  uint64_t fl = uint64_t{0x123456} * 0x654321;
  fl ^= fl >> 20;
  fl ^= fl >> 40;
  const uint32_t label = fl & 0xFFFFF;
  EXPECT_EQ(RxeUdpSport(0x123456, 0x654321),
            0xC000 | ((label & 0x3FFF) ^ ((label & 0xFC000) >> 14)));
  EXPECT_NE(RxeUdpSport(0x101, 0x102), RxeUdpSport(0x101, 0x103));
}

TEST(Qp, WritesOfManySizesComplete) {
  Pair p;
  const uint32_t sizes[] = {1, 3, 4, 5, 2047, 2048, 2049, 4096, 6001, 65536, 1 << 20};
  uint64_t id = 0;
  for (uint32_t len : sizes) {
    ++id;
    const uint64_t off = (id * 4099) % 4096;
    ASSERT_TRUE(p.qa->Post(p.Write(id, off, len, static_cast<uint32_t>(id * 10), id)));
    ASSERT_TRUE(p.Run([&] {
      return p.Count(p.ea, QpEventKind::kSendDone) == id &&
             p.Count(p.eb, QpEventKind::kRecvDone) == id;
    })) << len;
    EXPECT_EQ(0, std::memcmp(p.mem_b.data() + off, p.src.data() + id, len)) << len;
    EXPECT_EQ(p.ea.back().wr_id, id);
    EXPECT_EQ(p.eb.back().imm, id * 10);
    EXPECT_EQ(p.eb.back().len, len);
  }
  EXPECT_EQ(p.qa->counters().retransmits, 0u);
  EXPECT_EQ(p.qb->counters().naks_tx, 0u);
}

TEST(Host, SendLogKeepsEachRoceFrameWithItsSendTime) {
  // A logs, B does not; PSNs start 16 below the 24-bit wrap.
  Pair p({}, {}, {}, 0, 64, 0xFFFFF0, std::nullopt, true);
  const uint32_t len = 200000;  // 98 frames: more than one batch
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, len, 0, 1, WrOp::kWrite)));
  ASSERT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kSendDone) == 1; }));
  const std::vector<SentFrame>& log = p.a->sent_frames();
  EXPECT_TRUE(p.b->sent_frames().empty());
  // Every frame A sent is RoCEv2 (no loss: one WRITE's frames, no ARP).
  ASSERT_EQ(log.size(), p.a->counters().tx_frames);
  const uint32_t mtu = EngineConfig{}.mtu;
  ASSERT_EQ(log.size(), (len + mtu - 1) / mtu);
  for (size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(log[i].dqpn, kQpB);
    EXPECT_EQ(log[i].psn, (0xFFFFF0 + i) & 0xFFFFFF) << i;
    const uint8_t want = i == 0                ? pkt::Raw(pkt::Opcode::kRdmaWriteFirst)
                         : i + 1 == log.size() ? pkt::Raw(pkt::Opcode::kRdmaWriteLast)
                                               : pkt::Raw(pkt::Opcode::kRdmaWriteMiddle);
    EXPECT_EQ(log[i].opcode, want) << i;
    EXPECT_GT(log[i].len, i + 1 == log.size() ? len % mtu : mtu) << i;  // payload + headers
    // The clock when sent: the manual clock moves 1 us between rounds.
    EXPECT_EQ(log[i].t % 1000, 0u) << i;
    if (i) {
      EXPECT_GE(log[i].t, log[i - 1].t);
    }
  }
  EXPECT_GT(log.back().t, log.front().t);  // not all in one round (the batch limit)
}

TEST(Qp, PlainWriteCompletesAtTheRequesterOnly) {
  Pair p;
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 10000, 0, 1, WrOp::kWrite)));
  ASSERT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kSendDone) == 1; }));
  EXPECT_EQ(0, std::memcmp(p.mem_b.data(), p.src.data(), 10000));
  EXPECT_EQ(p.Count(p.eb, QpEventKind::kRecvDone), 0u);
}

TEST(Qp, SendsOfManySizesComplete) {
  Pair p;
  std::vector<uint8_t> rbuf(1 << 20);
  const uint32_t sizes[] = {1, 7, 2048, 2049, 30000, 1 << 20};
  uint64_t id = 0;
  for (uint32_t len : sizes) {
    ++id;
    ASSERT_TRUE(p.qb->PostRecv(rbuf.data(), static_cast<uint32_t>(rbuf.size()), 100 + id));
    ASSERT_TRUE(p.qa->Post(p.Write(id, 0, len, 5, id, id % 2 ? WrOp::kSendImm : WrOp::kSend)));
    ASSERT_TRUE(p.Run([&] {
      return p.Count(p.ea, QpEventKind::kSendDone) == id &&
             p.Count(p.eb, QpEventKind::kRecvDone) == id;
    })) << len;
    EXPECT_EQ(0, std::memcmp(rbuf.data(), p.src.data() + id, len)) << len;
    EXPECT_EQ(p.eb.back().wr_id, 100 + id);
    EXPECT_EQ(p.eb.back().len, len);
    EXPECT_EQ(p.eb.back().has_imm, id % 2 == 1);
  }
}

TEST(Qp, SendWithoutReceiveBufferIsRetriedAfterRnr) {
  Pair p;
  std::vector<uint8_t> rbuf(5 * 2048);
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 5 * 2048, 0, 1, WrOp::kSend)));  // 5 packets
  p.Run([] { return false; }, 50);
  EXPECT_EQ(p.qa->counters().other_naks_rx, 1u);  // one RNR NAK for the whole burst
  EXPECT_EQ(p.qb->counters().naks_tx, 0u);        // and no PSN sequence error NAK after it
  ASSERT_TRUE(p.qb->PostRecv(rbuf.data(), static_cast<uint32_t>(rbuf.size()), 9));
  ASSERT_TRUE(p.Run([&] { return p.Count(p.eb, QpEventKind::kRecvDone) == 1; }));
  EXPECT_EQ(0, std::memcmp(rbuf.data(), p.src.data(), 5 * 2048));
  EXPECT_EQ(p.eb.back().wr_id, 9u);
}

// Random sizes under loss, duplication and reordering in both directions.
void LossyRun(bool ooo, uint64_t seed) {
  EngineConfig ec;
  ec.ooo = ooo;
  ec.rto_ns = 200'000;
  Impairment imp;
  imp.drop = 0.03;
  imp.duplicate = 0.03;
  imp.reorder = 0.05;
  imp.seed = seed;
  Impairment back = imp;
  back.seed = seed + 100;
  Pair p(ec, imp, back);
  Rng r(seed);
  constexpr uint32_t kMsgs = 60;
  std::vector<std::pair<uint64_t, uint32_t>> msgs;  // dst offset, length
  uint64_t off = 0;
  for (uint32_t i = 0; i < kMsgs; ++i) {
    const uint32_t len = 1 + r.Below(20000);
    msgs.emplace_back(off, len);
    off += len;
  }
  uint32_t next = 0;
  auto refill = [&] {
    while (next < kMsgs && p.qa->outstanding() < 8) {
      ASSERT_TRUE(
          p.qa->Post(p.Write(msgs[next].first, msgs[next].first, msgs[next].second, next, next)));
      ++next;
    }
  };
  refill();
  ASSERT_TRUE(p.Run([&] {
    refill();
    return p.Count(p.ea, QpEventKind::kSendDone) == kMsgs &&
           p.Count(p.eb, QpEventKind::kRecvDone) == kMsgs;
  }));
  EXPECT_EQ(0, std::memcmp(p.mem_b.data(), p.src.data(), off));
  // Every message arrived exactly once (duplicates are not re-delivered).
  std::vector<int> seen(kMsgs, 0);
  for (const auto& e : p.eb)
    if (e.kind == QpEventKind::kRecvDone) ++seen.at(e.imm);
  for (uint32_t i = 0; i < kMsgs; ++i) EXPECT_EQ(seen[i], 1) << i;
  EXPECT_GT(p.qa->counters().retransmits, 0u);
  EXPECT_GT(p.qb->counters().duplicates, 0u);
  EXPECT_EQ(p.Count(p.ea, QpEventKind::kError), 0u);
}

TEST(Qp, LossDuplicationReorderingInOrderMode) {
  for (uint64_t seed : {1, 2, 3}) LossyRun(false, seed);
}
TEST(Qp, LossDuplicationReorderingOooMode) {
  for (uint64_t seed : {4, 5, 6}) LossyRun(true, seed);
}

// Frames A sends that carry data (for drop rules by data packet index).
bool IsData(std::span<const uint8_t> f) {
  return f.size() > 42 && f[42] != pkt::bth_opcode::kRcAck && f[42] != pkt::bth_opcode::kCnp;
}

TEST(Qp, OneNakPerGapThenSilence) {
  Impairment imp;
  imp.drop_if = [](uint64_t i, std::span<const uint8_t>) { return i == 5; };
  Pair p({}, imp);
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 40 * 2048, 1, 1)));  // 40 packets, one batch
  ASSERT_TRUE(p.Run([&] { return p.Count(p.eb, QpEventKind::kRecvDone) == 1; }));
  EXPECT_EQ(p.qb->counters().naks_tx, 1u);
  EXPECT_EQ(p.qa->counters().naks_rx, 1u);
  EXPECT_EQ(p.qb->counters().out_of_sequence, 34u);  // packets 6..39 of the first pass
  EXPECT_EQ(p.qa->counters().retransmits, 35u);      // go back to 5
  EXPECT_EQ(p.qa->counters().timeouts, 0u);
  EXPECT_EQ(0, std::memcmp(p.mem_b.data(), p.src.data(), 40 * 2048));
}

// A duplicate is re-ACKed only when it asks for it, with its own PSN
// (rxe's requester mishandles an ACK that covers a message it is resending:
// docs/uroce.md, "Interop with rxe"). The first pass's two ACKs are lost, A
// times out and resends all 100 packets in two batches: the first batch
// (AckReq on its last packet, the 64th) gets an ACK for that packet, not for
// the newest PSN B has (the 100th), the second batch one for the 100th.
TEST(Qp, DuplicatesAreAckedOnlyWhenTheyAskWithTheirOwnPsn) {
  EngineConfig ec;
  ec.rto_ns = 100'000;
  auto acks = std::make_shared<std::vector<uint32_t>>();
  Impairment back;
  back.mutate = [acks](uint64_t, std::vector<uint8_t>& f) {
    if (f.size() > 42 && f[42] == pkt::bth_opcode::kRcAck) acks->push_back(pkt::Rd32(&f[50]));
  };
  back.drop_if = [](uint64_t i, std::span<const uint8_t>) { return i < 2; };
  Pair p(ec, {}, back);
  const uint32_t first = 0xFFFFF0;  // Pair's start PSN: the run wraps
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 100 * 2048, 1, 1)));
  ASSERT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kSendDone) == 1; }));
  EXPECT_EQ(p.qa->counters().timeouts, 1u);
  EXPECT_EQ(p.qb->counters().duplicates, 100u);
  ASSERT_EQ(acks->size(), 4u);  // two lost, one per batch of duplicates
  EXPECT_EQ((*acks)[2] & pkt::kPsnMask, pkt::PsnAdd(first, 63));
  EXPECT_EQ((*acks)[3] & pkt::kPsnMask, pkt::PsnAdd(first, 99));
  EXPECT_EQ(p.Count(p.eb, QpEventKind::kRecvDone), 1u);  // delivered once
}

TEST(Qp, TwoGapsTwoNaks) {
  // The second gap is in the retransmitted pass: one NAK for each.
  Impairment imp;
  imp.drop_if = [](uint64_t i, std::span<const uint8_t>) { return i == 5 || i == 30 + 10; };
  Pair p({}, imp);
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 30 * 2048, 1, 1)));
  ASSERT_TRUE(p.Run([&] { return p.Count(p.eb, QpEventKind::kRecvDone) == 1; }));
  EXPECT_EQ(p.qb->counters().naks_tx, 2u);
  EXPECT_EQ(p.qa->counters().timeouts, 0u);
  EXPECT_EQ(0, std::memcmp(p.mem_b.data(), p.src.data(), 30 * 2048));
}

TEST(Qp, OooModePlacesReorderedPacketsWithoutGoBackN) {
  for (bool ooo : {true, false}) {
    EngineConfig ec;
    ec.ooo = ooo;
    Impairment imp;
    imp.reorder = 0.3;
    imp.reorder_depth = 6;
    imp.seed = 11;
    Pair p(ec, imp);
    for (uint32_t i = 0; i < 8; ++i)
      ASSERT_TRUE(p.qa->Post(p.Write(i * 100000, i * 100000, 50000, i, i)));
    ASSERT_TRUE(p.Run([&] { return p.Count(p.eb, QpEventKind::kRecvDone) == 8; }));
    ASSERT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kSendDone) == 8; }));
    for (uint32_t i = 0; i < 8; ++i)
      EXPECT_EQ(0, std::memcmp(p.mem_b.data() + i * 100000, p.src.data() + i * 100000, 50000));
    EXPECT_GT(p.qb->counters().out_of_sequence, 0u);
    if (ooo) {
      EXPECT_EQ(p.qa->counters().retransmits, 0u);
      EXPECT_EQ(p.qb->counters().naks_tx, 0u);
      EXPECT_EQ(p.qa->counters().timeouts, 0u);
      EXPECT_EQ(p.qb->counters().duplicates, 0u);
    } else {
      EXPECT_GT(p.qb->counters().naks_tx, 0u);  // rxe's behaviour: go back N
      EXPECT_GT(p.qa->counters().retransmits, 0u);
    }
  }
}

TEST(Qp, OooAckCoversOnlyTheContiguousPrefix) {
  // Drop the first packet once: the rest is placed but not acknowledged
  // until the retransmission fills the gap.
  EngineConfig ec;
  ec.ooo = true;
  ec.rto_ns = 500'000;
  Impairment imp;
  imp.drop_if = [](uint64_t i, std::span<const uint8_t>) { return i == 0; };
  Pair p(ec, imp);
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 10 * 2048, 3, 1)));
  p.Run([] { return false; }, 100);
  EXPECT_EQ(p.Count(p.ea, QpEventKind::kSendDone), 0u);
  EXPECT_EQ(p.Count(p.eb, QpEventKind::kRecvDone), 0u);
  EXPECT_EQ(p.qb->counters().rx_pkts, 0u);  // stashed until the RETH comes
  EXPECT_EQ(p.qb->counters().out_of_sequence, 9u);
  EXPECT_EQ(p.qb->counters().acks_tx, 0u);  // nothing contiguous to cover
  ASSERT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kSendDone) == 1; }));
  EXPECT_EQ(p.qa->counters().timeouts, 1u);
  EXPECT_EQ(p.qb->counters().naks_tx, 0u);
  EXPECT_EQ(p.Count(p.eb, QpEventKind::kRecvDone), 1u);
  EXPECT_EQ(0, std::memcmp(p.mem_b.data(), p.src.data(), 10 * 2048));
}

TEST(Qp, OooRecoveryResendsOnlyTheHoles) {
  EngineConfig ec;
  ec.ooo = true;
  ec.rto_ns = 500'000;
  Impairment imp;
  imp.drop_if = [](uint64_t i, std::span<const uint8_t>) { return i == 3 || i == 10 || i == 20; };
  Pair p(ec, imp);
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 40 * 2048, 7, 1)));  // 40 packets in one burst
  ASSERT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kSendDone) == 1; }));
  EXPECT_EQ(p.qa->counters().timeouts, 1u);  // the first hole; partial ACKs find the others
  EXPECT_EQ(p.qa->counters().retransmits, 3u);
  EXPECT_EQ(p.qb->counters().duplicates, 0u);
  EXPECT_EQ(p.qb->counters().naks_tx, 0u);
  EXPECT_EQ(p.Count(p.eb, QpEventKind::kRecvDone), 1u);
  EXPECT_EQ(0, std::memcmp(p.mem_b.data(), p.src.data(), 40 * 2048));
}

TEST(Qp, RetryExceededIsAnError) {
  EngineConfig ec;
  ec.rto_ns = 100'000;
  ec.retry_count = 3;
  Impairment imp;
  imp.drop = 1.0;
  Pair p(ec, imp);
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 5000, 0, 1)));
  ASSERT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kError) == 1; }));
  EXPECT_STREQ(p.ea.back().error, "retry count exceeded");
  EXPECT_EQ(p.qa->counters().timeouts, 4u);
  EXPECT_TRUE(p.qa->failed());
  EXPECT_EQ(p.Count(p.ea, QpEventKind::kSendDone), 0u);
  EXPECT_FALSE(p.qa->Post(p.Write(0, 0, 1, 0, 2)));
  p.Run([] { return false; }, 1000);
  EXPECT_EQ(p.Count(p.ea, QpEventKind::kError), 1u);  // once
}

TEST(Qp, CorruptedIcrcIsDroppedAndCounted) {
  Impairment imp;
  imp.mutate = [](uint64_t i, std::vector<uint8_t>& f) {
    if (i == 2) f[70] ^= 0x40;  // a payload byte
  };
  Pair p({}, imp);
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 8 * 2048, 1, 1)));
  ASSERT_TRUE(p.Run([&] { return p.Count(p.eb, QpEventKind::kRecvDone) == 1; }));
  EXPECT_EQ(p.b->counters().bad_icrc, 1u);
  EXPECT_EQ(p.qb->counters().naks_tx, 1u);
  EXPECT_EQ(0, std::memcmp(p.mem_b.data(), p.src.data(), 8 * 2048));
}

TEST(Qp, BadRkeyIsNakedAndFailsTheRequester) {
  Pair p;
  SendWr w = p.Write(0, 0, 100, 0, 1);
  w.rkey = 0x99;
  ASSERT_TRUE(p.qa->Post(w));
  ASSERT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kError) == 1; }));
  EXPECT_STREQ(p.ea.back().error, "remote access error NAK");
  EXPECT_EQ(p.qb->counters().rx_pkts, 0u);
}

// The UDP source ports A's data frames carry.
std::vector<uint16_t> SportsOf(EntropyMode mode, uint32_t msgs) {
  EngineConfig ec;
  ec.entropy = mode;
  ec.ack_every = 1;
  auto sports = std::make_shared<std::vector<uint16_t>>();
  Impairment imp;
  imp.mutate = [sports](uint64_t, std::vector<uint8_t>& f) {
    if (IsData(f)) sports->push_back(pkt::Rd16(f.data() + 34));
  };
  Pair p(ec, imp);
  for (uint32_t i = 0; i < msgs; ++i) {
    EXPECT_TRUE(p.qa->Post(p.Write(0, 0, 4 * 2048, 0, i)));
    EXPECT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kSendDone) == i + 1; }));
  }
  return *sports;
}

TEST(Qp, EntropyModes) {
  auto per_qp = SportsOf(EntropyMode::kPerQp, 3);
  ASSERT_EQ(per_qp.size(), 12u);
  for (uint16_t s : per_qp) EXPECT_EQ(s, RxeUdpSport(kQpA, kQpB));
  EXPECT_EQ(per_qp, SportsOf(EntropyMode::kPerQp, 3));  // deterministic

  auto spray = SportsOf(EntropyMode::kSpray, 3);
  std::sort(spray.begin(), spray.end());
  EXPECT_GT(std::unique(spray.begin(), spray.end()) - spray.begin(), 8);
  for (uint16_t s : spray) EXPECT_GE(s, 0xC000);

  // REPS: each message starts on the port the previous message's (one,
  // coalesced) ACK echoed; the FIFO is then empty and the rest are fresh.
  auto reps = SportsOf(EntropyMode::kReps, 3);
  ASSERT_EQ(reps.size(), 12u);
  for (size_t m = 1; m < 3; ++m) {
    const auto prev = reps.begin() + 4 * (m - 1);
    EXPECT_NE(std::find(prev, prev + 4, reps[4 * m]), prev + 4) << m;
  }
  EXPECT_EQ(reps, SportsOf(EntropyMode::kReps, 3));  // seeded
}

TEST(Qp, RepsDoesNotRecycleEntropyOfCeMarkedPackets) {
  EngineConfig ec;
  ec.entropy = EntropyMode::kReps;
  auto sports = std::make_shared<std::vector<uint16_t>>();
  auto ack_becn = std::make_shared<std::vector<bool>>();
  auto ce = std::make_shared<bool>(true);
  Impairment ab, ba;
  ab.mutate = [sports, ce](uint64_t, std::vector<uint8_t>& f) {
    if (!IsData(f)) return;
    sports->push_back(pkt::Rd16(f.data() + 34));
    if (*ce) f[15] |= pkt::ecn::kCe;  // the ICRC masks TOS; the host does not check the IPv4 sum
  };
  ba.mutate = [ack_becn](uint64_t, std::vector<uint8_t>& f) {
    if (f.size() > 46 && f[42] == pkt::bth_opcode::kRcAck) ack_becn->push_back(f[46] & 0x40);
  };
  Pair p(ec, ab, ba);
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 4 * 2048, 0, 1)));
  ASSERT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kSendDone) == 1; }));
  ASSERT_FALSE(ack_becn->empty());
  for (bool b : *ack_becn) EXPECT_TRUE(b);  // the ACK echoes CE as BECN (ECE)
  *ce = false;
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 4 * 2048, 0, 2)));
  ASSERT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kSendDone) == 2; }));
  ASSERT_EQ(sports->size(), 8u);
  // Nothing came back clean after message 1: message 2 starts on a fresh port.
  EXPECT_EQ(std::find(sports->begin(), sports->begin() + 4, (*sports)[4]), sports->begin() + 4);
  EXPECT_FALSE(ack_becn->back());
}

TEST(Qp, CeMarkedDataMakesRateLimitedCnps) {
  EngineConfig ec;
  ec.cnp_interval_ns = 50'000;
  ec.dcqcn = true;
  ec.line_rate_gbps = 100;
  Impairment imp;
  imp.mutate = [](uint64_t, std::vector<uint8_t>& f) {
    if (!IsData(f)) return;
    f[15] |= pkt::ecn::kCe;  // TOS; the ICRC masks it, the IPv4 checksum is redone
    f[24] = f[25] = 0;
    const uint16_t c = pkt::Ipv4Checksum20(f.data() + 14);
    f[24] = static_cast<uint8_t>(c >> 8);
    f[25] = static_cast<uint8_t>(c);
  };
  Pair p(ec, imp);
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 256 * 2048, 0, 1)));
  uint32_t rounds = 0;
  ASSERT_TRUE(p.Run([&] {
    ++rounds;
    return p.Count(p.ea, QpEventKind::kSendDone) == 1;
  }));
  const auto& b = p.qb->counters();
  EXPECT_EQ(b.ce_rx, 256u);
  EXPECT_GE(b.cnps_tx, 1u);
  EXPECT_LE(b.cnps_tx, rounds / 50 + 1);  // one per 50 us of (virtual) time
  EXPECT_EQ(p.qa->counters().cnps_rx, b.cnps_tx);
  EXPECT_LT(p.qa->rate_fraction(), 1.0);  // DCQCN cut the rate
}

TEST(Qp, PacerStaysWithinItsBudgetInVirtualTime) {
  EngineConfig ec;
  ec.line_rate_gbps = 8;  // 1 byte per ns; paced at a quarter
  auto bytes = std::make_shared<uint64_t>(0);
  Impairment imp;
  imp.mutate = [bytes](uint64_t, std::vector<uint8_t>& f) { *bytes += f.size() + 24; };
  Pair p(ec, imp, {}, 0.25);
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 1 << 20, 0, 1)));
  const Ns t0 = p.clock.Now();
  ASSERT_TRUE(p.Run([&] {
    // 0.25 byte/ns since the start, plus the bucket's depth and one frame.
    EXPECT_LE(*bytes, (p.clock.Now() - t0) / 4 + 32 * 1024 + kMaxFrame + 24);
    return p.Count(p.ea, QpEventKind::kSendDone) == 1;
  }));
  EXPECT_GT(p.a->counters().pace_waits, 0u);
  EXPECT_EQ(0, std::memcmp(p.mem_b.data(), p.src.data(), 1 << 20));
}

TEST(Qp, AckReqOnLastPacketAndEveryN) {
  EngineConfig ec;
  ec.ack_every = 8;
  auto flags = std::make_shared<std::vector<bool>>();
  Impairment imp;
  imp.mutate = [flags](uint64_t, std::vector<uint8_t>& f) {
    if (IsData(f)) flags->push_back(f[42 + 8] & 0x80);
  };
  Pair p(ec, imp);
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 20 * 2048, 0, 1)));
  ASSERT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kSendDone) == 1; }));
  ASSERT_EQ(flags->size(), 20u);
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ((*flags)[i], i == 7 || i == 15 || i == 19) << i;
  // Coalesced: at most one ACK per AckReq packet.
  EXPECT_LE(p.qb->counters().acks_tx, 3u);
}

TEST(Qp, AckReqByTimeWhenPacketsComeSlowly) {
  // 64 packets would take 32 ms at this pace, eight times the 4 ms timeout:
  // AckReq every quarter of it keeps the ACKs coming, and nothing times out.
  EngineConfig ec;
  ec.ack_every = 64;
  ec.rto_ns = 4'000'000;
  ec.line_rate_gbps = 0.0336;  // a 2 KiB frame every 0.5 ms
  auto flags = std::make_shared<std::vector<bool>>();
  Impairment imp;
  imp.mutate = [flags](uint64_t, std::vector<uint8_t>& f) {
    if (IsData(f)) flags->push_back(f[42 + 8] & 0x80);
  };
  Pair p(ec, imp, {}, 1.0);
  p.a->StartPacing();  // no burst from a full bucket: every frame at the pace
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 40 * 2048, 0, 1)));
  ASSERT_TRUE(p.Run([&] { return p.Count(p.ea, QpEventKind::kSendDone) == 1; }));
  ASSERT_EQ(flags->size(), 40u);
  const auto asked = std::count(flags->begin(), flags->end(), true);
  EXPECT_GE(asked, 10) << "AckReq by count alone would be on the last packet only";
  EXPECT_FALSE((*flags)[0]);  // the clock starts with the first packet in flight
  EXPECT_EQ(p.qa->counters().timeouts, 0u);
  EXPECT_EQ(p.qa->counters().retransmits, 0u);
}

// Everything that has arrived is read before the timers run: an ACK queued
// behind 255 of the peer's data frames (four receive batches) stops
// the retransmission timer even when the timeout has passed meanwhile (the
// process was not scheduled).
TEST(Host, ReadsWhatArrivedBeforeTheTimersFire) {
  EngineConfig ec;
  ec.rto_ns = 1'000'000;
  Pair p(ec);
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 2048, 1, 1)));
  p.a->Step(&p.ea);  // A's one packet is on the wire
  ASSERT_TRUE(p.qb->Post(p.Write(0, 0, 256 * 2048, 2, 2)));
  for (int i = 0; i < 4; ++i) p.b->Step(&p.eb);     // B's ACK, then 4 batches of its data
  auto& q = p.lp.wire->dir[1].q;                    // B to A
  ASSERT_GT(q.size(), 200u);                        // several receive batches
  for (auto it = q.begin(); it != q.end(); ++it) {  // the ACK goes behind the data
    if ((*it)[42] == pkt::bth_opcode::kRcAck) {
      auto ack = std::move(*it);
      q.erase(it);
      q.push_back(std::move(ack));
      break;
    }
  }
  ASSERT_EQ(q.back()[42], pkt::bth_opcode::kRcAck);
  p.clock.Advance(2 * ec.rto_ns);
  p.a->Step(&p.ea);
  EXPECT_EQ(p.qa->counters().timeouts, 0u);
  EXPECT_EQ(p.qa->counters().retransmits, 0u);
  EXPECT_EQ(p.Count(p.ea, QpEventKind::kSendDone), 1u);
}

// A lossless host's MAC obeys its edge's PFC: a pause for its priority
// stops its data for the quanta asked at its line rate (1,000 quanta at 8
// Gb/s: 64 us), XON resumes it at once; a pause for another priority, or at
// a host without PFC, stops nothing.
TEST(Host, PfcFromTheEdgePausesDataForItsQuanta) {
  EngineConfig ec;
  ec.line_rate_gbps = 8;
  Pair p(ec, {}, {}, 0, 64, 0xFFFFF0, /*pfc_a=*/3);
  auto& to_b = p.lp.wire->dir[0].q;
  auto pause = [&](uint8_t prio, uint16_t quanta) {
    const auto f = pkt::BuildPfcFrame(kMacB, prio, quanta);
    p.lp.wire->Push(1, std::vector<uint8_t>(f.begin(), f.end()));  // to A
  };
  ASSERT_TRUE(p.qa->Post(p.Write(0, 0, 1 << 20, 0, 1)));  // a batch of 64 frames a Step
  pause(3, 1000);
  p.a->Step(&p.ea);
  EXPECT_TRUE(to_b.empty()) << "paused before its first frame";
  EXPECT_EQ(p.a->counters().pfc_rx, 1u);
  p.clock.Advance(63'000);
  p.a->Step(&p.ea);
  EXPECT_TRUE(to_b.empty()) << "63 us into a 64 us pause";
  p.clock.Advance(1'000);
  p.a->Step(&p.ea);
  EXPECT_FALSE(to_b.empty()) << "the pause is over";
  EXPECT_EQ(p.a->counters().pfc_paused_ns, 64'000);
  to_b.clear();
  pause(3, 0xFFFF);  // 4.2 ms
  p.a->Step(&p.ea);
  EXPECT_TRUE(to_b.empty());
  p.clock.Advance(10'000);
  pause(3, 0);  // XON after 10 us
  p.a->Step(&p.ea);
  EXPECT_FALSE(to_b.empty()) << "XON resumes at once";
  EXPECT_EQ(p.a->counters().pfc_paused_ns, 64'000 + 10'000) << "only the time it was paused";
  to_b.clear();
  pause(5, 0xFFFF);  // another class
  p.a->Step(&p.ea);
  EXPECT_FALSE(to_b.empty());
  EXPECT_EQ(p.a->counters().pfc_rx, 3u);
  // B has no PFC: its MAC ignores pause.
  ASSERT_TRUE(p.qb->Post(p.Write(0, 0, 8 * 1024, 0, 2)));
  const auto f = pkt::BuildPfcFrame(kMacA, 3, 0xFFFF);
  p.lp.wire->Push(0, std::vector<uint8_t>(f.begin(), f.end()));
  p.b->Step(&p.eb);
  EXPECT_EQ(p.b->counters().pfc_rx, 0u);
  EXPECT_FALSE(p.lp.wire->dir[1].q.empty());
}

TEST(Host, AnswersArpForItsAddressOnly) {
  Pair p;
  auto arp = [](uint32_t tpa) {
    std::vector<uint8_t> f(60, 0);
    pkt::EtherHdr e{};
    e.dst = pkt::MacAddr{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}};
    e.src = kMacA;
    e.type = pkt::Be16::FromHost(pkt::ethertype::kArp);
    pkt::ArpHdr a{};
    a.htype = pkt::Be16::FromHost(1);
    a.ptype = pkt::Be16::FromHost(0x0800);
    a.hlen = 6;
    a.plen = 4;
    a.oper = pkt::Be16::FromHost(pkt::arp::kRequest);
    a.sha = kMacA;
    a.spa = pkt::Be32::FromHost(kIpA);
    a.tpa = pkt::Be32::FromHost(tpa);
    std::memcpy(f.data(), &e, sizeof e);
    std::memcpy(f.data() + 14, &a, sizeof a);
    return f;
  };
  // Injected as if A had sent them: B answers the one for its address.
  auto f1 = arp(kIpB), f2 = arp(kIpB + 1);
  p.lp.wire->Push(0, f1);
  p.lp.wire->Push(0, f2);
  p.b->Step(&p.eb);
  EXPECT_EQ(p.b->counters().arp_replies, 1u);
  std::array<FrameView, 4> got{};
  // The reply is what A's end receives next.
  auto& q = p.lp.wire->dir[1].q;
  ASSERT_EQ(q.size(), 1u);
  const auto r = pkt::Load<pkt::ArpHdr>(q.front().data() + 14);
  EXPECT_EQ(r.oper.host(), pkt::arp::kReply);
  EXPECT_EQ(r.sha, kMacB);
  EXPECT_EQ(r.spa.host(), kIpB);
  EXPECT_EQ(r.tpa.host(), kIpA);
  (void)got;
}

}  // namespace
}  // namespace ofan::uroce
