// The worker's fast path: the pipeline over one vector, composed of the
// stages (one file each):
//   stages/rx.h        RX a vector from the worker's ports
//   stages/parse.h + stages/route.h + stages/rewrite.h (TTL - 1, checksum)
//                      one pass per packet
//   stages/balance.h   the LB, inside that pass (immediate lanes) or after it
//   stages/rewrite.h   MACs, per packet, once its port is known
//   egress/port_queue.h per (output port, queue) bucket; then the drain
//   stages/tx.h        the device, as the queue's TX hook
// docs/packet-walk.md follows one packet through these files.
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "dataplane/egress/pfc.h"
#include "dataplane/fabric/frame_time.h"
#include "dataplane/packet/headers.h"
#include "dataplane/stages/rewrite.h"
#include "dataplane/switch.h"

namespace ofan::dp {
namespace {

// Prefetch distance of the frames' first lines, in packets (the mbuf
// headers go kMbufAhead ahead: stages/rx.h).
constexpr uint32_t kDataAhead = 8;

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
  RxVector v;
  auto run = [&](RxVector& full) {
    for (uint32_t i = full.n; i < full.n + kMbufAhead; ++i) full.pkts[i] = &pad_mbuf;
    (this->*st->run)(wk, *st, full.pkts, full.seg, full.nseg, full.n);
  };
  uint32_t work;
  if (tally_) [[unlikely]] {
    // The per-switch engine's PFC: a port takes no more than its lossless
    // account has room for (xoff + headroom, frames of the largest size);
    // the rest wait in its device ring, where the peer's late response to
    // our XOFF would otherwise have dropped them (stages/rx.h).
    auto limit = [&](uint32_t p) -> uint32_t {
      const uint64_t cap = tally_->Cap(p);
      if (cap == UINT64_MAX) return UINT32_MAX;
      const uint64_t held = tally_->Bytes(p);
      const auto may = held >= cap ? 0u
                                   : static_cast<uint32_t>(std::min<uint64_t>(
                                         (cap - held) / pkt::kMaxDataFrame, UINT32_MAX - 1));
      const uint64_t bit = uint64_t{1} << p;
      if (may < wk.port_share) {  // it may not give its share: held back
        if (!(wk.rx_held & bit)) wk.counters.Add(Counter::kPfcRxHeld);
        wk.rx_held |= bit;
      } else {
        wk.rx_held &= ~bit;
      }
      return may;
    };
    work = GatherRx(wk.ports, dpdk_port_.data(), wk.port_share, cfg_.burst, wk.rx_rotor, v, run,
                    limit);
  } else {
    work = GatherRx(wk.ports, dpdk_port_.data(), wk.port_share, cfg_.burst, wk.rx_rotor, v, run);
  }
  const uint64_t now = rte_rdtsc();
  wk.held = 0;
  wk.ready_tsc = UINT64_MAX;
  for (uint32_t p : wk.ports) {
    // TX up to twice the port's share (what RX may take from one port), a
    // burst at a time, while bursts go out full.
    PortQueue& q = queues_[p];
    for (uint32_t sent = 0; sent < 2 * wk.port_share;) {
      const uint32_t s = q.Drain(now, wk.counters);
      work += s;
      sent += s;
      if (s < cfg_.burst) break;
    }
    // A backlog held back by the shaper or PFC is work too: no idle sleep;
    // the worker loop may wait until the earliest can leave.
    if (q.holds_backlog()) {
      ++work;
      ++wk.held;
      wk.ready_tsc = std::min(wk.ready_tsc, q.ReadyAt(now));
    }
  }
  wk.seen_generation.store(st->generation, std::memory_order_release);
  return work;
}

void Switch::EngineRun(RxVector& v) {
  Worker& wk = *workers_[0];
  const FwdState* st = state_.load(std::memory_order_acquire);
  for (uint32_t i = v.n; i < v.n + kMbufAhead; ++i) v.pkts[i] = &pad_mbuf;
  (this->*st->run)(wk, *st, v.pkts, v.seg, v.nseg, v.n);
  if (emu_pfc_ && !emu_pfc_->pending.empty()) [[unlikely]]
    FlushPfc(wk.counters);  // XOFFs of what arrived, at their times
}

// A frame the pass does not forward, but for the exception path's: a PFC
// frame received on in_port pauses our transmission on that same port, from
// the frame's arrival (its emulated time in the shared engine); a frame
// parsing refused is counted by its reason and dropped.
void Switch::NotForwarded(Worker& wk, rte_mbuf* m, uint16_t len, Verdict verdict, Counter drop,
                          uint32_t in_port, uint64_t now) {
  if (verdict == Verdict::kPfc) {
    const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
    const ReceivedPause rp = ReadPause({d, len}, cfg_.pfc.priority, cfg_.pfc.enabled);
    if (rp.kind == PauseRx::kMalformed) {
      wk.counters.Add(Counter::kDropPfcMalformed);
    } else {
      wk.counters.Add(Counter::kPfcRx);
      if (rp.kind == PauseRx::kOurs)
        queues_[in_port].Pause(rp.quanta, engine_now_ ? FrameTime(m) : now, wk.counters);
    }
  } else {
    wk.counters.Add(drop);
  }
  rte_pktmbuf_free(m);
}

// Egress, per (output port, queue) bucket the pass filled, priority queue
// first. A bucket holds only down or only up packets (a port is one or the
// other), so its order is the arrival order.
void Switch::EnqueueBuckets(Worker& wk, uint64_t now) {
  rte_mbuf*** const tail = wk.tail;
  uint32_t* const fill_bytes = wk.fill_bytes;
  const uint32_t nq = kQueuesPerPort * static_cast<uint32_t>(queues_.size());
  uint32_t unknown_neighbor = 0, port_down = 0;
  for (uint32_t b = 0; b < nq; ++b) {
    rte_mbuf** const g = wk.bucket(b);
    const auto c = static_cast<uint32_t>(tail[b] - g);
    if (!c) continue;
    const uint32_t bytes = fill_bytes[b];
    tail[b] = g;
    fill_bytes[b] = 0;
    const uint32_t o = b / kQueuesPerPort;
    PortQueue& oq = queues_[o];
    if (!oq.up()) [[unlikely]] {
      port_down += c;
      rte_pktmbuf_free_bulk(g, c);
      continue;
    }
    if ((wk.unknown_neighbors >> o) & 1) [[unlikely]]
      unknown_neighbor += c;
    oq.Enqueue(static_cast<int>(b % kQueuesPerPort), g, c, bytes, now, owner_[o] == wk.index,
               wk.counters);
  }
  if (unknown_neighbor) wk.counters.Add(Counter::kNeighborUnknown, unknown_neighbor);
  if (port_down) wk.counters.Add(Counter::kDropPortDown, port_down);
}

// Long on purpose (about 220 lines): stages 1-4 are fused into one pass per
// packet so that a frame's header line is read once while hot, and the
// vector's locals (the route table's copy, the MACs, queue_of, the buckets,
// the tallies) stay in registers across the stages; the stages themselves
// are in their files (above), the cold exits in NotForwarded and the egress
// in EnqueueBuckets. What is left is their sequencing.
template <lb::Role kRole, class Lane>
void Switch::RunVector(Worker& wk, const FwdState& st, rte_mbuf** pkts, const RxSegment* seg,
                       uint32_t nseg, uint32_t n) {
  const uint64_t now = Now();
  // The policy's lane (stages/balance.h), built once per vector.
  lb::LbView view{st.table.get(), nullptr, 0};
  uint32_t qbytes[lb::kMaxUplinks];
  if constexpr (Lane::kReadsPortState) {
    if (lb::IsQueueAware(st.lb.kind)) {
      for (uint32_t u = 0; u < w_; ++u) {
        qbytes[u] =
            static_cast<uint32_t>(std::min<uint64_t>(queues_[w_ + u].backlog_bytes(), UINT32_MAX));
      }
      view.queue_bytes = qbytes;
    }
    if (st.lb.kind == lb::PolicyKind::kFlowlet) {
      view.now = static_cast<lb::TimePs>(static_cast<double>(now - start_tsc_) * 1e12 /
                                         static_cast<double>(tsc_hz_));
    }
  }
  Lane lane =
      Lane::Make(static_cast<typename Lane::State&>(*st.lanes), LaneEnv{wk.index, &view, wk.keys});
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
  if (const uint64_t gen = neighbors_.generation(); gen != wk.mac_gen) [[unlikely]] {
    RefreshMacs(wk, gen);
  }
  const MacPair* const macs = wk.macs;
  uint8_t queue_of[2][lb::kNumSizeClasses];  // a local copy too, like the router
  std::memcpy(queue_of, queue_of_, sizeof queue_of);
  rte_mbuf*** const tail = wk.tail;
  uint32_t* const fill_bytes = wk.fill_bytes;
  // Stage 4b (MACs) and the bucket, for a packet with its
  // output port.
  auto out = [&](rte_mbuf* m, uint8_t* d, uint32_t port, uint32_t q, uint32_t bytes) {
    SetMacs(d, macs[port]);
    const uint32_t b = 2 * port + q;
    *tail[b]++ = m;
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
  rte_mbuf* expired[kMaxVector];  // TTL expired: the exception path sends Time Exceeded
  uint32_t nup = 0, nexc = 0, nexpired = 0, fwd_down = 0, fwd_up = 0, no_uplink = 0, fragments = 0;
  uint64_t all_rx_bytes = 0;
  for (uint32_t i = 0; i < kMbufAhead; ++i) rte_prefetch0(pkts[i]);
  for (uint32_t i = 0; i < kDataAhead; ++i) rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void*));
  const uint64_t capturing = capture_->mask();
  for (uint32_t s = 0; s < nseg; ++s) {
    const uint32_t in_port = seg[s].port;
    // Copies for a capture of the port (capture/port_capture.h), as received.
    if ((capturing >> in_port) & 1) [[unlikely]] {
      if (engine_now_) {  // each frame at its emulated arrival
        for (uint32_t i = seg[s].start; i < seg[s].start + seg[s].n; ++i)
          capture_->RecordRx(in_port, pkts + i, 1, FrameTime(pkts[i]));
      } else {
        capture_->RecordRx(in_port, pkts + seg[s].start, seg[s].n, now);
      }
    }
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
        if (p.verdict == Verdict::kException) {
          exc[nexc++] = m;
        } else {
          NotForwarded(wk, m, len, p.verdict, p.drop, in_port, now);
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
      // A packet whose TTL expires is not forwarded and takes no Ofan
      // pointer: it goes, as it came, to the exception path, which answers
      // with ICMP Time Exceeded (counted a drop here). The others get TTL - 1
      // in this pass, while the header line is hot from parsing (after the
      // LB: a store to the frame may alias anything, so the lane's state
      // would be reloaded after it); the writes left for later are the MACs.
      if (TtlExpires(d + p.l3_offset)) [[unlikely]] {
        expired[nexpired++] = m;
        continue;
      }
      const uint32_t q = queue_of[p.roce][static_cast<uint32_t>(p.cls)];
      // A fragment goes down as any packet, and up on the uplink its
      // datagram's hash designates among the valid ones, whatever the policy,
      // so that the datagram's fragments stay together (a per-packet policy
      // would spread them). Out of the common path: RoCE never fragments.
      if (p.fragment) [[unlikely]] {
        uint32_t port = r.port;
        if (r.kind == RouteKind::kUp) {
          const uint8_t u = lb::HashPick(st.table->list(r.dest),
                                         detail::FragmentHash(d + p.l3_offset), frag_salt_);
          if (u == lb::kNoUplink) {
            ++no_uplink;
            rte_pktmbuf_free(m);
            continue;
          }
          port = w + u;
        }
        DecrementLiveTtl(d + p.l3_offset);
        out(m, d, port, q, bytes);
        ++(r.kind == RouteKind::kUp ? fwd_up : fwd_down);
        ++fragments;
        continue;
      }
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
    PortRx& in = rx_[in_port];  // written by this worker only: load + store
    in.packets.store(in.packets.load(std::memory_order_relaxed) + seg[s].n,
                     std::memory_order_relaxed);
    in.bytes.store(in.bytes.load(std::memory_order_relaxed) + rx_bytes, std::memory_order_relaxed);
    all_rx_bytes += rx_bytes;
  }
  wk.counters.Add(Counter::kRxPackets, n);
  wk.counters.Add(Counter::kRxBytes, all_rx_bytes);
  if (nexc) [[unlikely]]
    exception_.Hand(exc, nexc, wk.counters);
  if (nexpired) [[unlikely]] {
    wk.counters.Add(Counter::kDropTtlExceeded, nexpired);
    exception_.HandExpired(expired, nexpired, wk.counters);
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
      uint32_t lane_no_uplink = 0;
      for (uint32_t j = 0; j < nup; ++j) {
        rte_prefetch0(up_d[j + kDataAhead]);
        const uint8_t u = lane.Take(j);
        if (u == lb::kNoUplink) [[unlikely]] {
          ++lane_no_uplink;
          rte_pktmbuf_free(up_m[j]);
          continue;
        }
        out(up_m[j], up_d[j], w + u, up_q[j], up_len[j]);
      }
      fwd_up += nup - lane_no_uplink;
      no_uplink += lane_no_uplink;
    }
  }
  if (fwd_down) wk.counters.Add(Counter::kForwardedDown, fwd_down);
  if (fwd_up) wk.counters.Add(Counter::kForwardedUp, fwd_up);
  if (no_uplink) wk.counters.Add(Counter::kDropNoUplink, no_uplink);
  if (fragments) [[unlikely]]
    wk.counters.Add(Counter::kForwardedFragment, fragments);

  EnqueueBuckets(wk, now);  // egress
  if (tally_) [[unlikely]]
    XoffOnCrossing(wk, seg, nseg);  // the per-switch engine's PFC
}

void Switch::RefreshMacs(Worker& wk, uint64_t gen) const {
  wk.unknown_neighbors = 0;
  for (uint32_t o = 0; o < neighbors_.size(); ++o) {
    const std::optional<pkt::MacAddr> nb = neighbors_.Get(o);
    // Sent to broadcast until the neighbour is learned.
    if (!nb) wk.unknown_neighbors |= uint64_t{1} << o;
    wk.macs[o] =
        MacPair(nb.value_or(pkt::MacAddr{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}}), port_mac_[o]);
  }
  wk.mac_gen = gen;
}

// One vector function per lane of Lanes, for role R, in Lanes' order: the
// index the lane registry gave the state picks it.
VectorFn Switch::VectorFnFor(lb::Role role, size_t lane) {
  return WithRole(role, [&]<lb::Role R>() -> VectorFn {
    return [&]<class... L>(LaneList<L...>) -> VectorFn {
      const VectorFn fns[] = {&Switch::RunVector<R, L>...};
      return fns[std::min(lane, sizeof...(L) - 1)];
    }(Lanes{});
  });
}

}  // namespace ofan::dp
