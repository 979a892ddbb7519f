// RcQp: one RC queue pair of a Device, created in INIT with a random first
// PSN, connected (RTR, RTS) from the peer's end of it in an ofan-rc-1
// hello, and the work requests the hosts post: RDMA WRITE WITH IMMEDIATE,
// SEND, and receives (with a buffer for SENDs, without one for the
// immediate of a WRITE).
//
// expects:  the Device, the CQ (both queues complete there) and the
//           registered buffers outlive it; depths within the device's
//           max_qp_wr; Connect() once, before the first post
// gives:    qpn() and psn() for this end's hello; posts that fail with the
//           kernel's reason (a full queue is ENOMEM); every send WR is
//           signaled, so each completes exactly once
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "emu/verbs/completion_queue.h"
#include "emu/verbs/device.h"
#include "emu/verbs/qp_attr.h"

namespace ofan::verbs {

struct QpDepths {
  uint32_t send = 64;  // send WRs outstanding
  uint32_t recv = 64;  // receive WRs posted
};

class RcQp {
 public:
  static Result<std::unique_ptr<RcQp>> Create(const Device& dev, const CompletionQueue& cq,
                                              const QpDepths& depths);
  ~RcQp();
  RcQp(const RcQp&) = delete;
  RcQp& operator=(const RcQp&) = delete;

  uint32_t qpn() const { return qp_->qp_num; }
  uint32_t psn() const { return psn_; }
  // INIT -> RTR -> RTS towards the peer's end.
  Status Connect(const LocalEnd& local, const RemoteEnd& remote);

  Status PostWriteImm(uint64_t wr_id, const uint8_t* src, uint32_t len, uint32_t lkey,
                      uint64_t remote_addr, uint32_t rkey, uint32_t imm);
  Status PostSend(uint64_t wr_id, const uint8_t* src, uint32_t len, uint32_t lkey);
  // A receive WR: with len 0 it takes only a WRITE's immediate.
  Status PostRecv(uint64_t wr_id, uint8_t* dst, uint32_t len, uint32_t lkey);

 private:
  RcQp() = default;
  Status Modify(const QpTransition& t, const char* to);
  Status PostSendWr(ibv_wr_opcode opcode, uint64_t wr_id, const uint8_t* src, uint32_t len,
                    uint32_t lkey, uint64_t remote_addr, uint32_t rkey, uint32_t imm);

  ibv_qp* qp_ = nullptr;
  uint32_t psn_ = 0;
};

}  // namespace ofan::verbs
