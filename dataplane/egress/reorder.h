// The reorder stage of a host-facing port (edge switches, shared engine,
// `reorder` on): RoCE data frames bound for the host leave in PSN order per
// QP, for NICs without out-of-order placement (fabric/reorder.h keeps the
// buffer, in emulated time).
//
// expects:   a frame queued on the port's normal queue at its emulated time
// modifies:  nothing here: ReadRoceSeq only reads the frame
// next:      kData (RC requests, READ responses, ACKs: with `reorder` on
//            the switches queue RC ACKs with data, egress.priority [control],
//            so that they cannot overtake a QP's READ responses): PFC's
//            admission as it arrives (a held frame is its ingress port's to
//            pause for), then the port's ReorderBuffer, whose releases go on
//            to the EmuPort (PortQueue::AdmitEmu); kOther (CNP, UD/UC, non-RoCE,
//            control frames) and kBadLength (a BTH the frame's lengths do
//            not hold, counted): straight on
#pragma once

#include <cstdint>

#include "dataplane/egress/mark.h"
#include "dataplane/fabric/reorder.h"
#include "dataplane/packet/headers.h"
#include "dataplane/packet/roce.h"

namespace ofan::dp {

enum class RoceSeqKind : uint8_t { kOther, kData, kBadLength };

struct RoceSeq {
  fabric::ReorderKey key;  // source IPv4, destination QP, READ response or not
  fabric::ReorderPsn at;   // PSN, place in its message, a READ's length
};

// A forwarded frame's flow and PSN if it is a RoCEv2 RC packet (a request,
// an RDMA READ response, an ACK/NAK or atomic ACK: ReorderPsn::ack, of the
// response flow): IPv4 (untagged or one 802.1Q tag), UDP to 4791, an RC
// opcode.
// A RoCEv2 frame whose IPv4 total length runs past the frame, whose UDP
// length runs past the IPv4 packet or cannot hold the BTH, the headers its
// opcode has and the ICRC, is kBadLength.
inline RoceSeqKind ReadRoceSeq(const uint8_t* f, uint32_t len, RoceSeq& out) {
  if (len < 14 + 20) return RoceSeqKind::kOther;
  const uint16_t l3 = ForwardedL3Offset(f);
  if (len < l3 + 20u || pkt::Rd16(f + l3 - 2) != pkt::ethertype::kIpv4) return RoceSeqKind::kOther;
  const uint8_t* ip = f + l3;
  const uint32_t ihl = (ip[0] & 0xFu) * 4u;
  if ((ip[0] >> 4) != 4 || ihl < 20 || ip[9] != pkt::ipproto::kUdp) return RoceSeqKind::kOther;
  if (len < l3 + ihl + 8) return RoceSeqKind::kOther;
  const uint8_t* udp = ip + ihl;
  if (pkt::Rd16(udp + 2) != pkt::kRoceV2Port) return RoceSeqKind::kOther;
  constexpr uint32_t kBth = 12;
  const uint32_t udp_len = pkt::Rd16(udp + 4);
  const uint32_t ip_len = pkt::Rd16(ip + 2);
  if (ip_len > len - l3 || udp_len + ihl > ip_len || udp_len < 8 + kBth + pkt::kIcrcBytes ||
      len < l3 + ihl + 8 + kBth) {
    return RoceSeqKind::kBadLength;
  }
  const pkt::BthHdr bth = pkt::Load<pkt::BthHdr>(udp + 8);
  // RC only: UD and UC keep no order to restore, and a CNP is the
  // congested sender's, in none of this QP's PSNs.
  if (!pkt::IsRcOpcode(bth.opcode)) return RoceSeqKind::kOther;
  const uint32_t ext = pkt::ExtHeaderBytes(bth.opcode);
  const uint32_t overhead = 8 + kBth + ext + bth.pad_count() + pkt::kIcrcBytes;
  if (udp_len < overhead || len < l3 + ihl + 8 + kBth + ext) return RoceSeqKind::kBadLength;
  out.key.src_ip = pkt::Rd32(ip + 12);
  out.key.dst_qp = bth.dqpn();
  const bool ack = pkt::IsAckClass(bth.opcode);
  out.key.response = ack || pkt::IsReadResponse(bth.opcode);
  out.at = fabric::ReorderPsn{};
  out.at.ack = ack;
  out.at.psn = bth.psn24();
  out.at.continues = pkt::ContinuesMessage(bth.opcode);
  out.at.more = pkt::MoreFollow(bth.opcode);
  out.at.payload = udp_len - overhead;
  if (bth.opcode == pkt::Raw(pkt::Opcode::kRdmaReadRequest)) {
    out.at.read = true;
    out.at.read_bytes = pkt::Load<pkt::RethHdr>(udp + 8 + kBth).length();
  }
  return RoceSeqKind::kData;
}

}  // namespace ofan::dp
