// NIC-bound lower bound of a collective's completion time (CCT).
//
// expects:  a Schedule (the writes each rank posts, as the engine chunks
//           them), the fabric host of each engine rank, the link rate R, the
//           hosts' pacing fraction rho, the propagation per link and the
//           path length between two hosts
// gives:    max over ranks of: the time its NIC needs to put all of its
//           writes on the wire at rho x R, every frame counted with its
//           headers, trailer and gaps, plus the tail of one write (the
//           cheapest: any write may be the last) -- its last frame stored and
//           forwarded at each switch at R, propagation both ways, and the
//           ACK's serialisation on each link; and over receivers: the time
//           its link needs to bring in everything sent to it at R (what an
//           incast waits for), plus the shortest path's propagation
// next:     the report's cct_lower_bound_us, next to the measured CCT
//
// Why not sim/lower_bound (App. A): its bound is exact for the simulator's
// model -- a permutation, fixed 4158 B frames and one 64 B ACK per data
// packet sharing the NIC -- while RoCE's RC ACKs are coalesced (rxe ACKs a
// message's last packet and every ~64 packets; uroce may differ), frames
// vary with the message length and RETH / ImmDt ride on the first / last
// packet only. Counting no ACK bytes on the NIC keeps this a lower bound for
// any ACK policy; it also ignores the ring's step-to-step dependencies, so a
// ring's CCT exceeds it by at least the pipeline fill.
//
// Wire bytes of a packet of an RDMA WRITE WITH IMMEDIATE: preamble + SFD +
// IFG 20, Ethernet 14, IPv4 20, UDP 8, BTH 12, payload (<= MTU), ICRC 4,
// FCS 4; RETH 16 on the first packet, ImmDt 4 on the last (IBTA 9.4.5).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "common/result.h"
#include "dataplane/packet/frame_budget.h"
#include "emu/collective/schedule.h"

namespace ofan::emu {

inline constexpr uint32_t kWirePerPacket =
    pkt::kWireOverheadBytes + 14 + 20 + 8 + 12 + 4;  // 82: FCS in the overhead
static_assert(kWirePerPacket == 82);
inline constexpr uint32_t kRethBytes = 16;
inline constexpr uint32_t kImmDtBytes = 4;
inline constexpr uint32_t kAckWireBytes = kWirePerPacket + 4;  // BTH + AETH

// Bytes on the wire for one RDMA WRITE WITH IMMEDIATE of len > 0 bytes.
uint64_t WriteWireBytes(uint64_t len, uint32_t mtu);
// The last packet's frame of that write.
uint64_t LastFrameWireBytes(uint64_t len, uint32_t mtu);

struct NicBoundParams {
  double link_gbps = 0;        // R, > 0
  double rho = 1.0;            // hosts send at rho x R, 0 < rho <= 1
  double link_latency_us = 0;  // propagation per link
  uint32_t mtu = 2048;         // RoCE payload per packet (256..4096)
  // Links between two fabric hosts (2 under one edge switch of a fat tree;
  // lb::FatTree::hops has it). Unset: 2.
  std::function<int(uint32_t host_a, uint32_t host_b)> hops = {};
};

// hosts[i] is engine rank i's fabric host; empty: rank i is host i.
Result<double> NicBoundUs(const Schedule& s, std::span<const uint32_t> hosts,
                          const NicBoundParams& p);

}  // namespace ofan::emu
