#include "dataplane/lb/ofan_order.h"

#include <algorithm>
#include <numeric>

#include "common/rng.h"

namespace ofan::lb {
namespace {

// True when the cyclic sequence a equals some rotation of b.
bool IsRotation(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  const size_t n = a.size();
  for (size_t r = 0; r < n; ++r) {
    bool same = true;
    for (size_t i = 0; i < n && same; ++i) same = a[i] == b[(i + r) % n];
    if (same) return true;
  }
  return false;
}

bool ShiftsAreDistinctOrders(const std::vector<uint8_t>& p) {
  const size_t w = p.size();
  std::vector<uint8_t> shifted(w);
  for (size_t s = 1; s < w; ++s) {
    for (size_t i = 0; i < w; ++i) shifted[i] = static_cast<uint8_t>((p[i] + s) % w);
    if (IsRotation(shifted, p)) return false;
  }
  return true;
}

}  // namespace

OfanOrder::OfanOrder(uint32_t w) : w_(w), b_(CeilLog2(w)), p_(w) {
  std::iota(p_.begin(), p_.end(), 0);
  // Fixed seed: P is a constant of the design, the same in every switch, in
  // the simulator and in the P4 program.
  Rng rng(0x0FA40FA4ULL + w);
  std::vector<uint8_t> first;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    for (uint32_t i = w - 1; i > 0; --i) std::swap(p_[i], p_[rng.Below(i + 1)]);
    if (attempt == 0) first = p_;
    if (ShiftsAreDistinctOrders(p_)) return;
  }
  p_ = first;  // w <= 2 has no such permutation: any order will do.
}

}  // namespace ofan::lb
