#include "dataplane/stages/parse.h"

#include "dataplane/lb/packet_key.h"

namespace ofan::dp {
namespace {

using namespace ofan::pkt;

ParsedPacket Drop(ParsedPacket p, Counter why) {
  p.verdict = Verdict::kDrop;
  p.drop = why;
  return p;
}

uint32_t FlowHash(uint32_t src, uint32_t dst, uint8_t proto, uint32_t ports) {
  uint32_t h = lb::MixHash(src, 0x2545F491u);
  h = lb::MixHash(h ^ dst, 0x9E3779B9u);
  h = lb::MixHash(h ^ ports, proto);
  return h;
}

}  // namespace

ParsedPacket ParseFrame(const uint8_t* d, uint32_t len) {
  ParsedPacket p;
  p.frame_len = static_cast<uint16_t>(len > 0xFFFF ? 0xFFFF : len);
  if (len < sizeof(EtherHdr)) return Drop(p, Counter::kDropRunt);
  const EtherHdr eth = Load<EtherHdr>(d);
  uint32_t off = sizeof(EtherHdr);
  uint16_t type = eth.type.host();
  if (type == ethertype::kVlan) {
    if (len < off + sizeof(VlanTag)) return Drop(p, Counter::kDropVlanTruncated);
    type = Load<VlanTag>(d + off).type.host();
    off += sizeof(VlanTag);
  }
  switch (type) {
    case ethertype::kIpv4:
      break;
    case ethertype::kArp:
    case ethertype::kLldp:
      p.verdict = Verdict::kException;
      return p;
    case ethertype::kMacControl: {
      if (len < off + sizeof(PfcFrame)) return Drop(p, Counter::kDropPfcMalformed);
      const uint16_t op = Load<PfcFrame>(d + off).opcode.host();
      if (op != kPfcOpcode && op != kPauseOpcode) return Drop(p, Counter::kDropPfcMalformed);
      p.verdict = Verdict::kPfc;
      return p;
    }
    default:
      return Drop(p, Counter::kDropUnknownEthertype);
  }
  if (len < off + sizeof(Ipv4Hdr)) return Drop(p, Counter::kDropIpv4Truncated);
  const Ipv4Hdr ip = Load<Ipv4Hdr>(d + off);
  if (ip.version() != 4) return Drop(p, Counter::kDropIpv4Version);
  const uint32_t ihl = ip.header_bytes();
  if (ihl < sizeof(Ipv4Hdr)) return Drop(p, Counter::kDropIpv4HeaderLength);
  if (len < off + ihl) return Drop(p, Counter::kDropIpv4Truncated);
  const uint32_t total = ip.total_length.host();
  if (total < ihl || off + total > len) return Drop(p, Counter::kDropIpv4TotalLength);
  if (Ipv4Checksum(d + off, ihl) != 0) return Drop(p, Counter::kDropIpv4Checksum);
  // Fragments cannot be load-balanced consistently (no L4 header after the
  // first) and RoCE never fragments: drop them, counted.
  if ((ip.frag.host() & 0x3FFF) != 0) return Drop(p, Counter::kDropIpv4Fragment);
  p.l3_offset = static_cast<uint16_t>(off);
  p.src_ip = ip.src.host();
  p.dst_ip = ip.dst.host();
  p.ecn = ip.ecn();
  uint32_t ports = 0;
  const uint32_t l4 = off + ihl;
  if (ip.proto == ipproto::kUdp) {
    if (total < ihl + sizeof(UdpHdr)) return Drop(p, Counter::kDropUdpTruncated);
    const UdpHdr udp = Load<UdpHdr>(d + l4);
    ports = static_cast<uint32_t>(udp.src_port.raw()) << 16 | udp.dst_port.raw();
    if (udp.dst_port.host() == kRoceV2Port) {
      if (total < ihl + sizeof(UdpHdr) + sizeof(BthHdr)) return Drop(p, Counter::kDropBthTruncated);
      const BthHdr bth = Load<BthHdr>(d + l4 + sizeof(UdpHdr));
      p.roce = true;
      p.bth_opcode = bth.opcode;
      p.dst_qp = bth.dqpn();
      p.cls = IsAckLikeOpcode(bth.opcode) ? lb::SizeClass::kAck : lb::SizeClass::kData;
    }
  } else if (ip.proto == ipproto::kTcp && total >= ihl + 4) {
    uint32_t raw;
    std::memcpy(&raw, d + l4, 4);
    ports = raw;
  }
  p.flow_hash = FlowHash(p.src_ip, p.dst_ip, ip.proto, ports);
  p.verdict = Verdict::kForward;
  return p;
}

void ParseBurst(const uint8_t* const* data, const uint16_t* len, uint32_t n, ParsedPacket* out) {
  constexpr uint32_t kAhead = 4;
  for (uint32_t i = 0; i < n && i < kAhead; ++i) __builtin_prefetch(data[i]);
  for (uint32_t i = 0; i < n; ++i) {
    if (i + kAhead < n) __builtin_prefetch(data[i + kAhead]);
    out[i] = ParseFrame(data[i], len[i]);
  }
}

}  // namespace ofan::dp
