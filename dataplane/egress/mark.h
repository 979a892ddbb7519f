// What egress edits in a forwarded frame: where its IPv4 header is
// (ForwardedL3Offset) and ECN's Congestion Experienced (MarkCe, RFC 3168
// §5, with the checksum adjusted as RFC 1624 says). Used by the port
// queues' ECN marking, PFC's lossless check and the reorder stage.
//
// expects:  a frame that parse forwarded (ParseInto accepted its framing)
// modifies: MarkCe: the TOS byte's ECN field and the IPv4 checksum
// next:     RoCEv2's ICRC masks TOS and the checksum: a marked RoCE packet
//           keeps its ICRC
#pragma once

#include <cstdint>

#include "dataplane/packet/headers.h"

namespace ofan::dp {

// Where the IPv4 header of a frame that parse forwarded starts: behind one
// VLAN tag, or right after the Ethernet header (ParseInto accepts no other
// framing). Egress finds it again this way rather than carrying it per
// packet from parse.
inline uint16_t ForwardedL3Offset(const uint8_t* frame) {
  return pkt::Rd16(frame + 12) == pkt::ethertype::kVlan ? 18 : 14;
}

// Sets CE on an ECT(0)/ECT(1) packet; returns false (and changes nothing)
// for Not-ECT or already-CE packets.
inline bool MarkCe(uint8_t* frame, uint16_t l3_offset) {
  uint8_t* ip = frame + l3_offset;
  const uint8_t tos = ip[1];
  const uint8_t e = tos & 3;
  if (e == pkt::ecn::kNotEct || e == pkt::ecn::kCe) return false;
  const uint16_t old_word = static_cast<uint16_t>(ip[0] << 8 | tos);
  const uint8_t new_tos = static_cast<uint8_t>(tos | pkt::ecn::kCe);
  const uint16_t new_word = static_cast<uint16_t>(ip[0] << 8 | new_tos);
  const uint16_t hc = static_cast<uint16_t>(ip[10] << 8 | ip[11]);
  const uint16_t nc = pkt::ChecksumAdjust(hc, old_word, new_word);
  ip[1] = new_tos;
  ip[10] = static_cast<uint8_t>(nc >> 8);
  ip[11] = static_cast<uint8_t>(nc);
  return true;
}

}  // namespace ofan::dp
