#include "control/agent/json_input.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "common/json_text.h"

namespace ofan::agent {
namespace {

// Length of the UTF-8 sequence starting at s[i] (RFC 3629: no overlongs, no
// surrogates, nothing above U+10FFFF), or 0 when it is not one.
size_t Utf8Len(std::string_view s, size_t i) {
  const auto b = [&](size_t j) { return static_cast<uint8_t>(s[j]); };
  const uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t j = 2; j < n; ++j) {
    if (b(i + j) < 0x80 || b(i + j) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

Result<nlohmann::json> ParseJsonText(std::string_view text, std::string_view what) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<uint8_t>(text[i]);
    const size_t n = Utf8Len(text, i);
    if (n == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t')) {
      return InvalidArgument(fmt::format("{}: not text: byte 0x{:02x} at offset {}", what, c, i));
    }
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) {
        return InvalidArgument(
            fmt::format("{}: nested deeper than {} levels at offset {}", what, kMaxJsonDepth, i));
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
    i += n;
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return InvalidArgument(fmt::format("{}: empty input", what));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e999
    return InvalidArgument(fmt::format("{}: not JSON: {}", what, std::string(e.what())));
  }
}

std::string JsonSnippet(const nlohmann::json& j) {
  std::string s = JsonText(j);
  if (s.size() > 60) {
    size_t cut = 57;  // not inside a UTF-8 sequence: the message stays text
    while (cut > 0 && (static_cast<uint8_t>(s[cut]) & 0xC0) == 0x80) --cut;
    s = s.substr(0, cut) + "...";
  }
  return s;
}

}  // namespace ofan::agent
