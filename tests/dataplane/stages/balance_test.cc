// Stage 3 (balance.h): every lane gives the ports its policy's own Pick /
// PickBurst gives, for the same keys in the same order, whether it decides
// per packet (immediate lanes) or per vector (deferred lanes). Two policy
// instances built alike are compared: one through the lane, as the vector
// pass drives it, one directly.
#include "dataplane/stages/balance.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/rng.h"
#include "tests/dataplane/lb/lb_test_util.h"

namespace ofan::dp {
namespace {

using lb::PacketKey;

struct Fixture {
  lb::UplinkTable table;
  std::vector<PacketKey> keys;  // a stream of packets, cut into vectors below
};

// A k = 8 edge switch with failures (some keys lose uplinks, some all), and a
// stream of keys over every destination and class.
Fixture Make(uint64_t seed) {
  const lb::FatTree t = lb::testing::MakeTree(8, 3);
  Fixture f{lb::UplinkTable::ForSwitch(t, t.edge(1, 2), lb::testing::RandomFailures(t, 0.3, seed)),
            {}};
  Rng rng(seed);
  const uint32_t nd = f.table.num_dests();
  for (int i = 0; i < 5000; ++i) {
    PacketKey k;
    k.dest = static_cast<uint16_t>(rng.Below(nd));
    k.cls = rng.Below(4) == 0 ? lb::SizeClass::kAck : lb::SizeClass::kData;
    k.key = static_cast<uint16_t>(f.table.key(k.dest, k.cls));
    k.flow_hash = static_cast<uint32_t>(rng.Next());
    k.dst_qp = static_cast<uint32_t>(rng.Below(1u << 24));
    k.pipe = static_cast<uint8_t>(rng.Below(4));
    k.frame_bytes = 1024;
    f.keys.push_back(k);
  }
  return f;
}

// Vector sizes as the dataplane makes them: full, partial, single packets.
std::vector<uint32_t> Cuts(size_t total) {
  std::vector<uint32_t> cuts;
  const uint32_t sizes[] = {kMaxVector, 1, 37, 128, 2, kMaxVector, 255};
  for (size_t done = 0, i = 0; done < total; ++i) {
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(sizes[i % 7], total - done));
    cuts.push_back(n);
    done += n;
  }
  return cuts;
}

// Drives a lane as RunVector does: per packet Pick (immediate) or Defer, then
// per vector Resolve and Take (deferred).
template <class Lane>
std::vector<uint8_t> ThroughLane(Lane& lane, const std::vector<PacketKey>& keys) {
  std::vector<uint8_t> out;
  size_t at = 0;
  for (uint32_t n : Cuts(keys.size())) {
    if constexpr (Lane::kDeferred) {
      for (uint32_t j = 0; j < n; ++j) lane.Defer(j, keys[at + j]);
      lane.Resolve(n);
      for (uint32_t j = 0; j < n; ++j) out.push_back(lane.Take(j));
    } else {
      for (uint32_t j = 0; j < n; ++j) out.push_back(lane.Pick(keys[at + j]));
    }
    at += n;
  }
  return out;
}

lb::PolicyConfig Config(lb::PolicyKind kind) {
  lb::PolicyConfig c;
  c.kind = kind;
  c.seed = 11;
  c.pipe_size = 2;
  return c;
}

template <class P>
void ExpectPolicyLaneMatches(lb::PolicyKind kind) {
  for (uint64_t seed : {1, 2, 3}) {
    Fixture f = Make(seed);
    const lb::SwitchLbSetup setup{&f.table, 8, 77};
    P via_lane(Config(kind), setup), direct(Config(kind), setup);
    lb::LbView view{&f.table, nullptr, 0};
    PolicyLane<P> lane{via_lane, view};
    const std::vector<uint8_t> got = ThroughLane(lane, f.keys);
    for (size_t i = 0; i < f.keys.size(); ++i) {
      ASSERT_EQ(got[i], direct.Pick(f.keys[i], view)) << "seed " << seed << " packet " << i;
    }
  }
}

TEST(Balance, PofanLaneMatchesPofan) { ExpectPolicyLaneMatches<lb::Pofan>(lb::PolicyKind::kPofan); }
TEST(Balance, EcmpLaneMatchesEcmp) { ExpectPolicyLaneMatches<lb::Ecmp>(lb::PolicyKind::kEcmp); }

TEST(Balance, AtomicLaneMatchesOfanAtomic) {
  for (uint64_t seed : {1, 2, 3}) {
    Fixture f = Make(seed);
    lb::SharedOfanTable t1(f.table, seed), t2(f.table, seed);
    lb::OfanAtomic via_lane(&t1), direct(&t2);
    lb::LbView view{&f.table, nullptr, 0};
    AtomicLane lane{via_lane, view};
    const std::vector<uint8_t> got = ThroughLane(lane, f.keys);
    for (size_t i = 0; i < f.keys.size(); ++i) ASSERT_EQ(got[i], direct.Pick(f.keys[i], view)) << i;
  }
}

// Ofan-combined through the lane equals OfanCombined::PickBurst over the same
// vectors, and, since combining only regroups the fetch-adds, Ofan-atomic
// over the same packets.
TEST(Balance, CombinedLaneMatchesPickBurstAndAtomic) {
  for (uint64_t seed : {1, 2, 3}) {
    Fixture f = Make(seed);
    lb::SharedOfanTable t1(f.table, seed), t2(f.table, seed), t3(f.table, seed);
    auto via_lane = std::make_unique<lb::OfanCombined>(&t1);
    auto direct = std::make_unique<lb::OfanCombined>(&t2);
    lb::OfanAtomic atomic(&t3);
    auto lane = std::make_unique<CombinedLane>(*via_lane);
    const std::vector<uint8_t> got = ThroughLane(*lane, f.keys);
    std::vector<uint8_t> want;
    size_t at = 0;
    for (uint32_t n : Cuts(f.keys.size())) {
      uint8_t out[kMaxVector];
      direct->PickBurst(&f.keys[at], out, n);
      want.insert(want.end(), out, out + n);
      at += n;
    }
    ASSERT_EQ(got, want) << "seed " << seed;
    lb::LbView view{&f.table, nullptr, 0};
    for (size_t i = 0; i < f.keys.size(); ++i) ASSERT_EQ(got[i], atomic.Pick(f.keys[i], view)) << i;
  }
}

TEST(Balance, AnyLaneMatchesAnyPolicy) {
  for (lb::PolicyKind kind : {lb::PolicyKind::kOfan, lb::PolicyKind::kRps, lb::PolicyKind::kEEcmp,
                              lb::PolicyKind::kSimpleRr}) {
    Fixture f = Make(4);
    const lb::SwitchLbSetup setup{&f.table, 8, 77};
    lb::AnyPolicy via_lane(Config(kind), setup), direct(Config(kind), setup);
    lb::LbView view{&f.table, nullptr, 0};
    std::vector<PacketKey> scratch(kMaxVector);
    auto lane = std::make_unique<AnyLane>(via_lane, view, scratch.data());
    const std::vector<uint8_t> got = ThroughLane(*lane, f.keys);
    std::vector<uint8_t> want;
    size_t at = 0;
    for (uint32_t n : Cuts(f.keys.size())) {
      uint8_t out[kMaxVector];
      direct.PickBurst(&f.keys[at], out, n, view);
      want.insert(want.end(), out, out + n);
      at += n;
    }
    ASSERT_EQ(got, want) << lb::PolicyName(kind);
  }
}

}  // namespace
}  // namespace ofan::dp
