#include "dataplane/packet/roce.h"

#include <algorithm>

#include "dataplane/packet/crc32.h"

namespace ofan::pkt {
namespace {

// The largest IPv4 header (IHL 15) and the UDP header and BTH behind it: the
// part of the datagram whose masked copy the CRC runs over.
constexpr uint32_t kMaxMasked = 60 + sizeof(UdpHdr) + sizeof(BthHdr);

}  // namespace

uint32_t RoceIcrc(const uint8_t* ip, uint32_t len) {
  const uint32_t ihl = (ip[0] & 0xFu) * 4u;
  const uint32_t udp = ihl, bth = ihl + sizeof(UdpHdr);
  const uint32_t masked_len = bth + sizeof(BthHdr);
  // Only the headers are copied to be masked; the payload is summed in place.
  uint8_t m[kMaxMasked];
  std::copy(ip, ip + masked_len, m);
  m[offsetof(Ipv4Hdr, tos)] = 0xFF;
  m[offsetof(Ipv4Hdr, ttl)] = 0xFF;
  m[offsetof(Ipv4Hdr, checksum)] = m[offsetof(Ipv4Hdr, checksum) + 1] = 0xFF;
  m[udp + offsetof(UdpHdr, checksum)] = m[udp + offsetof(UdpHdr, checksum) + 1] = 0xFF;
  m[bth + offsetof(BthHdr, dest_qp)] = 0xFF;  // FECN, BECN, reserved
  static constexpr uint8_t kLrh[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  uint32_t crc = Crc32(0, kLrh, sizeof kLrh);
  crc = Crc32(crc, m, masked_len);
  return Crc32(crc, ip + masked_len, len - masked_len);
}

bool RoceIcrcOk(const uint8_t* frame, uint32_t len) {
  uint32_t l3 = sizeof(EtherHdr);
  if (len < l3) return false;
  uint16_t type = Rd16(frame + offsetof(EtherHdr, type));
  if (type == ethertype::kVlan) {
    if (len < l3 + sizeof(VlanTag)) return false;
    type = Rd16(frame + l3 + offsetof(VlanTag, type));
    l3 += sizeof(VlanTag);
  }
  if (type != ethertype::kIpv4 || len < l3 + sizeof(Ipv4Hdr)) return false;
  const uint8_t* ip = frame + l3;
  const uint32_t ihl = (ip[offsetof(Ipv4Hdr, version_ihl)] & 0xFu) * 4u;
  const uint32_t total = Rd16(ip + offsetof(Ipv4Hdr, total_length));
  if ((ip[0] >> 4) != 4 || ihl < sizeof(Ipv4Hdr) || l3 + total > len) return false;
  if (ip[offsetof(Ipv4Hdr, proto)] != ipproto::kUdp) return false;
  if ((Rd16(ip + offsetof(Ipv4Hdr, frag)) & 0x3FFF) != 0) return false;
  if (total < ihl + sizeof(UdpHdr) + sizeof(BthHdr) + kIcrcBytes) return false;
  if (Rd16(ip + ihl + offsetof(UdpHdr, dst_port)) != kRoceV2Port) return false;
  return RoceIcrc(ip, total - kIcrcBytes) == LoadIcrc(ip + total - kIcrcBytes);
}

}  // namespace ofan::pkt
