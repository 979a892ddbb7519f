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
// Generation runs on the control thread, off the fast path, at its polling
// rate: a port sends XOFF when the bytes queued anywhere in the switch that
// arrived on it pass xoff, and XON when they fall below xon.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "dataplane/packet/headers.h"

namespace ofan::dp {

// The pause time a received PFC/PAUSE frame asks of class `priority`, in
// quanta (0 = resume); nullopt if it does not concern that class or is cut
// short. 802.3x PAUSE pauses every class.
std::optional<uint32_t> ReceivedPauseQuanta(std::span<const uint8_t> frame, uint8_t priority);

inline constexpr size_t kPfcFrameBytes = sizeof(pkt::EtherHdr) + sizeof(pkt::PfcFrame);
// A PFC frame from `src` pausing (quanta > 0) or resuming (0) one class.
std::array<uint8_t, kPfcFrameBytes> BuildPfcFrame(const pkt::MacAddr& src, uint8_t priority,
                                                  uint16_t quanta);

// Per port: has it sent XOFF? Decides, from the tally, what to send now.
class PfcGenerator {
 public:
  enum class Action : uint8_t { kNone, kXoff, kXon };
  PfcGenerator() = default;
  PfcGenerator(uint32_t ports, uint64_t xoff_bytes, uint64_t xon_bytes)
      : xoff_(xoff_bytes), xon_(xon_bytes), sent_xoff_(ports, false) {}
  Action Step(uint32_t port, uint64_t ingress_bytes);

 private:
  uint64_t xoff_ = 0, xon_ = 0;
  std::vector<bool> sent_xoff_;
};

}  // namespace ofan::dp
