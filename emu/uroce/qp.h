// Qp: one RoCEv2 reliable-connection queue pair, requester and responder,
// as a state machine over frames. It neither owns a socket nor reads a clock:
// the Host (host.h) hands it received BTHs and the time, and asks it for the
// next data frame to send and for the ACK / NAK / CNP it owes.
//
// expects:  Connect() before anything else; Post() of at most `sq_depth`
//           outstanding work requests; received packets whose ICRC the Host
//           has checked; `now` non-decreasing
// gives:    RDMA WRITE (with immediate) and SEND segmented at the path MTU,
//           PSNs modulo 2^24, AckReq on a message's last packet, at least
//           every `ack_every` packets, where the in-flight window closes,
//           and at least every quarter of the retransmission timeout
//           (rxe acknowledges only those); coalesced ACKs (one per receive
//           batch: the last one owed covers the others); a PSN sequence
//           error NAK on the first packet past the expected PSN and silence
//           until the expected one arrives (rxe's check_psn); go-back-N on
//           NAK and on timeout, kError after `retry_count` timeouts in a row;
//           duplicates re-ACKed, never re-delivered; in `ooo` mode every
//           WRITE packet placed at its own offset (RETH of the first packet
//           gives the base, PSN the rest; packets ahead of their first are
//           stashed), no NAK for gaps, ACKs cover only the contiguous prefix;
//           a CNP (rate-limited) for a CE-marked data packet
// modifies: the registered memory region (placement), the posted receive
//           buffers (SEND), its counters
//           after a timeout in ooo mode, only the holes are resent (the
//           oldest unacknowledged packet, then each one the next ACK stops
//           short of: NewReno's partial ACKs), not everything after them
// next:     SACK-like reports from the responder (one RTO per first hole
//           today; later holes cost one round trip each)
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "dataplane/packet/roce.h"
#include "emu/uroce/completer.h"
#include "emu/uroce/dcqcn.h"
#include "emu/uroce/entropy.h"
#include "emu/uroce/framer.h"
#include "emu/uroce/qp_types.h"
#include "emu/uroce/requester.h"
#include "emu/uroce/send_queue.h"

namespace ofan::uroce {

// Packets that arrived ahead of the first packet of their message (ooo
// mode), kept until the message's RETH is known. One pool per Host.
class Stash {
 public:
  explicit Stash(uint32_t slots) : slots_(slots) {}
  struct Slot {
    const void* owner = nullptr;
    uint32_t psn = 0, len = 0;
    uint16_t sport = 0;
    bool ce = false;
    std::array<uint8_t, kMaxFrame> bth{};
  };
  Slot* Take() {
    for (auto& s : slots_)
      if (!s.owner) return &s;
    return nullptr;
  }
  std::span<Slot> slots() { return slots_; }

 private:
  std::vector<Slot> slots_;
};

class Qp {
 public:
  Qp(const EngineConfig& cfg, MemoryRegion* mr, Stash* stash, uint32_t sq_depth, uint32_t rq_depth);

  void Connect(const QpPeer& peer);
  uint32_t qpn() const { return framer_.peer().local_qpn; }
  const QpPeer& peer() const { return framer_.peer(); }
  const QpCounters& counters() const { return c_; }
  bool failed() const { return failed_; }
  uint16_t base_sport() const { return framer_.base_sport(); }

  // Queues a send; false when the send queue is full or len > 2^31.
  bool Post(const SendWr& wr);
  // A receive buffer for an incoming SEND.
  bool PostRecv(uint8_t* buf, uint32_t len, uint64_t wr_id);
  uint32_t outstanding() const { return sq_.outstanding(); }

  // A received packet (`bth` to the ICRC, excluded) for this QP.
  void OnPacket(const uint8_t* bth, uint32_t len, uint16_t sport, bool ce, Ns now,
                std::vector<QpEvent>* events);
  // Retransmission timer.
  void OnTimer(Ns now, std::vector<QpEvent>* events);
  // The earliest time OnTimer or BuildData may have something to do.
  Ns NextDeadline() const;

  // True when BuildData would produce a frame now.
  bool HasData(Ns now) const;
  // Writes the next data frame to `out` (kMaxFrame bytes); its length, 0 if none.
  uint32_t BuildData(uint8_t* out, Ns now);
  // Writes the ACK / NAK / CNP owed (one per call); 0 when none is.
  uint32_t BuildControl(uint8_t* out, Ns now);

  // DCQCN-like rate (fraction of the line rate) and its state.
  double rate_fraction() const { return rate_.rate(); }

 private:
  struct Recv {
    uint8_t* buf = nullptr;
    uint32_t len = 0;
    uint64_t wr_id = 0;
  };
  // A WRITE being placed out of order.
  struct OooMsg {
    bool used = false;
    uint32_t first_psn = 0, npkts = 0, got = 0;
    uint64_t va = 0;
    uint32_t len = 0;
    uint32_t imm = 0;
    bool has_imm = false;
  };
  static constexpr uint32_t kOooWindow = 4096;  // PSNs ahead of the expected one
  static constexpr uint32_t kOooMsgs = 64;

  void Fail(const char* why, std::vector<QpEvent>* events);
  void OnDataInOrder(const uint8_t* bth, uint32_t len, std::vector<QpEvent>* events);
  void OnDataOoo(const uint8_t* bth, uint32_t len, uint16_t sport, bool ce,
                 std::vector<QpEvent>* events, bool replay);
  void OweAck(uint32_t psn, uint16_t sport, bool becn);
  void OweNak(uint8_t syndrome);

  EngineConfig cfg_;
  MemoryRegion* mr_;
  Stash* stash_;
  Framer framer_;
  QpCounters c_;
  Entropy entropy_;
  RateLimiter rate_;
  CnpSender cnp_;
  bool failed_ = false;

  SendQueue sq_;
  Requester req_;
  Completer comp_;

  // Responder.
  std::vector<Recv> rq_;
  uint32_t rq_head_ = 0, rq_tail_ = 0;
  uint32_t epsn_ = 0, msn_ = 0;
  bool nak_sent_ = false;
  bool in_msg_ = false;  // in-order mode: between FIRST and LAST
  bool msg_is_send_ = false;
  uint8_t* place_ = nullptr;
  uint64_t place_left_ = 0, msg_len_ = 0, msg_va_ = 0;
  uint64_t recv_wr_id_ = 0;
  // The control packet owed: an ACK or NAK (the last one set covers the
  // others: PSNs only grow) and a CNP.
  bool ack_owed_ = false;
  uint8_t ack_syndrome_ = 0;
  uint32_t ack_psn_ = 0;
  uint16_t ack_sport_ = 0;
  bool ack_becn_ = false;
  uint64_t acks_owed_ = 0;  // OweAck calls, to tell which packet set the ACK
  // ooo mode
  std::array<uint64_t, kOooWindow / 64> got_{}, last_bit_{};
  std::array<OooMsg, kOooMsgs> ooo_msgs_{};
  uint32_t ooo_ackreq_hi_ = 0;
  bool ooo_ackreq_seen_ = false;
  uint32_t ooo_acked_epsn_ = 0;
};

}  // namespace ofan::uroce
