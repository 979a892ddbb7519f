// Frames the stage tests build for themselves (the golden fixtures are in
// tests/golden/): two MACs, dotted addresses, a RoCE frame whose fields a
// test varies, and the parse of a frame held in a vector.
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/packet/builder.h"
#include "dataplane/stages/parse.h"

namespace ofan::dp::testing {

inline constexpr pkt::MacAddr kA{{0x02, 0, 0, 0, 0, 0xA}};
inline constexpr pkt::MacAddr kB{{0x02, 0, 0, 0, 0, 0xB}};

constexpr uint32_t Ip(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return a << 24 | b << 16 | c << 8 | d;
}

// 10.0.0.2 -> 10.3.1.3, UDP 0xC000 -> 4791, BTH with PSN 7.
inline std::vector<uint8_t> Roce(uint8_t opcode, uint32_t qp = 0x123456, uint8_t tos = 2,
                                 uint8_t ttl = 64, uint32_t payload = 256) {
  return pkt::PacketBuilder()
      .Eth(kB, kA)
      .Ipv4(Ip(10, 0, 0, 2), Ip(10, 3, 1, 3), ttl, tos)
      .Udp(0xC000, pkt::kRoceV2Port)
      .Bth(opcode, qp, 7)
      .Payload(payload)
      .Build();
}

inline ParsedPacket Parse(const std::vector<uint8_t>& f) {
  return ParseFrame(f.data(), static_cast<uint32_t>(f.size()));
}

}  // namespace ofan::dp::testing
