// Queue-aware, destination-oblivious policies: JSQ, AR, DRILL and CHOICE.
//
// They read LbView::queue_bytes (backlog per uplink, bytes, in-service packet
// included) and add each pick's frame to it, so that the packets of one burst
// see each other. JSQ is the non-quantized AR (§3.1); both synchronise at full
// line rate (Thm. 2 for JSQ; AR's coarse levels make ties, hence random
// choices, common, so it behaves closer to RPS in Fig. 4b).
#pragma once

#include "common/rng.h"
#include "dataplane/lb/policy_params.h"

namespace ofan::lb {

// The uplink of `mask` with the smallest cost(u), ties broken uniformly at
// random (reservoir sampling); JSQ's cost is the backlog, AR's its level.
template <class Cost>
inline uint32_t PickLeast(PortMask mask, Rng& rng, Cost cost) {
  uint32_t best = 0, best_c = UINT32_MAX, ties = 0;
  while (mask) {
    const uint32_t u = static_cast<uint32_t>(__builtin_ctzll(mask));
    mask &= mask - 1;
    const uint32_t c = cost(u);
    if (c < best_c) {
      best = u, best_c = c, ties = 1;
    } else if (c == best_c && rng.Below(++ties) == 0) {
      best = u;
    }
  }
  return best;
}

class Jsq {
 public:
  Jsq(const PolicyParams& c, const SwitchLbSetup& s) : rng_(c.seed ^ SplitMix64(s.salt)) {}
  uint8_t Pick(const PacketKey& k, LbView& v) {
    const PortMask m = v.table->mask(k.dest);
    if (m == 0) return kNoUplink;
    const uint32_t best = PickLeast(m, rng_, [&](uint32_t u) { return v.queue_bytes[u]; });
    v.queue_bytes[best] += k.frame_bytes;
    return static_cast<uint8_t>(best);
  }

 private:
  Rng rng_;
};

class Ar {
 public:
  Ar(const PolicyParams& c, const SwitchLbSetup& s) : rng_(c.seed ^ SplitMix64(s.salt)) {
    for (int i = 0; i < 3; ++i) {
      thresholds_[i] =
          static_cast<uint32_t>(c.ar_quanta[i] * static_cast<double>(c.ar_buffer_bytes));
    }
  }
  uint32_t Level(uint32_t q) const {
    return (q >= thresholds_[0]) + (q >= thresholds_[1]) + (q >= thresholds_[2]);
  }
  uint8_t Pick(const PacketKey& k, LbView& v) {
    const PortMask m = v.table->mask(k.dest);
    if (m == 0) return kNoUplink;
    const uint32_t best = PickLeast(m, rng_, [&](uint32_t u) { return Level(v.queue_bytes[u]); });
    v.queue_bytes[best] += k.frame_bytes;
    return static_cast<uint8_t>(best);
  }

 private:
  Rng rng_;
  uint32_t thresholds_[3];
};

// DRILL(d, m=1) [33]: sample d random valid uplinks, compare them with the
// remembered best of the previous decision, take the least loaded, remember it.
// CHOICE (Table 1, [33]): the same without the memory, DRILL(d, 0), the
// power of d choices; d = drill_samples for both.
template <bool kMemory>
class DrillFamily {
 public:
  DrillFamily(const PolicyParams& c, const SwitchLbSetup& s)
      : rng_(c.seed ^ SplitMix64(s.salt)), samples_(c.drill_samples ? c.drill_samples : 1) {}
  uint8_t Pick(const PacketKey& k, LbView& v) {
    const UplinkList l = v.table->list(k.dest);
    if (l.n == 0) return kNoUplink;
    const PortMask m = v.table->mask(k.dest);
    uint32_t best = kNoUplink, best_q = UINT32_MAX;
    if (kMemory && memory_ != kNoUplink && (m & (PortMask{1} << memory_))) {
      best = memory_, best_q = v.queue_bytes[memory_];
    }
    for (uint32_t i = 0; i < samples_; ++i) {
      const uint32_t u = l.ports[rng_.Below(l.n)];
      // best == kNoUplink: take the first sample even if its queue reads
      // UINT32_MAX (saturated), or we would return kNoUplink and write
      // queue_bytes[kNoUplink].
      if (best == kNoUplink || v.queue_bytes[u] < best_q) best = u, best_q = v.queue_bytes[u];
    }
    if constexpr (kMemory) memory_ = static_cast<uint8_t>(best);
    v.queue_bytes[best] += k.frame_bytes;
    return static_cast<uint8_t>(best);
  }

 private:
  Rng rng_;
  uint32_t samples_;
  uint8_t memory_ = kNoUplink;
};

using Drill = DrillFamily<true>;
using Choice = DrillFamily<false>;

}  // namespace ofan::lb
