// Stage 5: egress, one PortQueue per output port.
//
// expects:   rewritten frames for this port, from any worker lcore, framed as
//            parse forwarded them (untagged or one 802.1Q tag: ECN marking
//            finds the IPv4 header with ForwardedL3Offset); control frames
//            (ARP/ICMP replies, PFC) from the control thread
// modifies:  ECN CE on ECT frames when the backlog is above the threshold;
//            the PFC ingress tally of each queued frame's ingress port
// next:      the port's TX hook, in strict priority (control/ACK queue
//            first), at the emulated line rate (token bucket in bytes),
//            unless the normal queue is paused by a received PFC/PAUSE
// parameters: buffer bytes (tail drop), ECN threshold, rate, ring slots
//
// The producer side (Enqueue) is multi-producer: rte_ring MP enqueue plus one
// atomic add per (burst, port) for the byte count. The consumer side (Drain)
// belongs to the lcore that owns the port; it also integrates the queue depth
// over time, which is what the paper measures (max and time average). Time
// is the caller's TSC reading, so tests drive it (tests/dataplane/egress/).
//
// Emulated (the shared fabric engine, dataplane/fabric/): one thread owns
// the queue, time is the engine's picoseconds (tsc_hz 1e12), and the
// two queues are fabric::EmuPort's: each frame is judged at the emulated
// time it arrived (fabric/frame_time.h), leaves at the exact time its
// link's rate allows, and goes to the TX hook stamped with its arrival at
// the far end. The rings then only carry the control thread's frames
// (EnqueueOne) to the owner, which queues them at the time of its next
// Drain.
#pragma once

#include <rte_mbuf_core.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "dataplane/counters.h"
#include "dataplane/egress/lossless.h"
#include "dataplane/fabric/emu_port.h"
#include "dataplane/fabric/pfc.h"
#include "dataplane/fabric/reorder.h"
#include "dataplane/vector_constants.h"

struct rte_ring;
struct rte_mbuf;

namespace ofan::dp {

class IdleWait;
struct EmuPfc;

// Where a queue's frames leave: the device's TX burst, or a test's capture.
// Called once per burst, never per packet; returns how many frames it took
// (it owns those; the rest stay with the caller).
struct TxHook {
  uint16_t (*send)(void* ctx, rte_mbuf** pkts, uint16_t n) = nullptr;
  void* ctx = nullptr;
};

// PFC generation (802.1Qbb) needs the bytes queued anywhere in the switch
// that arrived on each ingress port. Queues add a frame's bytes when they
// take it and release them when it leaves or is dropped; the control thread
// compares the tally to xoff / xon (dataplane/exception/). Indexed by the
// mbuf's DPDK port; frames from no port (control frames, bench traffic) are
// not counted.
class IngressTally {
 public:
  IngressTally() = default;
  // port_of_dpdk: DPDK port id -> fat-tree port or -1, `k` tallies.
  IngressTally(const int32_t* port_of_dpdk, uint32_t num_dpdk, uint32_t k);
  void Add(const rte_mbuf* m);
  void Release(const rte_mbuf* m);
  // The fat-tree port a frame came in on, or -1.
  int32_t PortOf(uint16_t dpdk_port) const {
    if (dpdk_port == RTE_MBUF_PORT_INVALID) return -1;
    dpdk_port = static_cast<uint16_t>(dpdk_port & ~kLosslessPortMark);  // a queued lossless frame
    return dpdk_port < num_dpdk_ ? port_of_dpdk_[dpdk_port] : -1;
  }
  uint64_t Bytes(uint32_t port) const { return bytes_[port].v.load(std::memory_order_relaxed); }
  // PFC's lossless admission (the per-switch engine's): what each port may
  // hold at most, xoff + headroom (none set: no cap).
  void SetCaps(std::vector<uint64_t> caps) { caps_ = std::move(caps); }
  // A port's cap (UINT64_MAX: none).
  uint64_t Cap(uint32_t port) const { return port < caps_.size() ? caps_[port] : UINT64_MAX; }
  // Whether a lossless frame of `len` bytes from its ingress port fits its
  // port's account (a frame from no port always does).
  bool Fits(const rte_mbuf* m, uint32_t len) const;
  void Sub(int32_t port, uint64_t bytes) {
    if (port >= 0) bytes_[port].v.fetch_sub(bytes, std::memory_order_relaxed);
  }

 private:
  struct alignas(64) Line {
    std::atomic<uint64_t> v{0};
  };
  const int32_t* port_of_dpdk_ = nullptr;
  uint32_t num_dpdk_ = 0;
  std::unique_ptr<Line[]> bytes_;
  std::vector<uint64_t> caps_;
};

struct PortQueueConfig {
  uint64_t limit_bytes = 0;        // tail drop above
  uint64_t ecn_bytes = 0;          // CE-mark ECT frames above; 0 = off
  double bytes_per_tsc = 0;        // shaper rate; 0 = unshaped
  uint64_t tsc_hz = 1;             // for the watchdog and the bucket depth
  double pfc_tsc_per_quantum = 0;  // 512 bit times at the port's rate
  // The per-switch engine's PFC watchdog on the lossless (normal) queue, on
  // the TSC (detect 0: none, only the 200 ms alert kPfcWatchdogNs counts);
  // the shared engine's comes with set_emu_pfc.
  fabric::TimePs wd_detect_ps = 0, wd_restore_ps = 0;
  fabric::PfcWdAction wd_action = fabric::PfcWdAction::kDrop;
  // The per-switch engine's lossless class (PFC on: its DSCP; kNoDscp: off):
  // its frames on the normal queue are admitted by their ingress port's
  // account (IngressTally::Fits), not this port's buffer, as the shared
  // engine's EmuPfc admits them.
  static constexpr uint16_t kNoDscp = 0x100;
  uint16_t lossless_dscp = kNoDscp;
  bool lossless_acks = false;  // RC ACKs of that DSCP too (egress/lossless.h)
  uint32_t burst = 32;         // TX burst
  uint32_t ring_slots = 1024;  // per queue, power of two
  // The shared engine's: time in emulated ps, the link as EmuPort models
  // it (its rate replaces bytes_per_tsc; limit_bytes and ecn_bytes apply).
  bool emulated = false;
  fabric::EmuWire wire;
};

// What a queue reports (the control socket's "queues" view).
struct QueueStats {
  uint64_t bytes = 0, packets = 0, priority_packets = 0;
  uint64_t max_bytes = 0, max_packets = 0;
  double avg_bytes = 0, avg_packets = 0;
  uint64_t drops_buffer = 0, ecn_marked = 0;
  uint64_t tx_packets = 0, tx_bytes = 0;
  // Line time lost while frames waited: bytes the token bucket could have
  // sent but overflowed, because the owner came back later than the bucket's
  // depth lasts. Non-zero means the emulated link ran below its rate for
  // want of CPU (the emulator flags such runs as CPU-bound).
  uint64_t shaper_lag_bytes = 0;
  bool paused = false;
  // PFC on this port, both directions (the shared engine's; counts since
  // the switch started, as ecn_marked: readers take differences): frames
  // sent (XOFF and XON) and received, how long its lossless queue was
  // paused; as an ingress port, how often it went above xoff, lossless
  // frames it dropped for a full headroom (never expected), what it holds
  // now; and, since the last reset, the most it held above xoff (headroom
  // used) and in all.
  struct Pfc {
    uint64_t sent = 0, received = 0, xoff_events = 0;
    double paused_us = 0;
    uint64_t headroom_max_bytes = 0, max_bytes = 0, held_bytes = 0;
    uint64_t lossless_drops = 0;
    // The watchdog on this port's lossless queue: storms detected, queues
    // restored, whether one is on now, lossless frames its drop action
    // discarded.
    uint64_t wd_fired = 0, wd_restored = 0, wd_dropped = 0;
    bool wd_active = false;
    // When it last fired and restored, in emulated ps since the engine
    // started (fabric::kNever: not since the port came up).
    uint64_t wd_fired_at_ps = fabric::kNever, wd_restored_at_ps = fabric::kNever;
  };
  Pfc pfc;
  // The reorder stage of a host port (egress/reorder.h; none elsewhere):
  // frames that waited for a gap, released in PSN order, released because
  // a gap timed out, passed at once for a full buffer or flow table or an
  // old PSN, RoCE frames whose lengths cannot hold their BTH (passed); and,
  // since the last reset, the most bytes and frames held and the longest
  // wait.
  struct Reorder {
    uint64_t held = 0, in_order = 0, timeouts = 0, overflow = 0, table_full = 0, old = 0;
    uint64_t bad_length = 0, max_bytes = 0, max_frames = 0;
    double max_hold_us = 0;
    uint32_t timeout_us = 0;  // the longest a frame may wait (set once)
  };
  std::optional<Reorder> reorder;
};

inline constexpr uint64_t kPfcWatchdogNs = 200'000'000;  // 200 ms (Meta's PFC watchdog)

class alignas(64) PortQueue {
 public:
  PortQueue() = default;
  ~PortQueue();
  PortQueue(const PortQueue&) = delete;
  PortQueue& operator=(const PortQueue&) = delete;

  // Creates the two rings (names unique per process: `name` goes into them)
  // on NUMA socket `socket`. `tally`: PFC accounting, or nullptr when PFC
  // generation is off. `now`: the TSC the statistics start at.
  Status Init(const std::string& name, int socket, const PortQueueConfig& c, TxHook tx,
              IngressTally* tally, uint64_t now);
  bool present() const { return ring_[0] != nullptr; }
  bool up() const { return present() && admin_up_.load(std::memory_order_relaxed); }
  void set_admin(bool up) { admin_up_.store(up, std::memory_order_relaxed); }
  bool admin_up() const { return admin_up_.load(std::memory_order_relaxed); }
  // The port's cable cut without the switch knowing (an emulated silent
  // failure: set_port wire "cut"): what the port sends is counted as sent and
  // as drop_link_loss, and never reaches the far end. The port stays up and
  // the LB keeps using it: only a control plane that hears nothing back (BFD)
  // takes it out of the masks.
  void set_wire_cut(bool cut) { wire_cut_.store(cut, std::memory_order_relaxed); }
  bool wire_cut() const { return wire_cut_.load(std::memory_order_relaxed); }
  const PortQueueConfig& config() const { return cfg_; }
  // Bytes queued (both rings and the owner's staging): what JSQ/AR read.
  uint64_t backlog_bytes() const { return bytes_.load(std::memory_order_relaxed); }

  // n frames for `queue`, `bytes` = the sum of their pkt_len, from any
  // worker. `owner`: the caller owns the port's TX, so an empty, unshaped,
  // unpaused queue sends them straight to the hook (run to completion, as
  // they would leave an empty output queue). Tail drop, ECN and PFC
  // accounting as the header says; counters go to `ctr`.
  void Enqueue(int queue, rte_mbuf** pkts, uint32_t n, uint64_t bytes, uint64_t now, bool owner,
               LcoreCounters& ctr);
  // One frame the control thread made (a reply, PFC: the priority queue;
  // bench traffic: the normal one), no tail drop; false if the ring is full
  // (the caller frees it and counts).
  bool EnqueueOne(int queue, rte_mbuf* m);

  // Owner only: integrates the depth, sends up to one burst through the
  // hook as priority, pause and tokens allow. Returns the frames sent.
  uint32_t Drain(uint64_t now, LcoreCounters& ctr);
  // Frames the shaper, PFC or a full device holds back in staging, or (a
  // host port resequencing) frames the reorder stage holds or released.
  bool holds_backlog() const {
    return staged_n_ != 0 || (reorder_ && !emu_ && (!ro_ready_.empty() || reorder_->frames() != 0));
  }
  // When the frame the owner holds can leave (owner only): the TSC at which
  // the bucket covers it, or the end of a PFC pause; `now` when it could go
  // at once (the device refused it) or nothing is held.
  uint64_t ReadyAt(uint64_t now) const;
  // Frames queued or held, as any thread sees it (an idle owner's last look).
  bool has_frames() const { return staged_n_ != 0 || bytes_.load(std::memory_order_relaxed) != 0; }
  // The owner's idle wait, told when another thread queues frames here (nullptr:
  // the owner only sleeps, and nobody needs to wake it).
  void set_waker(IdleWait* w) { waker_ = w; }

  // A received PFC/PAUSE for our class: pause the normal queue for `quanta`
  // (0 resumes). Called by the owner's RX pass; `now` is the frame's
  // arrival (emulated: what began before it still goes, what would begin
  // after waits: fabric/emu_port.h).
  void Pause(uint32_t quanta, uint64_t now, LcoreCounters& ctr);
  bool paused(uint64_t now) const { return now < paused_until_tsc_; }

  QueueStats Stats(uint64_t now) const;
  void ResetStats(uint64_t now);
  // Frees every frame still queued (teardown).
  void Flush();

  // Emulated mode, owner only. When the next frame would start if nothing
  // else arrived (fabric::kNever: none waits); whether the control thread
  // left frames for the next Drain.
  // Emulated: the next transmission's start or reorder timeout, whichever
  // comes first (fabric::kNever: none).
  fabric::TimePs NextStart() const {
    if (!emu_) return fabric::kNever;
    return reorder_ ? std::min(emu_->NextStart(), reorder_->NextDeadline()) : emu_->NextStart();
  }
  bool inbox_pending() const;
  // Drops every waiting frame (a stopped switch), counted; returns them.
  uint32_t DropWaiting(LcoreCounters& ctr);
  // Emulated, owner only: PFC's accounting for the switch (nullptr: off;
  // egress/emu_pfc.h), which this queue's lossless frames go through, and
  // its watchdog's settings for this queue.
  void set_emu_pfc(EmuPfc* pfc);
  // Before the switch runs: a host port's reorder stage (egress/reorder.h)
  // with these limits; emulated time on the shared engine, the TSC on the
  // per-switch engine (Init first: it sizes the stage's output).
  void set_reorder(const fabric::ReorderLimits& lim);
  // Emulated: when the watchdog next needs a look (fabric::kNever: none).
  fabric::TimePs WatchdogDeadline() const;
  // Emulated, owner only: one frame the owner made (a PFC frame), queued
  // at its FrameTime (or the latest time this port has seen, if later).
  void EnqueueEmuFrame(int queue, rte_mbuf* m, LcoreCounters& ctr);
  // The PFC figures only the owner knows (the ingress side's, from the
  // switch's EmuPfc), published for Stats.
  void PublishPfcIngress(const QueueStats::Pfc& in);
  // Per-switch engine: a PFC frame the control thread sent from this port.
  void CountPfcSent() { pfc_sent_.fetch_add(1, std::memory_order_relaxed); }
  // The per-switch engine's clock in ps, the watchdog's (fired_at, storms).
  fabric::TimePs TscPs(uint64_t tsc) const {
    return static_cast<fabric::TimePs>(static_cast<double>(tsc) / static_cast<double>(cfg_.tsc_hz) *
                                       1e12);
  }
  // The first TSC at or after ps (TscPs's inverse).
  uint64_t PsTsc(fabric::TimePs ps) const {
    return static_cast<uint64_t>(static_cast<double>(ps) * 1e-12 *
                                 static_cast<double>(cfg_.tsc_hz)) +
           1;
  }

 private:
  rte_mbuf* NextFrame(bool paused);
  void Integrate(uint64_t now, uint64_t backlog);
  void CheckWatchdog(bool paused, uint64_t now, LcoreCounters& ctr);
  // The per-switch engine's watchdog (wd_detect_ps set): the verdicts of
  // pause_ at the TSC `now`; a fire with action drop discards the lossless
  // queue's frames.
  void WatchdogCheckTsc(uint64_t now, LcoreCounters& ctr);
  uint32_t DropLossless(LcoreCounters& ctr);
  // Either engine's: a watchdog verdict into the figures Stats reads (and
  // the counter); returns its event for the caller's action.
  fabric::PfcWatchdog::Event PublishWatchdog(const fabric::PfcPauseState::Verdict& v,
                                             LcoreCounters& ctr);
  void CountWatchdogDrops(uint32_t n, LcoreCounters& ctr);
  // Per-switch: lossless (normal-queue) frames queued or held at the head.
  bool NormalWaiting() const;
  uint32_t PickShaped(uint64_t now, bool paused, rte_mbuf** batch);
  uint32_t PickUnshaped(bool paused, rte_mbuf** batch);
  void CountTx(uint32_t sent, uint64_t bytes, LcoreCounters& ctr);
  // The TX hook, or the cut wire's bin (set_wire_cut).
  uint16_t Transmit(rte_mbuf** pkts, uint16_t n, LcoreCounters& ctr);
  // forwarded: the pipeline's frames, IPv4 all (ECN-capable as such); else
  // the control thread's or the switch's own (ARP, ICMP, LLDP, IPv6 from
  // the kernel ports, PFC), which only an IPv4 header makes ECN-capable.
  void EnqueueEmu(int queue, rte_mbuf** pkts, uint32_t n, LcoreCounters& ctr, bool forwarded);
  struct EmuBatch;
  // What one EnqueueEmu decided, counted once at its end (FinishEmu).
  struct EmuTally {
    uint32_t dropped = 0, marked = 0, queued = 0, lossless_dropped = 0, wd_drop = 0;
  };
  // PFC's admission of a normal-queue frame at t, by its ingress port's
  // account, if it is of the lossless class and not admitted already
  // (Marked); false: dropped (lossless or watchdog drop, counted in n).
  bool AdmitLossless(rte_mbuf* m, fabric::TimePs t, EmuBatch& tx, EmuTally& n);
  // One frame onto the EmuPort at t: PFC's admission, the buffer, ECN.
  void AdmitEmu(rte_mbuf* m, fabric::TimePs t, int queue, bool forwarded, EmuBatch& tx,
                EmuTally& n);
  void FinishEmu(int queue, const EmuTally& n, LcoreCounters& ctr);
  // The reorder stage's releases up to now, on to AdmitEmu.
  void ExpireReorder(fabric::TimePs now, EmuBatch& tx, LcoreCounters& ctr);
  uint32_t DrainEmu(uint64_t now, LcoreCounters& ctr);
  void PauseEmu(uint32_t quanta, fabric::TimePs now, LcoreCounters& ctr);
  // The watchdog's verdict by t, acted on (drop, forward, alert).
  void WatchdogCheck(fabric::TimePs t, LcoreCounters& ctr);
  void PublishEmu();
  // The reorder stage's counters, for Stats (owner only).
  void PublishReorder();
  // Per-switch engine, owner only: the normal ring's frames through the
  // reorder stage into ro_ready_, and what timed out by now.
  void ReorderTsc(uint64_t now);
  // The normal queue's next frame: the ring's, or ro_ready_'s when the port
  // resequences (per-switch engine).
  bool DequeueNormal(rte_mbuf** m);

  // Read-mostly, looked up per packet by every worker: a line of its own so
  // the producers' counters below do not bounce it between cores.
  rte_ring* ring_[kQueuesPerPort] = {nullptr, nullptr};
  std::atomic<bool> admin_up_{true};
  std::atomic<bool> wire_cut_{false};
  PortQueueConfig cfg_;
  TxHook tx_;
  IngressTally* tally_ = nullptr;
  IdleWait* waker_ = nullptr;

  // Written by producers (any worker) and the owner.
  alignas(64) std::atomic<uint64_t> bytes_{0};
  // Of bytes_, the lossless frames' (per-switch engine with PFC: marked
  // kLosslessPortMark), which the port's buffer does not hold: lossy frames
  // are admitted against bytes_ - lossless_bytes_, as EmuPort does.
  std::atomic<uint64_t> lossless_bytes_{0};
  std::atomic<uint64_t> max_bytes_{0};
  std::atomic<uint64_t> drops_buffer_{0};
  std::atomic<uint64_t> ecn_marked_{0};

  // Owner-only (the lcore whose pipe holds the port); read racily for stats.
  alignas(64) rte_mbuf* staged_[kMaxBurst + 1] = {};  // + the frame held by the shaper
  uint32_t staged_n_ = 0;
  double tokens_ = 0;
  uint64_t tb_last_tsc_ = 0;
  bool backlogged_ = false;  // frames were left waiting by the last drain
  std::atomic<uint64_t> shaper_lag_bytes_{0};
  uint64_t stat_last_tsc_ = 0;
  uint64_t stat_start_tsc_ = 0;
  uint64_t paused_until_tsc_ = 0;  // PFC on our class (or 802.3x PAUSE)
  uint64_t paused_since_tsc_ = 0;
  bool watchdog_fired_ = false;
  std::atomic<double> area_bytes_{0};  // integral of the backlog, byte * tsc
  std::atomic<double> area_pkts_{0};
  std::atomic<uint64_t> max_pkts_{0};
  std::atomic<uint64_t> tx_packets_{0}, tx_bytes_{0};

  // Emulated mode (owner only, but for what PublishEmu copies into the
  // atomics above and these two for Stats).
  std::unique_ptr<fabric::EmuPort<rte_mbuf*>> emu_;
  fabric::TimePs emu_last_ = 0;  // the latest arrival offered: offers never go back
  std::atomic<uint64_t> emu_pkts_{0}, emu_prio_pkts_{0};
  // ResetStats asked (emulated ports, and a per-switch port's reorder
  // stage); the owner does it.
  std::atomic<bool> emu_reset_{false};
  EmuPfc* pfc_ = nullptr;
  // A host port's reorder stage (set_reorder) and what it counted,
  // published by PublishEmu for Stats.
  std::unique_ptr<fabric::ReorderBuffer<rte_mbuf*>> reorder_;
  uint64_t reorder_bad_length_ = 0;
  // Per-switch engine: the normal queue's frames the stage let go (or that
  // never wait: ACKs, non-RoCE), in order, ahead of the ring's. Owner only;
  // every frame in it or in the stage is still in bytes_ and its PFC
  // account, as a frame in the ring is.
  fabric::Fifo<rte_mbuf*> ro_ready_;
  struct ReorderPub {
    std::atomic<uint64_t> held{0}, in_order{0}, timeouts{0}, overflow{0}, table_full{0}, old{0};
    std::atomic<uint64_t> bad_length{0}, max_bytes{0}, max_frames{0}, max_hold_ps{0};
  };
  std::unique_ptr<ReorderPub> reorder_pub_;
  fabric::PfcPauseState pause_;  // the pauses received, the watchdog (PFC on)
  bool tsc_watched_ = false;     // per-switch: pause_ runs on the TSC (wd_detect_ps)
  std::atomic<uint64_t> wd_fired_{0}, wd_restored_{0}, wd_dropped_{0};
  std::atomic<uint64_t> wd_fired_at_{fabric::kNever}, wd_restored_at_{fabric::kNever};
  // Per-switch engine with PFC: frames of the lossless (normal) queue the
  // buffer dropped, from any worker.
  std::atomic<uint64_t> tsc_lossless_drops_{0};
  std::atomic<bool> wd_active_{false};
  // PFC figures, owner-written, read by Stats.
  std::atomic<uint64_t> pfc_sent_{0}, pfc_received_{0}, paused_ps_{0};
  std::atomic<uint64_t> pfc_xoff_events_{0}, pfc_headroom_max_{0}, pfc_max_{0}, pfc_held_{0},
      pfc_lossless_drops_{0};
  uint64_t pfc_sent_n_ = 0, pfc_received_n_ = 0;  // owner's, since the start
};

}  // namespace ofan::dp
