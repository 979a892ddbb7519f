// RankExchange: the ranks one uroce process drives, connected to every other
// rank of a collective by ofan-rc-1 (docs/rc-exchange.md) instead of the
// computed plan, so that a collective can mix uroce ranks and rdma-core
// (rxe) ranks, or be split over several processes.
//
// expects:  every rank's address; for each local rank a Host in its
//           namespace, its buffers and next hop; the other ranks run the
//           same collective and exchange (any stack)
// gives:    Connect: each local rank's rendezvous on a thread of its own (in
//           one process rank j dials rank i < j while i accepts: sequential
//           calls would wait for each other), its hellos (QP ends
//           TransportQpn(peer, q), random first PSNs and rkey, its receive
//           buffer's address and length, the path MTU it offers), then its
//           UroceTransport from the peers' hellos; Start: ready and the go
//           barrier; Finish: done with what each rank received. While a rank
//           waits, its host keeps stepping (UroceTransport::KeepGoing), so a
//           peer that starts or retransmits early is answered and nothing
//           it completes is lost. Errors name the rank and the peer.
// next:     RunCollective over transports(); Finish after it
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "emu/rcx/rc_exchange.h"
#include "emu/uroce/uroce_transport.h"

namespace ofan::uroce {

struct LocalRank {
  emu::Rank rank = 0;
  std::string netns;  // where its exchange's TCP sockets are made
  std::string ifname;
  Host* host = nullptr;
  // Where frames to every peer go (a fabric's gateway); all zero: each
  // peer's own next hop from netns's tables (neighbour.h), looked up once
  // its TCP connection has resolved it.
  pkt::MacAddr next_hop_mac;
  uint32_t mtu = 2048;  // the path MTU it offers
  std::span<uint8_t> send, recv;
};

struct ExchangeOptions {
  uint32_t num_ranks = 2;
  std::vector<uint32_t> ips;  // every rank's, host order
  uint32_t qps_per_peer = 1;
  uint32_t max_outstanding = 16;
  uint16_t port = rcx::kDefaultPort;
  std::chrono::milliseconds timeout{60'000};
};

class RankExchange {
 public:
  static Result<std::unique_ptr<RankExchange>> Connect(const ExchangeOptions& o,
                                                       std::span<const LocalRank> ranks);
  // The local ranks' transports, in the order Connect was given them.
  std::vector<emu::Transport*> transports() const;
  Status Start();
  // received[i]: the messages local rank i received; bad: those that failed.
  Status Finish(std::span<const uint64_t> received, uint64_t bad);

 private:
  struct Rank {
    LocalRank local;
    std::unique_ptr<rcx::Rendezvous> rv;
    std::unique_ptr<UroceTransport> t;
  };
  // Runs fn(i) for every local rank on a thread of its own; the first error.
  Status Each(const std::function<Status(size_t)>& fn);
  std::vector<Rank> ranks_;
};

}  // namespace ofan::uroce
