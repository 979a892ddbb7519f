// Stage 4: rewrite, as an IP router does (RFC 1812 §5.3.1, §5.3.5).
//
// expects:   an IPv4 frame that passed parse (header in bounds, checksum ok)
//            and an output port
// modifies:  Ethernet src (the output port's MAC) and dst (the next hop's),
//            TTL - 1 with an incremental checksum update (RFC 1624);
//            MarkCe sets ECN CE on ECT packets, also incrementally
// next:      false if the TTL expired (counted drop, no ICMP is generated)
//
// RoCEv2's ICRC masks TTL, TOS and the IP checksum, so none of this changes
// it: a RoCE packet leaves with its ICRC intact.
#pragma once

#include <cstdint>
#include <cstring>

#include "dataplane/packet/headers.h"

namespace ofan::dp {

inline bool RewriteForward(uint8_t* frame, uint16_t l3_offset, const pkt::MacAddr& src,
                           const pkt::MacAddr& dst) {
  uint8_t* ip = frame + l3_offset;
  const uint8_t ttl = ip[8];
  if (ttl <= 1) return false;
  // TTL shares a 16-bit word with the protocol field.
  const uint16_t old_word = static_cast<uint16_t>(ttl << 8 | ip[9]);
  const uint16_t new_word = static_cast<uint16_t>((ttl - 1) << 8 | ip[9]);
  const uint16_t hc = static_cast<uint16_t>(ip[10] << 8 | ip[11]);
  const uint16_t nc = pkt::ChecksumAdjust(hc, old_word, new_word);
  ip[8] = static_cast<uint8_t>(ttl - 1);
  ip[10] = static_cast<uint8_t>(nc >> 8);
  ip[11] = static_cast<uint8_t>(nc);
  std::memcpy(frame, dst.b.data(), 6);
  std::memcpy(frame + 6, src.b.data(), 6);
  return true;
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
