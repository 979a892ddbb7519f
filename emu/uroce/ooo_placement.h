// OooPlacement: the responder's out-of-order mode for RDMA WRITEs (rxe has
// none: its responder NAKs the first packet past the expected PSN). Every
// WRITE packet is written at its own offset as soon as it arrives: the
// RETH of its message's first packet gives the base, the PSN the rest.
//
// expects:  Start() with the expected PSN; WRITE packets whose headers the
//           responder has checked (BTH to the ICRC, excluded)
// gives:    placement in the memory region after the rkey check (a remote
//           access NAK otherwise); packets ahead of their message's first
//           one stashed until its RETH is known, then placed; a kRecvDone
//           per WRITE WITH IMMEDIATE once all its packets are in, in the
//           order messages complete; the expected PSN and the MSN moved
//           over the contiguous prefix received; no NAK for gaps; an ACK
//           owed for the contiguous prefix only, when a packet asked
//           (AckReq) or the prefix reached a PSN that had asked before;
//           duplicates re-acknowledged with the prefix, never placed again
// modifies: the memory region, the stash, the responder's AckState, the
//           counters
// next:     SACK-like reports of what is placed beyond the prefix (the
//           requester now finds each hole by a timeout or a partial ACK)
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "emu/uroce/ack_state.h"
#include "emu/uroce/framer.h"
#include "emu/uroce/qp_types.h"

namespace ofan::uroce {

// PSNs ahead of the expected one that ooo mode can place; the requester's
// in-flight window is kept inside it.
inline constexpr uint32_t kOooWindow = 4096;

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

class OooPlacement {
 public:
  OooPlacement(const EngineConfig& cfg, MemoryRegion* mr, Stash* stash, AckState* ack,
               const Framer* framer, QpCounters* c)
      : cfg_(cfg), mr_(mr), stash_(stash), ack_(ack), framer_(framer), c_(c) {}
  OooPlacement(const OooPlacement&) = delete;
  OooPlacement& operator=(const OooPlacement&) = delete;

  void Start(uint32_t epsn);
  // A WRITE packet that came on `sport`, CE-marked or not; `replay` when
  // it comes out of the stash.
  void OnWrite(const uint8_t* bth, uint32_t len, uint16_t sport, bool ce,
               std::vector<QpEvent>* events, bool replay = false);
  // Moves the expected PSN over what is placed beyond it (after a packet
  // placed in order closed a gap).
  void Drain();
  // Before the ACK is built: owes the ACK of the contiguous prefix if a
  // packet asked for one or the prefix passed a PSN that asked.
  void OweContiguousAck();
  // An ACK of `psn` is being sent.
  void OnAckSent(uint32_t psn);

 private:
  // A WRITE being placed out of order.
  struct Msg {
    bool used = false;
    uint32_t first_psn = 0, npkts = 0, got = 0;
    uint64_t va = 0;
    uint32_t len = 0;
    uint32_t imm = 0;
    bool has_imm = false;
  };
  static constexpr uint32_t kMsgs = 64;

  const EngineConfig& cfg_;
  MemoryRegion* mr_;
  Stash* stash_;
  AckState* ack_;
  const Framer* framer_;
  QpCounters* c_;
  // One bit per PSN of the window (PSN modulo kOooWindow): placed, and
  // the last packet of a message.
  std::array<uint64_t, kOooWindow / 64> got_{}, last_bit_{};
  std::array<Msg, kMsgs> msgs_{};
  uint32_t ackreq_hi_ = 0;    // the highest PSN placed that asked for an ACK
  bool ackreq_seen_ = false;  // a packet asked since the last ACK
  uint32_t acked_epsn_ = 0;   // one past the last PSN acknowledged
};

}  // namespace ofan::uroce
