// Ofan's per-pointer port orders (App. F.2): pi must be a bijection for every
// width and pointer id, the base permutation a deterministic constant, and
// the XOR + addition construction must yield more orders than shifts alone.
#include "dataplane/lb/ofan_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

namespace ofan::lb {
namespace {

// Ids the tables use (d + Nd * t for up to 4 * 64 destinations, 2 classes)
// plus a few far larger ones.
std::vector<uint32_t> TestIds() {
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id <= 4 * 64 * 2; ++id) ids.push_back(id);
  for (uint32_t id :
       {1000u, 4095u, 4096u, 65535u, 65536u, 1u << 20, 0x7FFFFFFFu, 0xFFFFFFFEu, 0xFFFFFFFFu}) {
    ids.push_back(id);
  }
  return ids;
}

std::vector<uint32_t> Order(const OfanOrder& o, uint32_t id) {
  std::vector<uint32_t> v(o.w());
  for (uint32_t i = 0; i < o.w(); ++i) v[i] = o.Port(i, id);
  return v;
}

// A cyclic order, rotated to start at port 0 so that rotations compare equal.
std::vector<uint32_t> Canonical(std::vector<uint32_t> v) {
  std::rotate(v.begin(), std::find(v.begin(), v.end(), 0u), v.end());
  return v;
}

TEST(OfanOrderTest, CeilLog2) {
  EXPECT_EQ(CeilLog2(1), 0);
  EXPECT_EQ(CeilLog2(2), 1);
  EXPECT_EQ(CeilLog2(3), 2);
  EXPECT_EQ(CeilLog2(4), 2);
  EXPECT_EQ(CeilLog2(5), 3);
  EXPECT_EQ(CeilLog2(6), 3);
  EXPECT_EQ(CeilLog2(32), 5);
  EXPECT_EQ(CeilLog2(33), 6);
  EXPECT_EQ(CeilLog2(64), 6);
  for (uint32_t w = 1; w <= 64; ++w) {
    const int b = CeilLog2(w);
    EXPECT_GE(1u << b, w);
    if (b > 0) {
      EXPECT_LT(1u << (b - 1), w);
    }
  }
}

TEST(OfanOrderTest, XorWIsAnInRangeInvolution) {
  for (uint32_t w = 1; w <= 64; ++w) {
    const uint32_t span = 1u << CeilLog2(w);
    for (uint32_t x = 0; x < span; ++x) {
      std::vector<int> hit(w, 0);
      for (uint32_t v = 0; v < w; ++v) {
        const uint32_t y = XorW(v, x, w);
        ASSERT_LT(y, w) << "w=" << w << " x=" << x << " v=" << v;
        // XOR when it stays in range, identity otherwise.
        EXPECT_EQ(y, (v ^ x) < w ? (v ^ x) : v);
        // Self-inverse, hence a bijection on {0..w-1}.
        EXPECT_EQ(XorW(y, x, w), v);
        ++hit[y];
      }
      for (uint32_t y = 0; y < w; ++y) ASSERT_EQ(hit[y], 1) << "w=" << w << " x=" << x;
    }
    for (uint32_t v = 0; v < w; ++v) EXPECT_EQ(XorW(v, 0, w), v);
  }
}

TEST(OfanOrderTest, PointerIdLayout) {
  EXPECT_EQ(OfanPointerId(0, 10, 0), 0u);
  EXPECT_EQ(OfanPointerId(3, 10, 0), 3u);
  EXPECT_EQ(OfanPointerId(3, 10, 1), 13u);
  EXPECT_EQ(OfanPointerId(9, 10, 1), 19u);
}

TEST(OfanOrderTest, PiIsABijectionForEveryWidthAndId) {
  const std::vector<uint32_t> ids = TestIds();
  std::vector<int> hit;
  for (uint32_t w = 2; w <= 64; ++w) {
    const OfanOrder o(w);
    ASSERT_EQ(o.w(), w);
    for (uint32_t id : ids) {
      hit.assign(w, 0);
      for (uint32_t i = 0; i < w; ++i) {
        const uint32_t p = o.Port(i, id);
        ASSERT_LT(p, w) << "w=" << w << " id=" << id << " i=" << i;
        ++hit[p];
      }
      for (uint32_t p = 0; p < w; ++p) ASSERT_EQ(hit[p], 1) << "w=" << w << " id=" << id;
    }
  }
  const OfanOrder one(1);
  for (uint32_t id : ids) EXPECT_EQ(one.Port(0, id), 0u);
}

TEST(OfanOrderTest, PiMatchesEquation18) {
  // pi(i) = (xor_w(P[i], id mod 2^b) + floor(id / 2^b)) mod w.
  for (uint32_t w : {2u, 3u, 5u, 6u, 8u, 12u, 32u, 33u, 64u}) {
    const OfanOrder o(w);
    const uint32_t b = static_cast<uint32_t>(CeilLog2(w));
    for (uint32_t id : TestIds()) {
      const uint64_t id1 = id % (uint64_t{1} << b), id2 = id >> b;
      for (uint32_t i = 0; i < w; ++i) {
        const uint64_t want =
            (XorW(o.base_permutation()[i], static_cast<uint32_t>(id1), w) + id2) % w;
        ASSERT_EQ(o.Port(i, id), want) << "w=" << w << " id=" << id << " i=" << i;
      }
    }
  }
}

TEST(OfanOrderTest, BasePermutationIsADeterministicPermutation) {
  for (uint32_t w = 1; w <= 64; ++w) {
    const OfanOrder a(w), b(w);
    const std::vector<uint8_t>& p = a.base_permutation();
    ASSERT_EQ(p.size(), w);
    EXPECT_EQ(p, b.base_permutation()) << "w=" << w;
    std::vector<uint8_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    for (uint32_t i = 0; i < w; ++i) ASSERT_EQ(sorted[i], i) << "w=" << w;
    // Same P => same pi for every pointer.
    for (uint32_t id = 0; id < 300; id += 7) ASSERT_EQ(Order(a, id), Order(b, id));
  }
}

TEST(OfanOrderTest, BaseShiftsAreDistinctCyclicOrders) {
  // App. F.2: P is chosen so that its w value shifts are w distinct cyclic
  // orders. None exists for w <= 3 (every cyclic order of 3 is a shift of
  // another), so the property is checked from w = 4.
  for (uint32_t w = 4; w <= 64; ++w) {
    const OfanOrder o(w);
    std::set<std::vector<uint32_t>> orders;
    for (uint32_t s = 0; s < w; ++s) {
      std::vector<uint32_t> v(w);
      for (uint32_t i = 0; i < w; ++i) v[i] = (o.base_permutation()[i] + s) % w;
      orders.insert(Canonical(v));
    }
    EXPECT_EQ(orders.size(), w) << "w=" << w;
  }
}

TEST(OfanOrderTest, XorAndAdditionGiveMoreOrdersThanShifts) {
  const uint32_t w = 6;
  const OfanOrder o(w);
  const uint32_t span = 1u << CeilLog2(w);  // 8
  std::set<std::vector<uint32_t>> all, shifts_only;
  for (uint32_t id = 0; id <= 4 * 64 * 2; ++id) {
    all.insert(Canonical(Order(o, id)));
    // Ids with id1 = 0 only add a constant: at most w orders.
    if (id % span == 0) shifts_only.insert(Canonical(Order(o, id)));
  }
  EXPECT_GT(all.size(), w);
  EXPECT_LE(all.size(), span * w);  // at most 2^b * w (id1, id2 mod w) pairs
  EXPECT_LE(shifts_only.size(), w);
  ::testing::Test::RecordProperty("w6_distinct_cyclic_orders", static_cast<int>(all.size()));
}

TEST(OfanOrderTest, PiDependsOnIdModuloSpanTimesW) {
  // id2 enters mod w, so ids congruent mod 2^b * w share one order.
  for (uint32_t w : {3u, 6u, 8u, 24u, 64u}) {
    const OfanOrder o(w);
    const uint32_t period = (1u << CeilLog2(w)) * w;
    for (uint32_t id = 0; id < period; ++id) {
      EXPECT_EQ(Order(o, id), Order(o, id + period)) << "w=" << w << " id=" << id;
      EXPECT_EQ(Order(o, id), Order(o, id + 7 * period)) << "w=" << w << " id=" << id;
    }
  }
}

}  // namespace
}  // namespace ofan::lb
