#include "emu/uroce/pfc_storm.h"

#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/json_text.h"
#include "dataplane/fabric/pfc.h"
#include "dataplane/hostio/packet_io.h"
#include "dataplane/packet/pfc_frame.h"

namespace ofan::uroce {

CLI::App* AddPfcStormCommand(CLI::App& app, PfcStormOptions* o) {
  auto* s = app.add_subcommand(
      "pfc-storm", "send continuous PFC pause from a host's interface, as a broken NIC does");
  s->add_option("--netns", o->netns, "the host's network namespace ('' = this one)");
  s->add_option("--iface", o->iface, "the host's interface")->capture_default_str();
  s->add_option("--for-ms", o->for_ms, "how long the storm lasts")
      ->required()
      ->check(CLI::Range(1u, 3'600'000u));
  s->add_option("--priority", o->priority, "the paused priority (the fabric's lossless class)")
      ->check(CLI::Range(0u, 7u))
      ->capture_default_str();
  s->add_option("--every-us", o->every_us, "one XOFF this often")
      ->check(CLI::Range(10u, 1'000'000u))
      ->capture_default_str();
  s->add_flag("--json", o->json, "one JSON object on stdout");
  return s;
}

int RunPfcStorm(const PfcStormOptions& o) {
  auto fail = [&](const std::string& why) {
    std::cerr << "uroce pfc-storm: " << why << "\n";
    if (o.json) std::cout << JsonText({{"ok", false}, {"error", why}}) << "\n";
    return 1;
  };
  auto iface = hostio::ReadIface(o.netns, o.iface);
  if (!iface) return fail(iface.error().message);
  auto io = hostio::OpenAfPacket(*iface);
  if (!io) return fail(io.error().message);
  const auto frame =
      pkt::BuildPfcFrame(iface->mac, static_cast<uint8_t>(o.priority), fabric::kPfcMaxQuanta);
  const hostio::FrameView view{frame.data(), static_cast<uint32_t>(frame.size())};
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::milliseconds(o.for_ms);
  uint64_t frames = 0, refused = 0;
  for (Clock::time_point next = start; next < end; next += std::chrono::microseconds(o.every_us)) {
    if ((*io)->Send({&view, 1}) == 1) {
      ++frames;
    } else {
      ++refused;  // the socket's buffer is full: the next one goes in its turn
    }
    std::this_thread::sleep_until(std::min(next + std::chrono::microseconds(o.every_us), end));
  }
  const double sent_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (frames == 0) return fail(fmt::format("{}: no frame could be sent", o.iface));
  if (o.json) {
    std::cout << JsonText({{"ok", true},
                           {"frames", frames},
                           {"refused", refused},
                           {"sent_ms", sent_ms},
                           {"interface", o.iface},
                           {"priority", o.priority}})
              << "\n";
  } else {
    std::cout << fmt::format("uroce pfc-storm: {} XOFF frames on {} over {:.0f} ms\n", frames,
                             o.iface, sent_ms);
  }
  return 0;
}

}  // namespace ofan::uroce
