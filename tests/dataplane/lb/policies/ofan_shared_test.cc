// Ofan shared across cores (App. I): the atomic and combined modes must hand
// out the same ports per key, each a full round per n packets of the key, and
// stay exactly balanced when several threads share one table.
#include "dataplane/lb/policies/ofan_shared.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/rng.h"
#include "tests/dataplane/lb/lb_test_util.h"

namespace ofan::lb {
namespace {

using ::ofan::lb::testing::MakeTree;
using ::ofan::lb::testing::RandomFailures;
using ::ofan::lb::testing::RandomMasks;

bool Has(PortMask m, uint32_t port) { return port < 64 && ((m >> port) & 1) != 0; }

std::vector<std::unique_ptr<UplinkTable>> Tables() {
  std::vector<std::unique_ptr<UplinkTable>> v;
  const FatTree t = MakeTree(8, 3);
  v.push_back(std::make_unique<UplinkTable>(
      UplinkTable::ForSwitch(t, t.edge(1, 2), RandomFailures(t, 0.2, 3))));
  v.push_back(std::make_unique<UplinkTable>(
      UplinkTable::ForSwitch(t, t.agg(3, 0), RandomFailures(t, 0.4, 4))));
  Rng rng(5);
  v.push_back(std::make_unique<UplinkTable>(6, RandomMasks(6, 10, rng)));
  v.push_back(std::make_unique<UplinkTable>(64, RandomMasks(64, 4, rng)));
  return v;
}

PacketKey KeyFor(const UplinkTable& t, uint32_t key) {
  PacketKey k;
  k.key = static_cast<uint16_t>(key);
  k.dest = static_cast<uint16_t>(key % t.num_dests());
  k.cls = key >= t.num_dests() ? SizeClass::kAck : SizeClass::kData;
  return k;
}

// Every window of n consecutive picks of a key holds each valid uplink once.
void ExpectExactlyOncePerRound(const std::vector<uint8_t>& seq, PortMask m,
                               const std::string& what) {
  const size_t n = static_cast<size_t>(PopCount(m));
  if (n == 0) {
    for (uint8_t p : seq) ASSERT_EQ(p, kNoUplink) << what;
    return;
  }
  PortMask first = 0;
  for (size_t i = 0; i < std::min(n, seq.size()); ++i) {
    ASSERT_TRUE(Has(m, seq[i])) << what;
    ASSERT_FALSE(Has(first, seq[i])) << what << ": port " << int{seq[i]} << " twice in a round";
    first |= PortMask{1} << seq[i];
  }
  for (size_t i = n; i < seq.size(); ++i) ASSERT_EQ(seq[i], seq[i - n]) << what << " at " << i;
}

TEST(SmallModTest, MatchesTheRemainder) {
  const SmallMod mod;
  Rng rng(1);
  std::vector<uint32_t> rs = {0, 1, 2, 63, 64, 65, 1u << 31, UINT32_MAX - 1, UINT32_MAX};
  for (int i = 0; i < 5000; ++i) rs.push_back(rng.Next32());
  for (uint32_t n = 1; n <= kMaxUplinks; ++n) {
    for (uint32_t r : rs) ASSERT_EQ(mod.Mod(r, n), r % n) << r << " mod " << n;
    for (uint32_t r = 0; r < 1000; ++r) ASSERT_EQ(mod.Mod(r, n), r % n) << r << " mod " << n;
  }
}

TEST(SharedOfanTableTest, StartsOnTheKeysListsDeterministically) {
  for (const auto& tp : Tables()) {
    const UplinkTable& t = *tp;
    const SharedOfanTable a(t, 9), b(t, 9);
    ASSERT_EQ(a.num_keys(), t.num_keys());
    for (uint32_t key = 0; key < t.num_keys(); ++key) {
      EXPECT_EQ(a.Load(key), b.Load(key));
      const uint32_t n = t.list(key).n;
      EXPECT_LT(a.Load(key), std::max(n, 1u)) << "key " << key;
    }
  }
}

// A group whose values cross the 32-bit wrap still gets exactly what atomic
// mode hands out (combined steps a list index, except across the wrap).
TEST(OfanSharedTest, CombinedMatchesAtomicAcrossTheCounterWrap) {
  for (const auto& tp : Tables()) {
    const UplinkTable& t = *tp;
    for (uint32_t key = 0; key < t.num_keys(); key += 3) {
      if (t.list(key).n < 2) continue;
      for (uint32_t below : {0u, 1u, 5u, 40u}) {
        SharedOfanTable ta(t, 9), tb(t, 9);
        ta.Store(key, UINT32_MAX - below);
        tb.Store(key, UINT32_MAX - below);
        OfanAtomic atomic(&ta);
        auto combined = std::make_unique<OfanCombined>(&tb);
        LbView view{&t, nullptr, 0};
        std::vector<PacketKey> keys(50, KeyFor(t, key));
        std::vector<uint8_t> out(keys.size());
        combined->PickBurst(keys.data(), out.data(), static_cast<uint32_t>(keys.size()));
        for (size_t i = 0; i < keys.size(); ++i) {
          ASSERT_EQ(out[i], atomic.Pick(keys[i], view))
              << "key " << key << " below " << below << " packet " << i;
        }
        EXPECT_EQ(ta.Load(key), tb.Load(key));
      }
    }
  }
}

TEST(OfanSharedTest, AtomicAndCombinedHandOutTheSamePorts) {
  for (const auto& tp : Tables()) {
    const UplinkTable& t = *tp;
    const uint32_t nk = t.num_keys();
    SharedOfanTable ta(t, 77), tb(t, 77);
    OfanAtomic atomic(&ta);
    auto combined = std::make_unique<OfanCombined>(&tb);
    LbView view{&t, nullptr, 0};
    Rng rng(nk);
    std::vector<std::vector<uint8_t>> seq_a(nk), seq_c(nk);
    PacketKey keys[OfanCombined::kMaxBurst];
    uint8_t out[OfanCombined::kMaxBurst];
    for (int burst = 0; burst < 4000; ++burst) {
      // Mostly bursts of a few hot keys (so keys repeat within a burst), plus
      // the extremes: a full burst of one key and one of distinct keys.
      uint32_t n = 1 + rng.Below(32);
      const uint32_t hot = 1 + rng.Below(std::min(nk, 6u));
      uint32_t pool[6];
      for (uint32_t j = 0; j < hot; ++j) pool[j] = rng.Below(nk);
      for (uint32_t i = 0; i < n; ++i) keys[i] = KeyFor(t, pool[rng.Below(hot)]);
      if (burst % 500 == 1) {
        n = OfanCombined::kMaxBurst;
        for (uint32_t i = 0; i < n; ++i) keys[i] = KeyFor(t, pool[0]);
      } else if (burst % 500 == 2 && nk >= OfanCombined::kMaxBurst) {
        n = OfanCombined::kMaxBurst;
        const uint32_t base = rng.Below(nk);
        for (uint32_t i = 0; i < n; ++i) keys[i] = KeyFor(t, (base + i) % nk);
      }
      combined->PickBurst(keys, out, n);
      for (uint32_t i = 0; i < n; ++i) {
        const uint8_t a = atomic.Pick(keys[i], view);
        seq_a[keys[i].key].push_back(a);
        seq_c[keys[i].key].push_back(out[i]);
      }
    }
    for (uint32_t key = 0; key < nk; ++key) {
      const std::string what = "w=" + std::to_string(t.w()) + " key " + std::to_string(key);
      // Same multiset per key...
      std::vector<uint8_t> sa = seq_a[key], sc = seq_c[key];
      std::sort(sa.begin(), sa.end());
      std::sort(sc.begin(), sc.end());
      EXPECT_EQ(sa, sc) << what;
      // ...and in fact the same sequence: combining is exact (App. I).
      EXPECT_EQ(seq_a[key], seq_c[key]) << what;
      const PortMask m = t.mask(key % t.num_dests());
      // Combined also advances keys with no uplink (harmless: no port is
      // read); elsewhere both counters moved by the key's packet count.
      if (m != 0) {
        EXPECT_EQ(ta.Load(key), tb.Load(key)) << what;
      }
      ExpectExactlyOncePerRound(seq_a[key], m, "atomic " + what);
      ExpectExactlyOncePerRound(seq_c[key], m, "combined " + what);
    }
  }
}

// Two threads share one table; every key's packets, whoever sent them, must
// split exactly evenly over its valid uplinks.
void RunConcurrent(bool combined_mode) {
  for (const auto& tp : Tables()) {
    const UplinkTable& t = *tp;
    const uint32_t nk = t.num_keys();
    SharedOfanTable shared(t, 123);
    std::vector<uint32_t> init(nk);
    for (uint32_t key = 0; key < nk; ++key) init[key] = shared.Load(key);
    constexpr int kThreads = 2;
    constexpr int kPackets = 200'000;
    // A few hot keys so that the threads really contend on the counters.
    std::vector<uint32_t> hot;
    for (uint32_t key = 0; key < nk && hot.size() < 5; key += 1 + nk / 5) hot.push_back(key);
    std::vector<std::vector<uint32_t>> counts(kThreads,
                                              std::vector<uint32_t>(static_cast<size_t>(nk) * 65));
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int th = 0; th < kThreads; ++th) {
      threads.emplace_back([&, th] {
        Rng rng(1000 + static_cast<uint64_t>(th));
        std::vector<uint32_t>& c = counts[static_cast<size_t>(th)];
        OfanAtomic atomic(&shared);
        auto comb = std::make_unique<OfanCombined>(&shared);
        LbView view{&t, nullptr, 0};
        PacketKey keys[32];
        uint8_t out[32];
        int sent = 0;
        while (sent < kPackets) {
          const uint32_t n = std::min<uint32_t>(1 + rng.Below(32), kPackets - sent);
          for (uint32_t i = 0; i < n; ++i) keys[i] = KeyFor(t, hot[rng.Below(hot.size())]);
          if (combined_mode) {
            comb->PickBurst(keys, out, n);
          } else {
            for (uint32_t i = 0; i < n; ++i) out[i] = atomic.Pick(keys[i], view);
          }
          for (uint32_t i = 0; i < n; ++i) {
            const uint32_t port = out[i] == kNoUplink ? 64 : out[i];
            ++c[static_cast<size_t>(keys[i].key) * 65 + port];
          }
          sent += static_cast<int>(n);
        }
      });
    }
    for (auto& th : threads) th.join();
    for (uint32_t key : hot) {
      const PortMask m = t.mask(key % t.num_dests());
      const uint32_t n = static_cast<uint32_t>(PopCount(m));
      uint64_t total = 0;
      std::vector<uint32_t> per_port(65, 0);
      for (int th = 0; th < kThreads; ++th) {
        for (uint32_t p = 0; p < 65; ++p) {
          per_port[p] += counts[static_cast<size_t>(th)][static_cast<size_t>(key) * 65 + p];
        }
      }
      for (uint32_t p = 0; p < 65; ++p) total += per_port[p];
      const std::string what = std::string(combined_mode ? "combined" : "atomic") +
                               " w=" + std::to_string(t.w()) + " key " + std::to_string(key);
      if (n == 0) {
        EXPECT_EQ(per_port[64], total) << what;
        continue;
      }
      EXPECT_EQ(per_port[64], 0u) << what;
      // After T packets, each valid uplink got floor(T/n) or ceil(T/n).
      const uint64_t lo = total / n, hi = (total + n - 1) / n;
      for (uint32_t p = 0; p < 64; ++p) {
        if (Has(m, p)) {
          EXPECT_GE(per_port[p], lo) << what << " port " << p;
          EXPECT_LE(per_port[p], hi) << what << " port " << p;
        } else {
          EXPECT_EQ(per_port[p], 0u) << what << " port " << p;
        }
      }
      // The counter advanced by exactly the key's packets.
      EXPECT_EQ(shared.Load(key), static_cast<uint32_t>(init[key] + total)) << what;
    }
  }
}

TEST(OfanSharedTest, AtomicFromTwoThreadsStaysExactlyBalanced) { RunConcurrent(false); }

TEST(OfanSharedTest, CombinedFromTwoThreadsStaysExactlyBalanced) { RunConcurrent(true); }

}  // namespace
}  // namespace ofan::lb
