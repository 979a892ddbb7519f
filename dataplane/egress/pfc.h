// PFC (802.1Qbb) and 802.3x PAUSE, both directions, for the egress stage.
//
// expects:   received: a frame parse marked kPfc (MAC control ethertype,
//            opcode PFC or PAUSE, long enough); generated: the IngressTally
//            of the switch's queues
// modifies:  received: the PortQueue of the port it came in on (its normal
//            queue pauses for the frame's quanta of our class); generated:
//            nothing but the xoff state per port
// next:      generated PFC frames go out through ControlSender (the port's
//            priority queue), counted kPfcTx
//
// Generation (the per-switch engine) runs on the control thread, off the
// fast path, at its polling rate: a port sends XOFF when the bytes queued
// anywhere in the switch that arrived on it pass xoff, and XON when they
// fall to xon. The shared engine decides in emulated time instead
// (fabric/pfc.h, egress/emu_pfc.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "dataplane/fabric/pfc.h"
#include "dataplane/packet/headers.h"
#include "dataplane/packet/pfc_frame.h"

namespace ofan::dp {

// The frames themselves: dataplane/packet/pfc_frame.h.
using pkt::BuildPfcFrame;
using pkt::PauseRx;
using pkt::ReadPause;
using pkt::ReceivedPause;
using pkt::ReceivedPauseQuanta;
inline constexpr size_t kPfcFrameBytes = pkt::kPfcFrameBytes;

// Per port: has it sent XOFF, and when? Decides, from the tally, what to
// send now (the per-switch engine's, polled; the shared engine's is exact:
// fabric/pfc.h's PfcIngress, with the same thresholds and the same
// refresh): XOFF above xoff, again every `refresh` (half the pause it asks)
// while above xon, so that the peer never resumes while the port is still
// full; XON at or below xon.
class PfcGenerator {
 public:
  enum class Action : uint8_t { kNone, kXoff, kXon };
  PfcGenerator() = default;
  // Per port: thresholds and refresh interval (ps, 0: never refresh).
  PfcGenerator(std::vector<fabric::PfcThresholds> th, std::vector<fabric::TimePs> refresh)
      : th_(std::move(th)),
        refresh_(std::move(refresh)),
        sent_xoff_(th_.size(), false),
        next_refresh_(th_.size(), 0) {
    refresh_.resize(th_.size(), 0);
  }
  // At `now` (ps, non-decreasing per port).
  Action Step(uint32_t port, uint64_t ingress_bytes, fabric::TimePs now);
  // Whether the port's last word was XOFF.
  bool xoff(uint32_t port) const { return port < sent_xoff_.size() && sent_xoff_[port]; }

 private:
  std::vector<fabric::PfcThresholds> th_;
  std::vector<fabric::TimePs> refresh_;
  std::vector<bool> sent_xoff_;
  std::vector<fabric::TimePs> next_refresh_;
};

}  // namespace ofan::dp
