// JSON read from another program's output (lldpcli, ip -j): checked as text
// before nlohmann parses it, so that every way it can be wrong becomes one
// typed error with a message that names the program and the place.
//
// expects:  any bytes (a daemon's output, a file, a fuzzer's input)
// gives:    the parsed document, or kInvalidArgument naming `what` and the
//           first problem: bytes that are not UTF-8 text (with the offset),
//           nesting deeper than kMaxJsonDepth, or nlohmann's parse error
// why:      both parsers of the agent (lldp_neighbors, route_masks) read
//           untrusted text; one gate keeps their errors alike (docs/design.md,
//           rule 9) and bounds the depth that nlohmann's recursive visitors
//           (dump, comparison) would otherwise follow into a stack overflow.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/result.h"

namespace ofan::agent {

// lldpcli's json0 nests 7 deep and ip -j 4; 64 leaves room for new fields.
inline constexpr int kMaxJsonDepth = 64;

Result<nlohmann::json> ParseJsonText(std::string_view text, std::string_view what);

// A short rendering of a JSON value for an error message (at most ~60 bytes).
std::string JsonSnippet(const nlohmann::json& j);

}  // namespace ofan::agent
