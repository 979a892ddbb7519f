// An output port in emulated time: the one model of a link's queue that the
// simulator uses and the shared fabric engine is built on, so that both
// compute queue depths alike (docs/design.md, rule 7).
//
// expects:   frames offered in non-decreasing emulated time (ps), each with
//            its size and serialisation time; the link's preamble (before
//            the first bit counts as sent) and inter-frame gap
// modifies:  its own state: when the link is next free, the frames not yet
//            fully sent, the backlog and its maximum and time integral
// next:      Offer's verdict per frame: dropped (the buffer would overflow),
//            or queued with the time its last bit leaves (add the link's
//            propagation for its arrival at the far end) and whether it
//            found the backlog above the ECN threshold (CE at enqueue, as
//            ofan-dp's egress marks)
//
// FIFO: a frame starts when the link is free and it has arrived; the link
// is busy for its serialisation plus the gap. The backlog counts a frame
// from its arrival until its last bit has left. No DPDK, no clock of its
// own: time is the caller's (the simulator's events, the engine's clock,
// a test's numbers).
#pragma once

#include <algorithm>
#include <cstdint>

#include "dataplane/fabric/fifo.h"
#include "dataplane/lb/types.h"

namespace ofan::fabric {

using lb::TimePs;

struct QueueLimits {
  uint64_t buffer_bytes = 0;  // tail drop above; 0: unlimited
  uint64_t ecn_bytes = 0;     // CE-mark ECT frames that find more queued; 0: off
};

struct OfferResult {
  bool queued = false;
  bool ce = false;      // marked (only for frames offered as ECN-capable)
  TimePs last_bit = 0;  // when its last bit has left the port
};

class EgressTimeline {
 public:
  // Retires the frames sent by `now` and integrates the backlog up to it.
  void Advance(TimePs now) {
    while (!frames_.empty() && frames_.front().done <= now) {
      const Frame f = frames_.front();
      area_ += static_cast<double>(bytes_) * static_cast<double>(f.done - last_);
      last_ = f.done;
      bytes_ -= f.bytes;
      frames_.pop();
    }
    if (now > last_) {
      area_ += static_cast<double>(bytes_) * static_cast<double>(now - last_);
      last_ = now;
    }
  }

  // A frame of `bytes` arriving at `now`, serialised in `ser`; `pre` passes
  // before its first bit counts, `gap` after its last before the next
  // frame's. ecn_capable: the frame may be marked (data, ECT).
  OfferResult Offer(TimePs now, uint32_t bytes, TimePs ser, TimePs pre, TimePs gap,
                    const QueueLimits& lim, bool ecn_capable) {
    Advance(now);
    OfferResult r;
    if (lim.buffer_bytes && bytes_ + bytes > lim.buffer_bytes) return r;
    r.queued = true;
    r.ce = ecn_capable && lim.ecn_bytes && bytes_ > lim.ecn_bytes;
    const TimePs start = std::max(now, busy_until_);
    r.last_bit = start + pre + ser;
    busy_until_ = start + ser + gap;
    frames_.push({r.last_bit, bytes});
    bytes_ += bytes;
    max_bytes_ = std::max(max_bytes_, bytes_);
    return r;
  }

  uint64_t bytes() const { return bytes_; }  // as of the last Advance/Offer
  uint64_t max_bytes() const { return max_bytes_; }
  double area() const { return area_; }              // byte x ps, up to the last Advance
  TimePs busy_until() const { return busy_until_; }  // free (frame + gap sent) from then on
  size_t frames() const { return frames_.size(); }

 private:
  struct Frame {
    TimePs done;
    uint32_t bytes;
  };
  TimePs busy_until_ = 0;
  uint64_t bytes_ = 0, max_bytes_ = 0;
  TimePs last_ = 0;  // time up to which area_ is integrated
  double area_ = 0;  // integral of bytes over time
  // The frames not yet fully sent: the first 16 inside the timeline
  // (fifo.h SmallFifo: a shallow backlog costs no extra cache miss), the
  // rest in a Fifo that allocates no more once it has held the deepest.
  SmallFifo<Frame, 16> frames_;
};

}  // namespace ofan::fabric
