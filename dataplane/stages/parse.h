// Stage 1: parse.
//
// expects:   raw frames (data pointer + length), any content
// modifies:  nothing in the packet
// next:      ParsedPacket::verdict: kForward (IPv4, with addresses, flow hash,
//            size class, ECN, RoCE destination QP), kException (ARP, LLDP: to
//            the control thread), kPfc (802.1Qbb / PAUSE: to the egress
//            pauser), or kDrop with the counter of the reason
// parameters: none (IPv4 header checksums are verified, RFC 1812 §5.2.2)
//
// Works on bytes, not mbufs, so the same code runs in the dataplane, the
// golden-packet tests and the fuzz target.
#pragma once

#include <cstdint>

#include "dataplane/counters.h"
#include "dataplane/lb/types.h"
#include "dataplane/packet/headers.h"

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
  Verdict verdict = Verdict::kDrop;
  Counter drop = Counter::kDropRunt;  // valid when verdict == kDrop
};

ParsedPacket ParseFrame(const uint8_t* data, uint32_t len);

// n frames; prefetches ahead.
void ParseBurst(const uint8_t* const* data, const uint16_t* len, uint32_t n, ParsedPacket* out);

}  // namespace ofan::dp
