// Resequencing at the destination edge: a port's RoCE data frames released
// in PSN order per flow, for NICs without out-of-order placement (rxe,
// uroce without --ooo: docs/emu.md), in emulated time.
//
// expects:   per RoCE data frame bound for the port: its flow (source IPv4,
//            destination QP from the BTH), its 24-bit PSN, its bytes and a
//            handle, at non-decreasing times t; everything else (ACK/NAK,
//            CNP, non-RoCE, PFC) never comes here
// modifies:  the port's reorder buffer (bounded in bytes, frames of a flow
//            kept in PSN order) and its flow table (bounded; a flow with
//            nothing held is forgotten once idle when its slot is needed)
// next:      emit(handle, t) for every frame, exactly once, at the time it
//            leaves for the port's queue: at once when it is the next PSN
//            (then with the run it completes), when its gap times out, or
//            at once, counted, when it cannot wait (buffer or table full,
//            a PSN already released: a retransmission or a duplicate)
//
// An early frame that finds the buffer full ends its flow's wait at once:
// what the flow holds below it, the frame and the run after it leave in PSN
// order, all counted as overflow, and the gaps are the NIC's. (Passing that
// frame alone would leave a gap nothing can fill: the flow's later frames
// would each wait the timeout for a PSN already gone.)
//
// A frame that has waited `timeout` ends its flow's wait: the gap before
// the flow's lowest held PSN is a real loss, the NIC's business (it NAKs
// and the sender goes back N); the held frames go in PSN order up to the
// next gap. A flow the table does not know (or one quiet for the idle
// time: a QP number a new connection reuses) starts at its first frame
// that starts a message (FIRST, ONLY, a request) and comes before all it
// holds: a message's middle or last packet that overtook its first waits
// for it.
//
// Not every PSN of a flow comes this way (IBA 9.4, 9.5): an RDMA READ
// request takes as many PSNs as it will have responses, and the READ
// responses a QP gets carry its own request PSNs, which its SENDs and
// WRITEs to the peer use too. So READ responses are a flow of their own
// (ReorderKey::response); a READ request moves the next PSN on by
// ceil(length / path MTU), the path MTU being the payload of the flow's
// (else the port's) last FIRST or MIDDLE packet; and a flow whose next
// PSN is not known this way (a READ response's message ended; a READ whose
// path MTU the port has not seen yet) takes the next frame that starts a
// message and comes before all it holds as its next, gap or not. (A whole
// READ response overtaken by the next one is then the NIC's: rxe retries.)
//
// A responder's ACKs carry the reader's PSNs too, and an ACK past a READ
// whose responses have not all come tells the reader they were lost (IBA
// 9.7.5.1.6: rxe's completer retries). So an ACK (ReorderPsn::ack, of the
// response flow) waits while the flow holds a response before it, or has a
// response message under way whose next PSN is below it; it takes no PSN,
// and a flow it would start is not made.
//
// Header-only and allocation-free after construction: the shared engine's
// host ports and ofan-sim run the same code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "dataplane/fabric/emu_port.h"
#include "dataplane/fabric/fifo.h"
#include "dataplane/packet/roce.h"

namespace ofan::fabric {

inline constexpr uint32_t kPsnMask = pkt::kPsnMask;  // BTH PSNs are 24 bits

// a - b on the 24-bit PSN circle, in [-2^23, 2^23).
inline int32_t PsnDiff(uint32_t a, uint32_t b) {
  const uint32_t d = (a - b) & kPsnMask;
  return d >= (1u << 23) ? static_cast<int32_t>(d) - (1 << 24) : static_cast<int32_t>(d);
}

// A flow: what one RC QP receives from one host, its READ responses apart
// (they carry the receiver's PSNs, its requests the sender's).
struct ReorderKey {
  uint32_t src_ip = 0;
  uint32_t dst_qp = 0;
  bool response = false;  // RDMA READ responses
  bool operator==(const ReorderKey&) const = default;
};

// Where a frame sits in its flow's PSN sequence (egress/reorder.h reads it
// from the BTH and RETH; ofan-sim's frames are SENDs).
struct ReorderPsn {
  uint32_t psn = 0;         // 24 bits
  bool continues = false;   // a message's middle or last packet
  bool more = false;        // a message's first or middle packet: its payload is the path MTU
  uint32_t payload = 0;     // payload bytes
  bool read = false;        // an RDMA READ request
  uint32_t read_bytes = 0;  // its DMA length
  bool ack = false;         // an ACK/NAK or atomic ACK (of the response flow): takes no PSN
};

// The defaults (ofan-dp's reorder section, ofan-emu up --reorder-kb and
// --reorder-timeout-us, ofan-sim --reorder take them from here).
inline constexpr uint64_t kReorderDefaultBytes = uint64_t{256} * 1024;
inline constexpr uint32_t kReorderMaxTimeoutUs = 10'000'000;
inline constexpr uint32_t kReorderDefaultFlows = 1024;
// A port without an emulated rate (ofan-dp at the device's speed) waits this.
inline constexpr uint32_t kReorderNoRateTimeoutUs = 10'000;

// The default wait: the time the port's link takes to send the whole
// buffer. A flow at line rate whose gap lasts longer fills the buffer
// first (and gives up: GiveUp), so a longer wait buys it nothing; and it
// scales with the rate as every other time of the emulator does. 256 KiB:
// 84 ms at 25 Mb/s (RPS's paths there differ by up to 12 ms), 21 ms at
// 100 Mb/s, 2.6 us at 800 Gb/s. link_gbps <= 0: kReorderNoRateTimeoutUs.
inline uint32_t ReorderDrainTimeoutUs(uint64_t buffer_bytes, double link_gbps) {
  if (!(link_gbps > 0)) return kReorderNoRateTimeoutUs;
  const double us = std::ceil(static_cast<double>(buffer_bytes) * 8.0 / (link_gbps * 1e3));
  return static_cast<uint32_t>(std::clamp(us, 1.0, static_cast<double>(kReorderMaxTimeoutUs)));
}

struct ReorderLimits {
  uint64_t buffer_bytes = kReorderDefaultBytes;                  // a port's buffer
  TimePs timeout = TimePs{kReorderNoRateTimeoutUs} * 1'000'000;  // how long a frame may wait
  uint32_t max_flows = kReorderDefaultFlows;                     // the port's flow table
  TimePs idle = 1'000'000'000'000;  // 1 s: when a quiet flow may go or start again
  // The least bytes a held frame counts (the buffer's frame capacity).
  uint32_t min_frame = 60;
};

struct ReorderCounters {
  uint64_t held = 0;        // frames that waited for a gap to fill
  uint64_t in_order = 0;    // frames released in PSN order (waited or not)
  uint64_t timeouts = 0;    // frames released because a gap timed out
  uint64_t overflow = 0;    // frames let go early: their flow's next found the buffer full
  uint64_t table_full = 0;  // frames of a new flow passed: no slot for it
  uint64_t old = 0;         // PSNs already released or held: passed at once
  uint64_t flows = 0;       // flows the table took (forgotten ones again)
  uint64_t max_bytes = 0, max_frames = 0;
  TimePs max_hold = 0;
};

template <class H>
class ReorderBuffer {
 public:
  ReorderBuffer() = default;
  explicit ReorderBuffer(const ReorderLimits& lim) { Configure(lim); }

  void Configure(const ReorderLimits& lim) {
    lim_ = lim;
    lim_.max_flows = std::max<uint32_t>(1, lim_.max_flows);
    const auto frames = static_cast<size_t>(std::min<uint64_t>(
        lim_.buffer_bytes / std::max<uint32_t>(1, lim_.min_frame) + 1, uint64_t{1} << 20));
    held_.assign(frames, Held{});
    free_held_.clear();
    for (size_t i = frames; i-- > 0;) free_held_.push_back(static_cast<int32_t>(i));
    flows_.assign(lim_.max_flows, Flow{});
    free_flows_.clear();
    for (uint32_t i = lim_.max_flows; i-- > 0;) free_flows_.push_back(static_cast<int32_t>(i));
    size_t nb = 1;
    while (nb < 2 * static_cast<size_t>(lim_.max_flows)) nb *= 2;
    bucket_.assign(nb, kNone);
    deadlines_ = Fifo<Deadline>();
    deadlines_.reserve(frames);
    lru_head_ = lru_tail_ = kNone;
    bytes_ = frames_ = 0;
    port_pmtu_ = 0;
    c_ = {};
  }

  // A data frame of flow k with PSN psn (24 bits) at t; `continues`: the
  // middle or last packet of a message (pkt::ContinuesMessage). Releases
  // through emit(h, at) what leaves by t: first what timed out before t,
  // then this frame and the run it completes, or this frame alone where it
  // cannot wait.
  template <class Emit>
  void Offer(TimePs t, const ReorderKey& k, uint32_t psn, uint32_t bytes, H h, Emit&& emit,
             bool continues = false) {
    Offer(t, k, ReorderPsn{.psn = psn, .continues = continues}, bytes, h, emit);
  }
  // The same with all a frame says of its place (ReorderPsn).
  template <class Emit>
  void Offer(TimePs t, const ReorderKey& k, const ReorderPsn& p, uint32_t bytes, H h, Emit&& emit) {
    Expire(t, emit);
    const uint32_t psn = p.psn & kPsnMask;
    if (p.ack) {
      OfferAck(t, k, psn, bytes, h, emit);
      return;
    }
    const bool continues = p.continues;
    int32_t fi = Find(k);
    if (fi == kNone) {
      fi = Insert(k, t);
      if (fi == kNone) {
        ++c_.table_full;
        emit(h, t);
        return;
      }
    } else if (flows_[fi].held == 0 && t - flows_[fi].last_seen >= lim_.idle) {
      // Quiet for the idle time with nothing held: a QP number reused by a
      // new connection starts again, as a new flow.
      flows_[fi].anchored = false;
      ++c_.flows;
    }
    Flow& f = flows_[fi];
    Touch(fi, t);
    if (p.more && p.payload > 0) f.pmtu = port_pmtu_ = p.payload;
    const Place place = PlaceOf(f, p);
    if (!f.anchored) {
      // Where a new flow starts is the first frame that starts a message
      // and comes before everything held; until one comes (or a wait times
      // out), every frame waits.
      if (!continues && BeforeHeld(f, psn)) {
        f.anchored = true;
        f.expected = psn;
      } else {
        Hold(f, fi, t, psn, bytes, place, h, emit);
        return;
      }
    }
    // At the next PSN nothing held comes before it: BeforeHeld is asked
    // only of a later message start (one compare for the in-order frame).
    if (psn == f.expected || (TakesNext(f, psn, place) && BeforeHeld(f, psn))) {
      ++c_.in_order;
      Advance(f, psn, place);
      emit(h, t);
      ReleaseRun(f, t, false, emit);
      return;
    }
    if (PsnDiff(psn, f.expected) < 0) {  // released already: a retransmission or a duplicate
      ++c_.old;
      emit(h, t);
      return;
    }
    Hold(f, fi, t, psn, bytes, place, h, emit);
  }

  // An ACK (ReorderPsn::ack): at once, unless its flow's responses before
  // it are still to come (head comment).
  template <class Emit>
  void OfferAck(TimePs t, const ReorderKey& k, uint32_t psn, uint32_t bytes, H h, Emit&& emit) {
    const int32_t fi = Find(k);
    if (fi != kNone && flows_[fi].anchored && !AckGoes(flows_[fi], psn)) {
      Touch(fi, t);
      Hold(flows_[fi], fi, t, psn, bytes, Place{.ack = true}, h, emit);
      return;
    }
    ++c_.in_order;
    emit(h, t);
  }

  // Releases what timed out at or before t, each at its deadline.
  template <class Emit>
  void Expire(TimePs t, Emit&& emit) {
    while (!deadlines_.empty() && deadlines_.front().at <= t) {
      const Deadline dl = deadlines_.front();
      deadlines_.pop();
      // Until that frame is gone: each gap before it given up in turn.
      while (Live(dl)) {
        Flow& f = flows_[held_[dl.held].flow];
        f.expected = held_[f.head].psn;
        f.anchored = true;
        f.loose = false;
        ReleaseRun(f, dl.at, true, emit);
      }
    }
  }

  // When the next frame times out (kNever: nothing held).
  TimePs NextDeadline() const { return deadlines_.empty() ? kNever : deadlines_.front().at; }

  // Everything held, handed to drop (a stopped switch, teardown).
  template <class Drop>
  uint32_t Flush(Drop&& drop) {
    uint32_t n = 0;
    for (Flow& f : flows_) {
      while (f.head != kNone) {
        const int32_t hi = f.head;
        f.head = held_[hi].next;
        Free(f, hi);
        drop(held_[hi].h);
        ++n;
      }
    }
    return n;
  }

  const ReorderCounters& counters() const { return c_; }
  const ReorderLimits& limits() const { return lim_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t frames() const { return frames_; }
  // The maxima start again from what is held now.
  void ResetMaxima() {
    c_.max_bytes = bytes_;
    c_.max_frames = frames_;
    c_.max_hold = 0;
  }

 private:
  static constexpr int32_t kNone = -1;
  // What the stage keeps of a frame's ReorderPsn.
  struct Place {
    uint32_t span = 1;   // PSNs it takes; 0: a READ whose path MTU is unknown
    bool starts = true;  // the first packet of a message
    bool ends = true;    // the last packet of a message
    bool ack = false;    // an ACK: takes no PSN
  };
  struct Held {
    H h{};
    uint32_t psn = 0, bytes = 0;
    TimePs arrived = 0;
    int32_t next = kNone;  // the flow's next held frame, by PSN
    int32_t flow = kNone;
    uint32_t gen = 0;  // which use of the slot a deadline names
    bool live = false;
    Place place;
  };
  struct Flow {
    ReorderKey key;
    uint32_t expected = 0;  // the next PSN to release (once anchored)
    bool anchored = false;  // its start seen (or given up waiting for)
    bool loose = false;     // `expected` a guess: the next message start will do
    uint32_t pmtu = 0;      // its last FIRST or MIDDLE packet's payload (0: none seen)
    int32_t head = kNone;   // held frames, lowest PSN first
    uint32_t held = 0;
    TimePs last_seen = 0;
    int32_t chain = kNone;                 // the bucket's next flow
    int32_t newer = kNone, older = kNone;  // by last_seen (most recent first)
  };
  struct Deadline {
    TimePs at = 0;
    int32_t held = kNone;
    uint32_t gen = 0;
  };

  Place PlaceOf(const Flow& f, const ReorderPsn& p) const {
    Place pl{1, !p.continues, !p.more};
    if (p.read) {
      const uint32_t mtu = f.pmtu ? f.pmtu : port_pmtu_;
      pl.span = mtu ? std::max<uint32_t>(
                          1, static_cast<uint32_t>((uint64_t{p.read_bytes} + mtu - 1) / mtu))
                    : 0;
    }
    return pl;
  }
  // The flow's next PSN after a frame at psn leaves (an ACK's: unchanged).
  static void Advance(Flow& f, uint32_t psn, const Place& pl) {
    if (pl.ack) return;
    f.expected = (psn + std::max<uint32_t>(pl.span, 1)) & kPsnMask;
    f.loose = pl.span == 0 || (f.key.response && pl.ends);
  }
  // An ACK at psn may leave: no response of flow f before it is held or
  // under way (a message started whose next PSN is below psn).
  bool AckGoes(const Flow& f, uint32_t psn) const {
    if (f.head != kNone && PsnDiff(held_[f.head].psn, psn) < 0) return false;
    return f.loose || PsnDiff(psn, f.expected) <= 0;
  }
  // A frame at psn is the flow's next: its next PSN, or where the next PSN
  // is a guess (Advance) a later frame that starts a message.
  static bool TakesNext(const Flow& f, uint32_t psn, const Place& pl) {
    return psn == f.expected || (f.loose && pl.starts && PsnDiff(psn, f.expected) > 0);
  }
  // psn comes before every frame flow f holds.
  bool BeforeHeld(const Flow& f, uint32_t psn) const {
    return f.head == kNone || PsnDiff(psn, held_[f.head].psn) < 0;
  }

  size_t Bucket(const ReorderKey& k) const {
    // QPNs are 24 bits: bit 24 tells READ responses apart.
    uint64_t x =
        (uint64_t{k.src_ip} << 32 | k.dst_qp | uint64_t{k.response} << 24) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(x >> 32) & (bucket_.size() - 1);
  }
  int32_t Find(const ReorderKey& k) const {
    for (int32_t i = bucket_[Bucket(k)]; i != kNone; i = flows_[i].chain)
      if (flows_[i].key == k) return i;
    return kNone;
  }
  // A slot for a new flow: a free one, else the least recently seen if it
  // holds nothing and has been idle long enough; kNone if neither.
  int32_t Insert(const ReorderKey& k, TimePs t) {
    int32_t fi = kNone;
    if (!free_flows_.empty()) {
      fi = free_flows_.back();
      free_flows_.pop_back();
    } else {
      const int32_t old = lru_tail_;
      if (old == kNone || flows_[old].held || t - flows_[old].last_seen < lim_.idle) return kNone;
      Forget(old);
      fi = old;
    }
    Flow& f = flows_[fi];
    f = Flow{};
    f.key = k;
    int32_t& b = bucket_[Bucket(k)];
    f.chain = b;
    b = fi;
    f.last_seen = t;
    LinkFront(fi);
    ++c_.flows;
    return fi;
  }
  void Forget(int32_t fi) {
    Unlink(fi);
    int32_t* link = &bucket_[Bucket(flows_[fi].key)];
    while (*link != fi) link = &flows_[*link].chain;
    *link = flows_[fi].chain;
  }
  void Touch(int32_t fi, TimePs t) {
    flows_[fi].last_seen = t;
    if (lru_head_ == fi) return;
    Unlink(fi);
    LinkFront(fi);
  }
  void LinkFront(int32_t fi) {
    Flow& f = flows_[fi];
    f.newer = kNone;
    f.older = lru_head_;
    if (lru_head_ != kNone) flows_[lru_head_].newer = fi;
    lru_head_ = fi;
    if (lru_tail_ == kNone) lru_tail_ = fi;
  }
  void Unlink(int32_t fi) {
    Flow& f = flows_[fi];
    if (f.newer != kNone) {
      flows_[f.newer].older = f.older;
    } else {
      lru_head_ = f.older;
    }
    if (f.older != kNone) {
      flows_[f.older].newer = f.newer;
    } else {
      lru_tail_ = f.newer;
    }
    f.newer = f.older = kNone;
  }
  // Frame h waits in flow f's list, in PSN order; at once, counted, if it
  // is held already (a duplicate) or there is no room.
  template <class Emit>
  void Hold(Flow& f, int32_t fi, TimePs t, uint32_t psn, uint32_t bytes, const Place& place, H h,
            Emit&& emit) {
    if (HoldsPsn(f, psn)) {
      ++c_.old;
      emit(h, t);
      return;
    }
    const uint32_t cost = std::max(bytes, lim_.min_frame);
    if (bytes_ + cost > lim_.buffer_bytes || free_held_.empty()) {
      GiveUp(f, t, psn, place, h, emit);
      return;
    }
    const int32_t hi = free_held_.back();
    free_held_.pop_back();
    Held& e = held_[hi];
    e = Held{h, psn, cost, t, kNone, fi, e.gen + 1, true, place};
    int32_t* link = &f.head;
    while (*link != kNone && PsnDiff(held_[*link].psn, psn) < 0) link = &held_[*link].next;
    e.next = *link;
    *link = hi;
    ++f.held;
    bytes_ += cost;
    ++frames_;
    ++c_.held;
    c_.max_bytes = std::max(c_.max_bytes, bytes_);
    c_.max_frames = std::max(c_.max_frames, frames_);
    deadlines_.push(Deadline{t + lim_.timeout, hi, e.gen});
  }
  // The buffer is full for frame h of flow f: the flow stops waiting for
  // what comes before psn (head comment).
  template <class Emit>
  void GiveUp(Flow& f, TimePs t, uint32_t psn, const Place& place, H h, Emit&& emit) {
    while (f.head != kNone && PsnDiff(held_[f.head].psn, psn) < 0) {
      const int32_t hi = f.head;
      Held& e = held_[hi];
      f.head = e.next;
      c_.max_hold = std::max(c_.max_hold, t - e.arrived);
      ++c_.overflow;
      Free(f, hi);
      emit(e.h, t);
    }
    ++c_.overflow;
    emit(h, t);
    Advance(f, psn, place);
    f.anchored = true;
    ReleaseRun(f, t, false, emit);
  }
  bool HoldsPsn(const Flow& f, uint32_t psn) const {
    for (int32_t i = f.head; i != kNone; i = held_[i].next) {
      const int32_t d = PsnDiff(held_[i].psn, psn);
      if (d == 0) return true;
      if (d > 0) return false;
    }
    return false;
  }
  void Free(Flow& f, int32_t hi) {
    Held& e = held_[hi];
    e.live = false;
    bytes_ -= e.bytes;
    --frames_;
    --f.held;
    free_held_.push_back(hi);
    // The front deadline is always a frame still held (NextDeadline).
    while (!deadlines_.empty() && !Live(deadlines_.front())) deadlines_.pop();
  }
  bool Live(const Deadline& dl) const {
    return held_[dl.held].live && held_[dl.held].gen == dl.gen;
  }
  // The held frames from `expected` on, while consecutive, released at t.
  template <class Emit>
  void ReleaseRun(Flow& f, TimePs t, bool timed_out, Emit&& emit) {
    // The head leaves if it is the next PSN, or the next message's start
    // where the next PSN is a guess (Advance), or an ACK that may go.
    while (f.head != kNone && (TakesNext(f, held_[f.head].psn, held_[f.head].place) ||
                               (held_[f.head].place.ack && AckGoes(f, held_[f.head].psn)))) {
      const int32_t hi = f.head;
      Held& e = held_[hi];
      f.head = e.next;
      Advance(f, e.psn, e.place);
      c_.max_hold = std::max(c_.max_hold, t - e.arrived);
      ++(timed_out ? c_.timeouts : c_.in_order);
      Free(f, hi);
      emit(e.h, t);
    }
  }

  ReorderLimits lim_;
  std::vector<Held> held_;
  std::vector<int32_t> free_held_;
  std::vector<Flow> flows_;
  std::vector<int32_t> free_flows_;
  std::vector<int32_t> bucket_;
  Fifo<Deadline> deadlines_;
  int32_t lru_head_ = kNone, lru_tail_ = kNone;
  uint64_t bytes_ = 0, frames_ = 0;
  uint32_t port_pmtu_ = 0;  // the port's last FIRST or MIDDLE payload (Flow::pmtu)
  ReorderCounters c_;
};

}  // namespace ofan::fabric
