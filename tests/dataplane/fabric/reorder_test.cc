// fabric::ReorderBuffer (dataplane/fabric/reorder.h): golden sequences of
// one port's frames, what leaves when, and a property test over random
// orders, losses and duplicates: every frame leaves exactly once, never
// before it arrived, in time order, and in PSN order per flow when nothing
// is lost and nothing overflows.
#include "dataplane/fabric/reorder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace ofan::fabric {
namespace {

constexpr TimePs kUs = 1'000'000;
const ReorderKey kA{0x0A000002, 0x11}, kB{0x0A000003, 0x11};

// A frame's handle: its flow and PSN, so that the tests read what left.
struct Tag {
  int flow = 0;
  uint32_t psn = 0;
  bool operator==(const Tag&) const = default;
};

struct Port {
  ReorderBuffer<Tag> rb;
  std::vector<std::pair<Tag, TimePs>> out;
  explicit Port(ReorderLimits lim = {}) : rb(lim) {}
  struct Emit {
    Port* p;
    void operator()(const Tag& h, TimePs t) const { p->out.emplace_back(h, t); }
  };
  void Offer(TimePs t, int flow, uint32_t psn, uint32_t bytes = 1000, bool continues = false) {
    rb.Offer(t, flow == 0 ? kA : kB, psn, bytes, Tag{flow, psn}, Emit{this}, continues);
  }
  // A message's middle or last packet.
  void Mid(TimePs t, int flow, uint32_t psn) { Offer(t, flow, psn, 1000, true); }
  void Expire(TimePs t) { rb.Expire(t, Emit{this}); }
  std::vector<uint32_t> Psns() const {
    std::vector<uint32_t> p;
    for (const auto& [h, t] : out) p.push_back(h.psn);
    return p;
  }
};

TEST(Reorder, InOrderFramesPassAtOnce) {
  Port p;
  for (uint32_t i = 0; i < 3; ++i) p.Offer(i * kUs, 0, 5 + i);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{5, 6, 7}));
  EXPECT_EQ(p.out[2].second, 2 * kUs);
  EXPECT_EQ(p.rb.counters().in_order, 3u);
  EXPECT_EQ(p.rb.counters().held, 0u);
  EXPECT_EQ(p.rb.NextDeadline(), kNever);
}

TEST(Reorder, AGapFilledReleasesTheRunInPsnOrder) {
  Port p;
  p.Offer(0, 0, 10);
  p.Offer(1 * kUs, 0, 12);
  p.Offer(2 * kUs, 0, 13);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10}));
  EXPECT_EQ(p.rb.frames(), 2u);
  EXPECT_EQ(p.rb.bytes(), 2000u);
  p.Offer(5 * kUs, 0, 11);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10, 11, 12, 13}));
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(p.out[i].second, 5 * kUs);
  const ReorderCounters& c = p.rb.counters();
  EXPECT_EQ(c.held, 2u);
  EXPECT_EQ(c.in_order, 4u);
  EXPECT_EQ(c.timeouts, 0u);
  EXPECT_EQ(c.max_frames, 2u);
  EXPECT_EQ(c.max_bytes, 2000u);
  EXPECT_EQ(c.max_hold, 4 * kUs) << "PSN 12 waited from 1 us to 5 us";
  EXPECT_EQ(p.rb.frames(), 0u);
  EXPECT_EQ(p.rb.NextDeadline(), kNever) << "nothing held: no deadline";
}

TEST(Reorder, AGapThatTimesOutIsALossAndTheRestGoes) {
  ReorderLimits lim;
  lim.timeout = 100 * kUs;
  Port p(lim);
  p.Offer(0, 0, 10);
  p.Offer(1 * kUs, 0, 12);  // 11 is lost
  p.Offer(2 * kUs, 0, 13);
  p.Offer(3 * kUs, 0, 15);  // and 14
  EXPECT_EQ(p.rb.NextDeadline(), 101 * kUs);
  p.Expire(100 * kUs);
  EXPECT_EQ(p.out.size(), 1u) << "not yet";
  p.Expire(101 * kUs);
  // 12 and 13 at 12's deadline; 15 waits on for 14 until its own.
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10, 12, 13}));
  EXPECT_EQ(p.out[1].second, 101 * kUs);
  EXPECT_EQ(p.rb.NextDeadline(), 103 * kUs);
  p.Offer(200 * kUs, 0, 11);  // the sender's retransmission: already given up on
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10, 12, 13, 15, 11}))
      << "15 left at its deadline, before 11 arrived";
  EXPECT_EQ(p.out[3].second, 103 * kUs);
  const ReorderCounters& c = p.rb.counters();
  EXPECT_EQ(c.timeouts, 3u);
  EXPECT_EQ(c.old, 1u);
  EXPECT_EQ(c.max_hold, 100 * kUs);
}

TEST(Reorder, PsnsWrapAt2To24) {
  Port p;
  p.Offer(0, 0, 0xFFFFFE);
  p.Offer(1 * kUs, 0, 0);  // after 0xFFFFFF
  p.Offer(2 * kUs, 0, 1);
  EXPECT_EQ(p.rb.frames(), 2u);
  p.Offer(3 * kUs, 0, 0xFFFFFF);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{0xFFFFFE, 0xFFFFFF, 0, 1}));
  EXPECT_EQ(PsnDiff(0, 0xFFFFFF), 1);
  EXPECT_EQ(PsnDiff(0xFFFFFF, 0), -1);
  EXPECT_EQ(PsnDiff(0x800000, 0), -(1 << 23)) << "half the circle: behind";
}

TEST(Reorder, DuplicatesAndRetransmissionsPassAtOnce) {
  Port p;
  p.Offer(0, 0, 10);
  p.Offer(1 * kUs, 0, 12);
  p.Offer(2 * kUs, 0, 12);  // a duplicate of a held frame
  p.Offer(3 * kUs, 0, 10);  // a retransmission of a released one
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10, 12, 10}));
  EXPECT_EQ(p.rb.counters().old, 2u);
  EXPECT_EQ(p.rb.frames(), 1u);
  p.Offer(4 * kUs, 0, 11);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10, 12, 10, 11, 12}));
}

// A full buffer ends the arriving frame's flow's wait: what it holds below
// the frame, the frame and the run after it leave at once, in PSN order,
// and nothing of the flow waits for a PSN already gone.
TEST(Reorder, AFullBufferEndsTheFlowsWait) {
  ReorderLimits lim;
  lim.buffer_bytes = 3000;
  Port p(lim);
  p.Offer(0, 0, 10);
  for (uint32_t psn = 12; psn <= 15; ++psn) p.Offer(psn * kUs, 0, psn);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10, 12, 13, 14, 15}))
      << "three held; the fourth finds the buffer full: 11 given up";
  EXPECT_EQ(p.out.back().second, 15 * kUs);
  EXPECT_EQ(p.rb.counters().overflow, 4u);
  EXPECT_EQ(p.rb.counters().max_bytes, 3000u);
  EXPECT_EQ(p.rb.counters().max_hold, 3 * kUs);
  EXPECT_EQ(p.rb.frames(), 0u);
  p.Offer(20 * kUs, 0, 11);  // late: already given up
  p.Offer(21 * kUs, 0, 16);  // next: in order, no wait for 15
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10, 12, 13, 14, 15, 11, 16}));
  EXPECT_EQ(p.rb.counters().old, 1u);
  EXPECT_EQ(p.rb.NextDeadline(), kNever);
}

// Another flow's frames stay held when one flow gives up; the run after
// the frame that found the buffer full leaves with it.
TEST(Reorder, AFullBufferReleasesTheRunAfterTheFrame) {
  ReorderLimits lim;
  lim.buffer_bytes = 3000;
  Port p(lim);
  p.Offer(0, 0, 10);
  p.Offer(0, 1, 50);
  p.Offer(1 * kUs, 0, 13);  // A waits for 11, 12
  p.Offer(2 * kUs, 1, 52);  // B waits for 51
  p.Offer(3 * kUs, 0, 14);
  p.Offer(4 * kUs, 0, 12);  // full: A gives up 11
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10, 50, 12, 13, 14}));
  EXPECT_EQ(p.rb.frames(), 1u) << "B's 52 still waits";
  p.Offer(5 * kUs, 1, 51);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10, 50, 12, 13, 14, 51, 52}));
}

TEST(Reorder, FlowsWaitApart) {
  Port p;
  p.Offer(0, 0, 100);
  p.Offer(0, 1, 7);
  p.Offer(1 * kUs, 0, 102);  // A waits for 101
  p.Offer(2 * kUs, 1, 8);    // B does not wait for A
  EXPECT_EQ(p.out.size(), 3u);
  EXPECT_EQ(p.out.back().first, (Tag{1, 8}));
  p.Offer(3 * kUs, 0, 101);
  EXPECT_EQ(p.out.back().first, (Tag{0, 102}));
}

// A full flow table passes a new flow's frames until a quiet flow that
// holds nothing can give up its slot.
TEST(Reorder, AFullTablePassesNewFlowsUntilOneGoesIdle) {
  ReorderLimits lim;
  lim.max_flows = 1;
  lim.idle = 50 * kUs;
  Port p(lim);
  p.Offer(0, 0, 10);
  p.Offer(10 * kUs, 1, 5);  // B: no slot, A seen 10 us ago
  p.Offer(11 * kUs, 1, 7);  // would wait, but B is not known: passes
  EXPECT_EQ(p.rb.counters().table_full, 2u);
  p.Offer(60 * kUs, 1, 9);  // A has been quiet 60 us: its slot is B's
  p.Offer(61 * kUs, 1, 11);
  EXPECT_EQ(p.rb.frames(), 1u) << "B's 11 waits for 10";
  EXPECT_EQ(p.rb.counters().flows, 2u);
  p.Offer(62 * kUs, 0, 11);  // A again: B holds a frame, so no slot
  EXPECT_EQ(p.rb.counters().table_full, 3u);
}

// A QP number a new connection reuses: after the idle time with nothing
// held, the flow starts again where its first frame says (a new random
// PSN), rather than passing everything as old or waiting for a gap.
TEST(Reorder, AQuietFlowStartsAgainWhereItsNextFrameSays) {
  ReorderLimits lim;
  lim.idle = 50 * kUs;
  Port p(lim);
  p.Offer(0, 0, 1000);
  p.Offer(1 * kUs, 0, 1001);
  p.Offer(100 * kUs, 0, 7);  // a new connection on the same QP
  p.Offer(101 * kUs, 0, 9);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{1000, 1001, 7})) << "9 waits for 8";
  p.Offer(102 * kUs, 0, 8);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{1000, 1001, 7, 8, 9}));
  EXPECT_EQ(p.rb.counters().old, 0u);
  EXPECT_EQ(p.rb.counters().flows, 2u);
}

// A new flow starts at a frame that starts a message: a message's middle
// and last packets that overtook its first wait for it, and so does the
// next message's first; a flow whose start never comes goes at the
// timeout from the lowest PSN it holds.
TEST(Reorder, ANewFlowWaitsForTheFirstPacketOfItsFirstMessage) {
  ReorderLimits lim;
  lim.timeout = 100 * kUs;
  Port p(lim);
  p.Mid(0, 0, 11);          // WRITE_MIDDLE overtook its FIRST
  p.Offer(1 * kUs, 0, 13);  // the next message's FIRST: after 11, waits too
  p.Mid(2 * kUs, 0, 12);    // WRITE_LAST of the first message
  EXPECT_TRUE(p.out.empty());
  p.Offer(3 * kUs, 0, 10);  // its FIRST: the flow starts here
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10, 11, 12, 13}));
  EXPECT_EQ(p.rb.counters().old, 0u);
  // Flow B's start never comes: after the timeout, from its lowest PSN.
  p.Mid(10 * kUs, 1, 5);
  p.Mid(11 * kUs, 1, 6);
  p.Expire(110 * kUs);
  EXPECT_EQ(p.out.size(), 6u);
  EXPECT_EQ(p.out[4].first, (Tag{1, 5}));
  EXPECT_EQ(p.out[4].second, 110 * kUs);
  p.Mid(120 * kUs, 1, 7);
  EXPECT_EQ(p.out.back().first, (Tag{1, 7})) << "anchored now: in order, at once";
}

TEST(Reorder, FlushHandsBackWhatIsHeld) {
  Port p;
  p.Offer(0, 0, 10);
  p.Offer(1, 0, 12);
  p.Offer(2, 1, 3);
  p.Offer(3, 1, 5);
  std::vector<Tag> dropped;
  EXPECT_EQ(p.rb.Flush([&](const Tag& h) { dropped.push_back(h); }), 2u);
  EXPECT_EQ(p.rb.frames(), 0u);
  EXPECT_EQ(p.rb.bytes(), 0u);
  EXPECT_EQ(p.rb.NextDeadline(), kNever);
}

// Random flows, each from a random PSN (some near the wrap), sent with
// local shuffles, losses and duplicates, at random times; the buffer and
// the table sometimes too small. Every frame leaves exactly once, never
// before it arrived, in time order; with enough room, no loss and a long
// timeout, every flow leaves in PSN order.
TEST(Reorder, EveryFrameLeavesExactlyOnce) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    const bool clean = round % 3 == 0;
    ReorderLimits lim;
    lim.buffer_bytes = clean ? 1 << 20 : 1000 + rng() % 20000;
    lim.max_flows = clean ? 64 : 1 + static_cast<uint32_t>(rng() % 6);
    lim.timeout = clean ? kNever / 4 : (1 + rng() % 50) * kUs;
    lim.idle = clean ? kNever / 4 : (1 + rng() % 100) * kUs;  // clean: no flow restarts
    ReorderBuffer<uint32_t> rb(lim);
    const int flows = 1 + static_cast<int>(rng() % 5);
    struct Sent {
      int flow;
      uint32_t psn;
      TimePs at;
      bool continues;  // not the flow's first packet (which starts its first message)
    };
    std::vector<std::vector<Sent>> per(flows);
    for (int f = 0; f < flows; ++f) {
      const uint32_t start =
          rng() % 2 ? static_cast<uint32_t>(rng()) & kPsnMask : kPsnMask - rng() % 20;
      std::vector<uint32_t> psns;
      for (uint32_t i = 0; i < 40; ++i) {
        if (!clean && rng() % 10 == 0) continue;  // lost
        psns.push_back((start + i) & kPsnMask);
        if (!clean && rng() % 10 == 0) psns.push_back((start + i) & kPsnMask);  // duplicate
      }
      for (size_t i = 0; i + 1 < psns.size(); ++i)  // local reordering
        if (rng() % 3 == 0) std::swap(psns[i], psns[std::min(psns.size() - 1, i + rng() % 4)]);
      for (const uint32_t psn : psns) per[f].push_back({f, psn, 0, psn != start});
    }
    // The flows interleaved at random, each in its own order.
    std::vector<int> turns;
    for (int f = 0; f < flows; ++f) turns.insert(turns.end(), per[f].size(), f);
    std::shuffle(turns.begin(), turns.end(), rng);
    std::vector<Sent> order;
    order.reserve(turns.size());
    std::vector<size_t> next(flows, 0);
    for (const int f : turns) order.push_back(per[f][next[f]++]);
    std::vector<TimePs> left(order.size(), kNever);
    std::vector<std::vector<uint32_t>> psn_out(flows);
    TimePs t = 0, last = 0;
    auto emit = [&](uint32_t h, TimePs at) {
      ASSERT_LT(h, order.size());
      ASSERT_EQ(left[h], kNever) << "frame " << h << " left twice";
      ASSERT_GE(at, order[h].at) << "left before it arrived";
      ASSERT_GE(at, last) << "out of time order";
      last = at;
      left[h] = at;
      psn_out[order[h].flow].push_back(order[h].psn);
    };
    for (size_t i = 0; i < order.size(); ++i) {
      t += (rng() % 4) * kUs;
      order[i].at = t;
      const ReorderKey k{0x0A000000u + static_cast<uint32_t>(order[i].flow), 0x11};
      rb.Offer(t, k, order[i].psn, 100 + static_cast<uint32_t>(rng() % 1500),
               static_cast<uint32_t>(i), emit, order[i].continues);
    }
    rb.Expire(kNever - 1, emit);
    for (size_t i = 0; i < order.size(); ++i)
      ASSERT_NE(left[i], kNever) << "round " << round << ": frame " << i << " never left";
    EXPECT_EQ(rb.frames(), 0u);
    EXPECT_EQ(rb.bytes(), 0u);
    const ReorderCounters& c = rb.counters();
    EXPECT_EQ(c.in_order + c.timeouts + c.overflow + c.table_full + c.old, order.size());
    if (clean && lim.max_flows >= static_cast<uint32_t>(flows)) {
      // Each flow's start is its first packet, whatever overtook it: every
      // PSN leaves once, in order, from there.
      for (int f = 0; f < flows; ++f) {
        const std::vector<uint32_t>& o = psn_out[f];
        ASSERT_EQ(o.size(), per[f].size());
        uint32_t want = per[f].empty() ? 0 : per[f][0].psn;
        for (const Sent& x : per[f])
          if (!x.continues) want = x.psn;
        for (const uint32_t psn : o) {
          EXPECT_EQ(psn, want) << "round " << round << " flow " << f;
          want = (want + 1) & kPsnMask;
        }
        EXPECT_EQ(c.timeouts, 0u);
        EXPECT_EQ(c.overflow, 0u);
      }
    }
  }
}

// One QP's conversation as both sides' ports see it (IBA 9.4, 9.5): READ
// requests take as many PSNs as their responses, READ responses carry the
// reader's PSNs and skip those of its own SENDs.
struct QpPort : Port {
  using Port::Port;
  static constexpr ReorderKey kReq{0x0A000002, 0x11}, kResp{0x0A000002, 0x11, true};
  void Put(TimePs t, const ReorderKey& k, const ReorderPsn& at, int tag) {
    rb.Offer(t, k, at, 1000, Tag{tag, at.psn}, Emit{this});
  }
  // A SEND: FIRST / MIDDLE carry the path MTU (1024 here).
  void First(TimePs t, uint32_t psn) { Put(t, kReq, {psn, false, true, 1024, false, 0}, 0); }
  void Last(TimePs t, uint32_t psn) { Put(t, kReq, {psn, true, false, 10, false, 0}, 0); }
  void Only(TimePs t, uint32_t psn) { Put(t, kReq, {psn, false, false, 10, false, 0}, 0); }
  void Read(TimePs t, uint32_t psn, uint32_t bytes) {
    Put(t, kReq, {psn, false, false, 0, true, bytes}, 0);
  }
  // READ responses FIRST, MIDDLE, LAST, ONLY.
  void RFirst(TimePs t, uint32_t psn) { Put(t, kResp, {psn, false, true, 1024, false, 0}, 1); }
  void RMid(TimePs t, uint32_t psn) { Put(t, kResp, {psn, true, true, 1024, false, 0}, 1); }
  void RLast(TimePs t, uint32_t psn) { Put(t, kResp, {psn, true, false, 10, false, 0}, 1); }
  void ROnly(TimePs t, uint32_t psn) { Put(t, kResp, {psn, false, false, 10, false, 0}, 1); }
  // An ACK of the reader's SEND at psn (the response flow's PSNs).
  void Ack(TimePs t, uint32_t psn) {
    Put(t, kResp, {psn, false, false, 0, false, 0, /*ack=*/true}, 2);
  }
};

// The responder's own requests and its READ responses on one QP are two
// PSN spaces: each in order, interleaved, nothing waits.
TEST(Reorder, ReadResponsesAreAFlowOfTheirOwn) {
  QpPort p;
  p.Only(0, 5000);
  p.RFirst(1 * kUs, 700);
  p.Only(2 * kUs, 5001);
  p.RMid(3 * kUs, 701);
  p.RLast(4 * kUs, 702);
  p.Only(5 * kUs, 5002);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{5000, 700, 5001, 701, 702, 5002}));
  EXPECT_EQ(p.rb.counters().held, 0u);
  EXPECT_EQ(p.rb.counters().old, 0u);
}

// A READ of 5,000 bytes at a path MTU of 1,024 takes PSNs 12-16: the next
// request is 17, held for nothing else, and what overtakes it waits for it.
TEST(Reorder, AReadRequestTakesAsManyPsnsAsItsResponses) {
  QpPort p;
  p.First(0, 10);  // the path MTU seen: 1,024
  p.Last(1 * kUs, 11);
  p.Read(2 * kUs, 12, 5000);
  p.Only(3 * kUs, 17);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10, 11, 12, 17}));
  p.Read(4 * kUs, 18, 1024);  // one response: takes 18 alone
  p.Only(5 * kUs, 20);        // overtook 19: waits
  EXPECT_EQ(p.out.size(), 5u);
  p.Read(6 * kUs, 19, 0);  // a READ of nothing still takes one PSN
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{10, 11, 12, 17, 18, 19, 20}));
  EXPECT_EQ(p.rb.counters().held, 1u);
  EXPECT_EQ(p.rb.counters().timeouts, 0u);
}

// A READ before any FIRST or MIDDLE showed the path MTU: the next message
// start is taken as the next PSN, whatever the READ's length.
TEST(Reorder, AReadOfUnknownSpanTakesTheNextMessageStart) {
  QpPort p;
  p.Only(0, 40);
  p.Read(1 * kUs, 41, 100000);
  p.Only(2 * kUs, 60);
  p.Only(3 * kUs, 61);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{40, 41, 60, 61}));
  EXPECT_EQ(p.rb.counters().held, 0u);
  p.Only(4 * kUs, 63);  // known again from 60 on: 63 waits for 62
  EXPECT_EQ(p.out.size(), 4u);
  p.Only(5 * kUs, 62);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{40, 41, 60, 61, 62, 63}));
}

// READ responses: a message's packets in PSN order; the next message may
// start past a gap (the reader's SENDs took those PSNs), but not before
// the one in progress has ended.
TEST(Reorder, ReadResponsesWaitWithinAMessageNotAcrossTheReadersSends) {
  QpPort p;
  p.RFirst(0, 100);
  p.RLast(1 * kUs, 102);  // overtook the MIDDLE: waits
  p.ROnly(2 * kUs, 110);  // the next READ's response: waits for 100-102 to end
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{100}));
  p.RMid(3 * kUs, 101);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{100, 101, 102, 110}))
      << "110 left with the run: PSNs 103-109 were the reader's own SENDs";
  p.RMid(4 * kUs, 121);  // a MIDDLE before its FIRST: waits
  EXPECT_EQ(p.out.size(), 4u);
  p.RFirst(5 * kUs, 120);
  p.RLast(6 * kUs, 122);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{100, 101, 102, 110, 120, 121, 122}));
  EXPECT_EQ(p.rb.counters().timeouts, 0u);
  EXPECT_EQ(p.rb.counters().old, 0u);
}

// An ACK past a READ response under way waits for the response to end
// (else the reader takes the READ for lost); one with nothing under way
// before it, or of a flow the port does not know, goes at once.
TEST(Reorder, AnAckWaitsForTheReadResponseBeforeIt) {
  ReorderLimits lim;
  lim.timeout = 100 * kUs;
  QpPort p(lim);
  p.Ack(0, 50);  // no response flow yet: at once, and none is made
  EXPECT_EQ(p.out.size(), 1u);
  EXPECT_EQ(p.rb.counters().flows, 0u);
  p.RFirst(1 * kUs, 100);
  p.RMid(2 * kUs, 101);
  p.Ack(3 * kUs, 104);  // the reader's SEND after the READ (100-103): waits
  p.RMid(4 * kUs, 102);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{50, 100, 101, 102}));
  p.RLast(5 * kUs, 103);
  EXPECT_EQ(p.Psns(), (std::vector<uint32_t>{50, 100, 101, 102, 103, 104}));
  EXPECT_EQ(p.out.back().first.flow, 2) << "the ACK, after the LAST";
  p.Ack(6 * kUs, 105);  // between messages: at once
  EXPECT_EQ(p.out.size(), 7u);
  // A response held for a gap holds the ACK behind it; the ACK takes no
  // PSN: the response it waited for comes next, in order.
  p.RFirst(7 * kUs, 110);
  p.RLast(8 * kUs, 112);  // 111 on its way
  p.Ack(9 * kUs, 113);
  EXPECT_EQ(p.out.size(), 8u);
  p.RMid(10 * kUs, 111);
  EXPECT_EQ(p.Psns(),
            (std::vector<uint32_t>{50, 100, 101, 102, 103, 104, 105, 110, 111, 112, 113}));
  EXPECT_EQ(p.rb.counters().held, 3u) << "ACK 104, LAST 112, ACK 113";
  // A response that never ends: the ACK goes at its timeout.
  p.RFirst(20 * kUs, 120);
  p.Ack(21 * kUs, 130);
  p.Expire(121 * kUs);
  EXPECT_EQ(p.out.back().first, (Tag{2, 130}));
  EXPECT_EQ(p.out.back().second, 121 * kUs);
  EXPECT_EQ(p.rb.counters().timeouts, 1u);
}

// One QP's two directions as a switch port sees them, sprayed: the peer's
// requests (SENDs of 1-4 packets and READ requests) and its READ responses
// (to READs of 1-4 packets, between which the reader's own SENDs took
// 0-3 PSNs, their ACK among the responses), each shuffled locally, READ
// responses' message starts and ACKs kept in order (a whole response
// overtaken is the NIC's: head comment). Every frame leaves once and each
// flow in PSN order, ACKs after the responses before them.
TEST(Reorder, AQpsRequestsAndReadResponsesLeaveInOrder) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    struct Pkt {
      bool resp;
      ReorderPsn at;
    };
    std::vector<Pkt> req, resp;
    const auto message = [&](std::vector<Pkt>& v, bool is_resp, uint32_t& psn, uint32_t n) {
      for (uint32_t i = 0; i < n; ++i) {
        const bool more = i + 1 < n;
        v.push_back({is_resp, {psn, i > 0, more, more ? 1024u : 5u, false, 0}});
        psn = (psn + 1) & kPsnMask;
      }
    };
    uint32_t q = static_cast<uint32_t>(rng()) & kPsnMask;
    message(req, false, q, 2);  // a first SEND shows the path MTU
    uint32_t r = static_cast<uint32_t>(rng()) & kPsnMask;
    for (int m = 0; m < 12; ++m) {
      if (rng() % 3 == 0) {
        const uint32_t bytes = static_cast<uint32_t>(rng() % 5000);
        req.push_back({false, {q, false, false, 0, true, bytes}});
        q = (q + std::max<uint32_t>(1, (bytes + 1023) / 1024)) & kPsnMask;
      } else {
        message(req, false, q, 1 + static_cast<uint32_t>(rng() % 4));
      }
      const auto sends = static_cast<uint32_t>(rng() % 4);  // the reader's SENDs, ACKed
      r = (r + sends) & kPsnMask;
      if (sends) resp.push_back({true, {(r - 1) & kPsnMask, false, false, 0, false, 0, true}});
      message(resp, true, r, 1 + static_cast<uint32_t>(rng() % 4));
    }
    const auto shuffle = [&](std::vector<Pkt>& v) {
      for (size_t i = 1; i + 1 < v.size(); ++i)  // the first stays first: the flow's start
        if (rng() % 3 == 0) std::swap(v[i], v[std::min(v.size() - 1, i + rng() % 3)]);
    };
    shuffle(req);
    shuffle(resp);
    // Response message starts and ACKs back in order, where they were.
    std::vector<size_t> at;
    std::vector<Pkt> starts;
    for (size_t i = 0; i < resp.size(); ++i) {
      if (!resp[i].at.continues) {
        at.push_back(i);
        starts.push_back(resp[i]);
      }
    }
    std::sort(starts.begin(), starts.end(),
              [&](const Pkt& a, const Pkt& b) { return PsnDiff(a.at.psn, b.at.psn) < 0; });
    for (size_t i = 0; i < at.size(); ++i) resp[at[i]] = starts[i];
    std::vector<Pkt> all;
    size_t a = 0, b = 0;
    while (a < req.size() || b < resp.size())
      all.push_back((b == resp.size() || (a < req.size() && rng() % 2)) ? req[a++] : resp[b++]);
    ReorderLimits lim;
    lim.timeout = kNever / 4;
    ReorderBuffer<uint32_t> rb(lim);
    std::vector<int> left(all.size(), 0);
    std::vector<uint32_t> out[2];
    auto emit = [&](uint32_t h, TimePs) {
      ++left[h];
      out[all[h].resp].push_back(all[h].at.psn);
    };
    for (size_t i = 0; i < all.size(); ++i) {
      const ReorderKey k{0x0A000002, 0x11, all[i].resp};
      rb.Offer(static_cast<TimePs>(i) * kUs, k, all[i].at, 100, static_cast<uint32_t>(i), emit);
    }
    rb.Expire(kNever - 1, emit);
    for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(left[i], 1) << "round " << round;
    for (const auto& o : out) {
      for (size_t i = 1; i < o.size(); ++i)
        ASSERT_GT(PsnDiff(o[i], o[i - 1]), 0) << "round " << round << " at " << i;
    }
    EXPECT_EQ(rb.counters().timeouts, 0u) << "round " << round;
    EXPECT_EQ(rb.counters().old, 0u) << "round " << round;
  }
}

}  // namespace
}  // namespace ofan::fabric
