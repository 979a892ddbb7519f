// UroceTransport: emu/collective/transport.h over one uroce Host (one rank).
// Every rank has qps_per_peer RC QPs to every other rank; QP numbers, start
// PSNs and the rkey follow from the ranks alone, so both ends agree without
// a connection exchange (the fabric plan gives every rank's address).
//
// expects:  the Host's QPs are created by this class (one Host per
//           transport); the rank table gives every rank's IPv4 address and
//           the next hop's MAC is the same for all peers (the edge gateway,
//           or the peer itself on a single link)
// gives:    Post() as RDMA WRITE WITH IMMEDIATE into the peer's receive
//           buffer at dst_off (RETH va = dst_off); kWriteDone on the ACK,
//           kWriteArrived when the peer's QP has the whole message, kError
//           when a QP fails
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "emu/collective/transport.h"
#include "emu/uroce/host.h"

namespace ofan::uroce {

struct TransportConfig {
  emu::Rank rank = 0;
  uint32_t num_ranks = 2;
  uint32_t qps_per_peer = 1;
  uint32_t max_outstanding = 16;   // writes per (peer, qp)
  std::vector<uint32_t> rank_ips;  // host order, one per rank
  pkt::MacAddr next_hop_mac;
  uint64_t peer_recv_bytes = 0;  // every rank's receive buffer size
  uint32_t rkey = 0x5EED;
};

// The local QP number of `rank`'s QP `q` to `peer`.
constexpr uint32_t TransportQpn(uint32_t peer, uint32_t q, uint32_t qps_per_peer) {
  return 0x100 + peer * qps_per_peer + q;
}
// The first PSN rank `from` sends on its QP `q` to `to` (both ends compute it).
uint32_t TransportStartPsn(uint32_t from, uint32_t to, uint32_t q);

class UroceTransport : public emu::Transport {
 public:
  // Fails when the configuration is inconsistent (rank out of range, missing
  // addresses, a QP number taken).
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

 private:
  UroceTransport(const TransportConfig& cfg, Host* host, std::span<uint8_t> s, std::span<uint8_t> r)
      : cfg_(cfg), host_(host), send_(s), recv_(r) {}
  void Convert(std::vector<emu::Completion>* out);

  TransportConfig cfg_;
  Host* host_;
  std::span<uint8_t> send_, recv_;
  std::vector<QpEvent> events_;
};

}  // namespace ofan::uroce
