// libFuzzer target: an ofan-rc-1 line from a peer (emu/rcx/rc_exchange.h).
// Whatever arrives, ParseHello accepts it or refuses with a message, never
// crashes; what it accepts survives a round trip through the text a peer
// would be sent (the MAC, informational, may lose bytes that are not UTF-8).
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/json_text.h"
#include "emu/rcx/rc_exchange.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ofan::rcx;
  const std::string line(reinterpret_cast<const char*>(data), size);
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded()) return 0;
  auto h = ParseHello(j);
  if (!h.ok()) {
    if (h.error().message.empty()) __builtin_trap();
    return 0;
  }
  auto again = ParseHello(nlohmann::json::parse(ofan::JsonText(HelloJson(*h))));
  if (!again.ok()) __builtin_trap();
  again->mac = h->mac;
  if (!(*again == *h)) __builtin_trap();
  return 0;
}
