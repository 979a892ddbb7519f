// SimpleRR (§3.1): one switch-wide round-robin pointer over the uplinks,
// shared by every northbound packet whatever its destination; ports with no
// path to the packet's destination are skipped. As for every scheme here, ACKs
// are balanced in their own size class, so there is one such pointer per size
// class: sharing it would let the data/ACK interleaving of §A decide which
// uplinks carry the big frames. Balances uplinks perfectly
// but synchronises with paced senders ("sticky" flows, Thm. 2 and App. C),
// so downlink queues grow linearly in m.
#pragma once

#include "common/rng.h"
#include "dataplane/lb/policy_params.h"

namespace ofan::lb {

class SimpleRr {
 public:
  SimpleRr(const PolicyParams& c, const SwitchLbSetup& s) : w_(s.table ? s.table->w() : 1) {
    Rng rng(c.seed ^ SplitMix64(s.salt));
    for (auto& n : next_)
      n = w_ ? rng.Below(w_) : 0;  // random start (App. C: salting does not help)
  }
  uint8_t Pick(const PacketKey& k, LbView& v) {
    const PortMask m = v.table->mask(k.dest);
    if (m == 0) return kNoUplink;
    uint32_t& next = next_[static_cast<uint32_t>(k.cls)];
    for (;;) {
      const uint32_t port = next;
      next = next + 1 == w_ ? 0 : next + 1;
      if (m & (PortMask{1} << port)) return static_cast<uint8_t>(port);
    }
  }

 private:
  uint32_t w_;
  uint32_t next_[kNumSizeClasses];
};

}  // namespace ofan::lb
