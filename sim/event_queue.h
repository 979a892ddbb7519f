// EventQueue: a 4-ary min-heap of timed events, ordered by (time, insertion
// sequence) so that a run is a pure function of its seed.
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/lb/types.h"

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
  uint32_t pkt;
  uint32_t node;
  uint16_t port;
  EventType type;
  uint8_t pad;
  uint32_t gen;  // host wake generation: stale wakes are ignored
};

class EventQueue {
 public:
  void Push(Event e) {
    e.seq = next_seq_++;
    heap_.push_back(e);
    SiftUp(heap_.size() - 1);
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  uint64_t pushed() const { return next_seq_; }
  const Event& top() const { return heap_.front(); }
  Event Pop() {
    Event e = heap_.front();
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) SiftDown(0);
    return e;
  }
  void Reserve(size_t n) { heap_.reserve(n); }

 private:
  static bool Less(const Event& a, const Event& b) {
    return a.t < b.t || (a.t == b.t && a.seq < b.seq);
  }
  void SiftUp(size_t i) {
    Event e = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!Less(e, heap_[parent])) break;
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
        if (Less(heap_[c], heap_[best])) best = c;
      }
      if (!Less(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }
  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace ofan::sim
