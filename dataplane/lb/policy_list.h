// The one list of LB policies (docs/design.md, rules 3 and 7).
//
// Adding a policy: write its class in policies/ (a constructor taking
// (const PolicyParams&, const SwitchLbSetup&) and a Pick(const PacketKey&,
// LbView&) returning an uplink index or kNoUplink), include its header below
// and give it one line in OFAN_LB_POLICIES. Everything else comes from this
// list: the PolicyKind enum, kNumPolicyKinds, the names ParsePolicy accepts,
// the help texts, the flags, the std::variant AnyPolicy holds and the
// kind -> type dispatch (any_policy.h), the typed test suite every policy goes
// through (tests/dataplane/lb/policy_test.cc), and `--list-policies [--json]`
// of every binary that takes a policy, which the emulator reads.
#pragma once

#include "dataplane/lb/policies/conga.h"
#include "dataplane/lb/policies/flowlet.h"
#include "dataplane/lb/policies/glb.h"
#include "dataplane/lb/policies/hash_based.h"
#include "dataplane/lb/policies/ofan.h"
#include "dataplane/lb/policies/queue_aware.h"
#include "dataplane/lb/policies/random_spray.h"
#include "dataplane/lb/policies/simple_rr.h"

namespace ofan::lb {
// Flags of a policy in the list below.
inline constexpr unsigned kPolicyQueueAware = 1;   // reads LbView::queue_bytes
inline constexpr unsigned kPolicyHostChooses = 2;  // follows the source host's choice
}  // namespace ofan::lb

// X(enumerator, class, name, other names (space separated), flags, help).
// flags: kPolicyQueueAware, kPolicyHostChooses (needs hosts that choose).
// The order is the enum's, the variant's and the listing's.
#define OFAN_LB_POLICIES(X)                                                                      \
  X(kEcmp, Ecmp, "ecmp", "", 0, "5-tuple hash (RFC 2992)")                                       \
  X(kEEcmp, EEcmp, "eecmp", "e-ecmp", 0, "5-tuple + RoCE destination QP (Meta's E-ECMP)")        \
  X(kPin, PathPin, "pin", "", 0, "path pinning by destination slice, ECMP on failure")           \
  X(kRps, Rps, "rps", "rsq", 0, "random uplink per packet (RSQ ~ RPS, paper §3.1)")              \
  X(kSimpleRr, SimpleRr, "rr", "simplerr simple-rr", 0,                                          \
    "one switch-wide round-robin pointer (SimpleRR, §3.1)")                                      \
  X(kJsq, Jsq, "jsq", "", kPolicyQueueAware, "join the shortest queue, random tie-break (§3.1)") \
  X(kAr, Ar, "ar", "", kPolicyQueueAware, "adaptive routing: JSQ over quantized queue levels")   \
  X(kDrill, Drill, "drill", "", kPolicyQueueAware, "DRILL(d=2, m=1): d random samples + memory") \
  X(kChoice, Choice, "choice", "", kPolicyQueueAware,                                            \
    "CHOICE: DRILL without memory, the least loaded of d=2 random samples")                      \
  X(kFlowlet, Flowlet, "flowlet", "", 0, "flowlet switching: a new uplink after a gap")          \
  X(kConga, Conga, "conga", "", 0,                                                               \
    "CONGA per packet: least max(local DRE, fed-back path level) (§3.1)")                        \
  X(kDlb, Dlb, "dlb", "", kPolicyQueueAware,                                                     \
    "Broadcom DLB per packet: least level of local load + queue (§3.1)")                         \
  X(kSglb, Sglb, "sglb", "", kPolicyQueueAware,                                                  \
    "SGLB: DLB's level and the disseminated levels of the path beyond (§8)")                     \
  X(kOfan, Ofan, "ofan", "", 0, "Ofan (§4): one pointer per (destination edge/pod, size class)") \
  X(kPofan, Pofan, "pofan", "", 0, "POfan (§5.1): one independent Ofan table per pipe")          \
  X(kSourceRouted, SourceRouted, "source", "", kPolicyHostChooses,                               \
    "follow the uplink the source host chose (DRB's encapsulation, §3.4)")
