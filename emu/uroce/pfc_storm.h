// `uroce pfc-storm`: a host's NIC gone bad, as a PFC storm comes from one.
// For --for-ms it sends XOFF for the lossless priority, each asking the
// longest pause (65,535 quanta), every --every-us, from the interface's own
// MAC on an AF_PACKET socket, then stops (no XON: a broken NIC just goes
// quiet). The per-switch engine's storms (`ofan-emu fault --pfc-storm`);
// the shared engine's NICs storm inside the engine (dataplane/engine.cc).
//
// expects:  root; --netns NS and --iface (default eth0) in it
// gives:    the frames on the wire (tcpdump, the edge's pfc_rx and
//           watchdog); one JSON object with --json (ok, frames, sent_ms,
//           interface, priority); exit 0, 1 (the socket failed), 2 (bad
//           arguments)
// frames:   dataplane/packet/pfc_frame.h's BuildPfcFrame, the switches' own
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace ofan::uroce {

struct PfcStormOptions {
  std::string netns, iface = "eth0";
  uint32_t for_ms = 0;
  uint32_t priority = 3;
  uint32_t every_us = 1000;  // as the shared engine's storms: one a millisecond
  bool json = false;
};

// Registers `pfc-storm` on app, filling *o.
CLI::App* AddPfcStormCommand(CLI::App& app, PfcStormOptions* o);
int RunPfcStorm(const PfcStormOptions& o);

}  // namespace ofan::uroce
