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

namespace ofan::dp {

// The pause time a received PFC/PAUSE frame asks of class `priority`, in
// quanta (0 = resume); nullopt if it does not concern that class or is cut
// short. 802.3x PAUSE pauses every class.
std::optional<uint32_t> ReceivedPauseQuanta(std::span<const uint8_t> frame, uint8_t priority);

// A received MAC control frame (parse said kPfc), read for our class.
// kMalformed: cut short, or, with `strict` (PFC enabled on the port), a
// class-enable vector that is empty or names a priority without PFC here:
// counted (drop_pfc_malformed) and ignored.
enum class PauseRx : uint8_t { kOurs, kNotOurs, kMalformed };
struct ReceivedPause {
  PauseRx kind = PauseRx::kMalformed;
  uint32_t quanta = 0;  // kOurs: the pause asked (0 = resume)
};
ReceivedPause ReadPause(std::span<const uint8_t> frame, uint8_t priority, bool strict);

// Padded to Ethernet's minimum, as a NIC sends it (fabric/pfc.h: the
// simulator's PFC frame is this one).
inline constexpr size_t kPfcFrameBytes = fabric::kPfcFrameBytes;
static_assert(sizeof(pkt::EtherHdr) + sizeof(pkt::PfcFrame) <= kPfcFrameBytes);
// A PFC frame from `src` pausing (quanta > 0) or resuming (0) one class.
std::array<uint8_t, kPfcFrameBytes> BuildPfcFrame(const pkt::MacAddr& src, uint8_t priority,
                                                  uint16_t quanta);

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
