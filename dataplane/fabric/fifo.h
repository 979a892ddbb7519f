// Fifo: a queue that grows by doubling and never shrinks, so that once it
// has held a port's deepest backlog it allocates no more (the egress
// models' per-frame queues: egress_timeline.h, emu_port.h, the engine's
// links).
#pragma once

#include <cstddef>
#include <cstdint>
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

}  // namespace ofan::fabric
