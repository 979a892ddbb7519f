// Stage 0: RX, a vector from all of a worker's ports.
//
// expects:   the worker's ports (fat-tree port -> DPDK port), its share per
//            port and the RX burst size
// modifies:  the vector (packets and one segment per port and pass) and the
//            worker's round-robin rotor
// next:      `run` over the vector whenever it is full, and once at the end;
//            the pass (dataplane/vector.cc) runs parse .. egress over it
//
// Every port may RX its share first; room left in the vector goes to ports
// that gave their whole share (up to one more share each, round robin from
// the rotor): a busy port never starves another, and a vector is not left
// half empty while a port has frames waiting (fewer vectors per packet, so
// fewer Ofan-combined fetch-adds per packet). One vector over all ports, as
// VPP does with its frames: per-vector costs (the LB dispatch, combining's
// fetch-adds, one TX burst per output port) are shared by up to kMaxVector
// packets instead of one RX burst.
//
// A port may be limited (`limit`, the per-switch engine's PFC): at most that
// many frames from it until the vector has run, the rest left in its device
// ring, as a NIC whose headroom is full leaves them on the wire.
#pragma once

#include <rte_ethdev.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "dataplane/vector_constants.h"

struct rte_mbuf;

namespace ofan::dp {

// One RX burst of a vector: its packets are pkts[start, start + n).
struct RxSegment {
  uint32_t port;
  uint16_t start;
  uint16_t n;
};

// Prefetch distance of the per-packet pass in packets: the vector is padded
// this far past its end, so the pass prefetches ahead with no bounds check.
inline constexpr uint32_t kMbufAhead = 16;

struct RxVector {
  rte_mbuf* pkts[kMaxVector + kMbufAhead];
  RxSegment seg[2 * kMaxPorts];  // at most one per port and pass
  uint32_t n = 0, nseg = 0;
};

// No port limited.
struct NoRxLimit {
  uint32_t operator()(uint32_t) const { return UINT32_MAX; }
};

// dpdk_port[p]: the DPDK port of fat-tree port p; limit(p): how many frames
// port p may give before the vector runs (UINT32_MAX: any). Returns the
// packets taken.
template <class Run, class Limit = NoRxLimit>
uint32_t GatherRx(const std::vector<uint32_t>& ports, const uint16_t* dpdk_port, uint32_t share,
                  uint32_t burst, uint32_t& rotor, RxVector& v, Run&& run, Limit&& limit = {}) {
  // Whether a limit is given: without one (every caller but the per-switch
  // engine's PFC) no per-port count is kept.
  constexpr bool kLimited = !std::is_same_v<std::decay_t<Limit>, NoRxLimit>;
  uint32_t work = 0;
  uint32_t taken[kMaxPorts];  // per ports[] index, since the vector last ran
  const auto np = static_cast<uint32_t>(ports.size());
  if constexpr (kLimited) std::fill_n(taken, np, 0u);
  auto flush = [&] {
    run(v);
    v.n = v.nseg = 0;
    if constexpr (kLimited) std::fill_n(taken, np, 0u);
  };
  // Up to `want` packets from ports[i], in RX bursts, while the device has
  // full ones; true if it gave all of them.
  auto take = [&](uint32_t i, uint32_t want) {
    const uint32_t p = ports[i];
    if constexpr (kLimited) {
      const uint32_t may = limit(p);
      const uint32_t allowed = may > taken[i] ? may - taken[i] : 0;
      if (want > allowed) {
        want = allowed;
        if (want == 0) return false;  // held: not busy either
      }
    }
    const uint32_t start = v.n;
    while (want > 0) {
      const auto ask = static_cast<uint16_t>(std::min(want, burst));
      const uint16_t got = rte_eth_rx_burst(dpdk_port[p], 0, v.pkts + v.n, ask);
      v.n += got;
      want -= got;
      if (got < ask) break;
    }
    if (v.n != start) {
      v.seg[v.nseg++] =
          RxSegment{p, static_cast<uint16_t>(start), static_cast<uint16_t>(v.n - start)};
      work += v.n - start;
      if constexpr (kLimited) taken[i] += v.n - start;
    }
    return want == 0;
  };
  uint64_t busy = 0;  // bit i: ports[i] gave its whole share
  for (uint32_t i = 0; i < np; ++i) {
    if (v.n + share > kMaxVector) flush();
    if (take(i, share)) busy |= uint64_t{1} << i;
  }
  if (busy != 0) {
    // The room is split evenly over the busy ports, in whole bursts, and
    // handed out round robin from where the last poll stopped, so that no
    // port is favoured when the room does not divide evenly.
    const uint32_t room0 = (kMaxVector - v.n) / burst * burst;
    const uint32_t even = room0 / static_cast<uint32_t>(std::popcount(busy)) / burst * burst;
    const uint32_t each = std::min(share, std::max(burst, even));
    for (uint32_t k = 0, i = rotor % np; k < np; ++k, i = i + 1 == np ? 0 : i + 1) {
      const uint32_t room = (kMaxVector - v.n) / burst * burst;
      if (room == 0) break;
      if (((busy >> i) & 1) == 0) continue;
      take(i, std::min(room, each));
      rotor = i + 1 == np ? 0 : i + 1;
    }
  }
  if (v.n) flush();
  return work;
}

}  // namespace ofan::dp
