// Framer: the Ethernet, IPv4 and UDP headers and the ICRC around every frame
// one QP sends (data from the requester, ACK / NAK and CNP from the
// responder), with the addresses Connect() gave it.
//
// expects:  Connect() before the first frame; `out` holds kMaxFrame bytes
// gives:    IPv4 with DF, TTL 64, the QP's DSCP, ECT(0) unless told
//           otherwise, a valid header checksum; UDP to 4791 with a zero
//           checksum (rxe sends it so: the ICRC covers the datagram); the
//           ICRC over the finished frame
// modifies: the IPv4 identification, one counter per QP across all its
//           frames (data and control interleave in it as they leave)
// next:     IPv6 (RoCEv2 allows either; the fabric routes IPv4 only)
#pragma once

#include <cstdint>

#include "dataplane/packet/headers.h"
#include "dataplane/packet/roce.h"
#include "emu/uroce/qp_types.h"

namespace ofan::uroce {

// Bytes before the BTH, and the BTH's own.
inline constexpr uint32_t kL2L4 =
    sizeof(pkt::EtherHdr) + sizeof(pkt::Ipv4Hdr) + sizeof(pkt::UdpHdr);
inline constexpr uint32_t kBth = sizeof(pkt::BthHdr);

// The UDP source port rxe gives a QP pair (rdma_get_udp_sport with flow
// label 0: rdma_calc_flow_label then rdma_flow_label_to_udp_sport).
uint16_t RxeUdpSport(uint32_t lqpn, uint32_t rqpn);

class Framer {
 public:
  explicit Framer(const EngineConfig& cfg) : cfg_(cfg) {}
  Framer(const Framer&) = delete;
  Framer& operator=(const Framer&) = delete;

  void Connect(const QpPeer& peer);
  const QpPeer& peer() const { return peer_; }
  // rxe's port for this QP pair: every frame of kPerQp entropy and the
  // responder's ACKs (unless they echo a data packet's port).
  uint16_t base_sport() const { return base_sport_; }

  // Ethernet, IPv4 and UDP headers of a datagram of `ip_len` bytes (IPv4
  // header to ICRC) from `sport`; ECN-capable (ECT(0)) when `ect`; marked
  // pkt::kPriorityDscp (the switches' strict-priority class) when
  // `priority`, else the engine's DSCP. Returns kL2L4, where the BTH goes.
  uint32_t Header(uint8_t* out, uint32_t ip_len, uint16_t sport, bool ect = true,
                  bool priority = false);
  // Stores the ICRC in the last 4 bytes of the `frame_len`-byte frame at
  // `out`; returns frame_len.
  static uint32_t Finish(uint8_t* out, uint32_t frame_len);

 private:
  const EngineConfig& cfg_;
  QpPeer peer_;
  uint16_t base_sport_ = 0xC000;
  uint16_t ip_id_ = 0;
};

}  // namespace ofan::uroce
