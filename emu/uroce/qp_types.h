// The values a QP's parts share and its users see: the engine's settings,
// the counters, the work requests and events, the peer's addresses and the
// memory region peers write into. Plain data, no behaviour beyond the
// bounds check every placement makes.
#pragma once

#include <cstdint>

#include "dataplane/packet/headers.h"
#include "dataplane/packet/roce.h"

namespace ofan::uroce {

using Ns = uint64_t;

// Headroom of one frame: Ethernet, IPv4, UDP, BTH, RETH, ImmDt, ICRC.
inline constexpr uint32_t kFrameOverhead = 14 + 20 + 8 + 12 + 16 + 4 + 4;
inline constexpr uint32_t kMaxMtu = 4096;
inline constexpr uint32_t kMaxFrame = kMaxMtu + kFrameOverhead + 4;  // + pad

// How a QP picks the UDP source port (the fabric's ECMP entropy).
enum class EntropyMode : uint8_t {
  kPerQp,  // rxe's: one port per QP pair, 0xC000 | hash(lqpn * rqpn)
  kSpray,  // a fresh random port per packet
  kReps,   // recycle ports echoed by ACKs without congestion, fresh otherwise
};

struct EngineConfig {
  uint32_t mtu = 2048;                // RoCE path MTU: payload bytes per packet
  uint8_t dscp = pkt::kRoceDscp;      // the lossless class's
  bool ooo = false;                   // out-of-order placement at the responder
  uint32_t ack_every = 64;            // rxe's RXE_MAX_PKT_PER_ACK
  uint32_t max_inflight_pkts = 1024;  // unacknowledged packets per QP
  Ns rto_ns = 4'000'000;              // no progress for this long: go back N
  uint32_t retry_count = 7;           // timeouts in a row before kError (IBA's 3-bit count)
  Ns cnp_interval_ns = 50'000;        // at most one CNP per QP per interval (at 40 Gb/s: dcqcn.h)
  Ns rnr_delay_ns = 100'000;          // wait after an RNR NAK
  EntropyMode entropy = EntropyMode::kPerQp;
  bool dcqcn = false;            // cut the QP's rate on CNPs, recover over time
  double line_rate_gbps = 10.0;  // what a QP's DCQCN rate is a fraction of
  uint64_t seed = 1;
};

// Plain counters (read by the JSON export, never reset by the engine).
struct QpCounters {
  uint64_t tx_pkts = 0, tx_bytes = 0;  // data packets and their payload bytes
  uint64_t rx_pkts = 0, rx_bytes = 0;  // data packets accepted (placed)
  uint64_t retransmits = 0;            // data packets sent again
  uint64_t naks_tx = 0, naks_rx = 0;   // PSN sequence error NAKs
  uint64_t other_naks_rx = 0;          // RNR and fatal NAKs
  uint64_t other_naks_tx = 0;          // RNR, invalid request and remote access NAKs
  uint64_t acks_tx = 0, acks_rx = 0;
  uint64_t out_of_sequence = 0;  // data packets past the expected PSN
  uint64_t duplicates = 0;       // data packets before the expected PSN (or seen)
  uint64_t timeouts = 0;
  uint64_t cnps_tx = 0, cnps_rx = 0, ce_rx = 0;
  uint64_t drops = 0;  // data packets refused (bad access, no receive buffer, stash full)
  uint64_t completions = 0, deliveries = 0;  // sends acknowledged, messages arrived
};

// Where peers' WRITEs land: `len` bytes at `base`, addressed from `va`.
struct MemoryRegion {
  uint8_t* base = nullptr;
  uint64_t len = 0;
  uint64_t va = 0;
  uint32_t rkey = 0;
};

// True when `mr` exists, `rkey` is its key and [va, va + len) lies inside
// it (rxe's check_rkey: the responder's access check of a RETH).
inline bool MayPlace(const MemoryRegion* mr, uint64_t va, uint64_t len, uint32_t rkey) {
  return mr && rkey == mr->rkey && va >= mr->va && va - mr->va <= mr->len &&
         len <= mr->len - (va - mr->va);
}

enum class WrOp : uint8_t { kWrite, kWriteImm, kSend, kSendImm };

struct SendWr {
  WrOp op = WrOp::kWriteImm;
  const uint8_t* local = nullptr;
  uint32_t len = 0;
  uint64_t remote_va = 0;  // WRITE
  uint32_t rkey = 0;       // WRITE
  uint32_t imm = 0;        // *_IMM
  uint64_t wr_id = 0;
  // Marked for the strict-priority class (framer.h), not ECN-capable: a
  // collective's clear-to-send (emu/collective, --cts).
  bool priority = false;
};

enum class QpEventKind : uint8_t { kSendDone, kRecvDone, kError };
struct QpEvent {
  QpEventKind kind = QpEventKind::kSendDone;
  uint32_t qpn = 0;    // local
  uint64_t wr_id = 0;  // kSendDone; kRecvDone of a SEND: the receive's wr_id
  uint32_t imm = 0;
  bool has_imm = false;
  uint64_t len = 0;        // kRecvDone: the message's bytes
  uint64_t va = 0;         // kRecvDone of a WRITE: where it started
  const char* error = "";  // kError (a static string)
};

// Who the QP talks to: both ends' addresses and QP numbers, and the next
// hop's MAC (the edge switch's gateway, or the peer itself on one link).
struct QpPeer {
  pkt::MacAddr local_mac, next_hop_mac;
  uint32_t local_ip = 0, remote_ip = 0;  // host order
  uint32_t local_qpn = 0, remote_qpn = 0;
  uint32_t start_psn = 0;       // this side's first PSN (the peer expects it)
  uint32_t peer_start_psn = 0;  // the peer's first PSN (this side expects it)
  // The path MTU both ends agreed on (the smaller of what each offered: a
  // FIRST or MIDDLE packet of any other size is one rxe refuses); 0 keeps
  // the engine's.
  uint32_t mtu = 0;
};

}  // namespace ofan::uroce
