#include "dataplane/lb/policy.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace ofan::lb {
namespace {

// The other names of a row, one at a time.
template <class F>
void ForEachAlias(std::string_view aliases, F&& f) {
  while (!aliases.empty()) {
    const size_t sp = aliases.find(' ');
    const std::string_view a = aliases.substr(0, sp);
    if (!a.empty()) f(a);
    if (sp == std::string_view::npos) break;
    aliases.remove_prefix(sp + 1);
  }
}

}  // namespace

std::string_view PolicyNameList() {
  static const std::string list = [] {
    std::string s;
    for (const PolicyInfo& p : kPolicies) {
      if (!s.empty()) s += '|';
      s += p.name;
    }
    return s;
  }();
  return list;
}

Result<PolicyKind> ParsePolicy(std::string_view name) {
  for (const PolicyInfo& p : kPolicies) {
    if (p.name == name) return p.kind;
  }
  for (const PolicyInfo& p : kPolicies) {
    bool hit = false;
    ForEachAlias(p.aliases, [&](std::string_view a) { hit = hit || a == name; });
    if (hit) return p.kind;
  }
  return InvalidArgument(
      fmt::format("unknown LB policy '{}' (expected one of {})", name, PolicyNameList()));
}

std::string PolicyListText() {
  size_t width = 0;
  for (const PolicyInfo& p : kPolicies) width = std::max(width, p.name.size());
  std::string out;
  for (const PolicyInfo& p : kPolicies) {
    out += fmt::format("{:<{}}  {}", p.name, width, p.help);
    if (!p.aliases.empty()) out += fmt::format(" (also: {})", p.aliases);
    out += '\n';
  }
  return out;
}

nlohmann::json PolicyListJson() {
  nlohmann::json list = nlohmann::json::array();
  for (const PolicyInfo& p : kPolicies) {
    nlohmann::json aliases = nlohmann::json::array();
    ForEachAlias(p.aliases, [&](std::string_view a) { aliases.push_back(a); });
    list.push_back({{"name", p.name},
                    {"aliases", aliases},
                    {"queue_aware", (p.flags & kPolicyQueueAware) != 0},
                    {"host_chooses", (p.flags & kPolicyHostChooses) != 0},
                    {"modes", p.kind == PolicyKind::kOfan ? nlohmann::json(kOfanModeNames)
                                                          : nlohmann::json::array()},
                    {"help", p.help}});
  }
  return list;
}

}  // namespace ofan::lb
