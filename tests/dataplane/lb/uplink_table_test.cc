// UplinkTable: each key's list is exactly its destination's valid ports, in the
// key's Ofan order pi, and RankOf maps raw pointer positions onto that list.
#include "dataplane/lb/uplink_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "common/rng.h"
#include "tests/dataplane/lb/lb_test_util.h"

namespace ofan::lb {
namespace {

using ::ofan::lb::testing::AllPorts;
using ::ofan::lb::testing::MakeTree;
using ::ofan::lb::testing::RandomFailures;
using ::ofan::lb::testing::RandomMasks;

// The list the table should hold: pi(0), pi(1), ... with invalid ports left
// out.
std::vector<uint8_t> ExpectedList(const OfanOrder& o, uint32_t key, PortMask m) {
  std::vector<uint8_t> v;
  for (uint32_t i = 0; i < o.w(); ++i) {
    const uint32_t p = o.Port(i, key);
    if (m & (PortMask{1} << p)) v.push_back(static_cast<uint8_t>(p));
  }
  return v;
}

void CheckTable(const UplinkTable& t, const std::vector<PortMask>& masks) {
  const uint32_t w = t.w(), nd = t.num_dests();
  ASSERT_EQ(nd, masks.size());
  ASSERT_EQ(t.num_keys(), nd * kNumSizeClasses);
  ASSERT_EQ(t.order().w(), w);
  const OfanOrder reference(w);  // same constant P as the table's
  for (uint32_t d = 0; d < nd; ++d) {
    EXPECT_EQ(t.mask(d), masks[d]);
    // Key layout: d + Nd * class (App. F.2, Eq. 16).
    EXPECT_EQ(t.key(d, SizeClass::kData), d);
    EXPECT_EQ(t.key(d, SizeClass::kAck), d + nd);
    EXPECT_EQ(UplinkTable::KeyOf(d, nd, SizeClass::kAck), d + nd);
    EXPECT_EQ(UplinkTable::KeyOf(d, nd, SizeClass::kAck), OfanPointerId(d, nd, 1));
  }
  for (uint32_t key = 0; key < t.num_keys(); ++key) {
    const PortMask m = masks[key % nd];
    const UplinkList l = t.list(key);
    ASSERT_EQ(l.n, static_cast<uint32_t>(PopCount(m))) << "key " << key;
    // As a set: exactly the valid ports.
    std::set<uint8_t> ports(l.ports, l.ports + l.n);
    EXPECT_EQ(ports.size(), l.n) << "duplicate port, key " << key;
    PortMask got = 0;
    for (uint8_t p : ports) {
      ASSERT_LT(p, w);
      got |= PortMask{1} << p;
    }
    EXPECT_EQ(got, m) << "key " << key;
    // In order: the key's pi with invalid ports skipped.
    EXPECT_EQ(std::vector<uint8_t>(l.ports, l.ports + l.n), ExpectedList(reference, key, m))
        << "key " << key;
    // RankOf: the list index of the first valid pi position at or after pos.
    for (uint32_t pos = 0; pos < 2 * w; ++pos) {
      const uint32_t r = t.RankOf(key, pos);
      if (m == 0) {
        EXPECT_EQ(r, 0u);
        continue;
      }
      uint32_t first = pos % w;
      while (!(m & (PortMask{1} << reference.Port(first, key)))) first = (first + 1) % w;
      uint32_t rank = 0;
      for (uint32_t i = 0; i < first; ++i)
        rank += static_cast<uint32_t>((m >> reference.Port(i, key)) & 1);
      ASSERT_EQ(r, rank) << "key " << key << " pos " << pos;
      ASSERT_LT(r, l.n);
      EXPECT_EQ(l.ports[r], reference.Port(first, key));
    }
  }
}

TEST(UplinkTableTest, RandomMasksEveryWidth) {
  Rng rng(7);
  for (uint32_t w = 1; w <= 64; ++w) {
    const uint32_t nd = 1 + rng.Below(40);
    const std::vector<PortMask> masks = RandomMasks(w, nd, rng);
    SCOPED_TRACE(::testing::Message() << "w=" << w << " nd=" << nd);
    CheckTable(UplinkTable(w, masks), masks);
    if (HasFatalFailure()) return;
  }
}

TEST(UplinkTableTest, FullMasksRankIsIdentity) {
  // With every port valid, the list is pi itself and RankOf(key, pos) = pos.
  for (uint32_t w : {2u, 4u, 6u, 32u, 64u}) {
    const uint32_t nd = 9;
    const UplinkTable t(w, std::vector<PortMask>(nd, AllPorts(w)));
    for (uint32_t key = 0; key < t.num_keys(); ++key) {
      const UplinkList l = t.list(key);
      ASSERT_EQ(l.n, w);
      for (uint32_t i = 0; i < w; ++i) {
        EXPECT_EQ(l.ports[i], t.order().Port(i, key));
        EXPECT_EQ(t.RankOf(key, i), i);
      }
    }
  }
}

TEST(UplinkTableTest, DataAndAckOrdersDiffer) {
  // Different keys follow different orders (App. F.2), so data and ACK
  // pointers of one destination do not walk in lockstep everywhere.
  const uint32_t w = 8, nd = 32;
  const UplinkTable t(w, std::vector<PortMask>(nd, AllPorts(w)));
  int differ = 0;
  for (uint32_t d = 0; d < nd; ++d) {
    const UplinkList a = t.list(t.key(d, SizeClass::kData));
    const UplinkList b = t.list(t.key(d, SizeClass::kAck));
    differ += std::vector<uint8_t>(a.ports, a.ports + a.n) !=
              std::vector<uint8_t>(b.ports, b.ports + b.n);
  }
  EXPECT_GT(differ, 0);
}

TEST(UplinkTableTest, ForSwitchUsesTheFatTreeMasks) {
  for (int levels : {2, 3}) {
    for (int k : {4, 8}) {
      const FatTree tree = MakeTree(k, levels);
      const LinkSet failed = RandomFailures(tree, 0.25, static_cast<uint64_t>(k) * 10 + levels);
      for (int s = 0; s < tree.num_switches(); ++s) {
        const SwitchId sid(static_cast<uint32_t>(s));
        if (tree.num_uplinks(sid) == 0) continue;
        const UplinkTable t = UplinkTable::ForSwitch(tree, sid, failed);
        EXPECT_EQ(t.w(), static_cast<uint32_t>(tree.num_uplinks(sid)));
        EXPECT_EQ(t.num_dests(), static_cast<uint32_t>(tree.num_dests(sid)));
        SCOPED_TRACE(::testing::Message() << "k=" << k << " levels=" << levels << " s=" << s);
        CheckTable(t, tree.valid_uplink_table(sid, failed));
        if (HasFatalFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace ofan::lb
