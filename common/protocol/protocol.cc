#include "common/protocol/protocol.h"

#include <fmt/ranges.h>

namespace ofan::control {

std::string DefaultSocketPath(std::string_view name) {
  return fmt::format("{}/{}.sock", kDefaultSocketDir, name);
}

const std::string& CommandList() {
  static const std::string list = fmt::format("{}", fmt::join(kCommandNames, ", "));
  return list;
}

std::string UnknownCommandMessage(std::string_view cmd) {
  return fmt::format("unknown command '{}' ({})", cmd, CommandList());
}

}  // namespace ofan::control
