// Random packet spraying at the switch (RSQ in §3.1, which the paper shows is
// analytically equivalent to host-based RPS [26]): every packet takes a
// uniformly random valid uplink. Queues grow as sqrt(m) (Thm. 1, App. B).
#pragma once

#include "common/rng.h"
#include "dataplane/lb/policy_params.h"

namespace ofan::lb {

class Rps {
 public:
  Rps(const PolicyParams& c, const SwitchLbSetup& s) : rng_(c.seed ^ SplitMix64(s.salt)) {}
  uint8_t Pick(const PacketKey& k, LbView& v) {
    const UplinkList l = v.table->list(k.dest);
    if (l.n == 0) return kNoUplink;
    return l.ports[rng_.Below(l.n)];
  }

 private:
  Rng rng_;
};

}  // namespace ofan::lb
