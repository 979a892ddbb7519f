// PFC (802.1Qbb) and 802.3x PAUSE frames: reading one for a class, building
// one. Wire formats only (headers.h's PfcFrame), no switch: ofan-dp's egress
// (dataplane/egress/pfc.h), the shared engine's emulated host NICs and
// uroce's hosts read and build them with these.
//
// expects:  a frame from its Ethernet header (one optional 802.1Q tag)
// gives:    the pause it asks of one class, or whether it is malformed
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "dataplane/packet/headers.h"

namespace ofan::pkt {

// A PFC frame on the wire, without FCS: 14 B Ethernet header, 20 B of MAC
// control (opcode, class-enable vector, eight times), zero padding to
// Ethernet's 60 B minimum, as a NIC sends it.
inline constexpr uint32_t kPfcFrameBytes = 60;
static_assert(sizeof(EtherHdr) + sizeof(PfcFrame) <= kPfcFrameBytes);
// 802.1Qbb's pause quantum: 512 bit times of the link (64 bytes' time).
inline constexpr uint32_t kPfcQuantumBytes = 64;

// The pause time a received PFC/PAUSE frame asks of class `priority`, in
// quanta (0 = resume); nullopt if it does not concern that class or is cut
// short. 802.3x PAUSE pauses every class.
std::optional<uint32_t> ReceivedPauseQuanta(std::span<const uint8_t> frame, uint8_t priority);

// A received MAC control frame, read for our class. kMalformed: cut short,
// or, with `strict` (PFC enabled on the port), a class-enable vector that is
// empty or names a priority without PFC here.
enum class PauseRx : uint8_t { kOurs, kNotOurs, kMalformed };
struct ReceivedPause {
  PauseRx kind = PauseRx::kMalformed;
  uint32_t quanta = 0;  // kOurs: the pause asked (0 = resume)
};
ReceivedPause ReadPause(std::span<const uint8_t> frame, uint8_t priority, bool strict);

// A PFC frame from `src` pausing (quanta > 0) or resuming (0) one class.
std::array<uint8_t, kPfcFrameBytes> BuildPfcFrame(const MacAddr& src, uint8_t priority,
                                                  uint16_t quanta);

}  // namespace ofan::pkt
