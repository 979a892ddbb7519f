// The LB policy interface shared by the dataplane and the simulator.
//
// Every policy answers one question: which uplink for this packet. A policy is
// a plain class with
//     uint8_t Pick(const PacketKey& key, LbView& view);
// returning an uplink index, or kNoUplink when the key has no valid uplink.
// Policies are chosen once per switch: the simulator instantiates its switch
// type per policy (template), the dataplane dispatches once per burst
// (any_policy.h). There is no per-packet virtual call anywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "common/result.h"
#include "dataplane/lb/packet_key.h"
#include "dataplane/lb/types.h"
#include "dataplane/lb/uplink_table.h"

namespace ofan::lb {

enum class PolicyKind : uint8_t {
  kEcmp,          // 5-tuple hash [RFC 2992]
  kEEcmp,         // 5-tuple + RoCE destination QP (Meta's E-ECMP)
  kPin,           // path pinning by destination slice, ECMP on failure
  kRps,           // random per packet (RSQ ~ RPS, §3.1)
  kSimpleRr,      // one switch-wide round-robin pointer (§3.1)
  kJsq,           // join the shortest queue, random tie-break (§3.1)
  kAr,            // JSQ over quantized queue levels (adaptive routing)
  kDrill,         // DRILL(d=2, m=1) [33]
  kFlowlet,       // flowlet switching with a gap threshold [41, 82]
  kOfan,          // §4: one pointer per (destination edge/pod, size class)
  kPofan,         // §5.1: one independent Ofan table per pipe
  kSourceRouted,  // follow the host's choice (DRB's encapsulation, §3.4)
};
inline constexpr int kNumPolicyKinds = 12;

std::string_view PolicyName(PolicyKind k);
Result<PolicyKind> ParsePolicy(std::string_view name);
// Names accepted by ParsePolicy, for --help texts.
std::string_view PolicyNameList();

struct PolicyConfig {
  PolicyKind kind = PolicyKind::kOfan;
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
};

// What a policy instance needs about its switch.
struct SwitchLbSetup {
  const UplinkTable* table = nullptr;
  uint32_t num_ports = 0;  // for POfan's pipe count
  uint32_t salt = 0;       // per-switch hash salt and RNG stream
};

// Per-decision context. queue_bytes[u] is the backlog of uplink u, a scratch
// copy the caller fills for queue-aware policies (which add their own picks so
// that a burst does not pile onto one queue); null for the others.
struct LbView {
  const UplinkTable* table = nullptr;
  uint32_t* queue_bytes = nullptr;
  TimePs now = 0;
};

// True for policies that read LbView::queue_bytes.
constexpr bool IsQueueAware(PolicyKind k) {
  return k == PolicyKind::kJsq || k == PolicyKind::kAr || k == PolicyKind::kDrill;
}

}  // namespace ofan::lb
