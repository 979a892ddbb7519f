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

// Per port: has it sent XOFF? Decides, from the tally, what to send now
// (the per-switch engine's, polled; the shared engine's is exact:
// fabric/pfc.h's PfcIngress, with the same thresholds).
class PfcGenerator {
 public:
  enum class Action : uint8_t { kNone, kXoff, kXon };
  PfcGenerator() = default;
  explicit PfcGenerator(std::vector<fabric::PfcThresholds> th)
      : th_(std::move(th)), sent_xoff_(th_.size(), false) {}
  Action Step(uint32_t port, uint64_t ingress_bytes);

 private:
  std::vector<fabric::PfcThresholds> th_;
  std::vector<bool> sent_xoff_;
};

}  // namespace ofan::dp
