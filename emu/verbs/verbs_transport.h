// VerbsTransport: emu/collective/transport.h over libibverbs, one rank of a
// collective per process (one per VM with rxe): qps_per_peer RC QPs to
// every other rank, connected from the peers' ofan-rc-1 hellos, and with
// priority_qp one more: writes marked priority (the clear-to-sends) go on it
// in the switches' strict-priority class, as rxe marks a whole QP's packets
// with its traffic class (qp_attr.h), never a single write's.
//
// expects:  a Device that outlives it; HelloTo(peer) goes into the
//           rendezvous, the peers' hellos come back to Connect(), and only
//           then (after rcx's ready) Post(); peers' receive buffers at least
//           as large as what is written into them (checked per write)
// gives:    Post() as RDMA WRITE WITH IMMEDIATE from the send buffer into
//           the peer's receive buffer at dst_off (its hello's addr +
//           dst_off; zero length: the immediate alone), a priority write
//           on the peer's priority QP (named QP 0 in its completions at
//           both ends), signaled: exactly one kWriteDone when the peer
//           acknowledged it; kWriteArrived with the immediate and the
//           write's length when a peer's write has landed (one receive WR
//           per incoming write, recv_depth posted per QP and reposted as
//           they complete: a sender ahead of that waits on RNR, which rxe
//           retries for ever, rnr_retry 7); kError on a failed work
//           completion (ibv_wc_status_str), and when the idle watch (the
//           rendezvous: a peer that closed its connection) fails. Poll()
//           sleeps on the CQ's completion channel, so an idle rank costs
//           no CPU; the wait ends at the first completion
// next:     RunCollective (emu/collective/driver.h) over it (verbs_rank.h)
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "emu/collective/transport.h"
#include "emu/rcx/rc_exchange.h"
#include "emu/verbs/completion_queue.h"
#include "emu/verbs/device.h"
#include "emu/verbs/memory.h"
#include "emu/verbs/rc_qp.h"

namespace ofan::verbs {

struct VerbsTransportConfig {
  emu::Rank rank = 0;
  uint32_t num_ranks = 2;
  uint32_t qps_per_peer = 1;
  uint32_t max_outstanding = 16;  // writes per (peer, qp): the send queue depth
  uint32_t recv_depth = 256;      // receive WRs per QP
  uint64_t send_bytes = 0;
  uint64_t recv_bytes = 0;
  GidChoice gid;                           // this rank's address and GID index on the device
  uint32_t mtu = 0;                        // 0: the port's active MTU
  uint8_t ack_timeout = kLocalAckTimeout;  // 4.096 us x 2^this (qp_attr.h)
  // One more QP per peer, in the strict-priority class, for writes marked
  // priority (both ends must agree: the hellos' QP counts are compared).
  bool priority_qp = false;
  // Called when Poll found nothing, at most every watch_every; an error
  // becomes a kError.
  std::function<Status()> watch;
  std::chrono::milliseconds watch_every{100};
};

class VerbsTransport : public emu::Transport {
 public:
  static Result<std::unique_ptr<VerbsTransport>> Create(const Device& dev,
                                                        const VerbsTransportConfig& cfg);
  ~VerbsTransport() override;

  // This rank's hello to `peer` (its QPs to that peer, the receive buffer).
  rcx::Hello HelloTo(emu::Rank peer) const;
  // RTR/RTS towards every peer and the receive WRs posted. peers[rank] is
  // ignored. Fails naming the peer whose hello does not fit.
  Status Connect(const std::vector<rcx::Hello>& peers);

  emu::Rank rank() const override { return cfg_.rank; }
  uint32_t num_ranks() const override { return cfg_.num_ranks; }
  uint32_t qps_per_peer() const override { return cfg_.qps_per_peer; }
  uint32_t max_outstanding() const override { return cfg_.max_outstanding; }
  std::span<uint8_t> send_buffer() override { return send_->bytes(); }
  std::span<uint8_t> recv_buffer() override { return recv_->bytes(); }
  Status Post(const emu::WriteRequest& w) override;
  void Poll(std::vector<emu::Completion>* out, uint32_t max_wait_us) override;

  uint32_t mtu() const { return mtu_; }
  // Peers' writes that arrived, over all peers.
  uint64_t arrived() const { return arrived_; }

 private:
  VerbsTransport(const Device& dev, const VerbsTransportConfig& cfg) : dev_(dev), cfg_(cfg) {}
  // The QPs to one peer: qps_per_peer, then the priority QP if any.
  uint32_t QpsPerPeer() const { return cfg_.qps_per_peer + (cfg_.priority_qp ? 1 : 0); }
  uint32_t Slot(emu::Rank peer, uint32_t q) const { return peer * QpsPerPeer() + q; }
  void Convert(const ibv_wc& wc, std::vector<emu::Completion>* out);

  const Device& dev_;
  VerbsTransportConfig cfg_;
  uint32_t mtu_ = 0;
  std::unique_ptr<CompletionQueue> cq_;
  std::unique_ptr<RegisteredBuffer> send_, recv_;
  std::vector<std::unique_ptr<RcQp>> qps_;  // by Slot; null towards this rank
  std::unordered_map<uint32_t, uint32_t> slot_of_qpn_;
  std::vector<uint32_t> outstanding_;  // by Slot
  std::vector<rcx::Hello> peers_;
  std::vector<ibv_wc> batch_;
  uint64_t arrived_ = 0;
  bool failed_ = false;  // a kError was given: later failures are its echoes
  std::chrono::steady_clock::time_point next_watch_{};
};

}  // namespace ofan::verbs
