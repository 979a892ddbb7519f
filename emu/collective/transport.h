// Transport: what the collective engine (emu/collective/) needs from a RoCE
// host stack, and nothing more: RDMA WRITE WITH IMMEDIATE of a range of this
// rank's registered send buffer into a range of a peer's registered receive
// buffer, on one of several RC QPs to that peer, and completions for both ends.
//
// Implemented by uroce (emu/uroce/, userspace RoCEv2 over AF_XDP/AF_PACKET)
// and, for soft-RoCE VM hosts, by libibverbs (rdma-core's rxe). Connection
// setup (QP numbers, rkeys, addresses) is the transport's business, done
// before the engine starts; the engine only posts and polls.
//
// expects:  Post() is non-blocking and may be called with up to
//           max_outstanding() writes not yet completed per (peer, qp);
//           Poll() is called often (it is where a userspace stack makes
//           progress: transmit, pace, receive, retransmit)
// gives:    exactly one kWriteDone per posted write once the peer has
//           acknowledged all of it (RC semantics: its data is in the peer's
//           buffer), and at the peer exactly one kWriteArrived per message,
//           after all of its bytes are in the receive buffer; kError when a
//           QP gives up (retry count exceeded), after which the run fails
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace ofan::emu {

using Rank = uint32_t;

struct WriteRequest {
  Rank peer = 0;         // destination rank
  uint32_t qp = 0;       // which of the QPs to that peer, 0..qps_per_peer()-1
  uint64_t src_off = 0;  // into this rank's send buffer
  uint64_t dst_off = 0;  // into the peer's receive buffer
  uint64_t len = 0;      // bytes; 0: the immediate alone (a clear-to-send)
  uint32_t imm = 0;      // delivered with the peer's kWriteArrived
  uint64_t wr_id = 0;    // returned with this rank's kWriteDone
  // Send it in the switches' strict-priority class (DSCP 48) where the
  // transport can mark a write so; the data class otherwise.
  bool priority = false;
};

enum class CompletionKind : uint8_t {
  kWriteDone,     // a write this rank posted is acknowledged
  kWriteArrived,  // a peer's write is wholly in this rank's receive buffer
  kError,         // a QP failed; `error` says why
};

struct Completion {
  CompletionKind kind = CompletionKind::kWriteDone;
  Rank peer = 0;  // the other end of the QP
  uint32_t qp = 0;
  uint64_t wr_id = 0;  // kWriteDone
  uint32_t imm = 0;    // kWriteArrived
  uint64_t len = 0;    // kWriteArrived: the message's bytes
  std::string error;   // kError
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual Rank rank() const = 0;
  virtual uint32_t num_ranks() const = 0;
  virtual uint32_t qps_per_peer() const = 0;
  virtual uint32_t max_outstanding() const = 0;
  // This rank's registered buffers (peers write into recv_buffer()).
  virtual std::span<uint8_t> send_buffer() = 0;
  virtual std::span<uint8_t> recv_buffer() = 0;
  // Queues a write; an error (bad peer, qp or range, too many outstanding)
  // leaves nothing queued.
  virtual Status Post(const WriteRequest& w) = 0;
  // Makes progress and appends the completions that are ready; waits at most
  // max_wait_us for one when there is none.
  virtual void Poll(std::vector<Completion>* out, uint32_t max_wait_us) = 0;
};

}  // namespace ofan::emu
