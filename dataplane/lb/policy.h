// The LB policy interface shared by the dataplane and the simulator.
//
// Every policy answers one question: which uplink for this packet. A policy is
// a plain class with
//     uint8_t Pick(const PacketKey& key, LbView& view);
// returning an uplink index, or kNoUplink when the key has no valid uplink.
// Policies are chosen once per switch: the simulator instantiates its switch
// type per policy (template), the dataplane dispatches once per burst
// (any_policy.h). There is no per-packet virtual call anywhere.
//
// Which policies exist, their names and help: policy_list.h, the one list.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "common/result.h"
#include "dataplane/lb/packet_key.h"
#include "dataplane/lb/policy_list.h"
#include "dataplane/lb/policy_params.h"
#include "dataplane/lb/types.h"
#include "dataplane/lb/uplink_table.h"

namespace ofan::lb {

enum class PolicyKind : uint8_t {
#define OFAN_LB_POLICY_ENUM(e, cls, name, aliases, flags, help) e,
  OFAN_LB_POLICIES(OFAN_LB_POLICY_ENUM)
#undef OFAN_LB_POLICY_ENUM
};

// One row of the list, as the program sees it.
struct PolicyInfo {
  PolicyKind kind;
  std::string_view name;
  std::string_view aliases;  // other names ParsePolicy accepts, space separated
  unsigned flags;            // kPolicyQueueAware | kPolicyHostChooses
  std::string_view help;
};

inline constexpr std::array kPolicies = {
#define OFAN_LB_POLICY_INFO(e, cls, name, aliases, flags, help) \
  PolicyInfo{PolicyKind::e, name, aliases, flags, help},
    OFAN_LB_POLICIES(OFAN_LB_POLICY_INFO)
#undef OFAN_LB_POLICY_INFO
};
inline constexpr int kNumPolicyKinds = static_cast<int>(kPolicies.size());

// The kind of a policy class: kKindOf<Ecmp> == PolicyKind::kEcmp. A class
// that is not in the list has no PolicyKindOf and does not compile here.
template <class P>
struct PolicyKindOf;
#define OFAN_LB_POLICY_KIND_OF(e, cls, name, aliases, flags, help) \
  template <>                                                      \
  struct PolicyKindOf<cls> {                                       \
    static constexpr PolicyKind value = PolicyKind::e;             \
  };
OFAN_LB_POLICIES(OFAN_LB_POLICY_KIND_OF)
#undef OFAN_LB_POLICY_KIND_OF
template <class P>
inline constexpr PolicyKind kKindOf = PolicyKindOf<P>::value;

constexpr const PolicyInfo& Info(PolicyKind k) { return kPolicies[static_cast<size_t>(k)]; }
constexpr std::string_view PolicyName(PolicyKind k) { return Info(k).name; }
// True for policies that read LbView::queue_bytes.
constexpr bool IsQueueAware(PolicyKind k) { return (Info(k).flags & kPolicyQueueAware) != 0; }
// True for policies that follow a choice the source host made.
constexpr bool HostChooses(PolicyKind k) { return (Info(k).flags & kPolicyHostChooses) != 0; }

// Ofan's ways of sharing its pointers among worker lcores (§5.1, App. I;
// ofan-dp's lb.ofan_mode, dp::OfanMode in this order): the only policy with
// modes, which --list-policies --json lists as its "modes".
inline constexpr std::array<std::string_view, 2> kOfanModeNames = {"atomic", "combined"};

// The name or one of the other names of a policy.
Result<PolicyKind> ParsePolicy(std::string_view name);
// The names, "ecmp|eecmp|...", for --help texts and error messages.
std::string_view PolicyNameList();
// What --list-policies prints: one line per policy (name, other names, help),
// or as JSON: [{"name", "aliases": [...], "queue_aware", "host_chooses",
// "modes": [...], "help"}, ...] in the list's order.
std::string PolicyListText();
nlohmann::json PolicyListJson();
// The help line of a --list-policies flag, the same in every binary.
inline constexpr std::string_view kListPoliciesHelp =
    "print the LB policies this build knows (with --json: as JSON) and exit";

struct PolicyConfig : PolicyParams {
  PolicyKind kind = PolicyKind::kOfan;
};

}  // namespace ofan::lb
