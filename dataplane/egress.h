// Stage 5: egress, one per output port.
//
// expects:   rewritten frames for this port, from any worker lcore, framed as
//            parse forwarded them (untagged or one 802.1Q tag: ECN marking
//            finds the IPv4 header with ForwardedL3Offset)
// modifies:  ECN CE on ECT frames when the backlog is above the threshold
// next:      the port's TX, in strict priority (control/ACK queue first), at
//            the emulated line rate (token bucket in bytes), unless the port's
//            class is paused by PFC
// parameters: buffer bytes (tail drop), ECN threshold, rate, ring slots
//
// The producer side (Enqueue) is multi-producer: rte_ring MP enqueue plus one
// atomic add per (burst, port) for the byte count. The consumer side (Drain)
// belongs to the lcore that owns the port; it also integrates the queue depth
// over time, which is what the paper measures (max and time average).
#pragma once

#include <atomic>
#include <cstdint>

#include "dataplane/counters.h"
#include "dataplane/packet/headers.h"

struct rte_ring;
struct rte_mbuf;

namespace ofan::dp {

inline constexpr uint32_t kMaxBurst = 64;    // one RX or TX burst (config `burst` <= this)
inline constexpr uint32_t kMaxVector = 256;  // packets a worker runs through the pipeline at once
inline constexpr uint32_t kMaxQueues = 2 * 64;  // (port, queue) pairs of a k <= 64 switch
inline constexpr int kPrioQueue = 0;
inline constexpr int kNormalQueue = 1;

// A port's neighbour (next hop) MAC as one atomic word: the MAC's six bytes,
// and kNeighborKnown once it is configured or learned (ARP).
inline constexpr uint64_t kNeighborKnown = 1ull << 48;
inline uint64_t PackMac(const pkt::MacAddr& m) {
  uint64_t v = 0;
  for (int i = 0; i < 6; ++i) v |= static_cast<uint64_t>(m.b[static_cast<size_t>(i)]) << (8 * i);
  return v;
}
inline pkt::MacAddr UnpackMac(uint64_t v) {
  pkt::MacAddr m;
  for (int i = 0; i < 6; ++i) m.b[static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
  return m;
}

struct alignas(64) EgressPort {
  // Read-mostly, looked up per packet by every worker: kept on a line of its
  // own so the producers' counters below do not bounce it between cores.
  rte_ring* ring[2] = {nullptr, nullptr};
  std::atomic<bool> admin_up{true};
  bool present = false;
  uint16_t dpdk_port = 0;
  uint64_t limit_bytes = 0;
  uint64_t ecn_bytes = 0;
  // Can frames be sent on it (configured, admin up)?
  bool up() const { return present && admin_up.load(std::memory_order_relaxed); }

  // Written by producers (any worker) and the owner.
  alignas(64) std::atomic<uint64_t> bytes{0};  // in both rings and the owner's staging
  std::atomic<uint64_t> max_bytes{0};
  std::atomic<uint64_t> drops_buffer{0};
  std::atomic<uint64_t> ecn_marked{0};
  std::atomic<uint64_t> ingress_bytes{0};  // PFC: bytes queued anywhere that arrived on this port
  std::atomic<bool> pfc_sent_xoff{false};

  // Owner-only (the lcore whose pipe holds the port); read racily for stats.
  alignas(64) rte_mbuf* staged[kMaxBurst + 1] = {};  // + the frame held by the shaper
  uint32_t staged_n = 0;
  double tokens = 0;
  uint64_t tb_last_tsc = 0;
  uint64_t stat_last_tsc = 0;
  uint64_t stat_start_tsc = 0;
  uint64_t paused_until_tsc = 0;  // PFC on our class (or 802.3x PAUSE)
  uint64_t paused_since_tsc = 0;
  bool watchdog_fired = false;
  std::atomic<double> area_bytes{0};  // integral of the backlog, byte * tsc
  std::atomic<double> area_pkts{0};
  std::atomic<uint64_t> max_pkts{0};
  std::atomic<uint64_t> rx_packets{0}, rx_bytes{0}, tx_packets{0}, tx_bytes{0};
};

}  // namespace ofan::dp
