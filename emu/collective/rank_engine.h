// RankEngine: one rank of a collective, a state machine driven by its
// transport's completions.
//
// expects:  a Schedule that outlives the engine and this rank's Transport
//           (rank, rank count, QPs per peer and buffer sizes checked by
//           Create); completions of that
//           transport only, in any order (across QPs and, for robustness,
//           within one: nothing here relies on RC's in-order delivery)
// modifies: the transport's send buffer (pattern, then the forwarded and
//           reduced chunks) and receive buffer (local copies, the last
//           reduce-scatter step)
// gives:    posts each planned write once it is ready (no dependency, or its
//           chunk of the previous ring step has arrived and been copied or
//           reduced), in plan order per (peer, QP), never more than the
//           transport's max_outstanding() per (peer, QP); done() once every
//           write is acknowledged and every expected message has arrived;
//           the time from its first post to its last completion
// next:     the driver (driver.h) polls and feeds it; Verify (verify.h)
//           checks the receive buffer afterwards
//
// With CTS (ScheduleParams::cts_channels, NCCL's simple protocol): a rank
// grants each peer that sends to it that many slots at the start, one
// clear-to-send each (a write of its immediate alone, on QP 0, in the
// strict-priority class unless cts_priority is off), and one more each time
// a chunk from that peer arrives, until the peer has had a slot for every
// chunk it sends; a sender posts a chunk only with a slot of its receiver's
// in hand. cts_waits_ns(): how long each chunk that was ready waited for its
// slot (cts_waits_ns), and each clear-to-send's flight from its grant to
// its arrival (cts_flights_ns: its immediate carries the slot and the grant
// time, in microseconds modulo 2^22, so the flight is right only where both
// ranks read one clock: the ranks of one process).
//
// OnCompletion allocates nothing and logs nothing on success; an unexpected
// completion (unknown wr_id or message, a duplicate, a wrong length) or a
// transport error comes back as an error Status naming the rank.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "emu/collective/schedule.h"
#include "emu/collective/transport.h"

namespace ofan::emu {

class RankEngine {
 public:
  static Result<std::unique_ptr<RankEngine>> Create(const Schedule& s, Transport* t);

  // Fills the send buffer with this rank's pattern and does the local copies.
  // Not timed: a host has its data before a collective starts.
  void Prepare();
  // Posts every write that can go now.
  Status Start(int64_t now_ns);
  Status OnCompletion(const Completion& c, int64_t now_ns);

  bool done() const {
    return writes_done_ == plan_.writes.size() && arrived_ == plan_.arrivals.size() &&
           cts_done_ == cts_total_;
  }
  Rank rank() const { return rank_; }
  Transport& transport() { return *t_; }
  uint64_t arrived_bytes() const { return arrived_bytes_; }
  uint64_t expected_bytes() const { return expected_bytes_; }
  // First post to last completion; a rank that posts nothing (a 1-byte
  // all-to-all leaves some ranks only receiving) is timed from Start.
  int64_t elapsed_ns() const { return started_ ? last_ns_ - first_post_ns_ : 0; }
  // For a deadline's error message: what this rank still waits for.
  std::string Pending() const;
  // CTS: per chunk that was ready before its receiver's slot, the wait.
  const std::vector<int64_t>& cts_waits_ns() const { return cts_waits_; }
  const std::vector<int64_t>& cts_flights_ns() const { return cts_flights_; }
  // A clear-to-send's immediate: the slot in the low kCtsSlotBits, the grant
  // time above them (us, modulo 2^(32 - kCtsSlotBits)).
  static constexpr uint32_t kCtsSlotBits = 10;  // kMaxCtsChannels

 private:
  enum class WriteState : uint8_t { kWaiting, kReady, kPosted, kDone };
  struct Queue {
    Rank peer;
    uint32_t qp;
    std::vector<uint32_t> writes;  // plan indices, in plan order
    size_t next = 0;
    uint32_t outstanding = 0;
  };
  RankEngine(const Schedule& s, Transport* t);
  Status Pump(uint32_t queue, int64_t now_ns);
  // CTS: the writes outstanding on (peer, QP 0), data and clear-to-sends.
  uint32_t Qp0Outstanding(Rank peer) const;
  // CTS: grants `peer` one more slot if it has chunks left without one; a
  // clear-to-send that finds QP 0 full waits for a completion there.
  Status Grant(Rank peer, int64_t now_ns);
  Status FlushGrants(Rank peer, int64_t now_ns);
  static constexpr uint64_t kCtsWrId = uint64_t{1} << 63;  // | peer
  Status Fail(std::string what) const;

  const Schedule& s_;
  const RankPlan& plan_;
  Transport* t_;
  Rank rank_;
  uint32_t max_outstanding_;
  std::vector<WriteState> state_;
  std::vector<uint32_t> queue_of_write_;
  std::vector<Queue> queues_;
  std::vector<bool> arrived_flags_;
  size_t writes_done_ = 0;
  size_t arrived_ = 0;
  uint64_t arrived_bytes_ = 0;
  uint64_t expected_bytes_ = 0;
  bool started_ = false;
  int64_t first_post_ns_ = 0;
  int64_t last_ns_ = 0;
  // CTS (off: cts_ false and the vectors empty). Per peer: slots held to
  // write to it (credits_), chunks it sends here and slots granted it so
  // far, clear-to-sends owed (not yet posted) and outstanding; per queue,
  // since when its head has waited for a slot (-1: not waiting).
  bool cts_ = false;
  std::vector<uint32_t> credits_, to_grant_, granted_, owed_, cts_out_;
  std::vector<uint32_t> qp0_queue_;  // per peer: its (peer, QP 0) queue, or UINT32_MAX
  std::vector<std::vector<uint32_t>> queues_of_peer_;
  std::vector<int64_t> blocked_since_;
  std::vector<int64_t> cts_waits_, cts_flights_;
  uint64_t cts_total_ = 0, cts_done_ = 0;
};

}  // namespace ofan::emu
