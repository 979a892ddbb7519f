#include "emu/uroce/framer.h"

#include <cstddef>
#include <cstring>

namespace ofan::uroce {

uint16_t RxeUdpSport(uint32_t lqpn, uint32_t rqpn) {
  // include/rdma/ib_verbs.h: rdma_calc_flow_label, rdma_flow_label_to_udp_sport.
  uint64_t fl = static_cast<uint64_t>(lqpn) * rqpn;
  fl ^= fl >> 20;
  fl ^= fl >> 40;
  const uint32_t label = static_cast<uint32_t>(fl & 0xFFFFF);
  uint32_t low = label & 0x3FFF;
  const uint32_t high = label & 0xFC000;
  low ^= high >> 14;
  return static_cast<uint16_t>(low | 0xC000);
}

void Framer::Connect(const QpPeer& peer) {
  peer_ = peer;
  base_sport_ = RxeUdpSport(peer.local_qpn, peer.remote_qpn);
}

uint32_t Framer::Header(uint8_t* out, uint32_t ip_len, uint16_t sport, bool ect, bool priority) {
  pkt::EtherHdr eth{};
  eth.dst = peer_.next_hop_mac;
  eth.src = peer_.local_mac;
  eth.type = pkt::Be16::FromHost(pkt::ethertype::kIpv4);
  pkt::Ipv4Hdr ip{};
  ip.version_ihl = 0x45;
  const uint8_t dscp = priority ? pkt::kPriorityDscp : cfg_.dscp;
  ip.tos = static_cast<uint8_t>(dscp << 2 | (ect ? pkt::ecn::kEct0 : 0));
  ip.total_length = pkt::Be16::FromHost(static_cast<uint16_t>(ip_len));
  ip.id = pkt::Be16::FromHost(ip_id_++);
  ip.frag = pkt::Be16::FromHost(0x4000);  // DF, as rxe sends
  ip.ttl = 64;
  ip.proto = pkt::ipproto::kUdp;
  ip.checksum = pkt::Be16{};
  ip.src = pkt::Be32::FromHost(peer_.local_ip);
  ip.dst = pkt::Be32::FromHost(peer_.remote_ip);
  pkt::UdpHdr udp{};
  udp.src_port = pkt::Be16::FromHost(sport);
  udp.dst_port = pkt::Be16::FromHost(pkt::kRoceV2Port);
  udp.length = pkt::Be16::FromHost(static_cast<uint16_t>(ip_len - sizeof(pkt::Ipv4Hdr)));
  udp.checksum = pkt::Be16{};  // rxe leaves it zero: the ICRC covers the datagram
  std::memcpy(out, &eth, sizeof eth);
  std::memcpy(out + 14, &ip, sizeof ip);
  const uint16_t csum = pkt::Ipv4Checksum20(out + 14);
  out[14 + offsetof(pkt::Ipv4Hdr, checksum)] = static_cast<uint8_t>(csum >> 8);
  out[14 + offsetof(pkt::Ipv4Hdr, checksum) + 1] = static_cast<uint8_t>(csum);
  std::memcpy(out + 34, &udp, sizeof udp);
  return kL2L4;
}

uint32_t Framer::Finish(uint8_t* out, uint32_t frame_len) {
  uint8_t* ip = out + sizeof(pkt::EtherHdr);
  const uint32_t total = frame_len - sizeof(pkt::EtherHdr);
  pkt::StoreIcrc(ip + total - pkt::kIcrcBytes, pkt::RoceIcrc(ip, total - pkt::kIcrcBytes));
  return frame_len;
}

}  // namespace ofan::uroce
