// The switch's counters as the control socket names them: one X-macro list
// gives the enum and the names, and says what each counts (VPP's error
// counters are made the same way). ofan-dp counts them (dataplane/counters.h:
// plain per-lcore arrays, summed by the control side, docs/design.md rule 5);
// ofanctl orders its table by them. Part of the protocol: a name is what the
// "counters" reply carries.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ofan::control {

// The one list: X(enumerator, name, what it counts). The enum, the names the
// control socket reports and the count all come from it; drops come last, so
// that every counter from kFirstDrop on is one drop reason.
#define OFAN_DP_COUNTERS(X)                                                                        \
  X(kRxPackets, "rx_packets", "frames received")                                                   \
  X(kRxBytes, "rx_bytes", "bytes received")                                                        \
  X(kTxPackets, "tx_packets", "frames the ports' TX took")                                         \
  X(kTxBytes, "tx_bytes", "bytes the ports' TX took")                                              \
  X(kForwardedUp, "forwarded_up", "frames sent to an uplink by the LB")                            \
  X(kForwardedDown, "forwarded_down", "frames sent down, to a host or a switch below")             \
  X(kException, "exception", "frames handed to the exception path (ARP, LLDP, to the switch)")     \
  X(kEcnMarked, "ecn_marked", "ECT frames CE-marked above the ECN threshold")                      \
  X(kPriorityQueued, "priority_queued", "frames through a port's strict-priority queue")           \
  X(kPfcRx, "pfc_rx", "PFC or PAUSE frames received")                                              \
  X(kPfcTx, "pfc_tx", "PFC frames sent")                                                           \
  X(kPfcWatchdog, "pfc_watchdog", "PFC watchdog: a queue stayed paused, frames waiting, too long") \
  X(kPfcRxHeld, "pfc_rx_held", "RX held back: the port's lossless account was full (per-switch)")  \
  X(kNeighborUnknown, "neighbor_unknown", "sent to the broadcast MAC: next hop not learned")       \
  X(kForwardedFragment, "forwarded_fragment", "IPv4 fragments forwarded, one path per datagram")   \
  X(kIcmpErrorSent, "icmp_error_sent", "ICMP time exceeded / unreachable sent (RFC 1812 4.3)")     \
  X(kIcmpRateLimited, "icmp_rate_limited", "ICMP errors not sent: over the switch's rate limit")   \
  X(kDropRunt, "drop_runt", "shorter than an Ethernet header")                                     \
  X(kDropUnknownEthertype, "drop_unknown_ethertype", "neither IPv4 nor a control ethertype")       \
  X(kDropVlanTruncated, "drop_vlan_truncated", "802.1Q tag cut short")                             \
  X(kDropIpv4Truncated, "drop_ipv4_truncated", "IPv4 header cut short")                            \
  X(kDropIpv4Version, "drop_ipv4_version", "IP version is not 4")                                  \
  X(kDropIpv4HeaderLength, "drop_ipv4_header_length", "IHL below 5")                               \
  X(kDropIpv4TotalLength, "drop_ipv4_total_length", "total length beyond the frame")               \
  X(kDropIpv4Checksum, "drop_ipv4_checksum", "IPv4 header checksum wrong")                         \
  X(kDropUdpTruncated, "drop_udp_truncated", "UDP header cut short")                               \
  X(kDropBthTruncated, "drop_bth_truncated", "RoCEv2 BTH cut short")                               \
  X(kDropPfcMalformed, "drop_pfc_malformed", "MAC control frame too short or unknown opcode")      \
  X(kDropTtlExceeded, "drop_ttl_exceeded", "TTL would reach 0")                                    \
  X(kDropNoRoute, "drop_no_route", "destination outside the fabric's address plan")                \
  X(kDropNoUplink, "drop_no_uplink", "no valid uplink for the destination")                        \
  X(kDropPortDown, "drop_port_down", "output port administratively down")                          \
  X(kDropBufferFull, "drop_buffer_full", "tail drop: the port's buffer or ring is full")           \
  X(kDropLossless, "drop_lossless",                                                                \
    "a lossless (PFC) frame found its ingress port's headroom full: never expected")               \
  X(kDropPfcWatchdog, "drop_pfc_watchdog",                                                         \
    "a lossless frame to a queue the PFC watchdog found stormed (action drop)")                    \
  X(kDropExceptionFull, "drop_exception_full", "the exception path's ring is full")                \
  X(kDropControlFull, "drop_control_full", "a control frame (ARP/ICMP reply, PFC) not queued")     \
  X(kDropSwitchDown, "drop_switch_down", "received or queued while the switch was stopped")        \
  X(kDropLinkLoss, "drop_link_loss",                                                               \
    "lost on the emulated link leaving a port (its loss_pct, or its wire cut)")

enum class Counter : uint16_t {
#define OFAN_DP_COUNTER_ENUM(e, name, what) e,
  OFAN_DP_COUNTERS(OFAN_DP_COUNTER_ENUM)
#undef OFAN_DP_COUNTER_ENUM
      kCount,
};

inline constexpr size_t kNumCounters = static_cast<size_t>(Counter::kCount);
inline constexpr Counter kFirstDrop = Counter::kDropRunt;

inline constexpr std::array<std::string_view, kNumCounters> kCounterNames = {
#define OFAN_DP_COUNTER_NAME(e, name, what) name,
    OFAN_DP_COUNTERS(OFAN_DP_COUNTER_NAME)
#undef OFAN_DP_COUNTER_NAME
};

// Every name is set, drops are named drop_*, and nothing else is.
constexpr bool CounterNamesAreConsistent() {
  for (size_t i = 0; i < kNumCounters; ++i) {
    const bool drop = i >= static_cast<size_t>(kFirstDrop);
    if (kCounterNames[i].empty()) return false;
    if (kCounterNames[i].starts_with("drop_") != drop) return false;
  }
  return true;
}
static_assert(CounterNamesAreConsistent(), "OFAN_DP_COUNTERS: names and drop order");

constexpr std::string_view CounterName(Counter c) { return kCounterNames[static_cast<size_t>(c)]; }
constexpr bool IsDrop(Counter c) { return c >= kFirstDrop && c < Counter::kCount; }

}  // namespace ofan::control
