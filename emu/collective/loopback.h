// LoopbackFabric: N ranks' Transports in memory, for the engine's tests and
// for `--transport loopback`. One lock over the whole fabric, so drivers in
// several threads may share it as processes share a fabric; a test, not a
// fast path.
//
// expects:  Post / Poll as transport.h says
// gives:    RC-like writes without a network: a posted write is delivered
//           (its bytes copied from the writer's send buffer into the peer's
//           receive buffer, then kWriteArrived at the peer and kWriteDone at
//           the writer) once delay_us has passed and it has been held back a
//           seeded random 0..max_hold polls; each completion is held back
//           again before Poll returns it. So messages and completions come
//           out of order, across QPs and within one (stricter than RC, which
//           an engine must not rely on across QPs anyway), yet a run is a
//           pure function of the seed and the poll sequence when delay_us is 0
// faults:   a byte corrupted on arrival, a kError after a rank's Nth post, a
//           write that is never delivered (for the deadline)
// next:     RunCollective (driver.h) over endpoints()
//
// The bytes are copied at delivery, not at Post: an engine that changes a
// send range before kWriteDone sends what it changed, as a real NIC would.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emu/collective/transport.h"

namespace ofan::emu {

struct LoopbackOptions {
  uint32_t num_ranks = 2;
  uint32_t qps_per_peer = 1;
  uint32_t max_outstanding = 16;
  uint64_t send_bytes = 0;  // per rank
  uint64_t recv_bytes = 0;
  uint32_t delay_us = 0;  // post to delivery, wall clock
  uint32_t max_hold = 0;  // polls a message or completion may be held back
  uint64_t seed = 1;
};

struct LoopbackStats {
  uint64_t posted = 0;
  uint64_t delivered = 0;
  uint64_t rejected = 0;  // Post errors
  // The most writes with data (len > 0) one rank had posted to another and
  // not yet delivered at once: what CTS admission bounds (rank_engine.h).
  uint32_t max_pair_inflight = 0;
};

class LoopbackFabric {
 public:
  explicit LoopbackFabric(const LoopbackOptions& o);
  ~LoopbackFabric();
  LoopbackFabric(const LoopbackFabric&) = delete;
  LoopbackFabric& operator=(const LoopbackFabric&) = delete;

  Transport& endpoint(Rank r);
  std::vector<Transport*> endpoints();
  const LoopbackStats& stats() const { return stats_; }

  // The first write that lands on recv[offset] of rank dst gets that byte
  // XORed with mask.
  void CorruptOnArrival(Rank dst, uint64_t offset, uint8_t mask = 0xFF);
  // After rank r's nth successful Post (1-based), its next Poll returns a
  // kError with this message (as a QP that exceeded its retry count).
  void FailAfterPosts(Rank r, uint64_t nth, std::string message);
  // Rank src's nth Post (1-based) is accepted and then lost for good.
  void DropPost(Rank src, uint64_t nth);

 private:
  class Endpoint;
  struct Message {
    Rank src;
    WriteRequest w;
    int64_t due_ns;
    uint32_t hold;
  };
  struct Held {
    Completion c;
    uint32_t hold;
  };
  friend class Endpoint;
  Status Post(Rank src, const WriteRequest& w);
  void Poll(Rank r, std::vector<Completion>* out, uint32_t max_wait_us);
  void Advance();
  void Deliver(const Message& m);
  uint32_t DrawHold();

  LoopbackOptions o_;
  std::mutex mu_;  // over everything below and the buffers' copies
  std::vector<std::unique_ptr<Endpoint>> eps_;
  std::vector<std::vector<Held>> ready_;  // per rank
  std::vector<uint32_t> outstanding_;     // per (src, peer, qp)
  std::vector<uint64_t> posts_;           // per rank
  std::vector<uint32_t> pair_inflight_;   // per (src, dst): data writes posted, not delivered
  std::vector<Message> inflight_;
  uint64_t rng_state_;
  LoopbackStats stats_;
  struct Corrupt {
    Rank dst;
    uint64_t offset;
    uint8_t mask;
  };
  std::vector<Corrupt> corrupt_;
  struct FailAt {
    Rank r;
    uint64_t nth;
    std::string message;
  };
  std::vector<FailAt> fail_;
  struct DropAt {
    Rank r;
    uint64_t nth;
  };
  std::vector<DropAt> drop_;
};

}  // namespace ofan::emu
