// Switch counters: the list, its enum and names are the control protocol's
// (common/protocol/counters.h: OFAN_DP_COUNTERS, where a counter is added).
// Each lcore owns a plain array (no read-modify-write on the hot path); the
// control side sums them (docs/design.md, rule 5).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "common/protocol/counters.h"

namespace ofan::dp {

using control::Counter;
using control::CounterName;
using control::IsDrop;
using control::kCounterNames;
using control::kFirstDrop;
using control::kNumCounters;

// A worker's counters: written by one lcore with plain (relaxed) stores,
// read by the control thread; no read-modify-write on the hot path.
struct LcoreCounters {
  std::array<std::atomic<uint64_t>, kNumCounters> v{};
  void Add(Counter c, uint64_t n = 1) {
    auto& x = v[static_cast<size_t>(c)];
    x.store(x.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t Get(Counter c) const {
    return v[static_cast<size_t>(c)].load(std::memory_order_relaxed);
  }
};

struct Counters {
  std::array<uint64_t, kNumCounters> v{};
  void Add(Counter c, uint64_t n = 1) { v[static_cast<size_t>(c)] += n; }
  uint64_t Get(Counter c) const { return v[static_cast<size_t>(c)]; }
  uint64_t Drops() const {
    uint64_t d = 0;
    for (size_t i = static_cast<size_t>(kFirstDrop); i < kNumCounters; ++i) d += v[i];
    return d;
  }
  Counters& operator+=(const LcoreCounters& o) {
    for (size_t i = 0; i < kNumCounters; ++i) v[i] += o.v[i].load(std::memory_order_relaxed);
    return *this;
  }
  Counters& operator+=(const Counters& o) {
    for (size_t i = 0; i < kNumCounters; ++i) v[i] += o.v[i];
    return *this;
  }
};

}  // namespace ofan::dp
