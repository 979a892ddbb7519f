// Responder: the requests a QP receives (SEND, RDMA WRITE) and what it
// sends back, as rxe_resp.c does (Linux, drivers/infiniband/sw/rxe/).
//
// expects:  Start() with the peer's first PSN; request packets for this QP
//           (BTH to the ICRC, excluded) whose ICRC the Host has checked;
//           `now` non-decreasing
// gives:    in order (rxe's check_psn, check_op_seq, check_resource,
//           execute): a PSN sequence error NAK on the first packet past the
//           expected PSN and silence until the expected one arrives;
//           duplicates re-ACKed when they ask, never re-delivered; an RNR
//           NAK for a SEND with no receive posted; an invalid request NAK
//           for an opcode out of sequence or a message longer than its
//           buffer; a remote access NAK for a bad rkey; a kRecvDone per
//           SEND and per WRITE WITH IMMEDIATE. In ooo mode WRITEs go to
//           OooPlacement. An ACK when a packet asks (AckReq), echoing its
//           UDP source port and CE mark; a CNP (CnpSender) for CE-marked
//           requests; the CNP first when both are owed
// modifies: the memory region and posted receive buffers (placement), the
//           counters
// next:     RDMA READ and atomics (rxe's responder has them)
#pragma once

#include <cstdint>
#include <vector>

#include "emu/uroce/ack_state.h"
#include "emu/uroce/dcqcn.h"
#include "emu/uroce/framer.h"
#include "emu/uroce/ooo_placement.h"
#include "emu/uroce/qp_types.h"

namespace ofan::uroce {

class Responder {
 public:
  Responder(const EngineConfig& cfg, MemoryRegion* mr, Stash* stash, uint32_t rq_depth,
            Framer* framer, QpCounters* c);
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  void Start(uint32_t peer_start_psn);
  // A receive buffer for an incoming SEND; false when the receive queue is
  // full.
  bool PostRecv(uint8_t* buf, uint32_t len, uint64_t wr_id);
  // A request packet (any opcode but ACKNOWLEDGE and CNP) that came on
  // `sport`, CE-marked or not.
  void OnRequest(const uint8_t* bth, uint32_t len, uint16_t sport, bool ce, Ns now,
                 std::vector<QpEvent>* events);
  // Writes the CNP or ACK / NAK owed (one per call); 0 when none is.
  uint32_t BuildControl(uint8_t* out, Ns now);

 private:
  struct Recv {
    uint8_t* buf = nullptr;
    uint32_t len = 0;
    uint64_t wr_id = 0;
  };
  void OnInOrder(const uint8_t* bth, uint32_t len, std::vector<QpEvent>* events);

  const EngineConfig& cfg_;
  MemoryRegion* mr_;
  const Framer* framer_;
  QpCounters* c_;
  AckState ack_;
  OooPlacement ooo_;
  CnpSender cnp_;
  std::vector<Recv> rq_;
  uint32_t rq_head_ = 0, rq_tail_ = 0;
  bool nak_sent_ = false;  // a NAK for this gap went out: silence until it is filled
  // The message being received in order (between FIRST and LAST).
  bool in_msg_ = false;
  bool msg_is_send_ = false;
  uint8_t* place_ = nullptr;  // where its next payload byte goes
  uint64_t place_left_ = 0, msg_len_ = 0, msg_va_ = 0;
  uint64_t recv_wr_id_ = 0;
};

}  // namespace ofan::uroce
