// Broadcom's DLB and ByteDance's SGLB [10, 70], per packet (paper §3.1,
// Table 1, §8 "SGLB").
//
// expects:   LbView::queue_bytes (queue-aware); SGLB also LbView::remote =
//            per (destination, uplink) the level of the path beyond the
//            uplink, disseminated by the other switches every glb_period_ps
//            (RemoteFeed::kPathQuality; null: DLB's local decision)
// modifies:  the load estimator (DRE) of the uplink it picks, the scratch
//            queue_bytes of that uplink (+ the frame), its RNG
// next:      an uplink index of least level, or kNoUplink
//
// DLB: "Broadcom's DLB is not described in detail, but the SGLB paper
// sketches it as an SGLB-like algorithm that only uses the 2 local types of
// information" (§3.1). The two local types, as vendors document DLB: the
// port's recent load and its queue. Each uplink's level is DlbLevel (load
// band and queue band, 8 each, equal weights; congestion.h has the bands),
// and every packet takes a valid uplink of least level, ties at random
// (DLB's per-packet mode; Table 1: "Local SGLB").
//
// SGLB: the same local level, combined (max) with what the switch hears of
// the links beyond. GLB's own reach is the next-next hop (§8); SGLB
// mitigates that in 3-level fat trees (§8, [70]), which we model, as the
// paper applies SGLB there, as visibility of the whole rest of the path,
// three levels of it:
//  1. local: the uplink itself (DLB's two metrics);
//  2. next hop (GLB's NNH): at an edge, the agg's links on: its best core
//     uplink towards the destination pod, or its down link to the
//     destination edge in the same pod; at an agg, the core's down link
//     into the destination pod;
//  3. SGLB's extension, at an edge: the destination pod's down link to the
//     destination edge, which the edge's choice fixes (App. F.1: uplink j
//     reaches agg j of the destination pod).
// A path's level is the max over its links, the best onward choice the min
// over them. The other switches' link levels use the same DlbLevel; what
// the switch reads is at most glb_period_ps old (1 us by default: an
// assumption, [70]'s period is not in the paper). ofan-sim computes the
// remote levels (sim/sim.cc, SyncPathQuality); the dataplane passes none yet.
#pragma once

#include <array>

#include "common/rng.h"
#include "dataplane/lb/congestion.h"
#include "dataplane/lb/policies/queue_aware.h"
#include "dataplane/lb/policy_params.h"

namespace ofan::lb {

template <bool kGlobal>
class GlbFamily {
 public:
  static constexpr RemoteFeed kRemoteFeed = kGlobal ? RemoteFeed::kPathQuality : RemoteFeed::kNone;
  GlbFamily(const PolicyParams& c, const SwitchLbSetup& s)
      : rng_(c.seed ^ SplitMix64(s.salt ^ (kGlobal ? 0x561Bu : 0xD1Bu))), meter_(c) {}
  uint8_t Pick(const PacketKey& k, LbView& v) {
    const PortMask m = v.table->mask(k.dest);
    if (m == 0) return kNoUplink;
    const uint8_t* remote =
        kGlobal && v.remote ? v.remote + size_t{k.dest} * v.table->w() : nullptr;
    const uint32_t best = PickLeast(m, rng_, [&](uint32_t u) {
      const uint32_t local = meter_.DlbLevel(meter_.Read(load_[u], v.now), v.queue_bytes[u]);
      return remote ? std::max<uint32_t>(local, remote[u]) : local;
    });
    meter_.Charge(load_[best], k.frame_bytes, v.now);
    v.queue_bytes[best] += k.frame_bytes;
    return static_cast<uint8_t>(best);
  }

 private:
  Rng rng_;
  LinkMeter meter_;
  std::array<Dre, kMaxUplinks> load_{};
};

using Dlb = GlbFamily<false>;
using Sglb = GlbFamily<true>;

}  // namespace ofan::lb
