// PacketKey: the LB's view of one packet at one switch. The dataplane fills it
// from the parsed headers (parse stage), the simulator from its packet record.
// Everything a policy may look at is here; nothing else of the packet is.
#pragma once

#include <cstdint>

#include "dataplane/lb/types.h"

namespace ofan::lb {

struct PacketKey {
  uint32_t flow_hash = 0;             // 5-tuple hash, or the host's entropy (UDP sport)
  uint32_t dst_qp = 0;                // RoCEv2 BTH destination QP (24 bits), E-ECMP
  uint16_t dest = 0;                  // d: destination edge (at an edge) or pod (at an agg)
  uint16_t key = 0;                   // pointer key d + Nd * size class (App. F.2, Eq. 16)
  uint16_t frame_bytes = 0;           // wire size, for queue-aware policies
  uint8_t slice = 0;                  // destination host's edge port: path pinning
  uint8_t pipe = 0;                   // ingress pipe: POfan's table index
  uint8_t source_uplink = kNoUplink;  // host-chosen uplink (DRB source routing)
  SizeClass cls = SizeClass::kData;
  uint8_t reserved[2] = {0, 0};
};
static_assert(sizeof(PacketKey) == 20);

// Mixes a hash with a per-switch salt so that switches at successive levels
// do not make correlated ECMP choices (hash polarisation).
constexpr uint32_t MixHash(uint32_t h, uint32_t salt) {
  uint32_t x = h ^ salt;
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return x;
}

}  // namespace ofan::lb
