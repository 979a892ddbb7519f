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

#include <atomic>
#include <cassert>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/rng.h"
#include "dataplane/lb/policies/ofan.h"
#include "dataplane/lb/policy.h"

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

class SharedOfanTable {
 public:
  SharedOfanTable(const UplinkTable& t, uint64_t seed) : ctr_(t.num_keys()) {
    std::vector<uint8_t> init(t.num_keys(), 0);
    Rng rng(seed ^ 0x5A4EDull);
    InitOfanPointers(t, rng, init.data());
    for (size_t i = 0; i < init.size(); ++i) ctr_[i].store(init[i], std::memory_order_relaxed);
  }
  uint32_t FetchAdd(uint32_t key, uint32_t c) {
    return ctr_[key].fetch_add(c, std::memory_order_relaxed);
  }
  uint32_t Load(uint32_t key) const { return ctr_[key].load(std::memory_order_relaxed); }
  // Sets a pointer (tests: e.g. just below the 32-bit wrap).
  void Store(uint32_t key, uint32_t v) { ctr_[key].store(v, std::memory_order_relaxed); }
  size_t num_keys() const { return ctr_.size(); }

 private:
  std::vector<std::atomic<uint32_t>> ctr_;
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
class OfanCombined {
 public:
  // A whole worker vector (dataplane kMaxVector): the wider the window, the
  // fewer fetch-adds per packet.
  static constexpr uint32_t kMaxBurst = 256;
  explicit OfanCombined(SharedOfanTable* shared)
      : shared_(shared), group_of_key_(shared->num_keys(), kNoGroup) {}

  // Assigns out[i] for keys[0..n); n <= kMaxBurst, every key < num_keys().
  void PickBurst(const PacketKey* keys, uint8_t* out, uint32_t n, const UplinkTable& t) {
    assert(n <= kMaxBurst);
    uint16_t group_of[kMaxBurst];
    for (uint32_t i = 0; i < n; ++i) group_of[i] = Add(keys[i].key);
    Commit(t);
    for (uint32_t i = 0; i < n; ++i) out[i] = Next(group_of[i]);
  }

  // PickBurst in three steps, for a caller that wants to interleave its own
  // per-packet work (the dataplane's vector pass does Add while it parses and
  // Next while it groups by output port). Per burst: Add for each packet in
  // arrival order (at most kMaxBurst), one Commit, then Next once per Add,
  // in the same order. Add returns the packet's group.
  //
  // (1)+(2) sort and combine: keys are small dense integers, so the key ->
  // group map is a direct-indexed array (no hashing, no probing), reset
  // entry by entry in Commit.
  uint16_t Add(uint32_t key) {
    assert(key < group_of_key_.size() && ngroups_ < kMaxBurst);
    uint16_t g = group_of_key_[key];
    if (g == kNoGroup) {
      g = static_cast<uint16_t>(ngroups_++);
      group_of_key_[key] = g;
      groups_[g].key = key;
      groups_[g].count = 0;
    }
    ++groups_[g].count;
    return g;
  }

  // (3) update: one fetch-add per key; the value becomes a list index once
  // per key, so each packet in Next only steps it (no division per packet).
  // The fetch-adds run back to back in a loop of their own: other cores
  // update the same cache lines, and the shorter the stretch in which this
  // core needs them, the fewer times they move between cores.
  void Commit(const UplinkTable& t) {
    for (uint32_t j = 0; j < ngroups_; ++j) groups_[j].raw = shared_->FetchAdd(groups_[j].key, groups_[j].count);
    for (uint32_t j = 0; j < ngroups_; ++j) {
      Group& g = groups_[j];
      const uint32_t r = g.raw;
      const UplinkList l = t.list(g.key);
      g.ports = l.ports;
      g.n = l.n;
      g.next = l.n == 0 ? 0 : mod_.Mod(r, l.n);
      // Values r .. r+count-1 that cross 2^32 are taken mod n one by one in
      // Next, as atomic mode takes them, so the two stay identical.
      g.slow = l.n == 0 || r > UINT32_MAX - (g.count - 1);
      group_of_key_[g.key] = kNoGroup;
    }
    ngroups_ = 0;
  }

  // (4) decombine: consecutive values, in arrival order within the key.
  uint8_t Next(uint16_t group) {
    Group& g = groups_[group];
    if (g.slow) [[unlikely]] return g.n == 0 ? kNoUplink : g.ports[mod_.Mod(g.raw++, g.n)];
    const uint32_t v = g.next;
    g.next = v + 1 == g.n ? 0 : v + 1;
    return g.ports[v];
  }

 private:
  static constexpr uint16_t kNoGroup = 0xFFFF;
  struct Group {
    const uint8_t* ports;  // the key's valid uplinks, in its Ofan order
    uint32_t n;
    uint32_t next;  // index into ports
    uint32_t key;
    uint32_t count;
    uint32_t raw;  // the fetch-add's value, for a group that wraps
    bool slow;     // no uplink, or its values cross 2^32
  };
  SharedOfanTable* shared_;
  SmallMod mod_;
  std::vector<uint16_t> group_of_key_;  // kNoGroup between bursts
  uint32_t ngroups_ = 0;
  Group groups_[kMaxBurst] = {};
};

}  // namespace ofan::lb
