// Incremental deployment: parsing --lb-tiers / --lb-placement and drawing
// which switch runs which policy (contract in placement.h).
#include "sim/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "common/rng.h"
#include "dataplane/lb/any_policy.h"
#include "sim/config.h"

namespace ofan::sim {
namespace {

// An --lb name as one switch's policy of a mix.
Result<lb::PolicyConfig> MixPolicy(std::string_view what, std::string_view name,
                                   const SimConfig& c) {
  SimConfig probe = c;
  if (Status s = ApplyLbName(name, probe); !s) {
    return InvalidArgument(fmt::format("{}: {}", what, s.error().message));
  }
  if (probe.host != c.host) {
    return InvalidArgument(
        fmt::format("{}: '{}' is a host scheme; a mix holds switch policies only", what, name));
  }
  const lb::PolicyKind k = probe.policy.kind;
  const lb::RemoteFeed feed =
      lb::WithPolicyType(k, [](auto t) { return lb::RemoteFeedOf<typename decltype(t)::type>(); });
  if (lb::HostChooses(k) || feed != lb::RemoteFeed::kNone) {
    return InvalidArgument(fmt::format("{}: '{}' needs every switch to run it and cannot be mixed",
                                       what, lb::PolicyName(k)));
  }
  return probe.policy;
}

}  // namespace

std::string_view PlacementName(Placement p) {
  if (p == Placement::kAll) return "all";
  if (p == Placement::kTiers) return "tiers";
  return kPlacementNames[static_cast<size_t>(p) - static_cast<size_t>(Placement::kRandomSwitches)];
}

Result<Placement> ParsePlacement(std::string_view name) {
  for (size_t i = 0; i < kPlacementNames.size(); ++i) {
    if (kPlacementNames[i] == name) {
      return static_cast<Placement>(i + static_cast<size_t>(Placement::kRandomSwitches));
    }
  }
  return InvalidArgument(fmt::format("--lb-placement: unknown placement '{}' (expected {})", name,
                                     fmt::join(kPlacementNames, "|")));
}

Status ApplyLbTiers(std::string_view spec, SimConfig& c) {
  if (c.mix.placement != Placement::kAll) return InvalidArgument("--lb-tiers: one mix per run");
  LbMix mix;
  mix.placement = Placement::kTiers;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t end = std::min(spec.find(',', start), spec.size());
    const std::string_view item = spec.substr(start, end - start);
    start = end + 1;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) {
      return InvalidArgument(
          fmt::format("--lb-tiers: '{}' is not TIER=POLICY (e.g. edge=4ofan,agg=ar)", item));
    }
    const std::string_view tier = item.substr(0, eq), name = item.substr(eq + 1);
    const auto it = std::find(kTierNames.begin(), kTierNames.end(), tier);
    if (it == kTierNames.end()) {
      return InvalidArgument(fmt::format("--lb-tiers: unknown tier '{}' (expected {})", tier,
                                         fmt::join(kTierNames, "|")));
    }
    const auto i = static_cast<size_t>(it - kTierNames.begin());
    if (mix.has_tier[i])
      return InvalidArgument(fmt::format("--lb-tiers: tier '{}' given twice", tier));
    auto p = MixPolicy("--lb-tiers", name, c);
    if (!p) return p.error();
    mix.tier[i] = *p;
    mix.has_tier[i] = true;
    mix.tier_name[i] = std::string(name);
  }
  c.mix = std::move(mix);
  return {};
}

Status ApplyLbPlacement(std::string_view name, std::string_view rest, SimConfig& c) {
  if (c.mix.placement != Placement::kAll) return InvalidArgument("--lb-placement: one mix per run");
  auto pl = ParsePlacement(name);
  if (!pl) return pl.error();
  auto p = MixPolicy("--lb-rest", rest, c);
  if (!p) return p.error();
  c.mix.placement = *pl;
  c.mix.rest = *p;
  c.mix.rest_name = std::string(rest);
  return {};
}

Status ValidateMix(const SimConfig& c) {
  if (!c.mix.mixed()) return {};
  if (c.levels != 3) {
    return InvalidArgument(
        fmt::format("--lb-{} needs a 3-level fat tree (--levels 3)",
                    c.mix.placement == Placement::kTiers ? "tiers" : "placement"));
  }
  // --lb itself is one of the mix's policies.
  if (auto p = MixPolicy("--lb", lb::PolicyName(c.policy.kind), c); !p) return p.error();
  for (const lb::PolicyConfig& p : SwitchPolicies(c, *lb::FatTree::Make(c.k, c.levels))) {
    if (p.kind == lb::PolicyKind::kPofan &&
        (p.pipe_size == 0 || p.pipe_size > static_cast<uint32_t>(c.k))) {
      return InvalidArgument(
          fmt::format("a mix's POfan pipe size must be in [1, k={}], got {}", c.k, p.pipe_size));
    }
  }
  return {};
}

std::vector<lb::PolicyConfig> SwitchPolicies(const SimConfig& c, const lb::FatTree& t) {
  const auto ns = static_cast<size_t>(t.num_switches());
  // Which switches run c.policy (placed); the tunables are c.policy's.
  auto as = [&](const lb::PolicyConfig& p) {
    lb::PolicyConfig out = c.policy;
    out.kind = p.kind;
    out.pipe_size = p.pipe_size;
    return out;
  };
  std::vector<lb::PolicyConfig> out(ns, c.policy);
  const LbMix& m = c.mix;
  if (m.placement == Placement::kTiers) {
    for (size_t s = 0; s < ns; ++s) {
      const auto role = static_cast<size_t>(t.info(lb::SwitchId(static_cast<uint32_t>(s))).role);
      if (m.has_tier[role]) out[s] = as(m.tier[role]);
    }
    return out;
  }
  std::vector<bool> placed(ns, false);
  Rng rng(SplitMix64(c.seed) ^ 0x91ACE0ull);  // its own stream (placement.h)
  // A uniformly drawn half of `items` (Fisher-Yates, first half).
  auto half = [&](std::vector<uint32_t> items) {
    for (size_t i = 0; i + 1 < items.size(); ++i) {
      std::swap(items[i], items[i + rng.Below(static_cast<uint32_t>(items.size() - i))]);
    }
    items.resize(items.size() / 2);
    return items;
  };
  const auto edges = static_cast<uint32_t>(t.num_edges());
  const auto lb_switches = edges + static_cast<uint32_t>(t.num_aggs());
  switch (m.placement) {
    case Placement::kEdge:
      for (uint32_t s = 0; s < edges; ++s) placed[s] = true;
      break;
    case Placement::kAgg:
      for (uint32_t s = edges; s < lb_switches; ++s) placed[s] = true;
      break;
    case Placement::kRandomSwitches: {
      std::vector<uint32_t> all(lb_switches);
      std::iota(all.begin(), all.end(), 0u);
      for (const uint32_t s : half(std::move(all))) placed[s] = true;
      break;
    }
    case Placement::kRandomPods: {
      std::vector<uint32_t> pods(static_cast<size_t>(t.num_pods()));
      std::iota(pods.begin(), pods.end(), 0u);
      std::vector<bool> pod_placed(pods.size(), false);
      for (const uint32_t p : half(std::move(pods))) pod_placed[p] = true;
      for (uint32_t s = 0; s < lb_switches; ++s) {
        placed[s] = pod_placed[static_cast<size_t>(t.info(lb::SwitchId(s)).pod)];
      }
      break;
    }
    case Placement::kAll:
    case Placement::kTiers:
      break;
  }
  for (size_t s = 0; s < ns; ++s) {
    if (!placed[s]) out[s] = as(m.rest);
  }
  return out;
}

}  // namespace ofan::sim
