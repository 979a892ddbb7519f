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
    return writes_done_ == plan_.writes.size() && arrived_ == plan_.arrivals.size();
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
};

}  // namespace ofan::emu
