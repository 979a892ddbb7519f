// Stage 4: rewrite, as an IP router does (RFC 1812 §5.3.1, §5.3.5), in two
// halves that the worker runs at different points of its vector pass.
//
// expects:   TtlExpires / DecrementTtl: an IPv4 header that passed parse (in
//            bounds, checksum ok), routed up or down (not to the switch
//            itself); DecrementLiveTtl: the same, TtlExpires false; SetMacs:
//            the frame and its output port's MAC pair
// modifies:  DecrementLiveTtl / DecrementTtl: TTL - 1 with an incremental
//            checksum update (RFC 1624); SetMacs: Ethernet dst (the next
//            hop's) and src (the output port's); MarkCe (egress): ECN CE on
//            ECT packets
// next:      TtlExpires true (DecrementTtl false): the TTL expired; the frame
//            is not forwarded but goes, unchanged, to the exception path,
//            which answers ICMP Time Exceeded (vector.cc)
//
// RoCEv2's ICRC masks TTL, TOS and the IP checksum, so none of this changes
// it: a RoCE packet leaves with its ICRC intact.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "dataplane/packet/headers.h"

namespace ofan::dp {

// The two halves of the rewrite, which the worker runs at different points:
// the TTL (check before the LB, so an expiring packet takes no pointer; the
// decrement after it) in the per-packet pass, while the header is hot from
// parsing; the MACs once the output port is known.

// TTL - 1 and the checksum update of RFC 1624 eqn. 3: the word (TTL,
// protocol) drops by 0x0100, so HC' = ~(~HC + ~m + m') = ~(~HC + 0xFEFF).
// Computed on the checksum as loaded in host byte order: one's complement
// sums commute with swapping the bytes of every word, so on a little-endian
// host the constant is swapped (0xFFFE) and the field is never swapped.
inline bool TtlExpires(const uint8_t* ip) { return ip[8] <= 1; }
// Requires !TtlExpires(ip).
inline void DecrementLiveTtl(uint8_t* ip) {
  constexpr uint32_t kMinus0x100 = std::endian::native == std::endian::little
                                       ? 0xFFFEu
                                       : 0xFEFFu;  // ~0x0100 in the loaded order
  uint16_t hc;
  std::memcpy(&hc, ip + 10, 2);
  uint32_t sum = static_cast<uint16_t>(~hc) + kMinus0x100;
  sum = (sum & 0xFFFF) + (sum >> 16);  // one fold: sum <= 0x1FFFD
  const uint16_t nc = static_cast<uint16_t>(~sum);
  ip[8] = static_cast<uint8_t>(ip[8] - 1);
  std::memcpy(ip + 10, &nc, 2);
}
// False, and nothing changed, when the TTL would expire (<= 1).
inline bool DecrementTtl(uint8_t* ip) {
  if (TtlExpires(ip)) return false;
  DecrementLiveTtl(ip);
  return true;
}

// Destination MAC (the next hop's) then source MAC (the output port's), as
// they sit in the Ethernet header: one 12-byte copy per packet.
struct MacPair {
  uint8_t b[12];
  MacPair() = default;
  MacPair(const pkt::MacAddr& dst, const pkt::MacAddr& src) {
    std::memcpy(b, dst.b.data(), 6);
    std::memcpy(b + 6, src.b.data(), 6);
  }
};
static_assert(sizeof(MacPair) == 12);

inline void SetMacs(uint8_t* frame, const MacPair& m) { std::memcpy(frame, m.b, sizeof m.b); }

// Both halves, for one packet (the tests and the fuzz target).
inline bool RewriteForward(uint8_t* frame, uint16_t l3_offset, const pkt::MacAddr& src,
                           const pkt::MacAddr& dst) {
  if (!DecrementTtl(frame + l3_offset)) return false;
  SetMacs(frame, MacPair(dst, src));
  return true;
}

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
