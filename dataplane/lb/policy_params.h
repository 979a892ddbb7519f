// What every LB policy class is built from and decides with: its tunables,
// its switch, and the per-decision view. The policy classes include only this
// (not policy.h), so that the one list of policies (policy_list.h) can include
// them and policy.h can make the enum, the names and the variant from it.
#pragma once

#include <cstdint>

#include "common/rng.h"
#include "dataplane/lb/packet_key.h"
#include "dataplane/lb/types.h"
#include "dataplane/lb/uplink_table.h"

namespace ofan::lb {

// A policy's tunables; PolicyConfig (policy.h) adds which policy.
struct PolicyParams {
  uint64_t seed = 1;
  // POfan: consecutive ports per pipe (1 = 1Ofan, 4 = 4Ofan, paper default).
  uint32_t pipe_size = 4;
  // AR: queue level thresholds as fractions of ar_buffer_bytes (Table 1:
  // "Quanta: 5-10-20%" of the 800 KB per-port buffer of §6).
  double ar_quanta[3] = {0.05, 0.10, 0.20};
  uint64_t ar_buffer_bytes = 800'000;
  // DRILL: random samples and remembered ports.
  uint32_t drill_samples = 2;
  // Flowlet: a gap longer than this starts a new flowlet.
  TimePs flowlet_gap_ps = 2'000'000;  // 2 us, a few RTTs of a k=12 fabric
  uint32_t flowlet_slots = 4096;      // power of two
  // CONGA, DLB, SGLB (congestion.h): the line rate the rate estimators
  // measure against, and the DRE's decay: X loses X >> dre_shift every
  // dre_period_ps, so tau = 0.5 us * 8 = 4 us, about the RTT of a k=12
  // fabric at 800 Gb/s (CONGA [3] wants tau above the RTT).
  double link_gbps = 800.0;
  TimePs dre_period_ps = 500'000;
  uint32_t dre_shift = 3;
  // DLB's bands (congestion.h): load below / above these fractions of line
  // rate is the best / worst band; the queue's 8 bands span dlb_queue_bytes
  // (80 KB: §6's ECN threshold, 10 % of the 800 KB buffer).
  double dlb_load_min = 0.2;
  double dlb_load_max = 0.8;
  uint32_t dlb_queue_bytes = 80'000;
  // SGLB: how often switches tell their neighbours their links' levels
  // (what LbView::remote holds is at most this old).
  TimePs glb_period_ps = 1'000'000;
};

// What a policy needs to hear from the rest of the fabric in LbView::remote,
// and so what a host of the policy (ofan-sim, later ofan-dp) must carry. A
// policy class says so with `static constexpr RemoteFeed kRemoteFeed`.
enum class RemoteFeed : uint8_t {
  kNone,          // local state only
  kLeafFeedback,  // CONGA: the destination edge feeds back each path's congestion
  kPathQuality,   // SGLB: switches disseminate their links' levels periodically
};
template <class P>
constexpr RemoteFeed RemoteFeedOf() {
  if constexpr (requires { P::kRemoteFeed; }) {
    return P::kRemoteFeed;
  } else {
    return RemoteFeed::kNone;
  }
}

// The hash salt and RNG stream of a switch's policy on one of its workers
// (lcores): what ofan-dp gives each worker's policy and what the P4 control
// plane programs for a switch (worker 0), so that both pick alike.
constexpr uint32_t SwitchSalt(uint32_t switch_id, uint32_t worker) {
  return static_cast<uint32_t>(SplitMix64(switch_id * 7919ull + worker));
}

// What a policy instance needs about its switch.
struct SwitchLbSetup {
  const UplinkTable* table = nullptr;
  uint32_t num_ports = 0;  // for POfan's pipe count
  uint32_t salt = 0;       // per-switch hash salt and RNG stream
};

// Per-decision context. queue_bytes[u] is the backlog of uplink u, a scratch
// copy the caller fills for queue-aware policies (which add their own picks so
// that a burst does not pile onto one queue); null for the others.
// remote[d * w + u] is the congestion level (0..7, congestion.h) of the path
// beyond uplink u towards destination d as the fabric last reported it (see
// RemoteFeed); null where nobody reports, and the policy then decides on its
// local state alone.
struct LbView {
  const UplinkTable* table = nullptr;
  uint32_t* queue_bytes = nullptr;
  TimePs now = 0;
  const uint8_t* remote = nullptr;
};

}  // namespace ofan::lb
