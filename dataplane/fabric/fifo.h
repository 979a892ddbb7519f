// Fifo: a queue that grows by doubling and never shrinks, so that once it
// has held a port's deepest backlog it allocates no more (the egress
// models' per-frame queues: egress_timeline.h, emu_port.h, the engine's
// links).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace ofan::fabric {

template <class T>
class Fifo {
 public:
  bool empty() const { return head_ == tail_; }
  size_t size() const { return static_cast<size_t>(tail_ - head_); }
  const T& front() const { return buf_[head_ & mask_]; }
  T& front() { return buf_[head_ & mask_]; }
  // The i-th from the front, i < size().
  const T& operator[](size_t i) const { return buf_[(head_ + i) & mask_]; }
  T& operator[](size_t i) { return buf_[(head_ + i) & mask_]; }
  void pop() { ++head_; }
  void push(T v) {
    if (tail_ - head_ == buf_.size()) Grow();
    buf_[tail_++ & mask_] = std::move(v);
  }
  // Room for n without growing (set up before the hot path runs).
  void reserve(size_t n) {
    while (buf_.size() < n) Grow();
  }

 private:
  void Grow() {
    std::vector<T> nb(buf_.empty() ? 8 : buf_.size() * 2);
    for (uint64_t i = head_; i < tail_; ++i) nb[i - head_] = std::move(buf_[i & mask_]);
    tail_ -= head_;
    head_ = 0;
    buf_ = std::move(nb);
    mask_ = buf_.size() - 1;
  }
  std::vector<T> buf_;
  uint64_t head_ = 0, tail_ = 0, mask_ = 0;
};

// SmallFifo: a Fifo whose first N entries (its oldest) live inside it, so
// that a shallow queue is read from the cache lines of its owner. At k=64 in
// ofan-sim each port's Fifo was its own allocation and reading its front was
// a cache miss per hop: 25 % of the run (bench/RESULTS.md "Simulator
// speed"). Deeper entries spill to a Fifo allocated on first need; a pop
// refills the inline ring from it, so inline always holds the oldest.
template <class T, size_t N>
class SmallFifo {
  static_assert(N > 0 && (N & (N - 1)) == 0, "N must be a power of two");

 public:
  bool empty() const { return len_ == 0; }  // inline empty: nothing spilled
  size_t size() const { return len_ + spilled_; }
  const T& front() const { return ring_[head_]; }
  T& front() { return ring_[head_]; }
  void pop() {
    head_ = static_cast<uint8_t>((head_ + 1) & (N - 1));
    --len_;
    if (spilled_) {  // counted here: the spill is not touched unless used
      ring_[(head_ + len_) & (N - 1)] = std::move(spill_->front());
      spill_->pop();
      --spilled_;
      ++len_;
    }
  }
  void push(T v) {
    if (len_ < N && spilled_ == 0) {
      ring_[(head_ + len_) & (N - 1)] = std::move(v);
      ++len_;
      return;
    }
    if (!spill_) spill_ = std::make_unique<Fifo<T>>();
    spill_->push(std::move(v));
    ++spilled_;
  }

 private:
  T ring_[N] = {};
  std::unique_ptr<Fifo<T>> spill_;
  uint32_t spilled_ = 0;
  uint8_t head_ = 0, len_ = 0;
};

}  // namespace ofan::fabric
