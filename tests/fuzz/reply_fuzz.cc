// libFuzzer target: what ofanctl does with a reply line from a switch (or
// from anything listening on the socket). ParseReply must accept or refuse
// with a message; every rendering of an accepted result must produce text or
// throw nlohmann::json's exceptions (ofanctl reports those, exit 3), never
// crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "control/client/client.h"
#include "control/ofanctl/render.h"

namespace {

template <class F>
void Render(F&& f) {
  try {
    (void)f();
  } catch (const nlohmann::json::exception&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ofan::control;
  const std::string line(reinterpret_cast<const char*>(data), size);
  auto r = ParseReply(line);
  if (!r.ok()) {
    if (r.error().message.empty()) __builtin_trap();
    return 0;
  }
  if (!r->ok) return 0;  // ofanctl prints the error as it is
  const nlohmann::json& j = r->result;
  const uint32_t key = size > 0 ? data[0] : 0;
  Render([&] { return RenderVersion(j); });
  Render([&] { return RenderStatus(j); });
  Render([&] { return RenderCounters(j, key & 1); });
  Render([&] { return RenderPorts(j); });
  Render([&] { return RenderQueues(j); });
  Render([&] { return RenderPointers(j); });
  Render([&] { return RenderPointers(j, key); });
  Render([&] { return RenderPolicyLine(j); });
  Render([&] { return RenderPortLine(j, key % 8); });
  return 0;
}
