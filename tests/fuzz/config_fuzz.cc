// libFuzzer target: ofan-dp's YAML configuration. Any text must end in a
// config or a clear error, never a crash; a config that then passes
// Validate() (what ofan-dp runs after the command line) must describe a
// switch and ports that exist in its fat tree.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dataplane/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto c = ofan::dp::ParseConfigYaml(text);
  if (!c.ok()) {
    if (c.error().message.empty()) __builtin_trap();
    return 0;
  }
  // The command line may still complete it (ports, say): Validate() decides,
  // with a message when it refuses.
  if (const auto v = c->Validate(); !v.ok()) {
    if (v.error().message.empty()) __builtin_trap();
    return 0;
  }
  const ofan::lb::FatTree tree = c->tree();
  if (c->switch_id >= static_cast<uint32_t>(tree.num_switches())) __builtin_trap();
  for (const auto& p : c->ports) {
    if (p.port >= static_cast<uint32_t>(c->k) || p.dev.empty()) __builtin_trap();
  }
  return 0;
}
