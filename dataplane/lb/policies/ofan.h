// Ofan and POfan: destination-based rotation in the switch (paper §4, §5.1).
//
// Ofan keeps ONE round-robin pointer per key (destination edge switch at an
// edge switch, destination pod at an aggregation switch, times the size class:
// data vs ACK, §4.1 "ACKs") and sends the next northbound packet of that key
// to the uplink the pointer designates, then advances it. Consolidation (§4.1,
// App. F.1): all flows towards one destination edge/pod share the pointer, so
// every uplink carries an equal share of each destination's traffic and the
// unique downward paths stay balanced too (Thm. 9): queues are O(1) in m
// (Thm. 5).
//
// Pointer values index the key's valid uplinks in its App. F.2 order pi
// (UplinkTable::list): one table lookup per packet, the per-key orders and the
// skipping of invalid uplinks having been done by the control side. Data
// pointers start at a random position, ACK pointers floor(w/2) away (§4.1).
//
// A pointer holds the rank its key used last, not the next one: a packet
// compares it with the list's last rank, resets it to 0 or adds 1, and uses
// the result. That is the whole step of a switch's stateful ALU (one compare,
// two updates, no modulo), so tofino_p4/pofan.p4 keeps exactly this state in
// its register and the two agree packet for packet, also when failures
// change a list under a live pointer: a pointer past the end of a shortened
// list restarts the round at 0, one inside a lengthened list carries on.
//
// POfan (§5.1): one independent pointer table per ingress pipe (a block of
// pipe_size consecutive ports; 4 in current ASICs = "4Ofan"); a packet uses the
// table of the pipe it entered through. Same code, the pipe selects the row.
//
// For Ofan shared across cores (the dataplane's Ofan-atomic and Ofan-combined
// modes, App. I) see ofan_shared.h.
#pragma once

#include <vector>

#include "common/rng.h"
#include "dataplane/lb/policy_params.h"

namespace ofan::lb {

// The stored pointer of a key whose next packet is to use rank `next` of a
// list of n: the rank before it. A key with no uplink stores 0xFF, which any
// later list resets to rank 0.
constexpr uint8_t LastUsedBefore(uint32_t next, uint32_t n) {
  return n == 0 ? 0xFF : static_cast<uint8_t>((next % n + n - 1) % n);
}

// The rank the next packet of a key uses, from its stored pointer.
constexpr uint32_t NextRank(uint8_t last_used, uint32_t n) {
  return n == 0 || last_used >= n - 1 ? 0 : last_used + 1u;
}

// Initial rank of every key (the rank its first packet uses): data at a
// random position, ACK half a rotation away (§4.1), both mapped onto the
// key's filtered list.
inline void InitOfanPointers(const UplinkTable& t, Rng& rng, uint8_t* ptr) {
  const uint32_t w = t.w(), nd = t.num_dests();
  if (w == 0) return;
  for (uint32_t d = 0; d < nd; ++d) {
    const uint32_t start = rng.Below(w);
    ptr[t.key(d, SizeClass::kData)] =
        static_cast<uint8_t>(t.RankOf(t.key(d, SizeClass::kData), start));
    ptr[t.key(d, SizeClass::kAck)] =
        static_cast<uint8_t>(t.RankOf(t.key(d, SizeClass::kAck), (start + w / 2) % w));
  }
}

// Initial stored pointers: InitOfanPointers' ranks, one step behind.
inline void InitOfanLastUsed(const UplinkTable& t, Rng& rng, uint8_t* ptr) {
  InitOfanPointers(t, rng, ptr);
  for (uint32_t key = 0; key < t.num_keys(); ++key)
    ptr[key] = LastUsedBefore(ptr[key], t.list(key).n);
}

// The per-packet step shared by Ofan and POfan: compare-and-reset or
// advance, then look up.
inline uint8_t OfanStep(const UplinkList& l, uint8_t& last_used) {
  if (l.n == 0) return kNoUplink;
  last_used = last_used >= l.n - 1 ? 0 : static_cast<uint8_t>(last_used + 1);
  return l.ports[last_used];
}

// The uplink OfanStep would return, without moving the pointer.
inline uint8_t PeekStep(const UplinkTable& t, uint32_t key, uint8_t last_used) {
  const UplinkList& l = t.list(key);
  return l.n == 0 ? kNoUplink : l.ports[NextRank(last_used, l.n)];
}

class Ofan {
 public:
  Ofan(const PolicyParams& c, const SwitchLbSetup& s) {
    if (s.table == nullptr) return;
    ptr_.assign(s.table->num_keys(), 0);
    Rng rng(c.seed ^ SplitMix64(s.salt ^ 0x0FA4u));
    InitOfanLastUsed(*s.table, rng, ptr_.data());
  }
  uint8_t Pick(const PacketKey& k, LbView& v) {
    return OfanStep(v.table->list(k.key), ptr_[k.key]);
  }
  // Prefetch hints (ofan-sim reads them a few events ahead): the state
  // Pick(k) reads, and the uplink it would pick if nothing else came first.
  const void* StateOf(const PacketKey& k) const { return &ptr_[k.key]; }
  uint8_t Peek(const PacketKey& k, const UplinkTable& t) const {
    return PeekStep(t, k.key, ptr_[k.key]);
  }
  // The stored pointer (the rank used last), and the rank the next packet
  // of the key uses with table t.
  uint8_t last_used(uint32_t key) const { return ptr_[key]; }
  uint32_t next(const UplinkTable& t, uint32_t key) const {
    return NextRank(ptr_[key], t.list(key).n);
  }

 private:
  std::vector<uint8_t> ptr_;
};

class Pofan {
 public:
  Pofan(const PolicyParams& c, const SwitchLbSetup& s) {
    if (s.table == nullptr) return;
    const uint32_t ps = c.pipe_size ? c.pipe_size : 1;
    pipes_ = (s.num_ports + ps - 1) / ps;
    if (pipes_ == 0) pipes_ = 1;
    keys_ = s.table->num_keys();
    ptr_.assign(static_cast<size_t>(pipes_) * keys_, 0);
    Rng rng(c.seed ^ SplitMix64(s.salt ^ 0x90FA4u));
    for (uint32_t p = 0; p < pipes_; ++p)
      InitOfanLastUsed(*s.table, rng, &ptr_[static_cast<size_t>(p) * keys_]);
  }
  uint8_t Pick(const PacketKey& k, LbView& v) {
    return OfanStep(v.table->list(k.key), ptr_[static_cast<size_t>(k.pipe) * keys_ + k.key]);
  }
  const void* StateOf(const PacketKey& k) const {
    return &ptr_[static_cast<size_t>(k.pipe) * keys_ + k.key];
  }
  uint8_t Peek(const PacketKey& k, const UplinkTable& t) const {
    return PeekStep(t, k.key, ptr_[static_cast<size_t>(k.pipe) * keys_ + k.key]);
  }
  uint32_t num_pipes() const { return pipes_; }
  uint8_t last_used(uint32_t pipe, uint32_t key) const { return ptr_[pipe * keys_ + key]; }
  uint32_t next(const UplinkTable& t, uint32_t pipe, uint32_t key) const {
    return NextRank(last_used(pipe, key), t.list(key).n);
  }

 private:
  uint32_t pipes_ = 1;
  uint32_t keys_ = 0;
  std::vector<uint8_t> ptr_;
};

}  // namespace ofan::lb
