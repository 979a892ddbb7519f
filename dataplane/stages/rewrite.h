// Stage 4: rewrite, as an IP router does (RFC 1812 §5.3.1, §5.3.5), in two
// halves that the worker runs at different points of its vector pass.
//
// expects:   TtlExpires / DecrementTtl: an IPv4 header that passed parse (in
//            bounds, checksum ok), routed up or down (not to the switch
//            itself); DecrementLiveTtl: the same, TtlExpires false; SetMacs:
//            the frame and its output port's MAC pair
// modifies:  DecrementLiveTtl / DecrementTtl: TTL - 1 with an incremental
//            checksum update (RFC 1624); SetMacs: Ethernet dst (the next
//            hop's) and src (the output port's); CE marking is egress's
//            (egress/mark.h)
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

}  // namespace ofan::dp
