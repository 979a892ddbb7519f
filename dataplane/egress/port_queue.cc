#include "dataplane/egress/port_queue.h"

#include <fmt/format.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>

#include "dataplane/egress/emu_pfc.h"
#include "dataplane/egress/lossless.h"
#include "dataplane/egress/mark.h"
#include "dataplane/egress/reorder.h"
#include "dataplane/fabric/frame_time.h"
#include "dataplane/idle_wait.h"
#include "dataplane/packet/frame_budget.h"

namespace ofan::dp {

// What a frame costs the token bucket beyond its bytes: preamble, FCS and
// inter-frame gap (packet/frame_budget.h).
constexpr uint32_t kWireExtraBytes = pkt::kWireOverheadBytes;
namespace {

void AtomicMax(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

// Single writer (the port's owner): a relaxed load and store suffice.
void OwnerAdd(std::atomic<double>& a, double v) {
  a.store(a.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}
void OwnerAdd(std::atomic<uint64_t>& a, uint64_t v) {
  a.store(a.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}

}  // namespace

IngressTally::IngressTally(const int32_t* port_of_dpdk, uint32_t num_dpdk, uint32_t k)
    : port_of_dpdk_(port_of_dpdk), num_dpdk_(num_dpdk), bytes_(std::make_unique<Line[]>(k)) {}

void IngressTally::Add(const rte_mbuf* m) {
  const int32_t in = PortOf(m->port);
  if (in >= 0) bytes_[in].v.fetch_add(rte_pktmbuf_pkt_len(m), std::memory_order_relaxed);
}

void IngressTally::Release(const rte_mbuf* m) { Sub(PortOf(m->port), rte_pktmbuf_pkt_len(m)); }

bool IngressTally::Fits(const rte_mbuf* m, uint32_t len) const {
  const int32_t in = PortOf(m->port);
  return in < 0 || static_cast<size_t>(in) >= caps_.size() ||
         Bytes(static_cast<uint32_t>(in)) + len <= caps_[static_cast<size_t>(in)];
}

PortQueue::~PortQueue() {
  Flush();
  for (rte_ring*& r : ring_) {
    rte_ring_free(r);
    r = nullptr;
  }
}

Status PortQueue::Init(const std::string& name, int socket, const PortQueueConfig& c, TxHook tx,
                       IngressTally* tally, uint64_t now) {
  cfg_ = c;
  tx_ = tx;
  tally_ = tally;
  for (uint32_t q = 0; q < kQueuesPerPort; ++q) {
    const std::string rn = fmt::format("oq{}_{}", q, name).substr(0, RTE_RING_NAMESIZE - 1);
    ring_[q] = rte_ring_create(rn.c_str(), c.ring_slots, socket, RING_F_SC_DEQ);
    if (!ring_[q]) {
      return MakeError(ErrorCode::kIo,
                       fmt::format("egress ring {}: {}", rn, rte_strerror(rte_errno)));
    }
  }
  stat_last_tsc_ = stat_start_tsc_ = tb_last_tsc_ = now;
  if (!c.emulated && c.wd_detect_ps > 0) {
    pause_ = fabric::PfcPauseState(c.wd_detect_ps, c.wd_restore_ps, c.wd_action);
    tsc_watched_ = true;
  }
  if (c.emulated) {
    if (g_frame_time_offset < 0 || c.wire.ps_per_byte <= 0) {
      return InvalidArgument(
          fmt::format("egress {}: an emulated port needs the frame-time field and a "
                      "rate",
                      name));
    }
    emu_ = std::make_unique<fabric::EmuPort<rte_mbuf*>>();
    emu_->Configure(c.wire, fabric::QueueLimits{c.limit_bytes, c.ecn_bytes});
    emu_->ResetStats(now);
    emu_last_ = now;
  }
  return {};
}

void PortQueue::Flush() {
  for (rte_ring* r : ring_) {
    if (!r) continue;
    rte_mbuf* m;
    while (rte_ring_dequeue(r, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
  }
  for (uint32_t i = 0; i < staged_n_; ++i) rte_pktmbuf_free(staged_[i]);
  staged_n_ = 0;
  if (emu_) emu_->Flush([](rte_mbuf* m) { rte_pktmbuf_free(m); });
  if (reorder_) reorder_->Flush([](rte_mbuf* m) { rte_pktmbuf_free(m); });
  for (; !ro_ready_.empty(); ro_ready_.pop()) rte_pktmbuf_free(ro_ready_.front());
  bytes_.store(0);
  lossless_bytes_.store(0);
}

void PortQueue::CountTx(uint32_t sent, uint64_t bytes, LcoreCounters& ctr) {
  OwnerAdd(tx_packets_, sent);
  OwnerAdd(tx_bytes_, bytes);
  ctr.Add(Counter::kTxPackets, sent);
  ctr.Add(Counter::kTxBytes, bytes);
}

uint16_t PortQueue::Transmit(rte_mbuf** pkts, uint16_t n, LcoreCounters& ctr) {
  if (wire_cut_.load(std::memory_order_relaxed)) [[unlikely]] {
    // Gone into a cut cable: the sender counts them sent, as a switch whose
    // link failed silently would; the cable's loss is drop_link_loss.
    rte_pktmbuf_free_bulk(pkts, n);
    ctr.Add(Counter::kDropLinkLoss, n);
    return n;
  }
  return tx_.send(tx_.ctx, pkts, n);
}

void PortQueue::Enqueue(int queue, rte_mbuf** pkts, uint32_t n, uint64_t bytes, uint64_t now,
                        bool owner, LcoreCounters& ctr) {
  if (emu_) [[unlikely]] {
    EnqueueEmu(queue, pkts, n, ctr, true);
    return;
  }
  if (owner && cfg_.bytes_per_tsc == 0 && staged_n_ == 0 && !reorder_ &&
      bytes_.load(std::memory_order_relaxed) == 0 && now >= paused_until_tsc_) {
    const uint16_t sent = Transmit(pkts, static_cast<uint16_t>(n), ctr);
    // The hook owns (and may free) what it took: count the rest, still ours.
    uint64_t unsent_bytes = 0;
    for (uint32_t i = sent; i < n; ++i) unsent_bytes += rte_pktmbuf_pkt_len(pkts[i]);
    if (sent) {
      CountTx(sent, bytes - unsent_bytes, ctr);
      if (queue == kPrioQueue) ctr.Add(Counter::kPriorityQueued, sent);
    }
    if (sent == n) return;
    pkts += sent;
    n -= sent;
    bytes = unsent_bytes;
  }
  const uint64_t old = bytes_.fetch_add(bytes, std::memory_order_relaxed);
  uint64_t running = old, dropped = 0;
  rte_mbuf* keep[kMaxVector];
  uint32_t nkeep = 0, marked = 0;
  const bool pfc =
      cfg_.lossless_dscp != PortQueueConfig::kNoDscp && queue == kNormalQueue && tally_;
  // The lossy frames' share of the buffer: the lossless ones are their
  // ingress accounts' (as EmuPort admits them).
  uint64_t lossy = 0;
  if (tally_) [[unlikely]]
    lossy = running - std::min(running, lossless_bytes_.load(std::memory_order_relaxed));
  uint64_t& held = tally_ ? lossy : running;
  uint32_t lossless_dropped = 0;
  uint64_t lossless_added = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t len = rte_pktmbuf_pkt_len(pkts[i]);
    if (pfc && IsLosslessFrame(
                   rte_pktmbuf_mtod(pkts[i], const uint8_t*), rte_pktmbuf_data_len(pkts[i]),
                   static_cast<uint8_t>(cfg_.lossless_dscp), cfg_.lossless_acks)) [[unlikely]] {
      // PFC's class: its ingress port's account, not this port's buffer.
      if (!tally_->Fits(pkts[i], len)) {
        ++lossless_dropped;
        dropped += len;
        rte_pktmbuf_free(pkts[i]);
        continue;
      }
      if (pkts[i]->port != RTE_MBUF_PORT_INVALID) {
        pkts[i]->port |= kLosslessPortMark;
        lossless_added += len;
      }
    } else if (held + len > cfg_.limit_bytes) {
      dropped += len;
      rte_pktmbuf_free(pkts[i]);
      continue;
    } else if (tally_) [[unlikely]] {
      lossy += len;
    }
    if (cfg_.ecn_bytes && running > cfg_.ecn_bytes) {
      uint8_t* f = rte_pktmbuf_mtod(pkts[i], uint8_t*);
      if (MarkCe(f, ForwardedL3Offset(f))) ++marked;
    }
    running += len;
    keep[nkeep++] = pkts[i];
    if (tally_) tally_->Add(pkts[i]);  // at once: the next frame's admission sees it
  }
  // Counted before the ring has them: a drain subtracts only what it took.
  if (lossless_added) [[unlikely]]
    lossless_bytes_.fetch_add(lossless_added, std::memory_order_relaxed);
  const unsigned q =
      rte_ring_mp_enqueue_burst(ring_[queue], reinterpret_cast<void**>(keep), nkeep, nullptr);
  uint64_t lossless_back = 0;
  for (unsigned i = q; i < nkeep; ++i) {
    dropped += rte_pktmbuf_pkt_len(keep[i]);
    if (tally_) tally_->Release(keep[i]);
    if (EmuPfc::Marked(keep[i])) lossless_back += rte_pktmbuf_pkt_len(keep[i]);
    rte_pktmbuf_free(keep[i]);
  }
  if (lossless_back) [[unlikely]]
    lossless_bytes_.fetch_sub(lossless_back, std::memory_order_relaxed);
  // Lossless frames over their ingress port's account are lossless drops
  // (as the shared engine counts them); the rest, and a ring too full to
  // take more, the buffer's.
  const uint32_t ndrop = n - q - lossless_dropped;
  if (dropped) bytes_.fetch_sub(dropped, std::memory_order_relaxed);
  if (ndrop) {
    ctr.Add(Counter::kDropBufferFull, ndrop);
    drops_buffer_.fetch_add(ndrop, std::memory_order_relaxed);
  }
  if (lossless_dropped) [[unlikely]] {
    ctr.Add(Counter::kDropLossless, lossless_dropped);
    tsc_lossless_drops_.fetch_add(lossless_dropped, std::memory_order_relaxed);
  }
  if (marked) {
    ctr.Add(Counter::kEcnMarked, marked);
    ecn_marked_.fetch_add(marked, std::memory_order_relaxed);
  }
  if (queue == kPrioQueue) ctr.Add(Counter::kPriorityQueued, q);
  AtomicMax(max_bytes_, old + bytes - dropped);
  if (!owner && waker_ && q) waker_->Notify();
}

bool PortQueue::EnqueueOne(int queue, rte_mbuf* m) {
  if (emu_) {  // the owner's inbox: its next Drain queues it
    if (rte_ring_mp_enqueue(ring_[queue], m) != 0) return false;
    if (waker_) waker_->Notify();
    return true;
  }
  bytes_.fetch_add(rte_pktmbuf_pkt_len(m), std::memory_order_relaxed);
  if (rte_ring_mp_enqueue(ring_[queue], m) != 0) {
    bytes_.fetch_sub(rte_pktmbuf_pkt_len(m), std::memory_order_relaxed);
    return false;
  }
  if (waker_) waker_->Notify();
  return true;
}

void PortQueue::Pause(uint32_t quanta, uint64_t now, LcoreCounters& ctr) {
  if (emu_) {
    PauseEmu(quanta, now, ctr);
    return;
  }
  const uint64_t until =
      quanta == 0 ? 0 : now + static_cast<uint64_t>(quanta * cfg_.pfc_tsc_per_quantum);
  if (!tsc_watched_) {
    paused_until_tsc_ = until;
    return;
  }
  pfc_received_.store(++pfc_received_n_, std::memory_order_relaxed);
  WatchdogCheckTsc(now, ctr);  // what it decided before this pause
  const fabric::TimePs t = TscPs(now);
  // A stormed queue (watchdog: drop, forward) ignores pause.
  if (pause_.Paused(t, quanta == 0 ? t : TscPs(until), NormalWaiting())) paused_until_tsc_ = until;
  paused_ps_.store(pause_.clock().paused_ps(t), std::memory_order_relaxed);
}

bool PortQueue::NormalWaiting() const {
  return rte_ring_count(ring_[kNormalQueue]) != 0 || staged_n_ != 0 ||
         (reorder_ && (!ro_ready_.empty() || reorder_->frames() != 0));
}

void PortQueue::WatchdogCheckTsc(uint64_t now, LcoreCounters& ctr) {
  const fabric::PfcPauseState::Verdict v = pause_.Check(TscPs(now), NormalWaiting());
  if (PublishWatchdog(v, ctr) != fabric::PfcWatchdog::Event::kFire) return;
  if (v.stop_pausing) paused_until_tsc_ = 0;  // drop, forward: the queue goes on
  if (v.drop) DropLossless(ctr);
}

fabric::PfcWatchdog::Event PortQueue::PublishWatchdog(const fabric::PfcPauseState::Verdict& v,
                                                      LcoreCounters& ctr) {
  if (v.event == fabric::PfcWatchdog::Event::kFire) {
    ctr.Add(Counter::kPfcWatchdog);
    wd_fired_.store(pause_.watchdog().fired_count(), std::memory_order_relaxed);
    wd_fired_at_.store(v.at, std::memory_order_relaxed);
    wd_active_.store(true, std::memory_order_relaxed);
  } else if (v.event == fabric::PfcWatchdog::Event::kRestore) {
    wd_restored_.store(pause_.watchdog().restored_count(), std::memory_order_relaxed);
    wd_restored_at_.store(v.at, std::memory_order_relaxed);
    wd_active_.store(false, std::memory_order_relaxed);
  }
  return v.event;
}

void PortQueue::CountWatchdogDrops(uint32_t n, LcoreCounters& ctr) {
  ctr.Add(Counter::kDropPfcWatchdog, n);
  wd_dropped_.store(wd_dropped_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

uint32_t PortQueue::DropLossless(LcoreCounters& ctr) {
  // The normal queue's frames (a frame staged at the head may be either
  // class: it goes as it is).
  rte_mbuf* b[kMaxBurst];
  uint32_t n = 0, got = 0;
  uint64_t bytes = 0, lossless = 0;
  auto dequeue = [&] {
    if (!reorder_) {
      return rte_ring_sc_dequeue_burst(ring_[kNormalQueue], reinterpret_cast<void**>(b), kMaxBurst,
                                       nullptr);
    }
    unsigned k = 0;  // what the reorder stage let go or never held
    while (k < kMaxBurst && DequeueNormal(&b[k])) ++k;
    return k;
  };
  while ((got = dequeue()) > 0) {
    for (uint32_t i = 0; i < got; ++i) {
      bytes += rte_pktmbuf_pkt_len(b[i]);
      if (tally_) tally_->Release(b[i]);
      if (EmuPfc::Marked(b[i])) lossless += rte_pktmbuf_pkt_len(b[i]);
    }
    rte_pktmbuf_free_bulk(b, got);
    n += got;
  }
  if (n) {
    bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    if (lossless) lossless_bytes_.fetch_sub(lossless, std::memory_order_relaxed);
    CountWatchdogDrops(n, ctr);
  }
  return n;
}

void PortQueue::Integrate(uint64_t now, uint64_t backlog) {
  const uint64_t dt = now - stat_last_tsc_;
  const uint64_t pkts_now = rte_ring_count(ring_[0]) + rte_ring_count(ring_[1]) + staged_n_;
  OwnerAdd(area_bytes_, static_cast<double>(backlog) * static_cast<double>(dt));
  OwnerAdd(area_pkts_, static_cast<double>(pkts_now) * static_cast<double>(dt));
  AtomicMax(max_pkts_, pkts_now);
}

void PortQueue::CheckWatchdog(bool paused, uint64_t now, LcoreCounters& ctr) {
  if (!paused) {
    paused_since_tsc_ = 0;
    watchdog_fired_ = false;
    return;
  }
  if (!paused_since_tsc_) paused_since_tsc_ = now;
  if (!watchdog_fired_ &&
      now - paused_since_tsc_ > kPfcWatchdogNs * cfg_.tsc_hz / 1'000'000'000ull) {
    watchdog_fired_ = true;
    ctr.Add(Counter::kPfcWatchdog);
  }
}

rte_mbuf* PortQueue::NextFrame(bool paused) {
  rte_mbuf* m = nullptr;
  if (staged_n_) {
    m = staged_[0];
    std::copy(staged_ + 1, staged_ + staged_n_, staged_);
    --staged_n_;
    return m;
  }
  if (rte_ring_sc_dequeue(ring_[kPrioQueue], reinterpret_cast<void**>(&m)) == 0) return m;
  if (!paused && DequeueNormal(&m)) return m;
  return nullptr;
}

bool PortQueue::DequeueNormal(rte_mbuf** m) {
  if (reorder_) [[unlikely]] {
    if (ro_ready_.empty()) return false;
    *m = ro_ready_.front();
    ro_ready_.pop();
    return true;
  }
  return rte_ring_sc_dequeue(ring_[kNormalQueue], reinterpret_cast<void**>(m)) == 0;
}

void PortQueue::ReorderTsc(uint64_t now) {
  if (emu_reset_.load(std::memory_order_relaxed)) [[unlikely]] {
    reorder_->ResetMaxima();
    emu_reset_.store(false, std::memory_order_relaxed);
  }
  const fabric::TimePs t = TscPs(now);
  auto ready = [this](rte_mbuf* r, fabric::TimePs) { ro_ready_.push(r); };
  reorder_->Expire(t, ready);
  rte_mbuf* b[kMaxBurst];
  unsigned got;
  do {
    got = rte_ring_sc_dequeue_burst(ring_[kNormalQueue], reinterpret_cast<void**>(b), kMaxBurst,
                                    nullptr);
    for (unsigned i = 0; i < got; ++i) {
      RoceSeq seq;
      const RoceSeqKind kind =
          ReadRoceSeq(rte_pktmbuf_mtod(b[i], const uint8_t*), rte_pktmbuf_data_len(b[i]), seq);
      if (kind == RoceSeqKind::kData) {
        reorder_->Offer(t, seq.key, seq.at, rte_pktmbuf_pkt_len(b[i]), b[i], ready);
        continue;
      }
      if (kind == RoceSeqKind::kBadLength) ++reorder_bad_length_;
      ro_ready_.push(b[i]);
    }
  } while (got == kMaxBurst);
  PublishReorder();
}

uint32_t PortQueue::PickShaped(uint64_t now, bool paused, rte_mbuf** batch) {
  // Token bucket in bytes, wire overhead (preamble + IFG) included. Its depth
  // is two jumbo-ish frames or 20 us of line rate, whichever is larger:
  // enough to send a burst per poll, too little for an idle port to save up
  // a burst that would break the emulated rate. Frames are taken one at a
  // time while tokens last, so at most one already-picked frame can wait
  // ahead of a priority frame.
  const double cap =
      std::max(2.0 * 4200.0, cfg_.bytes_per_tsc * static_cast<double>(cfg_.tsc_hz) * 20e-6);
  const double filled = tokens_ + static_cast<double>(now - tb_last_tsc_) * cfg_.bytes_per_tsc;
  if (backlogged_ && !paused && filled > cap) {  // a PFC pause is idle time by right
    shaper_lag_bytes_.store(
        shaper_lag_bytes_.load(std::memory_order_relaxed) + static_cast<uint64_t>(filled - cap),
        std::memory_order_relaxed);
  }
  tokens_ = std::min(cap, filled);
  tb_last_tsc_ = now;
  double t = tokens_;
  uint32_t can = 0;
  while (can < cfg_.burst) {
    rte_mbuf* m = NextFrame(paused);
    if (!m) break;
    const double need = static_cast<double>(rte_pktmbuf_pkt_len(m) + kWireExtraBytes);
    if (t < need) {  // hold it at the head until the bucket refills
      staged_[0] = m;
      staged_n_ = 1;
      break;
    }
    t -= need;
    batch[can++] = m;
  }
  return can;
}

uint32_t PortQueue::PickUnshaped(bool paused, rte_mbuf** batch) {
  uint32_t can = 0;
  while (staged_n_ && can < cfg_.burst) batch[can++] = NextFrame(paused);
  if (can < cfg_.burst) {
    can += rte_ring_sc_dequeue_burst(ring_[kPrioQueue], reinterpret_cast<void**>(batch + can),
                                     cfg_.burst - can, nullptr);
  }
  if (!paused && can < cfg_.burst) {
    if (reorder_) [[unlikely]] {
      while (can < cfg_.burst && DequeueNormal(&batch[can])) ++can;
    } else {
      can += rte_ring_sc_dequeue_burst(ring_[kNormalQueue], reinterpret_cast<void**>(batch + can),
                                       cfg_.burst - can, nullptr);
    }
  }
  return can;
}

uint32_t PortQueue::Drain(uint64_t now, LcoreCounters& ctr) {
  if (emu_) [[unlikely]]
    return DrainEmu(now, ctr);
  // Queue depth over time: the backlog held since the last drain.
  if (tsc_watched_ && pause_.Deadline() != std::numeric_limits<fabric::TimePs>::max())
      [[unlikely]] {
    WatchdogCheckTsc(now, ctr);  // a storm to detect, or a stormed queue to restore
  }
  if (tsc_watched_ && pause_.dropping()) [[unlikely]]
    DropLossless(ctr);  // a stormed queue (action drop): its lossless frames go nowhere
  if (reorder_) [[unlikely]]
    ReorderTsc(now);  // a host port's RoCE data, in PSN order (egress/reorder.h)
  const uint64_t backlog = bytes_.load(std::memory_order_relaxed);
  if (backlog == 0 && staged_n_ == 0) {  // empty: nothing to integrate or send
    stat_last_tsc_ = now;
    backlogged_ = false;
    return 0;
  }
  Integrate(now, backlog);
  stat_last_tsc_ = now;
  // PFC: the normal queue is paused while paused_until is ahead.
  const bool paused = now < paused_until_tsc_;
  if (!tsc_watched_) CheckWatchdog(paused, now, ctr);  // the alert alone
  rte_mbuf* batch[kMaxBurst];
  const uint32_t can =
      cfg_.bytes_per_tsc > 0 ? PickShaped(now, paused, batch) : PickUnshaped(paused, batch);
  if (can == 0) {
    backlogged_ = true;  // held by the shaper or PFC: waiting, not lagging
    return 0;
  }
  // The hook owns (and may free) what it accepts: read what we need first.
  uint32_t lens[kMaxBurst];
  int32_t ingress[kMaxBurst];
  bool lossless[kMaxBurst];
  for (uint32_t i = 0; i < can; ++i) {
    lens[i] = rte_pktmbuf_pkt_len(batch[i]);
    ingress[i] = tally_ ? tally_->PortOf(batch[i]->port) : -1;
    lossless[i] = tally_ && EmuPfc::Marked(batch[i]);
  }
  const uint16_t sent = Transmit(batch, static_cast<uint16_t>(can), ctr);
  uint64_t sent_bytes = 0, sent_lossless = 0;
  for (uint16_t i = 0; i < sent; ++i) {
    sent_bytes += lens[i];
    if (tally_) tally_->Sub(ingress[i], lens[i]);
    if (lossless[i]) sent_lossless += lens[i];
  }
  if (sent_lossless) [[unlikely]]
    lossless_bytes_.fetch_sub(sent_lossless, std::memory_order_relaxed);
  if (sent < can) {
    // The device is full: keep the rest, in order, ahead of anything staged.
    const uint32_t left = can - sent;
    std::copy_backward(staged_, staged_ + staged_n_, staged_ + staged_n_ + left);
    std::copy(batch + sent, batch + can, staged_);
    staged_n_ += left;
  }
  if (cfg_.bytes_per_tsc > 0)
    tokens_ -= static_cast<double>(sent_bytes + uint64_t{kWireExtraBytes} * sent);
  if (sent) {
    bytes_.fetch_sub(sent_bytes, std::memory_order_relaxed);
    CountTx(sent, sent_bytes, ctr);
  }
  backlogged_ = staged_n_ != 0 || bytes_.load(std::memory_order_relaxed) != 0;
  return sent;
}

uint64_t PortQueue::ReadyAt(uint64_t now) const {
  if (staged_n_ == 0) {
    // The reorder stage: what it let go leaves once a pause ends; what it
    // holds, at the first deadline.
    if (!reorder_) return now;
    if (!ro_ready_.empty()) return std::max(now, paused_until_tsc_);
    const fabric::TimePs d = reorder_->NextDeadline();
    return d == fabric::kNever ? now : std::max(now, PsTsc(d));
  }
  if (now < paused_until_tsc_) return paused_until_tsc_;
  if (cfg_.bytes_per_tsc > 0) {
    // tokens_ is the bucket as of tb_last_tsc_, less what was sent since.
    const double need =
        static_cast<double>(rte_pktmbuf_pkt_len(staged_[0]) + kWireExtraBytes) - tokens_;
    if (need > 0) return tb_last_tsc_ + static_cast<uint64_t>(need / cfg_.bytes_per_tsc) + 1;
  }
  return now;
}

QueueStats PortQueue::Stats(uint64_t now) const {
  QueueStats s;
  const double span = static_cast<double>(std::max<uint64_t>(1, stat_last_tsc_ - stat_start_tsc_));
  s.bytes = bytes_.load();
  if (emu_) {  // the owner's last PublishEmu
    s.packets = emu_pkts_.load();
    s.priority_packets = emu_prio_pkts_.load();
  } else {
    s.priority_packets = rte_ring_count(ring_[kPrioQueue]);
    s.packets = s.priority_packets + rte_ring_count(ring_[kNormalQueue]) + staged_n_;
  }
  s.max_bytes = max_bytes_.load();
  s.max_packets = max_pkts_.load();
  s.avg_bytes = area_bytes_.load() / span;
  s.avg_packets = area_pkts_.load() / span;
  s.drops_buffer = drops_buffer_.load();
  s.ecn_marked = ecn_marked_.load();
  s.tx_packets = tx_packets_.load();
  s.tx_bytes = tx_bytes_.load();
  s.shaper_lag_bytes = shaper_lag_bytes_.load();
  s.paused = now < paused_until_tsc_;
  s.pfc.sent = pfc_sent_.load();
  s.pfc.received = pfc_received_.load();
  s.pfc.paused_us = static_cast<double>(paused_ps_.load()) / 1e6;
  s.pfc.xoff_events = pfc_xoff_events_.load();
  s.pfc.headroom_max_bytes = pfc_headroom_max_.load();
  s.pfc.max_bytes = pfc_max_.load();
  s.pfc.held_bytes = pfc_held_.load();
  s.pfc.lossless_drops = pfc_lossless_drops_.load() + tsc_lossless_drops_.load();
  s.pfc.wd_fired = wd_fired_.load();
  s.pfc.wd_restored = wd_restored_.load();
  s.pfc.wd_dropped = wd_dropped_.load();
  s.pfc.wd_active = wd_active_.load();
  s.pfc.wd_fired_at_ps = wd_fired_at_.load();
  s.pfc.wd_restored_at_ps = wd_restored_at_.load();
  if (reorder_pub_) {
    const ReorderPub& r = *reorder_pub_;
    s.reorder = QueueStats::Reorder{r.held.load(),
                                    r.in_order.load(),
                                    r.timeouts.load(),
                                    r.overflow.load(),
                                    r.table_full.load(),
                                    r.old.load(),
                                    r.bad_length.load(),
                                    r.max_bytes.load(),
                                    r.max_frames.load(),
                                    static_cast<double>(r.max_hold_ps.load()) / 1e6,
                                    static_cast<uint32_t>(reorder_->limits().timeout / 1'000'000)};
  }
  return s;
}

void PortQueue::ResetStats(uint64_t now) {
  if (emu_) {  // the owner's state: it resets at its next Drain
    emu_reset_.store(true);
    return;
  }
  area_bytes_.store(0);
  area_pkts_.store(0);
  max_bytes_.store(0);
  max_pkts_.store(0);
  shaper_lag_bytes_.store(0);
  stat_start_tsc_ = now;
  if (reorder_) emu_reset_.store(true);  // the stage's maxima: its owner resets them
}

// -- emulated mode (the shared fabric engine) ------------------------------

// EmuPort's emit: frames whose transmission starts, stamped with their
// arrival at the far end, to the TX hook a burst at a time.
struct PortQueue::EmuBatch {
  EmuBatch(PortQueue& queue, LcoreCounters& counters) : q(queue), ctr(counters) {}
  PortQueue& q;
  LcoreCounters& ctr;
  rte_mbuf* b[kMaxBurst];
  uint32_t n = 0;
  uint32_t sent = 0;
  void operator()(rte_mbuf* m, fabric::TimePs start, fabric::TimePs last_bit) {
    FrameTime(m) = last_bit + q.cfg_.wire.latency;
    if (q.tally_) q.tally_->Release(m);
    if (EmuPfc::Marked(m)) [[unlikely]]
      q.pfc_->Release(m, start);
    b[n++] = m;
    if (n == kMaxBurst) Flush();
  }
  void Flush() {
    if (!n) return;
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < n; ++i) bytes += rte_pktmbuf_pkt_len(b[i]);
    const uint16_t took = q.Transmit(b, static_cast<uint16_t>(n), ctr);
    // The engine's hooks take every frame; one that does not is a frame
    // its link lost, counted with the buffer's drops.
    for (uint32_t i = took; i < n; ++i) {
      bytes -= rte_pktmbuf_pkt_len(b[i]);
      rte_pktmbuf_free(b[i]);
    }
    if (took < n) ctr.Add(Counter::kDropBufferFull, n - took);
    if (took) {
      ctr.Add(Counter::kTxPackets, took);
      ctr.Add(Counter::kTxBytes, bytes);
    }
    sent += took;
    n = 0;
  }
};

void PortQueue::EnqueueEmu(int queue, rte_mbuf** pkts, uint32_t n, LcoreCounters& ctr,
                           bool forwarded) {
  EmuBatch tx(*this, ctr);
  EmuTally tally;
  const bool reorder = reorder_ && queue == kNormalQueue;
  for (uint32_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    // Frames reach a port in the order of their times (the engine merges
    // a switch's inputs); a control frame queued at a window's end may be
    // later than the next one, which then counts as arriving with it.
    const fabric::TimePs t = std::max<fabric::TimePs>(FrameTime(m), emu_last_);
    if (reorder) [[unlikely]] {
      // A host port's RoCE data waits for its PSN (egress/reorder.h); what
      // the stage releases goes on to the port at its release time: a wait
      // that ended before t (its deadline) first, then t's own.
      RoceSeq seq;
      const RoceSeqKind kind =
          ReadRoceSeq(rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m), seq);
      if (kind == RoceSeqKind::kData) {
        // PFC admits a lossless frame as it arrives, not as the stage lets
        // it go: what waits for its PSN is its ingress port's to pause for
        // (a held run released at once would overrun the headroom).
        if (!AdmitLossless(m, t, tx, tally)) {
          emu_last_ = t;
          continue;
        }
        reorder_->Offer(t, seq.key, seq.at, rte_pktmbuf_pkt_len(m), m,
                        [&](rte_mbuf* r, fabric::TimePs at) {
                          emu_last_ = std::max(at, emu_last_);
                          AdmitEmu(r, emu_last_, queue, forwarded, tx, tally);
                        });
        emu_last_ = t;
        continue;
      }
      if (kind == RoceSeqKind::kBadLength) ++reorder_bad_length_;
    }
    emu_last_ = t;
    AdmitEmu(m, t, queue, forwarded, tx, tally);
  }
  tx.Flush();
  FinishEmu(queue, tally, ctr);
}

bool PortQueue::AdmitLossless(rte_mbuf* m, fabric::TimePs t, EmuBatch& tx, EmuTally& n) {
  if (!pfc_ || EmuPfc::Marked(m) || !pfc_->Lossless(m)) return true;
  if (pause_.dropping()) {
    // The watchdog's drop action: this queue's lossless frames are
    // discarded until it restores.
    ++n.wd_drop;
    rte_pktmbuf_free(m);
    return false;
  }
  emu_->StartBefore(t, tx);  // releases before t come before this admission
  if (!pfc_->Admit(m, t)) {
    ++n.lossless_dropped;
    rte_pktmbuf_free(m);
    return false;
  }
  return true;
}

void PortQueue::AdmitEmu(rte_mbuf* m, fabric::TimePs t, int queue, bool forwarded, EmuBatch& tx,
                         EmuTally& n) {
  const uint32_t len = rte_pktmbuf_pkt_len(m);
  // PFC's class: admitted by its ingress port's account, not this
  // port's buffer (egress/emu_pfc.h, fabric/pfc.h); a frame the reorder
  // stage held was admitted as it arrived (Marked).
  bool lossless = false;
  if (pfc_ && queue == kNormalQueue) [[unlikely]] {
    if (!AdmitLossless(m, t, tx, n)) return;
    lossless = EmuPfc::Marked(m);
  }
  // Only IPv4 frames can carry CE: marking another would rewrite its
  // bytes (a PFC frame's opcode and pause time). Forwarded frames are
  // IPv4 by the pipeline's parse; the others are looked at.
  bool ecn_capable = forwarded;
  if (!forwarded) {
    const uint8_t* head = rte_pktmbuf_mtod(m, const uint8_t*);
    ecn_capable = rte_pktmbuf_data_len(m) >= 38 &&
                  pkt::Rd16(head + ForwardedL3Offset(head) - 2) == pkt::ethertype::kIpv4;
  }
  const fabric::EmuVerdict v = emu_->Offer(t, queue, len, ecn_capable, m, tx, lossless);
  if (!v.queued) {
    ++n.dropped;
    rte_pktmbuf_free(m);
    return;
  }
  ++n.queued;
  if (v.ce) {
    uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
    if (MarkCe(f, ForwardedL3Offset(f))) ++n.marked;
  }
  if (tally_) tally_->Add(m);
}

void PortQueue::FinishEmu(int queue, const EmuTally& n, LcoreCounters& ctr) {
  if (n.lossless_dropped) [[unlikely]]
    ctr.Add(Counter::kDropLossless, n.lossless_dropped);
  if (n.wd_drop) [[unlikely]]
    CountWatchdogDrops(n.wd_drop, ctr);
  if (n.dropped) {
    ctr.Add(Counter::kDropBufferFull, n.dropped);
    drops_buffer_.store(drops_buffer_.load(std::memory_order_relaxed) + n.dropped,
                        std::memory_order_relaxed);
  }
  if (n.marked) {
    ctr.Add(Counter::kEcnMarked, n.marked);
    ecn_marked_.store(ecn_marked_.load(std::memory_order_relaxed) + n.marked,
                      std::memory_order_relaxed);
  }
  if (queue == kPrioQueue && n.queued) ctr.Add(Counter::kPriorityQueued, n.queued);
  PublishEmu();
}

void PortQueue::ExpireReorder(fabric::TimePs now, EmuBatch& tx, LcoreCounters& ctr) {
  if (reorder_->NextDeadline() > now) return;
  EmuTally tally;
  reorder_->Expire(now, [&](rte_mbuf* r, fabric::TimePs at) {
    emu_last_ = std::max(at, emu_last_);  // offers never go back
    AdmitEmu(r, emu_last_, kNormalQueue, true, tx, tally);
  });
  FinishEmu(kNormalQueue, tally, ctr);
}

void PortQueue::set_reorder(const fabric::ReorderLimits& lim) {
  reorder_ = std::make_unique<fabric::ReorderBuffer<rte_mbuf*>>(lim);
  reorder_pub_ = std::make_unique<ReorderPub>();
  // Room for all the ring and the stage can hold: the hot path allocates
  // nothing.
  if (!emu_) ro_ready_.reserve(size_t{cfg_.ring_slots} + lim.buffer_bytes / lim.min_frame + 1);
}

uint32_t PortQueue::DrainEmu(uint64_t now, LcoreCounters& ctr) {
  if (pfc_) [[unlikely]]
    WatchdogCheck(now, ctr);
  // The control thread's frames, as arriving now.
  for (int q = 0; q < static_cast<int>(kQueuesPerPort); ++q) {
    rte_mbuf* in[kMaxBurst];
    unsigned got;
    while ((got = rte_ring_sc_dequeue_burst(ring_[q], reinterpret_cast<void**>(in), kMaxBurst,
                                            nullptr)) != 0) {
      for (unsigned i = 0; i < got; ++i) FrameTime(in[i]) = now;
      EnqueueEmu(q, in, got, ctr, false);
    }
  }
  EmuBatch tx(*this, ctr);
  if (reorder_) [[unlikely]]
    ExpireReorder(now, tx, ctr);  // the waits that ended by now, at their deadlines
  emu_->StartBefore(now, tx);
  tx.Flush();
  emu_->Integrate(std::max<fabric::TimePs>(now, emu_->integrated_to()));
  if (emu_reset_.load(std::memory_order_relaxed)) [[unlikely]] {
    emu_->ResetStats(emu_->integrated_to());
    if (reorder_) reorder_->ResetMaxima();
    emu_reset_.store(false, std::memory_order_relaxed);
  }
  PublishEmu();
  return tx.sent;
}

void PortQueue::PublishEmu() {
  const fabric::EmuPort<rte_mbuf*>& e = *emu_;
  bytes_.store(e.bytes(), std::memory_order_relaxed);
  emu_pkts_.store(e.pkts(), std::memory_order_relaxed);
  emu_prio_pkts_.store(e.waiting(kPrioQueue), std::memory_order_relaxed);
  max_bytes_.store(e.max_bytes(), std::memory_order_relaxed);
  max_pkts_.store(e.max_pkts(), std::memory_order_relaxed);
  area_bytes_.store(e.area_bytes(), std::memory_order_relaxed);
  area_pkts_.store(e.area_pkts(), std::memory_order_relaxed);
  tx_packets_.store(e.tx_packets(), std::memory_order_relaxed);
  tx_bytes_.store(e.tx_bytes(), std::memory_order_relaxed);
  stat_start_tsc_ = e.stat_start();
  stat_last_tsc_ = e.integrated_to();
  pfc_sent_.store(pfc_sent_n_, std::memory_order_relaxed);
  pfc_received_.store(pfc_received_n_, std::memory_order_relaxed);
  paused_ps_.store(pause_.clock().paused_ps(e.integrated_to()), std::memory_order_relaxed);
  if (reorder_) [[unlikely]]
    PublishReorder();
}

void PortQueue::PublishReorder() {
  const fabric::ReorderCounters& c = reorder_->counters();
  ReorderPub& r = *reorder_pub_;
  r.held.store(c.held, std::memory_order_relaxed);
  r.in_order.store(c.in_order, std::memory_order_relaxed);
  r.timeouts.store(c.timeouts, std::memory_order_relaxed);
  r.overflow.store(c.overflow, std::memory_order_relaxed);
  r.table_full.store(c.table_full, std::memory_order_relaxed);
  r.old.store(c.old, std::memory_order_relaxed);
  r.bad_length.store(reorder_bad_length_, std::memory_order_relaxed);
  r.max_bytes.store(c.max_bytes, std::memory_order_relaxed);
  r.max_frames.store(c.max_frames, std::memory_order_relaxed);
  r.max_hold_ps.store(c.max_hold, std::memory_order_relaxed);
}

void PortQueue::PauseEmu(uint32_t quanta, fabric::TimePs now, LcoreCounters& ctr) {
  // What begins before the pause arrives goes; the queue stops at the next
  // frame boundary after it (or resumes at it: XON).
  EmuBatch tx(*this, ctr);
  emu_->StartBefore(now, tx);
  tx.Flush();
  const fabric::TimePs until = now + fabric::PauseQuantaPs(quanta, emu_->wire().ps_per_byte);
  ++pfc_received_n_;
  if (pfc_) WatchdogCheck(now, ctr);  // what it decided before this pause
  // A stormed queue (watchdog: drop, forward) ignores pause.
  if (const auto to = pause_.Paused(now, until, emu_->waiting(kNormalQueue) != 0)) {
    emu_->PauseUntil(*to);
    paused_until_tsc_ = *to;
  }
  PublishEmu();
}

void PortQueue::set_emu_pfc(EmuPfc* pfc) {
  pfc_ = pfc;
  if (pfc) pause_ = fabric::PfcPauseState(pfc->wd_detect_ps, pfc->wd_restore_ps, pfc->wd_action);
}

fabric::TimePs PortQueue::WatchdogDeadline() const {
  if (!pfc_) return fabric::kNever;
  const fabric::TimePs d = pause_.Deadline();
  return d == std::numeric_limits<fabric::TimePs>::max() ? fabric::kNever : d;
}

void PortQueue::WatchdogCheck(fabric::TimePs t, LcoreCounters& ctr) {
  const fabric::PfcPauseState::Verdict v = pause_.Check(t, emu_->waiting(kNormalQueue) != 0);
  // Nothing, a restore, or an alert: the figures say it all.
  if (PublishWatchdog(v, ctr) != fabric::PfcWatchdog::Event::kFire || !v.stop_pausing) return;
  // Drop and forward: the queue ignores pause from the storm's detection
  // on (the engine ran up to it: WatchdogDeadline is one of its events).
  const fabric::TimePs at = v.at;
  emu_->PauseUntil(at);
  paused_until_tsc_ = at;
  if (!v.drop) return;
  const uint32_t n = emu_->FlushQueue(kNormalQueue, [&](rte_mbuf* m) {
    if (tally_) tally_->Release(m);
    if (EmuPfc::Marked(m)) pfc_->Release(m, at);
    rte_pktmbuf_free(m);
  });
  if (n) CountWatchdogDrops(n, ctr);
}

void PortQueue::EnqueueEmuFrame(int queue, rte_mbuf* m, LcoreCounters& ctr) {
  EnqueueEmu(queue, &m, 1, ctr, false);
  ++pfc_sent_n_;
  PublishEmu();
}

void PortQueue::PublishPfcIngress(const QueueStats::Pfc& in) {
  pfc_xoff_events_.store(in.xoff_events, std::memory_order_relaxed);
  pfc_headroom_max_.store(in.headroom_max_bytes, std::memory_order_relaxed);
  pfc_max_.store(in.max_bytes, std::memory_order_relaxed);
  pfc_held_.store(in.held_bytes, std::memory_order_relaxed);
  pfc_lossless_drops_.store(in.lossless_drops, std::memory_order_relaxed);
}

bool PortQueue::inbox_pending() const {
  return emu_ && (rte_ring_count(ring_[0]) + rte_ring_count(ring_[1])) != 0;
}

uint32_t PortQueue::DropWaiting(LcoreCounters& ctr) {
  uint32_t n = 0;
  if (emu_) {
    const fabric::TimePs t = emu_last_;
    n = emu_->Flush([&](rte_mbuf* m) {
      if (tally_) tally_->Release(m);
      if (EmuPfc::Marked(m)) pfc_->Release(m, t);
      rte_pktmbuf_free(m);
    });
    // What waited for its PSN goes too, out of its ingress port's account.
    if (reorder_) {
      n += reorder_->Flush([&](rte_mbuf* m) {
        if (EmuPfc::Marked(m)) pfc_->Release(m, t);
        rte_pktmbuf_free(m);
      });
    }
    PublishEmu();
  }
  if (n) ctr.Add(Counter::kDropSwitchDown, n);
  return n;
}

}  // namespace ofan::dp
