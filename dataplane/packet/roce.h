// RoCEv2's invariant CRC (ICRC), computed and checked.
//
// expects:   an IPv4 datagram (RoceIcrc) or an Ethernet frame (RoceIcrcOk)
//            in memory, bounds as stated per function
// gives:     the ICRC as IBA Annex A17 and Linux rxe compute it, with zlib's
//            CRC-32 (the same polynomial, reflected, pre- and post-inverted)
//
// Shared by the switch's tests, the builder, and host-side RoCE engines:
// nothing here needs DPDK.
#pragma once

#include <cstdint>

#include "dataplane/packet/headers.h"

namespace ofan::pkt {

inline constexpr uint32_t kIcrcBytes = 4;

// The RoCEv2 ICRC of an IPv4 datagram `ip` whose first `len` bytes run from
// the IPv4 header to the end of the payload (the ICRC itself excluded):
// CRC-32 over 8 bytes of ones (the masked LRH), then the IPv4 and UDP headers
// with TOS, TTL, the IPv4 checksum and the UDP checksum set to ones, the BTH
// with FECN, BECN and its 6 reserved bits set to ones, and the rest. Requires
// len to cover the IPv4, UDP and BTH headers. On the wire the value is stored
// least significant byte first (as rxe and scapy store it).
uint32_t RoceIcrc(const uint8_t* ip, uint32_t len);

// The ICRC stored in the 4 bytes at p.
inline uint32_t LoadIcrc(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}
inline void StoreIcrc(uint8_t* p, uint32_t icrc) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(icrc >> (8 * i));
}

// True when `frame` (an Ethernet frame, untagged or with one 802.1Q tag) is
// a RoCEv2 packet (IPv4, not a fragment, UDP to port 4791, room for a BTH and
// an ICRC inside the IPv4 total length) whose ICRC is right. What a host
// checks before it believes a received packet; bytes after the IPv4 total
// length (Ethernet padding) are not covered.
bool RoceIcrcOk(const uint8_t* frame, uint32_t len);

}  // namespace ofan::pkt
