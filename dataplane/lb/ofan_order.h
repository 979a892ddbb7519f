// Ofan's per-pointer port orders (paper App. F.2, "Low-cost per-destination
// port orders").
//
// Each pointer walks 0..w-1 in plain round-robin; the value i is mapped to an
// uplink by
//     pi(i) = (xor_w(P[i], id1) + id2) mod w
// where P is one global permutation of {0..w-1} shared by every switch,
// id = d + Nd * t identifies the pointer (d the destination edge switch or pod,
// Nd the number of such destinations, t the size class), b = ceil(log2 w),
// id1 = id mod 2^b, id2 = id >> b, and xor_w(v, x) = v ^ x if that is < w,
// else v. Both steps are bijections on {0..w-1}, so every pointer visits every
// uplink exactly once per w packets from any start (proof in App. F.2), while
// pointers of different destinations follow different orders, which avoids
// synchronised choices across pointers (§4, "Random port order").
#pragma once

#include <cstdint>
#include <vector>

namespace ofan::lb {

constexpr int CeilLog2(uint32_t w) {
  int b = 0;
  while ((1u << b) < w) ++b;
  return b;
}

constexpr uint32_t XorW(uint32_t v, uint32_t x, uint32_t w) {
  const uint32_t y = v ^ x;
  return y < w ? y : v;
}

// The pointer identifier of App. F.2, Eq. (16).
constexpr uint32_t OfanPointerId(uint32_t dest, uint32_t num_dests, uint32_t size_class) {
  return dest + num_dests * size_class;
}

class OfanOrder {
 public:
  // w in [1, 64]. P is drawn once, deterministically (fixed seed), and kept
  // only if its w value-shifts are w distinct cyclic orders (App. F.2: "P is
  // drawn once offline and chosen so that its w cyclic shifts define w
  // distinct orders"); every switch of a fabric therefore has the same P.
  explicit OfanOrder(uint32_t w);

  uint32_t w() const { return w_; }
  const std::vector<uint8_t>& base_permutation() const { return p_; }

  // The two parts of pointer `id`, Eq. (17); id2 is kept below w, which
  // changes nothing mod w and lets a switch add it with one compare-and-
  // subtract (tofino_p4/pofan.p4 does).
  uint32_t Id1(uint32_t id) const { return id & ((1u << b_) - 1); }
  uint32_t Id2(uint32_t id) const { return (id >> b_) % w_; }

  // pi(i) for pointer `id`, Eq. (18).
  uint32_t Port(uint32_t i, uint32_t id) const {
    uint32_t v = XorW(p_[i], Id1(id), w_) + Id2(id);
    return v >= w_ ? v - w_ : v;
  }

 private:
  uint32_t w_;
  int b_;
  std::vector<uint8_t> p_;
};

}  // namespace ofan::lb
