// EmuPort: an output port of the shared fabric engine in emulated time,
// with ofan-dp's two egress queues (strict priority for ACK/NAK/CNP and
// control frames, then the normal queue) and a link of a given rate.
//
// expects:   frames offered in non-decreasing emulated time (ps), each with
//            its queue, size, whether it may be CE-marked, and a handle
//            (the engine's mbuf; a test's number); StartBefore(t) once every
//            frame arriving before t has been offered
// modifies:  its own state: the two queues, when the link is next free, the
//            frames on the wire until their last bit, the backlog and its
//            maximum and time integrals
// next:      emit(handle, start, last_bit) for each frame as its
//            transmission starts, in wire order: add the link's
//            propagation for its arrival at the far end
//
// The link picks its next frame when it is free: the priority queue's
// head if that has arrived by then, else the normal queue's (unless PFC
// pauses it). A choice at time s depends on every arrival up to s, so a
// transmission starts only once time has passed it: StartBefore(t) starts
// those that begin before t (the engine calls it at the end of each window
// it has emulated; Offer calls it first). Verdicts at arrival — tail drop
// above the buffer, CE above the ECN threshold — read the backlog at that
// instant: every frame that has arrived and whose last bit has not left.
// With one queue this is EgressTimeline's FIFO (egress_timeline.h), which
// the simulator uses; tests/dataplane/fabric/emu_port_test.cc holds the two
// to the same numbers. No DPDK and no clock of its own: time is the
// caller's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "common/units.h"
#include "dataplane/fabric/egress_timeline.h"
#include "dataplane/fabric/fifo.h"
#include "dataplane/lb/types.h"
#include "dataplane/packet/frame_budget.h"

namespace ofan::fabric {

inline constexpr TimePs kNever = std::numeric_limits<TimePs>::max();

// A link in emulated time: its rate as picoseconds per byte, the preamble
// before a frame's first bit counts and, after its last byte, the FCS and
// the inter-frame gap (packet/frame_budget.h: the frames held here carry no
// FCS, so 24 B in all, as ofan-dp's shaper charges; ofan-sim, whose frames
// count the FCS, sets pre and gap from its own gap_bytes) — and its one-way
// propagation.
struct EmuWire {
  double ps_per_byte = 0;
  TimePs pre = 0, gap = 0, latency = 0;

  static EmuWire At(LinkRate rate, double latency_us) {
    EmuWire w;
    w.ps_per_byte = rate.ps_per_byte();
    w.pre = w.Ser(pkt::kPreambleSfdBytes);
    w.gap = w.Ser(pkt::kFcsBytes + pkt::kIfgBytes);
    w.latency = static_cast<TimePs>(std::llround(latency_us * 1e6));
    return w;
  }
  TimePs Ser(uint32_t bytes) const {
    return static_cast<TimePs>(std::llround(static_cast<double>(bytes) * ps_per_byte));
  }
  // The least time from a frame's start on this link to its arrival at the
  // far end (a frame of `min_bytes`): the engine's lookahead.
  TimePs MinTransit(uint32_t min_bytes) const { return pre + Ser(min_bytes) + latency; }
};

struct EmuVerdict {
  bool queued = false;
  bool ce = false;
};

template <class H>
class EmuPort {
 public:
  static constexpr int kQueues = 2;  // 0: strict priority, 1: normal

  void Configure(const EmuWire& w, const QueueLimits& lim) {
    wire_ = w;
    lim_ = lim;
  }
  const EmuWire& wire() const { return wire_; }
  const QueueLimits& limits() const { return lim_; }

  // A frame arriving at `t` on queue q. Starts what begins before t first
  // (through emit), then judges it against the backlog at t. A lossless
  // frame (PFC's class, admitted by its ingress port's accounting:
  // fabric/pfc.h) is never tail-dropped here.
  template <class Emit>
  EmuVerdict Offer(TimePs t, int q, uint32_t bytes, bool ecn_capable, H h, Emit&& emit,
                   bool lossless = false) {
    StartBefore(t, emit);
    Integrate(t);
    EmuVerdict v;
    // The lossy frames' share of the buffer is the port's own (the lossless
    // class's bytes are its ingress ports': fabric/pfc.h).
    if (!lossless && lim_.buffer_bytes && bytes_ - lossless_bytes_ + bytes > lim_.buffer_bytes)
      return v;
    v.queued = true;
    v.ce = ecn_capable && lim_.ecn_bytes && bytes_ > lim_.ecn_bytes;
    wait_[q].push(Waiting{t, bytes, lossless, h});
    bytes_ += bytes;
    if (lossless) lossless_bytes_ += bytes;
    ++pkts_;
    max_bytes_ = std::max(max_bytes_, bytes_);
    max_pkts_ = std::max(max_pkts_, pkts_);
    return v;
  }

  // Starts every transmission that begins before t, in wire order.
  template <class Emit>
  void StartBefore(TimePs t, Emit&& emit) {
    for (;;) {
      const int q = Next();
      if (q < 0) return;
      const TimePs s = StartOf(q);
      if (s >= t) return;
      const Waiting f = wait_[q].front();
      wait_[q].pop();
      const TimePs ser = wire_.Ser(f.bytes);
      const TimePs last_bit = s + wire_.pre + ser;
      busy_until_ = s + ser + wire_.gap;
      sending_.push(Sent{last_bit, f.bytes, f.lossless});
      ++tx_packets_;
      tx_bytes_ += f.bytes;
      emit(f.h, s, last_bit);
    }
  }

  // When the next transmission would start if nothing else arrived;
  // kNever when nothing waits.
  TimePs NextStart() const {
    const int q = Next();
    return q < 0 ? kNever : StartOf(q);
  }

  // Retires the frames whose last bit left by t and integrates the backlog
  // up to t. Call StartBefore(t) first: a frame that should have started
  // before t counts as waiting until it does.
  void Integrate(TimePs t) {
    while (!sending_.empty() && sending_.front().done <= t) {
      const Sent f = sending_.front();
      Accumulate(f.done);
      bytes_ -= f.bytes;
      if (f.lossless) lossless_bytes_ -= f.bytes;
      --pkts_;
      sending_.pop();
    }
    Accumulate(t);
  }

  // PFC: the normal queue sends nothing that would start before `until`.
  // A pause received at t stops the queue at its next frame boundary: call
  // StartBefore(t) first, so that what began before t is on its way.
  void PauseUntil(TimePs until) { paused_until_ = until; }
  TimePs paused_until() const { return paused_until_; }

  // Every waiting frame, handed to `drop` (a stopped switch, teardown); the
  // frames on the wire finish.
  template <class Drop>
  uint32_t Flush(Drop&& drop) {
    uint32_t n = 0;
    for (int q = 0; q < kQueues; ++q) n += FlushQueue(q, drop);
    return n;
  }

  // The frames waiting in queue q, handed to `drop` (the PFC watchdog's
  // drop action); the frame on the wire finishes.
  template <class Drop>
  uint32_t FlushQueue(int q, Drop&& drop) {
    uint32_t n = 0;
    Fifo<Waiting>& w = wait_[q];
    while (!w.empty()) {
      bytes_ -= w.front().bytes;
      if (w.front().lossless) lossless_bytes_ -= w.front().bytes;
      --pkts_;
      drop(w.front().h);
      w.pop();
      ++n;
    }
    return n;
  }

  void ResetStats(TimePs t) {
    Integrate(t);
    area_bytes_ = area_pkts_ = 0;
    max_bytes_ = bytes_;
    max_pkts_ = pkts_;
    stat_start_ = t;
  }

  size_t waiting(int q) const { return wait_[q].size(); }
  uint64_t bytes() const { return bytes_; }  // backlog as of the last Integrate/Offer
  uint64_t pkts() const { return pkts_; }
  uint64_t max_bytes() const { return max_bytes_; }
  uint64_t max_pkts() const { return max_pkts_; }
  double area_bytes() const { return area_bytes_; }  // byte x ps since stat_start()
  double area_pkts() const { return area_pkts_; }
  TimePs stat_start() const { return stat_start_; }
  TimePs integrated_to() const { return last_; }
  TimePs busy_until() const { return busy_until_; }
  uint64_t tx_packets() const { return tx_packets_; }
  uint64_t tx_bytes() const { return tx_bytes_; }

 private:
  struct Waiting {
    TimePs arrival;
    uint32_t bytes;
    bool lossless;
    H h;
  };
  struct Sent {
    TimePs done;
    uint32_t bytes;
    bool lossless;
  };

  TimePs StartOf(int q) const {
    TimePs s = std::max(busy_until_, wait_[q].front().arrival);
    if (q == 1) s = std::max(s, paused_until_);
    return s;
  }
  // The queue whose head goes next: strict priority, unless the normal
  // head could start before the priority head has even arrived.
  int Next() const {
    const bool p = !wait_[0].empty(), n = !wait_[1].empty();
    if (!p) return n ? 1 : -1;
    if (!n) return 0;
    return StartOf(0) <= StartOf(1) ? 0 : 1;
  }
  void Accumulate(TimePs t) {
    if (t <= last_) return;
    const double dt = static_cast<double>(t - last_);
    area_bytes_ += static_cast<double>(bytes_) * dt;
    area_pkts_ += static_cast<double>(pkts_) * dt;
    last_ = t;
  }

  EmuWire wire_;
  QueueLimits lim_;
  Fifo<Waiting> wait_[kQueues];
  Fifo<Sent> sending_;  // started, last bit not yet out
  TimePs busy_until_ = 0, paused_until_ = 0;
  uint64_t bytes_ = 0, pkts_ = 0, max_bytes_ = 0, max_pkts_ = 0;
  uint64_t lossless_bytes_ = 0;  // of bytes_, the lossless class's
  uint64_t tx_packets_ = 0, tx_bytes_ = 0;
  TimePs last_ = 0, stat_start_ = 0;
  double area_bytes_ = 0, area_pkts_ = 0;
};

}  // namespace ofan::fabric
