// Flowlet switching [41, 82]: packets of a flow keep their uplink while they
// arrive closer together than the gap threshold; after a longer gap the next
// packet starts a new flowlet on a random valid uplink (LetFlow's choice).
// AI collectives are gapless (§2.1), so at full load this degenerates to
// per-flow ECMP: that is the point of measuring it.
#pragma once

#include <vector>

#include "common/rng.h"
#include "dataplane/lb/policy_params.h"

namespace ofan::lb {

class Flowlet {
 public:
  Flowlet(const PolicyParams& c, const SwitchLbSetup& s)
      : rng_(c.seed ^ SplitMix64(s.salt)),
        salt_(s.salt),
        gap_(c.flowlet_gap_ps),
        slots_(std::bit_ceil(c.flowlet_slots ? c.flowlet_slots : 1u)) {}
  uint8_t Pick(const PacketKey& k, LbView& v) {
    const PortMask m = v.table->mask(k.dest);
    if (m == 0) return kNoUplink;
    Slot& s = slots_[MixHash(k.flow_hash, salt_) & (slots_.size() - 1)];
    const bool expired = s.port == kNoUplink || v.now - s.last > gap_;
    if (expired || !(m & (PortMask{1} << s.port))) {
      const UplinkList l = v.table->list(k.dest);
      s.port = l.ports[rng_.Below(l.n)];
    }
    s.last = v.now;
    return s.port;
  }

 private:
  struct Slot {
    TimePs last = 0;
    uint8_t port = kNoUplink;
  };
  Rng rng_;
  uint32_t salt_;
  TimePs gap_;
  std::vector<Slot> slots_;
};

}  // namespace ofan::lb
