// Stage 1: parse.
//
// expects:   raw frames (data pointer + length), any content
// modifies:  nothing in the packet
// next:      ParsedPacket::verdict: kForward (IPv4, with addresses, flow hash,
//            size class, ECN, RoCE destination QP; `fragment` for an IPv4
//            fragment, whose hash covers the addresses, protocol and IP id
//            so that every fragment of a datagram takes one path), kException (ARP, LLDP,
//            IPv6: to the control thread), kPfc (802.1Qbb / PAUSE: to the egress
//            pauser), or kDrop with the counter of the reason
// parameters: none (IPv4 header checksums are verified, RFC 1812 §5.2.2)
//
// Works on bytes, not mbufs, so the same code runs in the dataplane, the
// golden-packet tests and the fuzz target.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dataplane/counters.h"
#include "dataplane/lb/types.h"
#include "dataplane/packet/headers.h"
#include "dataplane/packet/roce.h"

namespace ofan::dp {

enum class Verdict : uint8_t { kForward, kException, kPfc, kDrop };

struct ParsedPacket {
  uint32_t src_ip = 0;  // host order
  uint32_t dst_ip = 0;
  uint32_t flow_hash = 0;  // 5-tuple (src, dst, proto, ports)
  uint32_t dst_qp = 0;     // RoCEv2 BTH destination QP, 0 if not RoCE
  uint16_t l3_offset = 0;  // IPv4 header offset (14, or 18 behind a VLAN tag)
  uint16_t frame_len = 0;
  lb::SizeClass cls = lb::SizeClass::kData;  // ACK/NAK/CNP by BTH opcode
  uint8_t ecn = 0;
  uint8_t bth_opcode = 0;
  bool roce = false;
  bool fragment = false;  // MF set or a nonzero offset (RFC 791)
  Verdict verdict = Verdict::kDrop;
  Counter drop = Counter::kDropRunt;  // valid when verdict == kDrop
};

// The parser itself, inline so that the worker's per-packet loop keeps the
// result in registers; ParseFrame and ParseBurst wrap it.
namespace detail {

using namespace ofan::pkt;

inline ParsedPacket& Drop(ParsedPacket& p, Counter why) {
  p.verdict = Verdict::kDrop;
  p.drop = why;
  return p;
}

// Two independent multiplies (they overlap in the pipeline) and a fold:
// enough dispersion for ECMP, which mixes again with its per-switch salt.
inline uint32_t FlowHash(uint32_t src, uint32_t dst, uint8_t proto, uint32_t ports) {
  const uint64_t a = (static_cast<uint64_t>(src) << 32 | dst) * 0x9E3779B97F4A7C15ull;
  const uint64_t b = (static_cast<uint64_t>(ports) << 8 | proto) * 0xC2B2AE3D27D4EB4Full;
  const uint64_t x = a ^ (b + (b >> 31));
  return static_cast<uint32_t>(x >> 32) ^ static_cast<uint32_t>(x);
}

// A fragment's hash (ParsedPacket::flow_hash for a fragment), from its IPv4
// header: the addresses, the protocol and the IP id, alike for every
// fragment of a datagram. The pass asks it of the header again rather than
// reading flow_hash, so that a policy that does not hash (Ofan, POfan)
// lets the compiler drop the fast parser's hash.
inline uint32_t FragmentHash(const uint8_t* ip) {
  return FlowHash(Rd32(ip + offsetof(Ipv4Hdr, src)), Rd32(ip + offsetof(Ipv4Hdr, dst)),
                  ip[offsetof(Ipv4Hdr, proto)], Rd16(ip + offsetof(Ipv4Hdr, id)));
}

// What both parsers start from: defaults, and the frame's length.
inline void Reset(ParsedPacket& p, uint32_t len) {
  p = ParsedPacket{};
  p.frame_len = static_cast<uint16_t>(len > 0xFFFF ? 0xFFFF : len);
}

// The RoCEv2 fields of a BTH known to be in bounds (roce.h's single-field
// readers: one load each, no header copy); tos: the IPv4 header's (a frame
// marked kPriorityDscp is of the ACK class, whatever its opcode).
inline void ReadBth(const uint8_t* bth, uint8_t tos, ParsedPacket& p) {
  p.roce = true;
  p.bth_opcode = BthOpcodeAt(bth);
  p.dst_qp = BthDqpnAt(bth);
  p.cls = IsAckClassFrame(p.bth_opcode, tos) ? lb::SizeClass::kAck : lb::SizeClass::kData;
}

// Fills p in place (no 40-byte copy per packet in the burst loop).
inline ParsedPacket& ParseInto(const uint8_t* d, uint32_t len, ParsedPacket& p) {
  Reset(p, len);
  if (len < sizeof(EtherHdr)) return Drop(p, Counter::kDropRunt);
  uint32_t off = sizeof(EtherHdr);
  uint16_t type = Rd16(d + offsetof(EtherHdr, type));
  if (type == ethertype::kVlan) {
    if (len < off + sizeof(VlanTag)) return Drop(p, Counter::kDropVlanTruncated);
    type = Rd16(d + off + offsetof(VlanTag, type));
    off += sizeof(VlanTag);
  }
  switch (type) {
    case ethertype::kIpv4:
      break;
    case ethertype::kArp:
    case ethertype::kLldp:
    // The dataplane forwards IPv4 only; IPv6 is the control plane's (ND,
    // and BGP unnumbered's sessions and BFD over link-local addresses):
    // the port's kernel interface gets it (exception/kernel_ports.h).
    case ethertype::kIpv6:
      p.verdict = Verdict::kException;
      return p;
    case ethertype::kMacControl: {
      if (len < off + sizeof(PfcFrame)) return Drop(p, Counter::kDropPfcMalformed);
      const uint16_t op = Rd16(d + off + offsetof(PfcFrame, opcode));
      if (op != kPfcOpcode && op != kPauseOpcode) return Drop(p, Counter::kDropPfcMalformed);
      p.verdict = Verdict::kPfc;
      return p;
    }
    default:
      return Drop(p, Counter::kDropUnknownEthertype);
  }
  if (len < off + sizeof(Ipv4Hdr)) return Drop(p, Counter::kDropIpv4Truncated);
  const uint8_t* ip = d + off;
  const uint8_t version_ihl = ip[offsetof(Ipv4Hdr, version_ihl)];
  if ((version_ihl >> 4) != 4) return Drop(p, Counter::kDropIpv4Version);
  const uint32_t ihl = (version_ihl & 0xFu) * 4u;
  if (ihl < sizeof(Ipv4Hdr)) return Drop(p, Counter::kDropIpv4HeaderLength);
  if (len < off + ihl) return Drop(p, Counter::kDropIpv4Truncated);
  const uint32_t total = Rd16(ip + offsetof(Ipv4Hdr, total_length));
  if (total < ihl || off + total > len) return Drop(p, Counter::kDropIpv4TotalLength);
  // The common 20-byte header: five independent loads, no loop.
  const bool csum_ok = ihl == sizeof(Ipv4Hdr) ? Ipv4Checksum20Ok(ip) : Ipv4Checksum(ip, ihl) == 0;
  if (!csum_ok) return Drop(p, Counter::kDropIpv4Checksum);
  p.l3_offset = static_cast<uint16_t>(off);
  p.src_ip = Rd32(ip + offsetof(Ipv4Hdr, src));
  p.dst_ip = Rd32(ip + offsetof(Ipv4Hdr, dst));
  p.ecn = ip[offsetof(Ipv4Hdr, tos)] & 3;
  const uint8_t proto = ip[offsetof(Ipv4Hdr, proto)];
  // Fragments are forwarded, as RFC 1812 routers do (ping -s 5000 across an
  // MTU of 3438). Only the first carries the L4 header, so the hash takes
  // the IP id in place of the ports: every fragment of a datagram hashes
  // alike, and the switch sends them all on one path (vector.cc). RoCE data
  // never comes here: ParseFastRoce takes it, and takes no fragment.
  if ((Rd16(ip + offsetof(Ipv4Hdr, frag)) & 0x3FFF) != 0) [[unlikely]] {
    p.fragment = true;
    p.flow_hash = FragmentHash(ip);
    p.verdict = Verdict::kForward;
    return p;
  }
  uint32_t ports = 0;
  const uint8_t* l4 = ip + ihl;
  if (proto == ipproto::kUdp) {
    if (total < ihl + sizeof(UdpHdr)) return Drop(p, Counter::kDropUdpTruncated);
    ports = Rd32(l4);  // source and destination port
    if ((ports & 0xFFFF) == kRoceV2Port) {
      if (total < ihl + sizeof(UdpHdr) + sizeof(BthHdr)) return Drop(p, Counter::kDropBthTruncated);
      ReadBth(l4 + sizeof(UdpHdr), ip[offsetof(Ipv4Hdr, tos)], p);
    }
  } else if (proto == ipproto::kTcp && total >= ihl + 4) {
    ports = Rd32(l4);
  }
  p.flow_hash = FlowHash(p.src_ip, p.dst_ip, proto, ports);
  p.verdict = Verdict::kForward;
  return p;
}

// The common frame in straight-line code: untagged IPv4 without options,
// not a fragment, with a good header checksum, carrying RoCEv2 (UDP 4791)
// with a whole BTH. Fills p exactly as ParseInto does and returns true;
// returns false, leaving p to ParseInto, for anything else (including every
// malformed frame, so drop reasons stay ParseInto's). Checks are merged into
// a few wide loads and compares (little-endian hosts; elsewhere it always
// defers). tests/dataplane/stages/parse_test.cc and the parse fuzz target
// compare the two on every input.
[[gnu::always_inline]] inline bool ParseFastRoce(const uint8_t* d, uint32_t len, ParsedPacket& p) {
  if constexpr (std::endian::native != std::endian::little) {
    return false;
  } else {
    constexpr uint32_t kL3 = sizeof(EtherHdr);
    constexpr uint32_t kMin = kL3 + sizeof(Ipv4Hdr) + sizeof(UdpHdr) + sizeof(BthHdr);  // 54
    if (len < kMin) return false;
    uint64_t w0, w1;
    std::memcpy(&w0, d + offsetof(EtherHdr, type), 8);  // type, version_ihl, tos, total_length, id
    std::memcpy(&w1, d + kL3 + offsetof(Ipv4Hdr, frag),
                8);  // frag, ttl, proto, checksum, src[0..1]
    // Ethertype 0x0800 and version 4 / IHL 5, as the bytes 08 00 45.
    if ((w0 & 0xFFFFFF) != 0x450008) return false;
    const uint32_t total = ByteSwap16(static_cast<uint16_t>(w0 >> 32));
    if (total < kMin - kL3 || kL3 + total > len) return false;
    // No MF flag or fragment offset (the 13 bits + MF: 3F FF), protocol UDP.
    if ((w1 & 0xFF00FF3Full) != static_cast<uint64_t>(ipproto::kUdp) << 24) return false;
    uint32_t ports_raw;
    std::memcpy(&ports_raw, d + kL3 + sizeof(Ipv4Hdr), 4);
    if ((ports_raw >> 16) != ByteSwap16(kRoceV2Port)) return false;
    if (!Ipv4Checksum20Ok(d + kL3)) return false;
    Reset(p, len);
    p.l3_offset = kL3;
    p.src_ip = Rd32(d + kL3 + offsetof(Ipv4Hdr, src));
    p.dst_ip = Rd32(d + kL3 + offsetof(Ipv4Hdr, dst));
    p.ecn = static_cast<uint8_t>((w0 >> 24) & 3);
    ReadBth(d + kL3 + sizeof(Ipv4Hdr) + sizeof(UdpHdr), d[kL3 + offsetof(Ipv4Hdr, tos)], p);
    p.flow_hash = FlowHash(p.src_ip, p.dst_ip, ipproto::kUdp, ByteSwap32(ports_raw));
    p.verdict = Verdict::kForward;
    return true;
  }
}

}  // namespace detail

// ParseInto alone, out of line: the reference the fast path is checked
// against, and the dataplane's parser for the rare frames.
ParsedPacket ParseFrameReference(const uint8_t* data, uint32_t len);

// The dataplane's parser: ParseFastRoce inline, falling back to ParseInto.
[[gnu::always_inline]] inline void ParseFrameInto(const uint8_t* d, uint32_t len, ParsedPacket& p) {
  // By value: p's address never escapes, so the caller's copy of p can live
  // in registers.
  if (!detail::ParseFastRoce(d, len, p)) [[unlikely]]
    p = ParseFrameReference(d, len);
}

// Field by field (the struct has padding, so no memcmp).
inline bool SameParse(const ParsedPacket& a, const ParsedPacket& b) {
  return a.src_ip == b.src_ip && a.dst_ip == b.dst_ip && a.flow_hash == b.flow_hash &&
         a.dst_qp == b.dst_qp && a.l3_offset == b.l3_offset && a.frame_len == b.frame_len &&
         a.cls == b.cls && a.ecn == b.ecn && a.bth_opcode == b.bth_opcode && a.roce == b.roce &&
         a.fragment == b.fragment && a.verdict == b.verdict &&
         (a.verdict != Verdict::kDrop || a.drop == b.drop);
}

ParsedPacket ParseFrame(const uint8_t* data, uint32_t len);

// n frames; prefetches ahead.
void ParseBurst(const uint8_t* const* data, const uint16_t* len, uint32_t n, ParsedPacket* out);

}  // namespace ofan::dp
