// The attributes that move an RC QP from RESET to RTS, as pure functions of
// this end's port and the peer's ofan-rc-1 hello, so that what the verbs
// library asks of the kernel is tested without a device.
//
// expects:  the local port facts (GID index, MTU, first PSN) and one of the
//           peer's hello QPs, its address and MTU (rcx::ParseHello checked
//           their ranges)
// gives:    ibv_qp_attr + attribute mask for INIT, RTR and RTS: RoCEv2 (a
//           global route to the peer's IPv4-mapped GID from our GID index),
//           path MTU = the smaller of both ends', retry_cnt 7 and rnr_retry 7
//           (7 = retry RNR for ever: a receiver a little late in reposting
//           costs time, never the run), local ACK timeout 14 (4.096 us x
//           2^14 = 67 ms: above a TCG guest's scheduling hiccups, so that
//           slow is not mistaken for lost), one outstanding RDMA read or
//           atomic each way (the engines never read); the QP's traffic
//           class (rxe puts it in every packet's IPv4 TOS): RoCE data's DSCP
//           (the lossless class under PFC), or the switches'
//           strict-priority DSCP for a QP of clear-to-sends
// next:     RcQp (rc_qp.h) hands them to ibv_modify_qp
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "common/result.h"
#include "dataplane/packet/roce.h"

namespace ofan::verbs {

inline constexpr uint8_t kPort = 1;  // rxe, like most RoCE NICs, has one
inline constexpr uint8_t kRetryCount = 7;
inline constexpr uint8_t kRnrRetry = 7;
inline constexpr uint8_t kLocalAckTimeout = 14;
inline constexpr uint8_t kMinRnrTimer = 12;  // 0.64 ms
inline constexpr uint8_t kHopLimit = 64;
// GRH traffic classes: the DSCP in the TOS byte's upper six bits, ECN's two
// bits 0 (rxe is no ECN-capable transport).
inline constexpr uint8_t kDataTrafficClass = pkt::kRoceDscp << 2;
inline constexpr uint8_t kPriorityTrafficClass = pkt::kPriorityDscp << 2;

// 256..4096 bytes <-> IBV_MTU_256..IBV_MTU_4096.
Result<ibv_mtu> MtuFromBytes(uint32_t bytes);
uint32_t MtuBytes(ibv_mtu mtu);

struct LocalEnd {
  uint32_t gid_index = 0;
  uint32_t mtu = 1024;  // bytes: what this side's hello says
  uint32_t psn = 0;     // the first PSN this end sends
  // The local ACK timeout's exponent: 4.096 us x 2^ack_timeout, 1..31.
  uint8_t ack_timeout = kLocalAckTimeout;
  uint8_t traffic_class = kDataTrafficClass;  // of every packet the QP sends
};

struct RemoteEnd {
  uint32_t qpn = 0;
  uint32_t psn = 0;  // the first PSN the peer sends
  uint32_t ip = 0;   // host order; its GID is the IPv4-mapped form
  uint32_t mtu = 1024;
};

struct QpTransition {
  ibv_qp_attr attr{};
  int mask = 0;
};

// RESET -> INIT: port 1, P_Key index 0, remote writes allowed (peers RDMA
// WRITE into the registered receive buffer).
QpTransition InitTransition();
// INIT -> RTR, towards `remote`. Fails for an MTU that is not an IB MTU.
Result<QpTransition> RtrTransition(const LocalEnd& local, const RemoteEnd& remote);
// RTR -> RTS.
QpTransition RtsTransition(const LocalEnd& local);

// The IPv4-mapped GID of an address (host order): ::ffff:a.b.c.d.
ibv_gid GidOfIpv4(uint32_t ip);

}  // namespace ofan::verbs
