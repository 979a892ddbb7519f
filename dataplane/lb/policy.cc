#include "dataplane/lb/policy.h"

#include <fmt/format.h>

#include <array>

namespace ofan::lb {
namespace {

constexpr std::array<std::string_view, kNumPolicyKinds> kNames = {
    "ecmp", "eecmp", "pin", "rps", "rr", "jsq", "ar", "drill", "flowlet", "ofan", "pofan", "source",
};

}  // namespace

std::string_view PolicyName(PolicyKind k) { return kNames[static_cast<size_t>(k)]; }

std::string_view PolicyNameList() {
  return "ecmp|eecmp|pin|rps|rr|jsq|ar|drill|flowlet|ofan|pofan|source";
}

Result<PolicyKind> ParsePolicy(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<PolicyKind>(i);
  }
  if (name == "simplerr" || name == "simple-rr") return PolicyKind::kSimpleRr;
  if (name == "e-ecmp") return PolicyKind::kEEcmp;
  return MakeError(
      ErrorCode::kInvalidArgument,
      fmt::format("unknown LB policy '{}' (expected one of {})", name, PolicyNameList()));
}

}  // namespace ofan::lb
