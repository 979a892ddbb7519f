// Exact Ofan across cores: one pointer table shared by every lcore (App. I).
//
// Each key has one atomic counter. A pointer value r designates
// list[r mod n] of the key's filtered Ofan order, so handing out c consecutive
// values is one fetch-add of c. Two modes give the same ports per key:
//  - atomic:   one fetch-add per packet;
//  - combined: the burst is grouped by key, one fetch-add per key per burst,
//              and the group's packets take consecutive values: App. I's
//              sort / combine / update / decombine pipeline, in software.
// Counters are 32-bit and wrap: once per 2^32 packets of one key the rotation
// restarts early by (2^32 mod n) ports, an imbalance of at most one packet.
#pragma once

#include <array>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/cache_aligned.h"
#include "common/rng.h"
#include "dataplane/lb/policies/ofan.h"
#include "dataplane/lb/policy_params.h"

namespace ofan::lb {

__extension__ using U128 = unsigned __int128;

// r mod n for n in [1, 64] with one multiply (Lemire's fastmod); the constants
// are per n, not per key.
class SmallMod {
 public:
  SmallMod() {
    for (uint32_t n = 1; n <= kMaxUplinks; ++n) m_[n] = UINT64_MAX / n + 1;
  }
  uint32_t Mod(uint32_t r, uint32_t n) const {
    const uint64_t low = m_[n] * r;
    return static_cast<uint32_t>((static_cast<U128>(low) * n) >> 64);
  }

 private:
  uint64_t m_[kMaxUplinks + 1] = {};
};

// alignas: the object (read by every lcore) shares no cache line with another
// object on the heap.
class alignas(64) SharedOfanTable {
 public:
  // Values handed out per key per burst, at most (Ofan-combined's kMaxBurst).
  static constexpr uint32_t kSpan = 256;

  SharedOfanTable(const UplinkTable& t, uint64_t seed)
      : ctr_(t.num_keys()), n_(t.num_keys()), stride_(t.w() + kSpan) {
    std::vector<uint8_t> init(t.num_keys(), 0);
    Rng rng(seed ^ 0x5A4EDull);
    InitOfanPointers(t, rng, init.data());
    for (uint32_t i = 0; i < init.size(); ++i) Store(i, init[i]);
    // Each key's list written out cyclically to n + kSpan entries: the c <=
    // kSpan ports for pointer values r .. r+c-1 (no 2^32 wrap between) are
    // then the contiguous run cycle(key) + r mod n, so Ofan-combined hands
    // out a group's ports by index, with no per-packet modulo or state.
    cycles_.resize(static_cast<size_t>(t.num_keys()) * stride_);
    for (uint32_t key = 0; key < t.num_keys(); ++key) {
      const UplinkList l = t.list(key);
      n_[key] = static_cast<uint8_t>(l.n);
      uint8_t* row = &cycles_[static_cast<size_t>(key) * stride_];
      for (uint32_t i = 0; l.n != 0 && i < l.n + kSpan; ++i) row[i] = l.ports[i % l.n];
    }
  }
  uint32_t FetchAdd(uint32_t key, uint32_t c) {
    return ctr_[key].fetch_add(c, std::memory_order_relaxed);
  }
  uint32_t Load(uint32_t key) const { return ctr_[key].load(std::memory_order_relaxed); }
  // Sets a pointer (tests: e.g. just below the 32-bit wrap).
  void Store(uint32_t key, uint32_t v) { ctr_[key].store(v, std::memory_order_relaxed); }
  size_t num_keys() const { return ctr_.size(); }
  // The key's number of valid uplinks (0: none), and its list written out
  // cyclically: cycle(key)[i] = list(key).ports[i mod n] for i < n + kSpan.
  uint32_t n(uint32_t key) const { return n_[key]; }
  const uint8_t* cycle(uint32_t key) const { return &cycles_[static_cast<size_t>(key) * stride_]; }

 private:
  // The counters are the only part every lcore writes: whole cache lines of
  // their own, so that no other data, the read-only tables below included,
  // is invalidated by a fetch-add.
  CacheAlignedVector<std::atomic<uint32_t>> ctr_;
  CacheAlignedVector<uint8_t> n_;
  uint32_t stride_;
  CacheAlignedVector<uint8_t> cycles_;  // read-only once built, shared by every lcore
};

// Ofan-atomic: per-packet fetch-add on the shared table.
class OfanAtomic {
 public:
  explicit OfanAtomic(SharedOfanTable* shared) : shared_(shared) {}
  uint8_t Pick(const PacketKey& k, LbView& v) {
    const UplinkList l = v.table->list(k.key);
    if (l.n == 0) return kNoUplink;
    return l.ports[mod_.Mod(shared_->FetchAdd(k.key, 1), l.n)];
  }

 private:
  SharedOfanTable* shared_;
  SmallMod mod_;
};

// Ofan-combined: one fetch-add per distinct key per burst.
// alignas: its per-burst arrays, written by one lcore, share no cache line
// with another object on the heap.
class alignas(64) OfanCombined {
 public:
  // A whole worker vector (dataplane kMaxVector): the wider the window, the
  // fewer fetch-adds per packet.
  static constexpr uint32_t kMaxBurst = SharedOfanTable::kSpan;
  static_assert(kMaxBurst <= 256, "a ticket holds the group and the position in a byte each");
  explicit OfanCombined(SharedOfanTable* shared)
      : shared_(shared), group_of_key_(shared->num_keys(), kNoGroup) {}

  // Assigns out[i] for keys[0..n); n <= kMaxBurst, every key < num_keys().
  void PickBurst(const PacketKey* keys, uint8_t* out, uint32_t n) {
    assert(n <= kMaxBurst);
    Ticket ticket[kMaxBurst];
    for (uint32_t i = 0; i < n; ++i) ticket[i] = Add(keys[i].key);
    Commit();
    for (uint32_t i = 0; i < n; ++i) out[i] = Next(ticket[i]);
  }

  // PickBurst in three steps, for a caller that wants to interleave its own
  // per-packet work (the dataplane's vector pass does Add while it parses and
  // Next while it rewrites). Per burst: Add for each packet in arrival order
  // (at most kMaxBurst), one Commit, then Next with the tickets Add returned,
  // in any order.
  //
  // A ticket is the packet's group (its key's rank among the burst's distinct
  // keys) and its position within the group, a byte each.
  using Ticket = uint16_t;

  // (1)+(2) sort and combine: keys are small dense integers, so the key ->
  // group map is a direct-indexed array (no hashing, no probing), reset
  // entry by entry in Commit.
  Ticket Add(uint32_t key) {
    assert(key < group_of_key_.size() && ngroups_ < kMaxBurst);
    uint16_t g = group_of_key_[key];
    if (g == kNoGroup) {
      g = static_cast<uint16_t>(ngroups_++);
      group_of_key_[key] = g;
      key_[g] = key;
      count_[g] = 0;
    }
    return static_cast<Ticket>(g << 8 | count_[g]++);
  }

  // (3) update: one fetch-add per key. The fetch-adds run back to back in a
  // loop of their own: other cores update the same cache lines, and the
  // shorter the stretch in which this core needs them, the fewer times they
  // move between cores. Then each group gets the run of ports its values
  // designate, so that (4) is one indexed load per packet.
  void Commit() {
    for (uint32_t j = 0; j < ngroups_; ++j) raw_[j] = shared_->FetchAdd(key_[j], count_[j]);
    uint32_t used = 0;  // of wrap_
    for (uint32_t j = 0; j < ngroups_; ++j) {
      const uint32_t key = key_[j], r = raw_[j], c = count_[j], n = shared_->n(key);
      if (n == 0) [[unlikely]] {
        run_[j] = kNoUplinks.data();
      } else if (r > UINT32_MAX - (c - 1)) [[unlikely]] {
        // Values that cross 2^32 are taken mod n one by one, as atomic mode
        // takes them, so that the two stay identical.
        uint8_t* w = wrap_ + used;
        for (uint32_t i = 0; i < c; ++i) w[i] = shared_->cycle(key)[mod_.Mod(r + i, n)];
        run_[j] = w;
        used += c;
      } else {
        run_[j] = shared_->cycle(key) + mod_.Mod(r, n);
      }
      group_of_key_[key] = kNoGroup;
    }
    ngroups_ = 0;
  }

  // (4) decombine: consecutive values, in arrival order within the key.
  uint8_t Next(Ticket t) const { return run_[t >> 8][t & 0xFF]; }

 private:
  static constexpr uint16_t kNoGroup = 0xFFFF;
  // The run of a group with no valid uplink: every packet dropped.
  static constexpr std::array<uint8_t, kMaxBurst> kNoUplinks = [] {
    std::array<uint8_t, kMaxBurst> a{};
    a.fill(kNoUplink);
    return a;
  }();
  SharedOfanTable* shared_;
  SmallMod mod_;
  CacheAlignedVector<uint16_t> group_of_key_;  // kNoGroup between bursts; this lcore's only
  uint32_t ngroups_ = 0;
  // Per group, in order of first appearance in the burst.
  uint32_t key_[kMaxBurst];
  uint32_t raw_[kMaxBurst];        // the fetch-add's value
  uint16_t count_[kMaxBurst];      // packets of the burst
  const uint8_t* run_[kMaxBurst];  // run_[g][i]: the port of the group's i-th packet
  uint8_t wrap_[kMaxBurst];        // runs of the groups whose values cross 2^32
};

}  // namespace ofan::lb
