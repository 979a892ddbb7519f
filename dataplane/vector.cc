// The worker's fast path: RX a vector from the worker's ports, run the
// pipeline stages over it, hand each output port its packets, drain the
// egress queues the worker owns. Stages, in order (dataplane/stages/):
//   parse.h + route.h + rewrite.h (TTL - 1, checksum)  one pass per packet
//   balance.h      the LB, inside that pass (immediate lanes) or after it
//   rewrite.h      MACs, per packet, once its port is known
//   egress.h       per (output port, queue) bucket
// docs/packet-walk.md follows one packet through this file.
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "dataplane/packet/headers.h"
#include "dataplane/stages/rewrite.h"
#include "dataplane/switch.h"

namespace ofan::dp {
namespace {

constexpr uint64_t kWatchdogNs = 200'000'000;  // 200 ms (Meta's PFC watchdog)

// Prefetch distances of the per-packet pass, in packets: the mbuf header
// first, its frame's first line later (the frame address is in the mbuf).
constexpr uint32_t kMbufAhead = 16, kDataAhead = 8;

void AtomicMax(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

// The port's and the worker's TX counters, for `sent` frames of `bytes` in
// all. The port's are written by its owner only: relaxed load and store.
void CountTx(Worker& wk, EgressPort& e, uint32_t sent, uint64_t bytes) {
  e.tx_packets.store(e.tx_packets.load(std::memory_order_relaxed) + sent,
                     std::memory_order_relaxed);
  e.tx_bytes.store(e.tx_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  wk.counters.Add(Counter::kTxPackets, sent);
  wk.counters.Add(Counter::kTxBytes, bytes);
}

void AtomicAddDouble(std::atomic<double>& a, double v) {
  // Single writer (the port's owner): a relaxed load/store suffices.
  a.store(a.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}

// What the pass prefetches past the end of a vector: the vector array is
// padded with it, so the pass prefetches a fixed distance ahead with no
// bounds check.
alignas(64) uint8_t pad_frame[64];
rte_mbuf pad_mbuf;  // zeroed (static storage): data_off 0, no segments
[[maybe_unused]] const bool pad_ready = (pad_mbuf.buf_addr = pad_frame, true);

}  // namespace

uint32_t Switch::PollWorker(uint32_t wi) {
  Worker& wk = *workers_[wi];
  const FwdState* st = state_.load(std::memory_order_acquire);
  uint32_t work = 0;
  // RX every port of the worker's pipes into one vector, then run the
  // pipeline once over it (as VPP does with its frames): per-vector costs —
  // the LB dispatch, Ofan-combined's fetch-adds (one per key per vector:
  // App. I's combining over a wider window), one TX burst per output port —
  // are shared by up to kMaxVector packets instead of one RX burst.
  rte_mbuf* pkts[kMaxVector + kMbufAhead];
  RxSegment seg[2 * 64];  // at most one per port and pass, k <= 64
  uint32_t n = 0, nseg = 0;
  auto run = [&] {
    for (uint32_t i = n; i < n + kMbufAhead; ++i) pkts[i] = &pad_mbuf;
    (this->*st->run)(wk, *st, pkts, seg, nseg, n);
    n = nseg = 0;
  };
  // Up to `want` packets from port p, in RX bursts, while the device has
  // full ones; true if it gave all of them.
  auto take = [&](uint32_t p, uint32_t want) {
    const uint32_t start = n;
    while (want > 0) {
      const uint16_t ask = static_cast<uint16_t>(std::min(want, cfg_.burst));
      const uint16_t got = rte_eth_rx_burst(egress_[p].dpdk_port, 0, pkts + n, ask);
      n += got;
      want -= got;
      if (got < ask) break;
    }
    if (n != start) {
      seg[nseg++] = RxSegment{p, static_cast<uint16_t>(start), static_cast<uint16_t>(n - start)};
      work += n - start;
    }
    return want == 0;
  };
  // First every port its share; then, if quiet ports left room, the ports
  // that gave their whole share may fill it, a share each at most (below):
  // a busy port never starves another, and a vector is not left half empty
  // while a port has frames waiting (fewer vectors per packet, fewer
  // Ofan-combined fetch-adds per packet).
  const uint32_t np = static_cast<uint32_t>(wk.ports.size());
  uint64_t busy = 0;  // bit i: wk.ports[i] gave its whole share
  for (uint32_t i = 0; i < np; ++i) {
    if (n + wk.port_share > kMaxVector) run();
    if (take(wk.ports[i], wk.port_share)) busy |= uint64_t{1} << i;
  }
  if (busy != 0) {
    // The room is split evenly over the busy ports, in whole bursts, and
    // handed out round robin from where the last poll stopped (rx_rotor),
    // so that no port is favoured when the room does not divide evenly.
    const uint32_t room0 = (kMaxVector - n) / cfg_.burst * cfg_.burst;
    const uint32_t even =
        room0 / static_cast<uint32_t>(std::popcount(busy)) / cfg_.burst * cfg_.burst;
    const uint32_t each = std::min(wk.port_share, std::max(cfg_.burst, even));
    for (uint32_t k = 0, i = wk.rx_rotor % np; k < np; ++k, i = i + 1 == np ? 0 : i + 1) {
      const uint32_t room = (kMaxVector - n) / cfg_.burst * cfg_.burst;
      if (room == 0) break;
      if (((busy >> i) & 1) == 0) continue;
      take(wk.ports[i], std::min(room, each));
      wk.rx_rotor = i + 1 == np ? 0 : i + 1;
    }
  }
  if (n) run();
  const uint64_t now = rte_rdtsc();
  for (uint32_t p : wk.ports) {
    // TX up to twice the port's share (what RX may take from one port), a
    // burst at a time, while bursts go out full.
    for (uint32_t sent = 0; sent < 2 * wk.port_share;) {
      const uint32_t s = Drain(wk, p, now);
      work += s;
      sent += s;
      if (s < cfg_.burst) break;
    }
    // A backlog held back by the shaper or PFC is work too: no idle sleep.
    work += egress_[p].staged_n != 0;
  }
  wk.seen_generation.store(st->generation, std::memory_order_release);
  return work;
}

template <lb::Role kRole, class Lane>
void Switch::RunVector(Worker& wk, const FwdState& st, rte_mbuf** pkts, const RxSegment* seg,
                       uint32_t nseg, uint32_t n) {
  const uint64_t now = rte_rdtsc();
  // The policy's lane (stages/balance.h), built once per vector.
  const LcoreLb& l = st.lcore[wk.index];
  lb::LbView view{st.table.get(), nullptr, 0};
  uint32_t qbytes[lb::kMaxUplinks];
  if constexpr (std::is_same_v<Lane, AnyLane>) {
    if (lb::IsQueueAware(st.kind)) {
      for (uint32_t u = 0; u < w_; ++u) {
        qbytes[u] = static_cast<uint32_t>(
            std::min<uint64_t>(egress_[w_ + u].bytes.load(std::memory_order_relaxed), UINT32_MAX));
      }
      view.queue_bytes = qbytes;
    }
    if (st.kind == lb::PolicyKind::kFlowlet) {
      view.now = static_cast<lb::TimePs>(static_cast<double>(now - start_tsc_) * 1e12 /
                                         static_cast<double>(tsc_hz_));
    }
  }
  auto make_lane = [&]() -> Lane {
    if constexpr (std::is_same_v<Lane, CombinedLane>) {
      return CombinedLane(*l.combined);
    } else if constexpr (std::is_same_v<Lane, AtomicLane>) {
      return AtomicLane{*l.atomic, view};
    } else if constexpr (std::is_same_v<Lane, AnyLane>) {
      return AnyLane(*l.any, view, wk.keys);
    } else {
      using P = std::remove_reference_t<decltype(std::declval<Lane&>().policy)>;
      return Lane{std::get<P>(l.any->variant()), view};
    }
  };
  Lane lane = make_lane();
  // Per packet, in one pass: parse, route, TTL - 1 and checksum (stages 1,
  // 2, 4a) and, for an immediate lane, the LB (stage 3). A packet whose
  // output port is known gets its MACs (stage 4b) and is put in its (port,
  // queue) bucket at once; up-bound packets of a deferred lane wait in up_m
  // until the lane resolves them all.
  // A local copy of the route table's view: uint8_t stores below may alias
  // anything, so the members of router_ would otherwise be reloaded for
  // every packet.
  const RouteTable router = router_.table();
  const uint32_t nd = router_.num_dests();
  const uint32_t w = w_;
  if (const uint64_t gen = neighbor_gen_.load(std::memory_order_acquire); gen != wk.mac_gen)
      [[unlikely]] {
    RefreshMacs(wk, gen);
  }
  const MacPair* const macs = wk.macs;
  uint8_t queue_of[2][lb::kNumSizeClasses];  // a local copy too, like the router
  std::memcpy(queue_of, queue_of_, sizeof queue_of);
  rte_mbuf** const slots = wk.slots.data();
  uint16_t* const fill = wk.fill;
  uint32_t* const fill_bytes = wk.fill_bytes;
  // Stage 4b (MACs) and the bucket, for a packet with its
  // output port.
  auto out = [&](rte_mbuf* m, uint8_t* d, uint32_t port, uint32_t q, uint32_t bytes) {
    SetMacs(d, macs[port]);
    const uint32_t b = 2 * port + q;
    slots[b * kMaxVector + fill[b]++] = m;
    fill_bytes[b] += bytes;
  };
  constexpr uint32_t kUpSlots = Lane::kDeferred ? kMaxVector : 1;
  // What the deferred loop needs of each up-bound packet, so that it reads
  // none of the mbuf again (up_d is padded for the prefetch).
  rte_mbuf* up_m[kUpSlots];
  uint8_t* up_d[kUpSlots + kDataAhead];
  uint32_t up_len[kUpSlots];
  uint8_t up_q[kUpSlots];
  rte_mbuf* exc[kMaxVector];
  uint32_t nup = 0, nexc = 0, fwd_down = 0, fwd_up = 0, no_uplink = 0, ttl_expired = 0;
  uint64_t all_rx_bytes = 0;
  for (uint32_t i = 0; i < kMbufAhead; ++i) rte_prefetch0(pkts[i]);
  for (uint32_t i = 0; i < kDataAhead; ++i) rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void*));
  for (uint32_t s = 0; s < nseg; ++s) {
    const uint32_t in_port = seg[s].port;
    const uint8_t pipe = static_cast<uint8_t>(cfg_.pipe_of(in_port));  // one division per RX burst
    uint64_t rx_bytes = 0;
    for (uint32_t i = seg[s].start, end = seg[s].start + seg[s].n; i < end; ++i) {
      // pkts[] is padded past n (PollWorker): no bounds checks here.
      rte_prefetch0(pkts[i + kMbufAhead]);
      rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kDataAhead], void*));
      rte_mbuf* m = pkts[i];
      uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
      const uint16_t len = rte_pktmbuf_data_len(m);
      const uint32_t bytes = rte_pktmbuf_pkt_len(m);
      rx_bytes += bytes;
      ParsedPacket p;
      ParseFrameInto(d, len, p);  // stage 1
      if (p.verdict != Verdict::kForward) [[unlikely]] {
        switch (p.verdict) {
          case Verdict::kException:
            exc[nexc++] = m;
            break;
          case Verdict::kPfc:
            HandlePfc(wk, in_port, d, len, now);
            rte_pktmbuf_free(m);
            break;
          default:
            wk.counters.Add(p.drop);
            rte_pktmbuf_free(m);
            break;
        }
        continue;
      }
      const RouteResult r = router.RouteAs<kRole>(p.dst_ip);  // stage 2
      if (r.kind == RouteKind::kLocal || r.kind == RouteKind::kNoRoute) [[unlikely]] {
        if (r.kind == RouteKind::kLocal) {
          exc[nexc++] = m;
        } else {
          wk.counters.Add(Counter::kDropNoRoute);
          rte_pktmbuf_free(m);
        }
        continue;
      }
      // A packet whose TTL expires is dropped before the LB, so that it
      // takes no Ofan pointer. The others get TTL - 1 in this pass, while the
      // header line is hot from parsing (after the LB: a store to the frame
      // may alias anything, so the lane's state would be reloaded after it);
      // the writes left for later are the MACs.
      if (TtlExpires(d + p.l3_offset)) [[unlikely]] {
        ++ttl_expired;
        rte_pktmbuf_free(m);
        continue;
      }
      const uint32_t q = queue_of[p.roce][static_cast<uint32_t>(p.cls)];
      if (r.kind == RouteKind::kDown) {
        DecrementLiveTtl(d + p.l3_offset);
        out(m, d, r.port, q, bytes);
        ++fwd_down;
        continue;
      }
      // Stage 3 (balance.h). A lane reads only the fields its policy needs;
      // the compiler drops the others (the flow hash for Ofan, say).
      lb::PacketKey k;
      k.flow_hash = p.flow_hash;
      k.dst_qp = p.dst_qp;
      k.dest = r.dest;
      k.key = static_cast<uint16_t>(r.dest + nd * static_cast<uint32_t>(p.cls));
      k.frame_bytes = p.frame_len;
      k.slice = r.slice;
      k.pipe = pipe;
      k.source_uplink = lb::kNoUplink;
      k.cls = p.cls;
      if constexpr (Lane::kDeferred) {
        lane.Defer(nup, k);
        up_m[nup] = m;
        up_d[nup] = d;
        up_len[nup] = bytes;
        up_q[nup] = static_cast<uint8_t>(q);
        ++nup;
        DecrementLiveTtl(d + p.l3_offset);
      } else {
        const uint8_t u = lane.Pick(k);
        if (u == lb::kNoUplink) [[unlikely]] {
          ++no_uplink;
          rte_pktmbuf_free(m);
          continue;
        }
        DecrementLiveTtl(d + p.l3_offset);
        out(m, d, w + u, q, bytes);
        ++fwd_up;
      }
    }
    EgressPort& in = egress_[in_port];
    in.rx_packets.store(in.rx_packets.load(std::memory_order_relaxed) + seg[s].n,
                        std::memory_order_relaxed);
    in.rx_bytes.store(in.rx_bytes.load(std::memory_order_relaxed) + rx_bytes,
                      std::memory_order_relaxed);
    all_rx_bytes += rx_bytes;
  }
  wk.counters.Add(Counter::kRxPackets, n);
  wk.counters.Add(Counter::kRxBytes, all_rx_bytes);
  if (nexc) [[unlikely]] {
    const unsigned q =
        rte_ring_mp_enqueue_burst(exception_ring_, reinterpret_cast<void**>(exc), nexc, nullptr);
    wk.counters.Add(Counter::kException, q);
    if (q < nexc) {
      wk.counters.Add(Counter::kDropExceptionFull, nexc - q);
      rte_pktmbuf_free_bulk(exc + q, nexc - q);
    }
  }
  // A deferred lane decides for the whole vector at once (Ofan-combined: one
  // fetch-add per key), then hands out the decisions in arrival order.
  if constexpr (Lane::kDeferred) {
    if (nup) {
      lane.Resolve(nup);
      // The vector's frames have been read since these were: fetch their
      // headers again ahead of the writes, as the pass does.
      for (uint32_t i = nup; i < nup + kDataAhead; ++i) up_d[i] = pad_frame;
      for (uint32_t j = 0; j < kDataAhead; ++j) rte_prefetch0(up_d[j]);
      for (uint32_t j = 0; j < nup; ++j) {
        rte_prefetch0(up_d[j + kDataAhead]);
        const uint8_t u = lane.Take(j);
        if (u == lb::kNoUplink) [[unlikely]] {
          ++no_uplink;
          rte_pktmbuf_free(up_m[j]);
          continue;
        }
        out(up_m[j], up_d[j], w + u, up_q[j], up_len[j]);
      }
      fwd_up = nup - no_uplink;
    }
  }
  if (fwd_down) wk.counters.Add(Counter::kForwardedDown, fwd_down);
  if (fwd_up) wk.counters.Add(Counter::kForwardedUp, fwd_up);
  if (no_uplink) wk.counters.Add(Counter::kDropNoUplink, no_uplink);
  if (ttl_expired) wk.counters.Add(Counter::kDropTtlExceeded, ttl_expired);

  // Egress, per (output port, queue) bucket, priority queue first. A bucket
  // holds only down or only up packets (a port is one or the other), so its
  // order is the arrival order.
  const uint32_t nq = 2 * static_cast<uint32_t>(egress_.size());
  uint32_t unknown_neighbor = 0, port_down = 0;
  for (uint32_t b = 0; b < nq; ++b) {
    const uint32_t c = fill[b];
    if (!c) continue;
    const uint32_t bytes = fill_bytes[b];
    fill[b] = 0;
    fill_bytes[b] = 0;
    const uint32_t o = b / 2;
    rte_mbuf** g = slots + static_cast<size_t>(b) * kMaxVector;
    if (!egress_[o].up()) [[unlikely]] {
      port_down += c;
      rte_pktmbuf_free_bulk(g, c);
      continue;
    }
    if ((wk.unknown_neighbors >> o) & 1) [[unlikely]]
      unknown_neighbor += c;
    Enqueue(wk, o, static_cast<int>(b % 2), g, c, bytes, now);
  }
  if (unknown_neighbor) wk.counters.Add(Counter::kNeighborUnknown, unknown_neighbor);
  if (port_down) wk.counters.Add(Counter::kDropPortDown, port_down);
}

void Switch::RefreshMacs(Worker& wk, uint64_t gen) const {
  wk.unknown_neighbors = 0;
  for (uint32_t o = 0; o < egress_.size(); ++o) {
    const uint64_t nb = neighbor_[o].load(std::memory_order_relaxed);
    pkt::MacAddr dst_mac{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}};
    if (nb & kNeighborKnown) {
      dst_mac = UnpackMac(nb);
    } else {
      wk.unknown_neighbors |= uint64_t{1} << o;  // sent to broadcast until the neighbour is learned
    }
    wk.macs[o] = MacPair(dst_mac, port_mac_[o]);
  }
  wk.mac_gen = gen;
}

VectorFn Switch::VectorFnFor(lb::Role role, LaneKind lane) {
  return WithRole(role, [&]<lb::Role R>() -> VectorFn {
    switch (lane) {
      case LaneKind::kEcmp:
        return &Switch::RunVector<R, PolicyLane<lb::Ecmp>>;
      case LaneKind::kPofan:
        return &Switch::RunVector<R, PolicyLane<lb::Pofan>>;
      case LaneKind::kAtomic:
        return &Switch::RunVector<R, AtomicLane>;
      case LaneKind::kCombined:
        return &Switch::RunVector<R, CombinedLane>;
      case LaneKind::kAny:
        break;
    }
    return &Switch::RunVector<R, AnyLane>;
  });
}

void Switch::Enqueue(Worker& wk, uint32_t port, int queue, rte_mbuf** pkts, uint32_t n,
                     uint64_t bytes, uint64_t now) {
  EgressPort& e = egress_[port];
  // Run to completion when this worker owns the port and nothing waits in
  // its queues (unshaped, not paused): the frames go straight to the device,
  // as they would leave an empty output queue. What the device refuses is
  // queued below as usual.
  if (owner_[port] == wk.index && bytes_per_tsc_ == 0 && e.staged_n == 0 &&
      e.bytes.load(std::memory_order_relaxed) == 0 && now >= e.paused_until_tsc) {
    const uint16_t sent = rte_eth_tx_burst(e.dpdk_port, 0, pkts, static_cast<uint16_t>(n));
    // The PMD owns (and may free) what it took: count the rest, still ours.
    uint64_t unsent_bytes = 0;
    for (uint32_t i = sent; i < n; ++i) unsent_bytes += rte_pktmbuf_pkt_len(pkts[i]);
    if (sent) {
      CountTx(wk, e, sent, bytes - unsent_bytes);
      if (queue == kPrioQueue) wk.counters.Add(Counter::kPriorityQueued, sent);
    }
    if (sent == n) return;
    pkts += sent;
    n -= sent;
    bytes = unsent_bytes;
  }
  const uint64_t old = e.bytes.fetch_add(bytes, std::memory_order_relaxed);
  uint64_t running = old, dropped = 0;
  rte_mbuf* keep[kMaxVector];
  uint32_t nkeep = 0, marked = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t len = rte_pktmbuf_pkt_len(pkts[i]);
    if (running + len > e.limit_bytes) {
      dropped += len;
      rte_pktmbuf_free(pkts[i]);
      continue;
    }
    if (e.ecn_bytes && running > e.ecn_bytes) {
      uint8_t* f = rte_pktmbuf_mtod(pkts[i], uint8_t*);
      if (MarkCe(f, ForwardedL3Offset(f))) ++marked;
    }
    running += len;
    keep[nkeep++] = pkts[i];
  }
  if (cfg_.pfc.enabled) {
    for (uint32_t i = 0; i < nkeep; ++i) {
      const int32_t in = keep[i]->port < port_of_dpdk_.size() ? port_of_dpdk_[keep[i]->port] : -1;
      if (in >= 0) {
        egress_[static_cast<size_t>(in)].ingress_bytes.fetch_add(rte_pktmbuf_pkt_len(keep[i]),
                                                                 std::memory_order_relaxed);
      }
    }
  }
  const unsigned q =
      rte_ring_mp_enqueue_burst(e.ring[queue], reinterpret_cast<void**>(keep), nkeep, nullptr);
  for (unsigned i = q; i < nkeep; ++i) {
    dropped += rte_pktmbuf_pkt_len(keep[i]);
    if (cfg_.pfc.enabled) ReleaseIngress(keep[i]);
    rte_pktmbuf_free(keep[i]);
  }
  const uint32_t ndrop = n - q;
  if (dropped) e.bytes.fetch_sub(dropped, std::memory_order_relaxed);
  if (ndrop) {
    wk.counters.Add(Counter::kDropBufferFull, ndrop);
    e.drops_buffer.fetch_add(ndrop, std::memory_order_relaxed);
  }
  if (marked) {
    wk.counters.Add(Counter::kEcnMarked, marked);
    e.ecn_marked.fetch_add(marked, std::memory_order_relaxed);
  }
  if (queue == kPrioQueue) wk.counters.Add(Counter::kPriorityQueued, q);
  AtomicMax(e.max_bytes, old + bytes - dropped);
}

uint32_t Switch::Drain(Worker& wk, uint32_t port, uint64_t now) {
  EgressPort& e = egress_[port];
  // Queue depth over time: the backlog held since the last drain.
  const uint64_t dt = now - e.stat_last_tsc;
  const uint64_t backlog = e.bytes.load(std::memory_order_relaxed);
  e.stat_last_tsc = now;
  if (backlog == 0 && e.staged_n == 0) return 0;  // empty: nothing to integrate or send
  const uint64_t pkts_now = rte_ring_count(e.ring[0]) + rte_ring_count(e.ring[1]) + e.staged_n;
  AtomicAddDouble(e.area_bytes, static_cast<double>(backlog) * static_cast<double>(dt));
  AtomicAddDouble(e.area_pkts, static_cast<double>(pkts_now) * static_cast<double>(dt));
  AtomicMax(e.max_pkts, pkts_now);
  // PFC: the normal queue is paused while paused_until is ahead.
  const bool paused = now < e.paused_until_tsc;
  if (paused) {
    if (!e.paused_since_tsc) e.paused_since_tsc = now;
    if (!e.watchdog_fired && now - e.paused_since_tsc > kWatchdogNs * tsc_hz_ / 1'000'000'000ull) {
      e.watchdog_fired = true;
      wk.counters.Add(Counter::kPfcWatchdog);
    }
  } else {
    e.paused_since_tsc = 0;
    e.watchdog_fired = false;
  }
  // Pick what to send: strict priority, the normal queue only when not
  // paused. With a shaper, frames are taken one at a time while tokens last,
  // so at most one already-picked frame can wait ahead of a priority frame.
  rte_mbuf* batch[kMaxBurst];
  uint32_t can = 0;
  auto next = [&]() -> rte_mbuf* {
    rte_mbuf* m = nullptr;
    if (e.staged_n) {
      m = e.staged[0];
      std::copy(e.staged + 1, e.staged + e.staged_n, e.staged);
      --e.staged_n;
      return m;
    }
    if (rte_ring_sc_dequeue(e.ring[kPrioQueue], reinterpret_cast<void**>(&m)) == 0) return m;
    if (!paused && rte_ring_sc_dequeue(e.ring[kNormalQueue], reinterpret_cast<void**>(&m)) == 0)
      return m;
    return nullptr;
  };
  if (bytes_per_tsc_ > 0) {
    // Token bucket in bytes, wire overhead (preamble + IFG) included. Its
    // depth is two jumbo-ish frames or 20 us of line rate, whichever is
    // larger: enough to send a burst per poll, too little for an idle port to
    // save up a burst that would break the emulated rate.
    const double cap =
        std::max(2.0 * 4200.0, bytes_per_tsc_ * static_cast<double>(tsc_hz_) * 20e-6);
    e.tokens = std::min(cap, e.tokens + static_cast<double>(now - e.tb_last_tsc) * bytes_per_tsc_);
    e.tb_last_tsc = now;
    double t = e.tokens;
    while (can < cfg_.burst) {
      rte_mbuf* m = next();
      if (!m) break;
      const double need = static_cast<double>(rte_pktmbuf_pkt_len(m) + 20);
      if (t < need) {  // hold it at the head until the bucket refills
        e.staged[0] = m;
        e.staged_n = 1;
        break;
      }
      t -= need;
      batch[can++] = m;
    }
  } else {
    while (e.staged_n && can < cfg_.burst) batch[can++] = next();
    if (can < cfg_.burst) {
      can += rte_ring_sc_dequeue_burst(e.ring[kPrioQueue], reinterpret_cast<void**>(batch + can),
                                       cfg_.burst - can, nullptr);
    }
    if (!paused && can < cfg_.burst) {
      can += rte_ring_sc_dequeue_burst(e.ring[kNormalQueue], reinterpret_cast<void**>(batch + can),
                                       cfg_.burst - can, nullptr);
    }
  }
  if (can == 0) return 0;
  // The PMD owns (and may free) what it accepts: read what we need first.
  uint32_t lens[kMaxBurst];
  int32_t ingress[kMaxBurst];
  for (uint32_t i = 0; i < can; ++i) {
    lens[i] = rte_pktmbuf_pkt_len(batch[i]);
    ingress[i] = batch[i]->port < port_of_dpdk_.size() ? port_of_dpdk_[batch[i]->port] : -1;
  }
  const uint16_t sent = rte_eth_tx_burst(e.dpdk_port, 0, batch, static_cast<uint16_t>(can));
  uint64_t sent_bytes = 0;
  for (uint16_t i = 0; i < sent; ++i) {
    sent_bytes += lens[i];
    if (cfg_.pfc.enabled && ingress[i] >= 0) {
      egress_[static_cast<size_t>(ingress[i])].ingress_bytes.fetch_sub(lens[i],
                                                                       std::memory_order_relaxed);
    }
  }
  if (sent < can) {
    // The device is full: keep the rest, in order, ahead of anything staged.
    const uint32_t left = can - sent;
    std::copy_backward(e.staged, e.staged + e.staged_n, e.staged + e.staged_n + left);
    std::copy(batch + sent, batch + can, e.staged);
    e.staged_n += left;
  }
  if (bytes_per_tsc_ > 0) e.tokens -= static_cast<double>(sent_bytes + 20ull * sent);
  if (sent) {
    e.bytes.fetch_sub(sent_bytes, std::memory_order_relaxed);
    CountTx(wk, e, sent, sent_bytes);
  }
  return sent;
}

}  // namespace ofan::dp
