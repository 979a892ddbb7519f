// Incremental deployment (paper §6.4, Fig. 11): which policy each switch of
// the fat tree runs when not all run SimConfig::policy.
//
// The paper upgrades half of the LB switches (edge and aggregation; cores
// have no uplinks to choose) to 4Ofan and keeps AR on the other half, placed
// four ways. ofan-sim names them as Fig. 11 does:
//   --lb-placement random-switches | random-pods | agg | edge
// runs --lb on the placed half and --lb-rest (default ar) on the rest:
//   random-switches  half of the edge + agg switches, drawn from the seed;
//   random-pods      every edge and agg switch of half the pods, drawn;
//   agg / edge       every aggregation / edge switch.
// --lb-tiers edge=P,agg=P,core=P gives each tier its own policy (a tier not
// named runs --lb). Both need a 3-level tree; the draws use their own RNG
// stream of the seed, so a placement does not perturb anything else.
//
// A mix may hold any switch policy except those that hear from the fabric
// (conga, sglb: their feedback needs every switch to take part) or follow
// the host's route (source); its names are --lb's (ApplyLbName), and it may
// not change the host scheme. Each switch's policy is still chosen once, at
// construction (sim.cc: MixedPolicy).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/policy.h"

namespace ofan::sim {

struct SimConfig;

enum class Placement : uint8_t { kAll, kTiers, kRandomSwitches, kRandomPods, kAgg, kEdge };
// The names --lb-placement takes (all but kAll and kTiers), in the enum's
// order from kRandomSwitches; paper figure 11's points use them too.
inline constexpr std::array<std::string_view, 4> kPlacementNames = {"random-switches",
                                                                    "random-pods", "agg", "edge"};
// The tiers --lb-tiers takes, in lb::Role's order.
inline constexpr std::array<std::string_view, 3> kTierNames = {"edge", "agg", "core"};

std::string_view PlacementName(Placement p);  // "all", "tiers" or one of kPlacementNames
Result<Placement> ParsePlacement(std::string_view name);

// NOLINTNEXTLINE(bugprone-reserved-identifier): __i0 is the defaulted operator=='s own
struct LbMix {
  Placement placement = Placement::kAll;
  // kTiers: a tier's policy if has_tier, else SimConfig::policy.
  lb::PolicyConfig tier[3];
  bool has_tier[3] = {false, false, false};
  std::string tier_name[3];  // as given, for the report
  // Placements: what the switches outside the placement run.
  lb::PolicyConfig rest;
  std::string rest_name = "ar";
  bool mixed() const { return placement != Placement::kAll; }
};

// --lb-tiers SPEC: "edge=4ofan,agg=ar". Errors (one line): an unknown tier
// or policy, a tier named twice, an empty item, a policy a mix cannot hold.
Status ApplyLbTiers(std::string_view spec, SimConfig& c);
// --lb-placement NAME with --lb-rest POLICY.
Status ApplyLbPlacement(std::string_view name, std::string_view rest, SimConfig& c);
// SimConfig::Validate's part: the tree has 3 levels, the policies mix.
Status ValidateMix(const SimConfig& c);
// Each switch's policy (by switch id), tunables from c.policy; c must be
// valid and mixed.
std::vector<lb::PolicyConfig> SwitchPolicies(const SimConfig& c, const lb::FatTree& t);

}  // namespace ofan::sim
