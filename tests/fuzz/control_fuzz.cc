// libFuzzer target: one line on ofan-dp's control socket. A real switch (a
// k=4 edge over ring ports, EAL without hugepages) answers every input; the
// reply must be a versioned object, an error must say something, and the line
// sent back must be JSON that parses to the same reply.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dataplane/control_socket.h"
#include "tests/fuzz/fuzz_switch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ofan::dp::fuzz::FuzzSwitch f = ofan::dp::fuzz::MakeFuzzSwitch();
  const std::string line(reinterpret_cast<const char*>(data), size);
  const nlohmann::json reply = ofan::dp::HandleControlRequest(*f.sw, line);
  if (!reply.is_object() || reply.value("v", 0) != ofan::control::kProtocolVersion) {
    __builtin_trap();
  }
  if (!reply.contains("ok") || !reply["ok"].is_boolean()) __builtin_trap();
  if (!reply["ok"].get<bool>() &&
      (!reply["error"].is_string() || reply["error"].get<std::string>().empty() ||
       !reply["code"].is_string() ||
       !ofan::control::ParseReplyError(reply["code"].get<std::string>()))) {
    __builtin_trap();
  }
  const std::string sent = ofan::dp::ControlReplyLine(reply);
  if (sent.empty() || sent.back() != '\n') __builtin_trap();
  const auto back = nlohmann::json::parse(sent, nullptr, /*allow_exceptions=*/false);
  if (back.is_discarded() || back["ok"] != reply["ok"]) __builtin_trap();
  return 0;
}
