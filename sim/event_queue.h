// EventQueue: the simulator's timed events, popped in (time, insertion
// sequence) order so that a run is a pure function of its seed.
//
// expects:   pushes no earlier than the last popped event's time
// modifies:  its own buckets and heaps (they keep their capacity: once warm,
//            no allocation per event)
// next:      Pop returns the event with the least (t, seq), exactly as one
//            global heap would (tests/sim/event_queue_test.cc)
//
// A calendar queue (bucket queue keyed by time): at k=64 about 10 M events
// are pending at once and a global heap's sift walked ~12 levels spread over
// 320 MB, a cache miss per level (bench/RESULTS.md "Simulator speed").
// Instead, time is cut into buckets of 2^kShift ps; an event within the ring's
// horizon (kBuckets buckets from the current one) is appended to its bucket,
// unsorted; one beyond goes to a 4-ary heap (`far_`: retransmission timers,
// rare). When the current bucket runs out, the next non-empty one is sorted
// once (a stable counting sort on time) and read in order; the few events pushed into the bucket
// being read (host wake-ups) go to a small heap (`near_`) that Pop merges with it.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "dataplane/lb/types.h"
#include "sim/packet.h"

namespace ofan::sim {

using lb::TimePs;

enum class EventType : uint8_t {
  kArrive,    // a packet's last bit reaches node/port
  kHostWake,  // a host's NIC may send (link free or pacing timer)
  kRto,       // a flow's retransmission timer (node: the flow)
};

struct Event {
  TimePs t;
  uint64_t seq;
  uint32_t node;
  uint32_t gen;  // host wake generation: stale wakes are ignored
  uint16_t port;
  EventType type;
  Packet pk;  // kArrive: the packet itself (packet.h)
};

inline bool EventBefore(const Event& a, const Event& b) {
  return a.t < b.t || (a.t == b.t && a.seq < b.seq);
}

// A 4-ary min-heap on (t, seq).
class EventHeap {
 public:
  void Push(const Event& e) {
    heap_.push_back(e);
    SiftUp(heap_.size() - 1);
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }
  Event Pop() {
    Event e = heap_.front();
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) SiftDown(0);
    return e;
  }

 private:
  void SiftUp(size_t i) {
    Event e = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!EventBefore(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  void SiftDown(size_t i) {
    const size_t n = heap_.size();
    Event e = heap_[i];
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t last = first + 4 < n ? first + 4 : n;
      for (size_t c = first + 1; c < last; ++c) {
        if (EventBefore(heap_[c], heap_[best])) best = c;
      }
      if (!EventBefore(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }
  std::vector<Event> heap_;
};

class EventQueue {
 public:
  static constexpr uint32_t kShift = 8;           // 256 ps per bucket
  static constexpr uint32_t kBuckets = 1u << 14;  // horizon: 4.2 us

  EventQueue() : ring_(kBuckets) {}

  void Push(Event e) {
    e.seq = next_seq_++;
    ++size_;
    const uint64_t b = e.t >> kShift;
    if (b <= cur_) {
      near_.Push(e);  // the bucket being read (never earlier: see expects)
    } else if (b < cur_ + kBuckets) {
      Append(b, e);
    } else {
      far_.Push(e);
    }
  }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  uint64_t pushed() const { return next_seq_; }

  Event Pop() {
    if (pos_ == end_ && near_.empty()) Advance();
    --size_;
    if (pos_ < end_ && (near_.empty() || EventBefore(sorted_[pos_], near_.top()))) {
      return sorted_[pos_++];
    }
    return near_.Pop();
  }

 private:
  // The current bucket is exhausted (and empty() is false): move to the next
  // non-empty one and sort it.
  void Advance() {
    end_ = 0;
    pos_ = 0;
    // The next bucket holding anything: in the ring, or the far heap's first
    // (then the horizon catches up with it).
    const uint64_t next_far = far_.empty() ? kNoBucket : far_.top().t >> kShift;
    cur_ = std::min(NextOccupied(), next_far);
    // Far events that the horizon now reaches join the ring.
    while (!far_.empty() && (far_.top().t >> kShift) < cur_ + kBuckets) {
      const Event e = far_.Pop();
      const uint64_t b = e.t >> kShift;
      if (b <= cur_) {
        near_.Push(e);
      } else {
        Append(b, e);
      }
    }
    Bucket& bucket = ring_[cur_ & (kBuckets - 1)];
    if (bucket.head != kNone) {
      // Read the bucket out in (t, seq) order and recycle its chunks. The
      // chunks hold its events in sequence order: those that came from the
      // far heap first (moved in (t, seq) order as soon as the horizon
      // reached them, before anything could be pushed into the bucket
      // directly), then the direct pushes. So a sort by time that is
      // stable suffices: counting on the time within the bucket (kShift
      // bits), or insertion for a few events.
      size_t n = 0;
      uint32_t count[kSpan + 1] = {};
      for (uint32_t c = bucket.head; c != kNone; c = chunks_[c].next) {
        const Chunk& ch = chunks_[c];
        for (uint32_t i = 0; i < ch.n; ++i) ++count[(ch.ev[i].t & (kSpan - 1)) + 1];
        n += ch.n;
      }
      if (sorted_.size() < n) sorted_.resize(n);
      end_ = n;
      if (n <= kInsertionMax) {
        size_t at = 0;
        for (uint32_t c = bucket.head; c != kNone; c = chunks_[c].next) {
          const Chunk& ch = chunks_[c];
          for (uint32_t i = 0; i < ch.n; ++i) {
            size_t j = at++;
            for (; j > 0 && sorted_[j - 1].t > ch.ev[i].t; --j) sorted_[j] = sorted_[j - 1];
            sorted_[j] = ch.ev[i];
          }
        }
      } else {
        for (uint32_t v = 1; v <= kSpan; ++v) count[v] += count[v - 1];
        for (uint32_t c = bucket.head; c != kNone; c = chunks_[c].next) {
          const Chunk& ch = chunks_[c];
          for (uint32_t i = 0; i < ch.n; ++i) sorted_[count[ch.ev[i].t & (kSpan - 1)]++] = ch.ev[i];
        }
      }
      for (uint32_t c = bucket.head; c != kNone;) {
        const uint32_t next = chunks_[c].next;
        chunks_[c].next = free_;
        free_ = c;
        c = next;
      }
      bucket.head = bucket.tail = kNone;
      occupied_[(cur_ & (kBuckets - 1)) / 64] &= ~(uint64_t{1} << (cur_ % 64));
      in_ring_ -= n;
    }
  }

  // The first non-empty ring bucket after cur_ (kNoBucket: none).
  uint64_t NextOccupied() const {
    if (in_ring_ == 0) return kNoBucket;
    const uint64_t from = cur_ + 1;
    uint32_t pos = static_cast<uint32_t>(from & (kBuckets - 1));
    for (uint32_t scanned = 0; scanned <= kBuckets; scanned += 64) {
      const uint32_t word = pos / 64;
      const uint64_t bits = occupied_[word] >> (pos % 64);
      if (bits) {
        const uint32_t at = pos + static_cast<uint32_t>(std::countr_zero(bits));
        return from + ((at - from) & (kBuckets - 1));
      }
      pos = ((word + 1) * 64) & (kBuckets - 1);
    }
    return kNoBucket;  // unreachable while in_ring_ > 0
  }

  // A bucket's events live in a list of fixed-size chunks from one pool, so
  // that memory follows the events pending, not every bucket's peak.
  static constexpr uint32_t kNone = UINT32_MAX;
  static constexpr uint32_t kSpan = 1u << kShift;  // ps per bucket
  static constexpr size_t kInsertionMax = 32;
  static constexpr uint64_t kNoBucket = UINT64_MAX;
  static constexpr uint32_t kChunk = 63;
  struct Chunk {
    Event ev[kChunk];
    uint32_t n = 0;
    uint32_t next = kNone;
  };
  struct Bucket {
    uint32_t head = kNone, tail = kNone;
  };
  void Append(uint64_t b, const Event& e) {
    Bucket& bucket = ring_[b & (kBuckets - 1)];
    ++in_ring_;
    if (bucket.tail != kNone && chunks_[bucket.tail].n < kChunk) {
      Chunk& ch = chunks_[bucket.tail];
      ch.ev[ch.n++] = e;
      return;
    }
    uint32_t c;
    if (free_ != kNone) {
      c = free_;
      free_ = chunks_[c].next;
    } else {
      c = static_cast<uint32_t>(chunks_.size());
      chunks_.emplace_back();
    }
    Chunk& ch = chunks_[c];
    ch.ev[0] = e;
    ch.n = 1;
    ch.next = kNone;
    if (bucket.tail == kNone) {
      bucket.head = c;
      occupied_[(b & (kBuckets - 1)) / 64] |= uint64_t{1} << (b % 64);
    } else {
      chunks_[bucket.tail].next = c;
    }
    bucket.tail = c;
  }

  std::vector<Bucket> ring_;  // bucket b at ring_[b % kBuckets]
  std::vector<Chunk> chunks_;
  uint32_t free_ = kNone;                  // recycled chunks, linked by next
  uint64_t occupied_[kBuckets / 64] = {};  // ring buckets holding events
  std::vector<Event> sorted_;              // the current bucket, in order, up to end_
  size_t pos_ = 0, end_ = 0;               // next to pop from sorted_, and its end
  EventHeap near_;                         // pushed into the current bucket
  EventHeap far_;                          // beyond the ring's horizon
  uint64_t cur_ = 0;                       // the current bucket (t >> kShift)
  size_t in_ring_ = 0;
  size_t size_ = 0;
  uint64_t next_seq_ = 0;
};

}  // namespace ofan::sim
