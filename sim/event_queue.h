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
//
// Order without a sequence number per event: a bucket's chunks hold its
// events in push order (an event goes to the far heap only while its bucket
// is beyond the horizon, and the horizon's advance moves it into the ring
// before anything can be pushed there directly), and the sort is stable; an
// event in `near_` was pushed after the bucket was read, so it follows every
// event of equal time in `sorted_`. Only the heaps keep a sequence number.
// At k=64 some 10 M events are pending (640 MB): chunk lines are written
// with non-temporal stores once the queue is that large, so that they do not
// evict the ports and policies from the last-level cache (bench/RESULTS.md).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/huge_alloc.h"
#include "dataplane/lb/types.h"
#include "sim/packet.h"

namespace ofan::sim {

using lb::TimePs;

enum class EventType : uint8_t {
  kArrive,    // a packet's last bit reaches node/port
  kHostWake,  // a host's NIC may send (link free or pacing timer)
  kRto,       // a flow's retransmission timer (node: the flow)
  // --pfc (sim.h): node is a port's index (kPortTx, kPortCheck) or a switch
  // (kPfcRefresh); each is ignored unless its time is the one still pending.
  kPortTx,      // the port's next transmission may start
  kPortCheck,   // the port's PFC watchdog has something to decide
  kPfcRefresh,  // the switch's XOFF refreshes are due
  // --reorder: the host-facing port of host `node` has a held frame whose
  // wait ends (ignored unless its time is the one still pending).
  kReorderExpire,
};

// 64 bytes, one cache line in the queue's chunks: no sequence number (see
// above) and no field outside the packet that only one type uses.
struct Event {
  TimePs t;
  uint32_t node;  // kArrive, kHostWake: the node; kRto: the flow
  uint16_t port;
  EventType type;
  // kArrive: the packet itself (packet.h). kHostWake: no packet; its wake
  // generation (stale wakes are ignored) rides in pk.flow: gen().
  Packet pk;

  uint32_t gen() const { return pk.flow; }
  void set_gen(uint32_t g) { pk.flow = g; }
};
static_assert(sizeof(Event) == 64, "an event is one cache line");

// A 4-ary min-heap of events on (t, seq); seq, the push order, is the
// caller's and is kept beside the event.
class EventHeap {
 public:
  void Push(const Event& e, uint64_t seq) {
    heap_.push_back({e, seq});
    SiftUp(heap_.size() - 1);
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front().e; }
  Event Pop() {
    Event e = heap_.front().e;
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) SiftDown(0);
    return e;
  }

 private:
  struct Entry {
    Event e;
    uint64_t seq;
  };
  static bool Before(const Entry& a, const Entry& b) {
    return a.e.t < b.e.t || (a.e.t == b.e.t && a.seq < b.seq);
  }
  void SiftUp(size_t i) {
    Entry e = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!Before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  void SiftDown(size_t i) {
    const size_t n = heap_.size();
    Entry e = heap_[i];
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t last = first + 4 < n ? first + 4 : n;
      for (size_t c = first + 1; c < last; ++c) {
        if (Before(heap_[c], heap_[best])) best = c;
      }
      if (!Before(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }
  std::vector<Entry> heap_;
};

class EventQueue {
 public:
  static constexpr uint32_t kShift = 8;           // 256 ps per bucket
  static constexpr uint32_t kBuckets = 1u << 14;  // horizon: 4.2 us

  EventQueue() : ring_(kBuckets) {}

  // An event given by its fields, written straight into its chunk: built
  // first on the stack in pieces, it was read back whole before those
  // stores had landed (a store-forwarding stall on every push).
  void Push(TimePs t, uint32_t node, uint16_t port, EventType type, const Packet& pk) {
    const uint64_t b = t >> kShift;
    if (b > cur_ && b < cur_ + kBuckets) {
      ++next_seq_;
      ++size_;
      Write(Slot(b), t, node, port, type, pk);
      return;
    }
    Event e;
    e.t = t;
    e.node = node;
    e.port = port;
    e.type = type;
    e.pk = pk;
    Push(e);
  }

  void Push(const Event& e) {
    const uint64_t seq = next_seq_++;
    ++size_;
    const uint64_t b = e.t >> kShift;
    if (b <= cur_) {
      near_.Push(e, seq);  // the bucket being read (never earlier: see expects)
    } else if (b < cur_ + kBuckets) {
      Append(b, e);
    } else {
      far_.Push(e, seq);
    }
  }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  uint64_t pushed() const { return next_seq_; }

  // The event d pops ahead, if it is in the sorted bucket being read (a
  // hint for prefetching: near_ may put others before it); else null.
  const Event* Ahead(size_t d) const { return pos_ + d < end_ ? &sorted_[pos_ + d] : nullptr; }

  Event Pop() {
    if (pos_ == end_ && near_.empty()) Advance();
    --size_;
    // At equal times the bucket's events go first (pushed before near_'s).
    if (pos_ < end_ && (near_.empty() || sorted_[pos_].t <= near_.top().t)) {
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
    // Far events that the horizon now reaches join the ring, in (t, seq)
    // order, ahead of anything pushed there later; the current bucket too
    // (it is read below; it holds nothing else: see the order above).
    while (!far_.empty() && (far_.top().t >> kShift) < cur_ + kBuckets) {
      const Event e = far_.Pop();
      Append(e.t >> kShift, e);
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
      for (uint32_t c = bucket.head; c != kNone; c = chunk(c).next) {
        const Chunk& ch = chunk(c);
        for (uint32_t i = 0; i < ch.n; ++i) ++count[(ch.ev[i].t & (kSpan - 1)) + 1];
        n += ch.n;
      }
      if (sorted_.size() < n) sorted_.resize(n);
      end_ = n;
      if (n <= kInsertionMax) {
        size_t at = 0;
        for (uint32_t c = bucket.head; c != kNone; c = chunk(c).next) {
          const Chunk& ch = chunk(c);
          for (uint32_t i = 0; i < ch.n; ++i) {
            size_t j = at++;
            for (; j > 0 && sorted_[j - 1].t > ch.ev[i].t; --j) sorted_[j] = sorted_[j - 1];
            sorted_[j] = ch.ev[i];
          }
        }
      } else {
        for (uint32_t v = 1; v <= kSpan; ++v) count[v] += count[v - 1];
        for (uint32_t c = bucket.head; c != kNone; c = chunk(c).next) {
          const Chunk& ch = chunk(c);
          for (uint32_t i = 0; i < ch.n; ++i) sorted_[count[ch.ev[i].t & (kSpan - 1)]++] = ch.ev[i];
        }
      }
      for (uint32_t c = bucket.head; c != kNone;) {
        const uint32_t next = chunk(c).next;
        chunk(c).next = free_;
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
  struct alignas(64) Chunk {
    Event ev[kChunk];  // each on its own cache line
    uint32_t n = 0;
    uint32_t next = kNone;
  };
  static_assert(sizeof(Chunk) == 4096);
  // Chunks come in slabs of one huge page each (common/huge_alloc.h) that
  // never move: a growing vector of chunks copied every pending event at
  // each doubling (some 1 GB at k=64).
  static constexpr uint32_t kSlabShift = 9;
  static constexpr uint32_t kSlabChunks = 1u << kSlabShift;
  static_assert(sizeof(Chunk) * kSlabChunks == kHugePage);
  struct FreeSlab {
    void operator()(Chunk* p) const { std::free(p); }
  };
  Chunk& chunk(uint32_t c) { return slabs_[c >> kSlabShift][c & (kSlabChunks - 1)]; }
  const Chunk& chunk(uint32_t c) const { return slabs_[c >> kSlabShift][c & (kSlabChunks - 1)]; }
  uint32_t NewChunk() {
    if (made_ == slabs_.size() * kSlabChunks) {
      auto* slab = static_cast<Chunk*>(HugeAllocate(kHugePage));
      std::uninitialized_default_construct_n(slab, kSlabChunks);
      slabs_.emplace_back(slab);
    }
    return made_++;
  }
  struct Bucket {
    uint32_t head = kNone, tail = kNone;
  };
  // Pending events beyond this many (64 MB) are written around the caches.
  static constexpr size_t kStreamFrom = size_t{1} << 20;
  void Write(Event& to, TimePs t, uint32_t node, uint16_t port, EventType type, const Packet& pk) {
    static_assert(offsetof(Event, node) == 8 && offsetof(Event, port) == 12 &&
                  offsetof(Event, type) == 14 && offsetof(Event, pk) == 16);
    uint64_t w[8];
    w[0] = t;
    w[1] = node | uint64_t{port} << 32 | uint64_t{static_cast<uint8_t>(type)} << 48;
    std::memcpy(&w[2], &pk, sizeof(Packet));
    void* dst = &to;
#if defined(__SSE2__)
    if (size_ > kStreamFrom) {
      // __m128i may alias anything (unlike a long long*).
      auto* line = static_cast<__m128i*>(dst);
      for (size_t i = 0; i < 4; ++i) {
        _mm_stream_si128(line + i, _mm_set_epi64x(static_cast<long long>(w[2 * i + 1]),
                                                  static_cast<long long>(w[2 * i])));
      }
      return;
    }
#endif
    std::memcpy(dst, w, sizeof(w));
  }
  void Append(uint64_t b, const Event& e) { Write(Slot(b), e.t, e.node, e.port, e.type, e.pk); }
  // The next free slot of bucket b (within the horizon), counted in.
  Event& Slot(uint64_t b) {
    Bucket& bucket = ring_[b & (kBuckets - 1)];
    ++in_ring_;
    if (bucket.tail != kNone && chunk(bucket.tail).n < kChunk) {
      Chunk& ch = chunk(bucket.tail);
      return ch.ev[ch.n++];
    }
    uint32_t c;
    if (free_ != kNone) {
      c = free_;
      free_ = chunk(c).next;
    } else {
      c = NewChunk();
    }
    Chunk& ch = chunk(c);
    ch.n = 1;
    ch.next = kNone;
    if (bucket.tail == kNone) {
      bucket.head = c;
      occupied_[(b & (kBuckets - 1)) / 64] |= uint64_t{1} << (b % 64);
    } else {
      chunk(bucket.tail).next = c;
    }
    bucket.tail = c;
    return ch.ev[0];
  }

  std::vector<Bucket> ring_;  // bucket b at ring_[b % kBuckets]
  std::vector<std::unique_ptr<Chunk[], FreeSlab>> slabs_;
  uint32_t made_ = 0;                      // chunks handed out so far
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
