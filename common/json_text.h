// JSON as text for what leaves a program (socket lines, stdout, files).
// Strings may carry bytes that are not UTF-8 (a parse error quotes the input,
// a path is whatever the user typed); nlohmann's dump() throws on those, so
// they are written as U+FFFD instead.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ofan {

// indent < 0: one line; otherwise pretty-printed with that many spaces.
inline std::string JsonText(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ofan
