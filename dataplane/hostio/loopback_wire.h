// LoopbackWire: the shared state of packet_io.h's in-process pair, open to
// tests that inject or inspect frames. A frame queues in its direction's
// deque; a reordered one is held back until up to reorder_depth later frames
// have passed it (or nothing else is sent).
#pragma once

#include <algorithm>
#include <deque>
#include <span>
#include <utility>
#include <vector>

#include "dataplane/hostio/packet_io.h"

namespace ofan::hostio {

class LoopbackWire {
 public:
  struct Dir {
    Impairment imp;
    Rng rng;
    uint64_t index = 0;
    std::deque<std::vector<uint8_t>> q;  // deliverable
    // Held frames and how many later frames still overtake each.
    std::deque<std::pair<std::vector<uint8_t>, uint32_t>> held;
  };
  Dir dir[2];

  void Push(int d, std::span<const uint8_t> f) {
    Dir& x = dir[d];
    const uint64_t i = x.index++;
    std::vector<uint8_t> v(f.begin(), f.end());
    if (x.imp.mutate) {
      x.imp.mutate(i, v);
      f = v;
    }
    bool drop = x.imp.drop > 0 && x.rng.Uniform() < x.imp.drop;
    if (x.imp.drop_if && x.imp.drop_if(i, f)) drop = true;
    const bool dup = x.imp.duplicate > 0 && x.rng.Uniform() < x.imp.duplicate;
    const bool reorder = x.imp.reorder > 0 && x.rng.Uniform() < x.imp.reorder;
    if (drop) return;
    // Released held frames go out after this one (it overtook them).
    auto release = [&x] {
      for (auto it = x.held.begin(); it != x.held.end();) {
        if (it->second == 0) {
          x.q.push_back(std::move(it->first));
          it = x.held.erase(it);
        } else {
          --it->second;
          ++it;
        }
      }
    };
    if (reorder) {
      x.held.emplace_back(v, 1 + x.rng.Below(std::max<uint32_t>(x.imp.reorder_depth, 1)));
    } else {
      x.q.push_back(v);
      release();
    }
    if (dup) x.q.push_back(std::move(v));
  }
  // Frames still held when nothing else is sent are let go (a wire does not
  // keep a frame forever).
  void Flush(int d) {
    Dir& x = dir[d];
    for (auto& h : x.held) x.q.push_back(std::move(h.first));
    x.held.clear();
  }
};

}  // namespace ofan::hostio
