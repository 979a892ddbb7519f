// PacketBuilder: builds well-formed (or deliberately broken) frames for
// golden-packet tests, fuzz seeds and the forwarding benchmark's traffic.
//   auto f = PacketBuilder().Eth(dst, src).Ipv4(s, d).Udp(sp, 4791)
//                .Bth(0x06, qp, psn).Reth(va, rkey, len).Payload(1024).Build();
// Lengths, the IPv4 checksum and the RoCEv2 ICRC are filled in by Build().
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "dataplane/packet/headers.h"
#include "dataplane/packet/roce.h"

namespace ofan::pkt {

class PacketBuilder {
 public:
  PacketBuilder& Eth(MacAddr dst, MacAddr src, uint16_t type = 0);
  PacketBuilder& Vlan(uint16_t tci);
  PacketBuilder& Ipv4(uint32_t src, uint32_t dst, uint8_t ttl = 64, uint8_t tos = 0,
                      uint8_t proto = 0);
  PacketBuilder& Udp(uint16_t sport, uint16_t dport);
  // A BTH with P_Key 0xFFFF and no flags; or one as given (BthHdr::Make and
  // its setters). Either makes Build() append the ICRC.
  PacketBuilder& Bth(uint8_t opcode, uint32_t dest_qp, uint32_t psn);
  PacketBuilder& Bth(const BthHdr& h);
  // RETH for RDMA WRITE FIRST/ONLY and READ REQUEST: va, rkey, dma length.
  PacketBuilder& Reth(uint64_t va, uint32_t rkey, uint32_t len);
  PacketBuilder& Aeth(uint8_t syndrome, uint32_t msn);
  PacketBuilder& ImmDt(uint32_t imm);
  PacketBuilder& Icmp(uint8_t type, uint16_t id, uint16_t seq);
  PacketBuilder& Payload(uint32_t n, uint8_t seed = 0);
  PacketBuilder& Arp(uint16_t oper, MacAddr sha, uint32_t spa, MacAddr tha, uint32_t tpa);
  PacketBuilder& Pfc(uint16_t class_enable, uint16_t quanta_all);
  PacketBuilder& Raw(const std::vector<uint8_t>& bytes);
  // Pads the frame with zeros to at least n bytes (Ethernet minimum is 60).
  PacketBuilder& PadTo(uint32_t n);
  // Leave a field as given instead of computing it (for broken packets).
  PacketBuilder& KeepIpChecksum(uint16_t value);
  PacketBuilder& KeepIpTotalLength(uint16_t value);

  std::vector<uint8_t> Build() const;

 private:
  std::vector<uint8_t> bytes_;
  std::optional<size_t> ip_off_, udp_off_, icmp_off_;
  bool icrc_ = false;
  uint32_t pad_to_ = 0;
  std::optional<uint16_t> keep_csum_, keep_len_;
};

}  // namespace ofan::pkt
