#include "dataplane/lb_choice.h"

#include <fmt/format.h>

namespace ofan::dp {

std::string_view OfanModeName(OfanMode m) {
  const auto i = static_cast<size_t>(m);
  return i < lb::kOfanModeNames.size() ? lb::kOfanModeNames[i] : "?";
}

Status ApplyOfanMode(std::string_view name, LbChoice& c) {
  if (name == lb::kOfanModeNames[static_cast<size_t>(OfanMode::kAtomic)]) {
    c.mode = OfanMode::kAtomic;
  } else if (name == lb::kOfanModeNames[static_cast<size_t>(OfanMode::kCombined)]) {
    c.mode = OfanMode::kCombined;
  } else if (name == "pofan") {
    if (c.kind == lb::PolicyKind::kOfan) c.kind = lb::PolicyKind::kPofan;
  } else {
    return InvalidArgument(
        fmt::format("unknown Ofan mode '{}' (expected atomic|combined, or pofan: "
                    "the same as policy pofan)",
                    name));
  }
  return {};
}

std::string_view ReportedOfanMode(const LbChoice& c) {
  return c.kind == lb::PolicyKind::kPofan ? "pofan" : OfanModeName(c.mode);
}

}  // namespace ofan::dp
