#include "dataplane/stages/parse.h"

namespace ofan::dp {

ParsedPacket ParseFrame(const uint8_t* d, uint32_t len) {
  ParsedPacket p;
  ParseFrameInto(d, len, p);
  return p;
}

ParsedPacket ParseFrameReference(const uint8_t* d, uint32_t len) {
  ParsedPacket p;
  detail::ParseInto(d, len, p);
  return p;
}

void ParseBurst(const uint8_t* const* data, const uint16_t* len, uint32_t n, ParsedPacket* out) {
  constexpr uint32_t kAhead = 4;
  for (uint32_t i = 0; i < n && i < kAhead; ++i) __builtin_prefetch(data[i]);
  for (uint32_t i = 0; i < n; ++i) {
    if (i + kAhead < n) __builtin_prefetch(data[i + kAhead]);
    ParseFrameInto(data[i], len[i], out[i]);
  }
}

}  // namespace ofan::dp
