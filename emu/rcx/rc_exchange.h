// ofan-rc-1 (docs/rc-exchange.md): RC QPs of different stacks (uroce, and
// rdma-core's rxe through libibverbs) connected out of band over TCP, one
// JSON line per message. One implementation for both stacks, so that they
// cannot drift apart.
//
// expects:  every rank knows every rank's IPv4 address (a pair check: the
//           listener knows none, the connector the listener's); sockets are
//           made by the caller's hook when they must live in another
//           network namespace (uroce drives hosts inside theirs)
// gives:    Rendezvous: one TCP connection per pair of ranks (the higher
//           rank dials), hellos exchanged and checked, the ready / all_ready
//           / go barrier, and done; every wait bounded by one deadline, every
//           failure a typed error naming the peer and what was wrong
// next:     the stack moves its QPs to RTS from the peers' hellos (verbs:
//           emu/verbs/, uroce: emu/uroce/), then calls Ready()
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace ofan::rcx {

inline constexpr std::string_view kProto = "ofan-rc-1";
inline constexpr uint16_t kDefaultPort = 18515;  // perftest's
inline constexpr size_t kMaxLine = size_t{64} * 1024;

struct QpEnd {
  uint32_t qpn = 0;  // 24 bits
  uint32_t psn = 0;  // the first PSN this end sends, 24 bits
  bool operator==(const QpEnd&) const = default;
};

struct Hello {
  uint32_t rank = 0;
  uint32_t ip = 0;  // host order
  std::string mac;  // informational
  uint32_t mtu = 2048;
  uint32_t rkey = 0;
  uint64_t addr = 0;  // the sender's receive buffer, as peers address it
  uint64_t len = 0;
  std::vector<QpEnd> qps;
  bool operator==(const Hello&) const = default;
};

// "10.1.0.2" <-> host-order address; "::ffff:10.1.0.2", the RoCEv2 GID.
Result<uint32_t> ParseIpv4(std::string_view text);
std::string Ipv4Text(uint32_t ip);
std::string GidOf(uint32_t ip);

nlohmann::json HelloJson(const Hello& h);
// Checks the protocol name, every field's presence, type and range.
Result<Hello> ParseHello(const nlohmann::json& j);

// What one peer said it did (its done message).
struct PeerDone {
  uint32_t rank = 0;
  uint64_t received = 0;
  uint64_t bad = 0;
};

struct RendezvousOptions {
  uint32_t rank = 0;
  uint32_t num_ranks = 2;
  // Every rank's address (host order), by rank. A listener of a pair check
  // may leave its peer's as 0 (it only accepts).
  std::vector<uint32_t> ips;
  uint16_t port = kDefaultPort;
  std::chrono::milliseconds timeout{60'000};  // the whole setup, and each later wait
  // Makes a TCP socket (AF_INET, SOCK_STREAM); default ::socket. uroce makes
  // it inside a host's network namespace.
  std::function<int()> make_socket;
  // Called, when set, each time a wait for a peer's ready, go or done finds
  // nothing to read, instead of sleeping in poll (it should block at most a
  // millisecond or so). A userspace stack keeps its QPs answering in it: the
  // peer may start sending on our ready, and may still retransmit into us
  // (and need our ACKs) after we sent done. A kernel stack needs none.
  std::function<void()> progress;
};

class Rendezvous {
 public:
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  // Listens on ips[rank]:port (0.0.0.0 if that is 0), dials every lower
  // rank (retrying every 100 ms while it is not listening yet), accepts
  // every higher one, and exchanges hellos: mine(peer) is this rank's hello
  // to `peer`. Returns the peers' hellos by rank (this rank's entry is
  // default). Fails on a peer that speaks another protocol, claims a wrong
  // rank, or lists another number of QPs than this rank's hello to it.
  static Result<std::unique_ptr<Rendezvous>> Connect(
      const RendezvousOptions& o, const std::function<Hello(uint32_t peer)>& mine,
      std::vector<Hello>* peers);

  // {"ready": true} to every peer, then each peer's.
  Status Ready();
  // all_ready to rank 0; rank 0 answers go to all once every rank has.
  Status Barrier();
  // done to every peer, then each peer's done.
  Result<std::vector<PeerDone>> Done(uint64_t received, uint64_t bad);
  // During a run, without waiting: reads what peers sent so far (kept for
  // Done) and fails if one closed its connection. A rank closes only after
  // both dones, so an early close means it failed: RC retries alone would
  // not tell (rxe retries for ever at retry_cnt 7), only the deadline.
  Status Watch();

  uint32_t rank() const { return o_.rank; }
  // What each later wait may take: a rank done early waits in Done() for
  // the slowest, which may run up to its own deadline, longer than the
  // setup's timeout.
  void set_timeout(std::chrono::milliseconds t) { o_.timeout = t; }

 private:
  explicit Rendezvous(const RendezvousOptions& o);
  struct Conn;
  Status Send(uint32_t peer, const nlohmann::json& j);
  Result<nlohmann::json> Receive(uint32_t peer, std::string_view expect_key);
  std::chrono::steady_clock::time_point Deadline() const;

  RendezvousOptions o_;
  std::vector<std::unique_ptr<Conn>> conns_;  // by rank; null for this one
};

}  // namespace ofan::rcx
