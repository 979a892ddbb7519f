// UroceTransport: emu/collective/transport.h over one uroce Host (one rank).
// Every rank has qps_per_peer RC QPs to every other rank. What each QP needs
// of its far end (QP number, first PSN, path MTU) and what a WRITE needs of
// the peer (its address, next hop, rkey, receive buffer) is explicit in the
// TransportConfig: either computed from the ranks alone (ComputedPlan: both
// ends agree without an exchange, for runs of uroce hosts only) or taken
// from the peer's ofan-rc-1 hello (docs/rc-exchange.md), which is how a
// uroce rank connects to an rxe rank.
//
// expects:  the Host's QPs are created by this class (one Host per
//           transport); local_qps and peers hold one entry per rank (the
//           rank's own is ignored), each with qps_per_peer QP ends
// gives:    Post() as RDMA WRITE WITH IMMEDIATE into the peer's receive
//           buffer at dst_off (RETH va = the peer's addr + dst_off, its
//           rkey); kWriteDone on the ACK, kWriteArrived when the peer's QP
//           has the whole message, kError when a QP fails
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "emu/collective/transport.h"
#include "emu/rcx/rc_exchange.h"
#include "emu/uroce/host.h"

namespace ofan::uroce {

// One end of an RC QP as the other end must know it (QPN, first PSN sent).
using QpEnd = rcx::QpEnd;

// What a rank knows of one peer: where it is, how frames reach it, and the
// memory its WRITEs land in (an ofan-rc-1 hello has all of it).
struct PeerInfo {
  uint32_t ip = 0;  // host order
  pkt::MacAddr next_hop_mac;
  uint32_t rkey = 0;
  uint64_t addr = 0;  // the peer's receive buffer: WRITEs go to addr + dst_off
  uint64_t len = 0;
  uint32_t mtu = 0;        // the path MTU the peer offered (0: the engine's)
  std::vector<QpEnd> qps;  // the peer's ends, qps_per_peer of them
};

struct TransportConfig {
  emu::Rank rank = 0;
  uint32_t num_ranks = 2;
  uint32_t qps_per_peer = 1;
  uint32_t max_outstanding = 16;  // writes per (peer, qp)
  uint32_t local_ip = 0;          // host order
  uint32_t mtu = 0;               // this rank's offer (0: the engine's)
  // This rank's receive buffer as peers address it (addr + offset, rkey).
  uint32_t rkey = 0;
  uint64_t addr = 0;
  std::vector<std::vector<QpEnd>> local_qps;  // [peer][q]: this rank's ends
  std::vector<PeerInfo> peers;                // [peer]
};

// The plan uroce-only runs use: QP numbers, first PSNs and rkey follow from
// the ranks, addresses are plain offsets (addr 0), every peer is reached
// through one next hop (the edge gateway, or the peer itself on one link).
struct PlanConfig {
  emu::Rank rank = 0;
  uint32_t num_ranks = 2;
  uint32_t qps_per_peer = 1;
  uint32_t max_outstanding = 16;
  std::vector<uint32_t> rank_ips;  // host order, one per rank
  pkt::MacAddr next_hop_mac;
  uint64_t peer_recv_bytes = 0;  // every rank's receive buffer size
  uint32_t rkey = 0x5EED;
};
// Fails when the plan is inconsistent (rank out of range, missing addresses).
Result<TransportConfig> ComputedPlan(const PlanConfig& p);

// The local QP number of a rank's QP `q` to `peer` in the computed plan.
constexpr uint32_t TransportQpn(uint32_t peer, uint32_t q, uint32_t qps_per_peer) {
  return 0x100 + peer * qps_per_peer + q;
}
// The first PSN rank `from` sends on its QP `q` to `to` (both ends compute it).
uint32_t TransportStartPsn(uint32_t from, uint32_t to, uint32_t q);

// Adds and connects this host's QPs to one peer (AddQp + Qp::Connect with
// the peer's ends, the smaller path MTU); what both the transport and
// `uroce peer` do. Fails naming the QP when a number is taken.
Status ConnectPeerQps(Host* host, uint32_t local_ip, uint32_t local_mtu,
                      std::span<const QpEnd> local, const PeerInfo& peer, uint32_t sq_depth,
                      uint32_t rq_depth);

class UroceTransport : public emu::Transport {
 public:
  // Fails when the configuration is inconsistent (rank out of range, a
  // peer's QP count that is not qps_per_peer, a QP number taken).
  static Result<std::unique_ptr<UroceTransport>> Create(const TransportConfig& cfg, Host* host,
                                                        std::span<uint8_t> send_buf,
                                                        std::span<uint8_t> recv_buf);

  emu::Rank rank() const override { return cfg_.rank; }
  uint32_t num_ranks() const override { return cfg_.num_ranks; }
  uint32_t qps_per_peer() const override { return cfg_.qps_per_peer; }
  uint32_t max_outstanding() const override { return cfg_.max_outstanding; }
  std::span<uint8_t> send_buffer() override { return send_; }
  std::span<uint8_t> recv_buffer() override { return recv_; }
  Status Post(const emu::WriteRequest& w) override;
  void Poll(std::vector<emu::Completion>* out, uint32_t max_wait_us) override;

  Host* host() { return host_; }
  // Progress without waiting; completions appended (what Poll(…, 0) does).
  void Progress(std::vector<emu::Completion>* out);
  // Progress while the caller waits for something else (an exchange's
  // barrier, the peers' done): waits at most max_wait_us, and keeps the
  // completions for the next Poll or Progress, so none is lost when a peer
  // starts before this rank's engine does.
  void KeepGoing(uint32_t max_wait_us);

 private:
  struct Route {
    emu::Rank peer = 0;
    uint32_t q = 0;
  };
  UroceTransport(const TransportConfig& cfg, Host* host, std::span<uint8_t> s, std::span<uint8_t> r)
      : cfg_(cfg), host_(host), send_(s), recv_(r) {}
  void Convert(std::vector<emu::Completion>* out);

  TransportConfig cfg_;
  Host* host_;
  std::span<uint8_t> send_, recv_;
  std::unordered_map<uint32_t, Route> by_qpn_;  // local QPN -> (peer, q)
  std::vector<QpEvent> events_;
  std::vector<emu::Completion> kept_;  // KeepGoing's, for the next Progress
};

}  // namespace ofan::uroce
