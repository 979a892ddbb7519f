// Switch counters: one enum, one name table. Each lcore owns a plain array
// (no atomics on the hot path); the control side sums them (rule 5).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

namespace ofan::dp {

enum class Counter : uint16_t {
  kRxPackets,
  kRxBytes,
  kTxPackets,
  kTxBytes,
  kForwardedUp,
  kForwardedDown,
  kException,  // ARP / LLDP handed to the control thread
  kEcnMarked,
  kPriorityQueued,  // went through a port's strict-priority queue
  kPfcRx,
  kPfcTx,
  kPfcWatchdog,      // a port stayed paused longer than 200 ms
  kNeighborUnknown,  // forwarded to the broadcast MAC: next hop not learned yet
  // Drops, one per reason.
  kDropRunt,
  kDropUnknownEthertype,
  kDropVlanTruncated,
  kDropIpv4Truncated,
  kDropIpv4Version,
  kDropIpv4HeaderLength,
  kDropIpv4TotalLength,
  kDropIpv4Checksum,
  kDropIpv4Fragment,
  kDropUdpTruncated,
  kDropBthTruncated,
  kDropPfcMalformed,
  kDropTtlExceeded,
  kDropNoRoute,
  kDropNoUplink,
  kDropPortDown,
  kDropBufferFull,
  kDropExceptionFull,
  kDropTxFull,
  kCount,
};

inline constexpr size_t kNumCounters = static_cast<size_t>(Counter::kCount);
inline constexpr Counter kFirstDrop = Counter::kDropRunt;

inline constexpr std::array<std::string_view, kNumCounters> kCounterNames = {
    "rx_packets",
    "rx_bytes",
    "tx_packets",
    "tx_bytes",
    "forwarded_up",
    "forwarded_down",
    "exception",
    "ecn_marked",
    "priority_queued",
    "pfc_rx",
    "pfc_tx",
    "pfc_watchdog",
    "neighbor_unknown",
    "drop_runt",
    "drop_unknown_ethertype",
    "drop_vlan_truncated",
    "drop_ipv4_truncated",
    "drop_ipv4_version",
    "drop_ipv4_header_length",
    "drop_ipv4_total_length",
    "drop_ipv4_checksum",
    "drop_ipv4_fragment",
    "drop_udp_truncated",
    "drop_bth_truncated",
    "drop_pfc_malformed",
    "drop_ttl_exceeded",
    "drop_no_route",
    "drop_no_uplink",
    "drop_port_down",
    "drop_buffer_full",
    "drop_exception_full",
    "drop_tx_full",
};

constexpr std::string_view CounterName(Counter c) { return kCounterNames[static_cast<size_t>(c)]; }
constexpr bool IsDrop(Counter c) { return c >= kFirstDrop && c < Counter::kCount; }

// A worker's counters: written by one lcore with plain (relaxed) stores,
// read by the control thread; no read-modify-write on the hot path.
struct LcoreCounters {
  std::array<std::atomic<uint64_t>, kNumCounters> v{};
  void Add(Counter c, uint64_t n = 1) {
    auto& x = v[static_cast<size_t>(c)];
    x.store(x.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t Get(Counter c) const {
    return v[static_cast<size_t>(c)].load(std::memory_order_relaxed);
  }
};

struct Counters {
  std::array<uint64_t, kNumCounters> v{};
  void Add(Counter c, uint64_t n = 1) { v[static_cast<size_t>(c)] += n; }
  uint64_t Get(Counter c) const { return v[static_cast<size_t>(c)]; }
  uint64_t Drops() const {
    uint64_t d = 0;
    for (size_t i = static_cast<size_t>(kFirstDrop); i < kNumCounters; ++i) d += v[i];
    return d;
  }
  Counters& operator+=(const LcoreCounters& o) {
    for (size_t i = 0; i < kNumCounters; ++i) v[i] += o.v[i].load(std::memory_order_relaxed);
    return *this;
  }
  Counters& operator+=(const Counters& o) {
    for (size_t i = 0; i < kNumCounters; ++i) v[i] += o.v[i];
    return *this;
  }
};

}  // namespace ofan::dp
