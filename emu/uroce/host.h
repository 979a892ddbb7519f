// Host: one uroce host (one interface, one PacketIo), its QPs, its memory
// region, its pacer and its ARP answers. Step() is one round of progress.
//
// expects:  QPs added (AddQp + Qp::Connect) before traffic; Step() called
//           often from one thread; the clock non-decreasing
// gives:    per Step: what has arrived, up to 16 batches of 64 (ARP
//           requests for the host's address answered, RoCEv2 frames
//           ICRC-checked and handed to their QP by destination QPN; a bad
//           ICRC is a counted drop), then retransmission timers, the ACKs / NAKs / CNPs owed (not
//           paced: they are small and the peer's progress depends on them), then data frames from
//           the QPs in round robin while the token bucket has credit (line
//           rate x pace fraction, bucket depth `burst_bytes`) and, with
//           pfc_priority, while the edge has not paused that class: a PFC
//           frame for it stops data for its quanta at the line rate (XON:
//           at once), as a NIC's MAC obeys it; ACKs, NAKs and CNPs go on
//           (the switches' strict-priority class, never paused)
// decides:  ARP is answered here, not left to the kernel: on AF_XDP the
//           kernel never sees the frames, and ofan-dp's exception path
//           (dataplane/exception/) ARPs for hosts it has not learned. On
//           AF_PACKET the kernel may answer too (a duplicate reply is
//           harmless); a UDP socket bound to 4791 keeps it from sending ICMP
//           port unreachables for RoCE traffic.
// next:     a timer wheel when hosts carry thousands of QPs (timers are a
//           scan of all QPs per Step)
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "dataplane/fabric/pfc.h"
#include "emu/uroce/packet_io.h"
#include "emu/uroce/qp.h"

namespace ofan::uroce {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Ns Now() = 0;
};
// CLOCK_MONOTONIC.
class SteadyClock : public Clock {
 public:
  Ns Now() override;
};
// A clock the caller moves (tests: deterministic timers).
class ManualClock : public Clock {
 public:
  Ns Now() override { return now_; }
  void Advance(Ns d) { now_ += d; }

 private:
  Ns now_ = 1'000'000;
};

struct HostConfig {
  EngineConfig engine;
  pkt::MacAddr mac;
  uint32_t ip = 0;             // host order
  double pace_fraction = 1.0;  // of engine.line_rate_gbps; <= 0: unpaced
  uint32_t burst_bytes = 32 * 1024;
  uint32_t stash_slots = 256;
  // Obey the edge's PFC frames for this priority (the per-switch engine's
  // fabrics; the shared engine emulates the NIC's MAC itself).
  std::optional<uint8_t> pfc_priority;
  // Test mode: keep a SentFrame per RoCEv2 frame sent (sent_frames()), to
  // set the send times against the fabric's (bench/run-send-times).
  bool send_log = false;
};

// A RoCEv2 frame as the PacketIo took it, with the clock's time just
// before the Send that took it (HostConfig::send_log).
struct SentFrame {
  Ns t = 0;
  uint32_t dqpn = 0, psn = 0;
  uint16_t len = 0;  // the frame's, Ethernet header to ICRC
  uint8_t opcode = 0;
};

struct HostCounters {
  uint64_t rx_frames = 0, tx_frames = 0;
  uint64_t bad_icrc = 0;    // RoCEv2 frames dropped for their ICRC
  uint64_t not_for_us = 0;  // other MACs / addresses / protocols
  uint64_t unknown_qp = 0;
  uint64_t malformed = 0;
  uint64_t arp_replies = 0;
  uint64_t tx_refused = 0;  // Steps whose frames the PacketIo did not all take (they wait)
  uint64_t pace_waits = 0;  // Steps that left data unsent for lack of tokens
  uint64_t pfc_rx = 0;      // PFC frames for our priority (pfc_priority)
  Ns pfc_paused_ns = 0;     // time they paused our data, all told
};

class Host {
 public:
  Host(const HostConfig& cfg, std::unique_ptr<PacketIo> io, Clock* clock);

  const HostConfig& config() const { return cfg_; }
  // The region peers' WRITEs land in.
  void SetMemory(const MemoryRegion& mr) { mr_ = mr; }
  // A new QP with local number `qpn` (unique on this host); Connect it next.
  Qp* AddQp(uint32_t qpn, uint32_t sq_depth, uint32_t rq_depth);
  Qp* qp(uint32_t qpn);
  std::span<const std::unique_ptr<Qp>> qps() const { return qp_list_; }

  // Empties the pacer's bucket: from now on the host sends at exactly its
  // pace, as the NIC-bound assumes (a bucket full from the idle setup
  // would let the first frames out at line rate and beat the bound).
  void StartPacing();
  // One round of progress; appends QP events. True when a frame moved.
  bool Step(std::vector<QpEvent>* events);
  // Blocks at most max_ns for the socket, a timer or pacing credit.
  void Wait(Ns max_ns);
  // How long the host could sleep now (0: it has work).
  Ns IdleFor(Ns max_ns);
  int fd() const { return io_->fd(); }
  // About to sleep on fd(): false if frames wait (PacketIo::PrepareSleep).
  bool PrepareSleep() { return io_->PrepareSleep(); }
  Clock* clock() const { return clock_; }

  const HostCounters& counters() const { return c_; }
  // Every RoCEv2 frame sent, in order (empty unless HostConfig::send_log).
  const std::vector<SentFrame>& sent_frames() const { return sent_; }
  const PacketIo& io() const { return *io_; }
  // Counters of the host and its QPs (reads the kernel's drop counts).
  nlohmann::json CountersJson();

 private:
  void HandleFrame(const uint8_t* f, uint32_t len, Ns now, std::vector<QpEvent>* events);
  void HandlePause(const uint8_t* f, uint32_t len, Ns now);
  uint8_t* TxSlot();
  void FlushTx();
  // Appends the frames tx_views_[from, from + n) to sent_, sent at t.
  void LogSent(Ns t, uint32_t from, uint32_t n);

  static constexpr uint32_t kBatch = 64;
  static constexpr uint32_t kRxBatches = 16;  // receive batches per Step, at most
  HostConfig cfg_;
  std::unique_ptr<PacketIo> io_;
  Clock* clock_;
  MemoryRegion mr_;
  Stash stash_;
  std::unordered_map<uint32_t, Qp*> qp_by_num_;
  std::vector<std::unique_ptr<Qp>> qp_list_;
  uint32_t rr_ = 0;
  HostCounters c_;
  double tokens_ = 0;
  double bytes_per_ns_ = 0;
  Ns last_refill_ = 0;
  // PFC: the pauses the edge asked (no data before until()), their union
  // in time (fabric::PauseClock, the engine's; here in ns).
  fabric::PauseClock pause_;
  std::vector<uint8_t> tx_buf_;
  std::vector<FrameView> tx_views_;
  uint32_t tx_head_ = 0, tx_n_ = 0;  // [tx_head_, tx_n_) not yet taken by io_
  std::array<FrameView, kBatch> rx_{};
  std::vector<SentFrame> sent_;
};

nlohmann::json QpCountersJson(const QpCounters& c);

// Sleeps until one of the hosts' sockets is readable or max_ns passed, less
// when a host has a timer due or pacing credit (one process, many hosts).
void WaitAny(std::span<Host* const> hosts, Ns max_ns);

}  // namespace ofan::uroce
