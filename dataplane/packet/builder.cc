#include "dataplane/packet/builder.h"

namespace ofan::pkt {
namespace {

template <class H>
void Append(std::vector<uint8_t>& v, const H& h) {
  const auto* p = reinterpret_cast<const uint8_t*>(&h);
  v.insert(v.end(), p, p + sizeof(H));
}

void Put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

}  // namespace

PacketBuilder& PacketBuilder::Eth(MacAddr dst, MacAddr src, uint16_t type) {
  EtherHdr h{dst, src, Be16::FromHost(type)};
  Append(bytes_, h);
  return *this;
}

PacketBuilder& PacketBuilder::Vlan(uint16_t tci) {
  // The tag goes between the MACs and the (next) ethertype.
  const size_t type_off = bytes_.size() - 2;
  const uint16_t inner = static_cast<uint16_t>(bytes_[type_off] << 8 | bytes_[type_off + 1]);
  Put16(&bytes_[type_off], ethertype::kVlan);
  VlanTag t{Be16::FromHost(tci), Be16::FromHost(inner)};
  Append(bytes_, t);
  return *this;
}

PacketBuilder& PacketBuilder::Ipv4(uint32_t src, uint32_t dst, uint8_t ttl, uint8_t tos,
                                   uint8_t proto) {
  const size_t type_off = bytes_.size() - 2;
  if (bytes_.size() >= 14 && bytes_[type_off] == 0 && bytes_[type_off + 1] == 0) {
    Put16(&bytes_[type_off], ethertype::kIpv4);
  }
  ip_off_ = bytes_.size();
  Ipv4Hdr h{};
  h.version_ihl = 0x45;
  h.tos = tos;
  h.ttl = ttl;
  h.proto = proto;
  h.src = Be32::FromHost(src);
  h.dst = Be32::FromHost(dst);
  Append(bytes_, h);
  return *this;
}

PacketBuilder& PacketBuilder::Udp(uint16_t sport, uint16_t dport) {
  if (ip_off_ && bytes_[*ip_off_ + 9] == 0) bytes_[*ip_off_ + 9] = ipproto::kUdp;
  udp_off_ = bytes_.size();
  UdpHdr h{Be16::FromHost(sport), Be16::FromHost(dport), Be16(), Be16()};
  Append(bytes_, h);
  return *this;
}

PacketBuilder& PacketBuilder::Bth(uint8_t opcode, uint32_t dest_qp, uint32_t psn) {
  return Bth(BthHdr::Make(Opcode{opcode}, dest_qp, psn));
}

PacketBuilder& PacketBuilder::Bth(const BthHdr& h) {
  Append(bytes_, h);
  icrc_ = true;
  return *this;
}

PacketBuilder& PacketBuilder::Reth(uint64_t va, uint32_t rkey, uint32_t len) {
  Append(bytes_, RethHdr::Make(va, rkey, len));
  return *this;
}

PacketBuilder& PacketBuilder::Aeth(uint8_t syndrome, uint32_t msn) {
  Append(bytes_, AethHdr::Make(syndrome, msn));
  return *this;
}

PacketBuilder& PacketBuilder::ImmDt(uint32_t imm) {
  Append(bytes_, ImmDtHdr{Be32::FromHost(imm)});
  return *this;
}

PacketBuilder& PacketBuilder::Icmp(uint8_t type, uint16_t id, uint16_t seq) {
  if (ip_off_ && bytes_[*ip_off_ + 9] == 0) bytes_[*ip_off_ + 9] = ipproto::kIcmp;
  icmp_off_ = bytes_.size();
  const uint8_t h[8] = {type,
                        0,
                        0,
                        0,
                        static_cast<uint8_t>(id >> 8),
                        static_cast<uint8_t>(id),
                        static_cast<uint8_t>(seq >> 8),
                        static_cast<uint8_t>(seq)};
  bytes_.insert(bytes_.end(), h, h + 8);
  return *this;
}

PacketBuilder& PacketBuilder::Payload(uint32_t n, uint8_t seed) {
  for (uint32_t i = 0; i < n; ++i) bytes_.push_back(static_cast<uint8_t>(seed + i * 7));
  return *this;
}

PacketBuilder& PacketBuilder::Arp(uint16_t oper, MacAddr sha, uint32_t spa, MacAddr tha,
                                  uint32_t tpa) {
  const size_t type_off = bytes_.size() - 2;
  Put16(&bytes_[type_off], ethertype::kArp);
  ArpHdr a{Be16::FromHost(1),
           Be16::FromHost(ethertype::kIpv4),
           6,
           4,
           Be16::FromHost(oper),
           sha,
           Be32::FromHost(spa),
           tha,
           Be32::FromHost(tpa)};
  Append(bytes_, a);
  return *this;
}

PacketBuilder& PacketBuilder::Pfc(uint16_t class_enable, uint16_t quanta_all) {
  const size_t type_off = bytes_.size() - 2;
  Put16(&bytes_[type_off], ethertype::kMacControl);
  PfcFrame f{};
  f.opcode = Be16::FromHost(kPfcOpcode);
  f.class_enable = Be16::FromHost(class_enable);
  for (int i = 0; i < 8; ++i) {
    f.quanta[i] = Be16::FromHost((class_enable >> i) & 1 ? quanta_all : 0);
  }
  Append(bytes_, f);
  return *this;
}

PacketBuilder& PacketBuilder::Raw(const std::vector<uint8_t>& b) {
  bytes_.insert(bytes_.end(), b.begin(), b.end());
  return *this;
}

PacketBuilder& PacketBuilder::PadTo(uint32_t n) {
  pad_to_ = n;
  return *this;
}

PacketBuilder& PacketBuilder::KeepIpChecksum(uint16_t v) {
  keep_csum_ = v;
  return *this;
}

PacketBuilder& PacketBuilder::KeepIpTotalLength(uint16_t v) {
  keep_len_ = v;
  return *this;
}

std::vector<uint8_t> PacketBuilder::Build() const {
  std::vector<uint8_t> f = bytes_;
  if (icrc_ && ip_off_) f.insert(f.end(), kIcrcBytes, 0);  // room for the ICRC
  if (icmp_off_) {
    const size_t off = *icmp_off_;
    f[off + 2] = f[off + 3] = 0;
    const uint16_t c = Ipv4Checksum(&f[off], static_cast<uint32_t>(f.size() - off));
    Put16(&f[off + 2], c);
  }
  if (udp_off_) Put16(&f[*udp_off_ + 4], static_cast<uint16_t>(f.size() - *udp_off_));
  if (ip_off_) {
    const size_t off = *ip_off_;
    Put16(&f[off + 2], keep_len_.value_or(static_cast<uint16_t>(f.size() - off)));
    f[off + 10] = f[off + 11] = 0;
    Put16(&f[off + 10], keep_csum_.value_or(Ipv4Checksum(&f[off], 20)));
    if (icrc_) {
      const size_t icrc_at = f.size() - kIcrcBytes;
      StoreIcrc(&f[icrc_at], RoceIcrc(&f[off], static_cast<uint32_t>(icrc_at - off)));
    }
  }
  if (f.size() < pad_to_) f.resize(pad_to_, 0);
  return f;
}

}  // namespace ofan::pkt
