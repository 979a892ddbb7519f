// libFuzzer target: one line on ofan-dp's control socket. A real switch (a
// k=4 edge over ring ports, EAL without hugepages) answers every input; the
// reply must be a versioned object, an error must say something, and the line
// sent back must be JSON that parses to the same reply.
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ring.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/control_socket.h"
#include "dataplane/switch.h"

namespace {

std::unique_ptr<ofan::dp::Switch> MakeSwitch() {
  std::vector<std::string> args = {"control_fuzz",
                                   "--no-huge",
                                   "--no-shconf",
                                   "-m",
                                   "512",
                                   "--no-pci",
                                   "-l",
                                   "0",
                                   "--log-level=lib.eal:error",
                                   "--log-level=pmd.*:error"};
  std::vector<char*> argv;
  argv.reserve(args.size());
  for (auto& a : args) argv.push_back(a.data());
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
    std::fprintf(stderr, "control_fuzz: EAL initialisation failed\n");
    std::abort();
  }
  ofan::dp::DpConfig c;
  c.name = "fuzz";
  c.k = 4;
  c.levels = 3;
  c.max_sleep_us = 0;
  c.egress.ring_slots = 256;
  c.socket_path = "/tmp/ofan-control-fuzz.sock";  // never listened on
  for (uint32_t p = 0; p < 4; ++p) {
    const std::string base = "fz" + std::to_string(p);
    rte_ring* r = rte_ring_create(base.c_str(), 256, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (!r || rte_eth_from_rings(base.c_str(), &r, 1, &r, 1, 0) < 0) std::abort();
    ofan::dp::PortConfig pc;
    pc.port = p;
    pc.dev = "ring:" + base;
    c.ports.push_back(pc);
  }
  auto sw = ofan::dp::Switch::Create(c, 1);
  if (!sw.ok()) {
    std::fprintf(stderr, "control_fuzz: %s\n", sw.error().message.c_str());
    std::abort();
  }
  return std::move(*sw);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<ofan::dp::Switch> sw = MakeSwitch();
  const std::string line(reinterpret_cast<const char*>(data), size);
  const nlohmann::json reply = ofan::dp::HandleControlRequest(*sw, line);
  if (!reply.is_object() || reply.value("v", 0) != ofan::dp::kControlProtocolVersion) {
    __builtin_trap();
  }
  if (!reply.contains("ok") || !reply["ok"].is_boolean()) __builtin_trap();
  if (!reply["ok"].get<bool>() &&
      (!reply["error"].is_string() || reply["error"].get<std::string>().empty())) {
    __builtin_trap();
  }
  const std::string sent = ofan::dp::ControlReplyLine(reply);
  if (sent.empty() || sent.back() != '\n') __builtin_trap();
  const auto back = nlohmann::json::parse(sent, nullptr, /*allow_exceptions=*/false);
  if (back.is_discarded() || back["ok"] != reply["ok"]) __builtin_trap();
  return 0;
}
