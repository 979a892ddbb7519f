// `uroce peer`: one side of ofan-rc-1's pair check (docs/rc-exchange.md,
// "The pair check") as a uroce host in a network namespace. The other side
// is another `uroce peer` or rdma-core's `ofan-verbs peer` on rxe.
//
// expects:  root (namespaces, AF_XDP or AF_PACKET); --netns NS with
//           --iface (default eth0), whose IPv4 address is the host's (or
//           --ip) and whose kernel reaches the peer (the exchange's TCP goes
//           through it, opened inside NS)
// gives:    hellos with this host's QP ends (--qps of them), rkey, receive
//           buffer (count x size, message m at m x size; none when this side
//           only sends), path MTU; the QPs connected to
//           the peer's ends at the smaller MTU, frames to the next hop's MAC
//           (--next-hop-mac, else NS's neighbour table); ready; message m on
//           QP m % qps as WRITE WITH IMMEDIATE m to the peer's addr + m *
//           size with its rkey, or as SEND; every byte of every arriving
//           message checked; done both ways (the host keeps answering while
//           it waits: its ACKs may be what the peer still needs); one JSON
//           object with --json (ok, op, messages, received, bad, seconds,
//           gbps, the peer's done, per-QP counters); exit 0 / 1 / 2
// decides:  on AF_XDP the socket gets only RoCEv2 frames (xsk_program.h): the
//           kernel of NS keeps its ARP and the exchange's TCP
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace ofan::uroce {

struct PeerOptions {
  CLI::Option* listen_opt = nullptr;
  std::string listen;  // "" with --listen: the host's address
  std::string connect;
  uint16_t rc_port = 18515;
  std::string op = "write";
  uint64_t count = 100;
  std::string size = "64KiB";
  uint32_t qps = 1;
  std::string direction = "both";
  bool json = false;
  std::string netns, iface = "eth0", io = "auto", ip, next_hop_mac;
  uint32_t mtu = 4096;
  uint32_t window = 16;  // messages this side has in flight
  // Unacknowledged packets per QP: rxe's requester stops at 128 PSNs
  // (RXE_MAX_UNACKED_PSNS), and so does uroce here, so that neither side
  // queues more in front of the other's ACKs than it would itself.
  uint32_t max_inflight = 128;
  double pace = 0, rate_gbps = 10;
  // ofan-verbs' QPs take IBA timeout 14: 4.096 us x 2^14 = 67 ms. The same
  // here, so that neither side of a pair check gives up on a slower peer
  // (a TCG VM) sooner than the other.
  uint32_t rto_us = 67108, retry = 7;
  double timeout_s = 60;
  int64_t psn = -1;  // the first PSN of every QP; -1: random
};

// Registers `peer` on app, filling *o.
CLI::App* AddPeerCommand(CLI::App& app, PeerOptions* o);
int RunPeer(const PeerOptions& o);

}  // namespace ofan::uroce
