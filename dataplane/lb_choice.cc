#include "dataplane/lb_choice.h"

#include <fmt/format.h>

namespace ofan::dp {

std::string_view OfanModeName(OfanMode m) {
  switch (m) {
    case OfanMode::kAtomic:
      return "atomic";
    case OfanMode::kCombined:
      return "combined";
  }
  return "?";
}

Status ApplyOfanMode(std::string_view name, LbChoice& c) {
  if (name == "atomic") {
    c.mode = OfanMode::kAtomic;
  } else if (name == "combined") {
    c.mode = OfanMode::kCombined;
  } else if (name == "pofan") {
    if (c.kind == lb::PolicyKind::kOfan) c.kind = lb::PolicyKind::kPofan;
  } else {
    return MakeError(ErrorCode::kInvalidArgument,
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
