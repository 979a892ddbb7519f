#include "emu/rcx/rc_exchange.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "common/json_text.h"

namespace ofan::rcx {
namespace {

using Clock = std::chrono::steady_clock;

Error Io(std::string m) { return MakeError(ErrorCode::kIo, std::move(m)); }

int MsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1'000'000));
}

sockaddr_in Sockaddr(uint32_t ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(ip);
  return a;
}

// An unsigned field of at most `bits` bits.
Result<uint64_t> Field(const nlohmann::json& j, const char* key, int bits) {
  if (!j.contains(key)) return InvalidArgument(fmt::format("hello: '{}' is missing", key));
  const auto& v = j.at(key);
  if (!v.is_number_unsigned()) {
    return InvalidArgument(
        fmt::format("hello: '{}' must be an unsigned integer, not {}", key, JsonText(v)));
  }
  uint64_t x = v.get<uint64_t>();
  if (bits < 64 && x >> bits)
    return InvalidArgument(fmt::format("hello: '{}' = {} exceeds {} bits", key, x, bits));
  return x;
}

}  // namespace

Result<uint32_t> ParseIpv4(std::string_view text) {
  in_addr a{};
  std::string s(text);
  if (inet_pton(AF_INET, s.c_str(), &a) != 1)
    return InvalidArgument(fmt::format("'{}' is not an IPv4 address", s));
  return ntohl(a.s_addr);
}

std::string Ipv4Text(uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

std::string GidOf(uint32_t ip) { return "::ffff:" + Ipv4Text(ip); }

nlohmann::json HelloJson(const Hello& h) {
  nlohmann::json qps = nlohmann::json::array();
  for (const auto& q : h.qps) qps.push_back({{"qpn", q.qpn}, {"psn", q.psn}});
  return {{"proto", kProto}, {"rank", h.rank}, {"ip", Ipv4Text(h.ip)}, {"gid", GidOf(h.ip)},
          {"mac", h.mac},    {"mtu", h.mtu},   {"rkey", h.rkey},       {"addr", h.addr},
          {"len", h.len},    {"qps", qps}};
}

Result<Hello> ParseHello(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("hello: not a JSON object");
  if (!j.contains("proto") || !j["proto"].is_string())
    return InvalidArgument("hello: 'proto' is missing");
  if (j["proto"].get<std::string>() != kProto) {
    return InvalidArgument(
        fmt::format("the peer speaks {}, this side {}", j["proto"].get<std::string>(), kProto));
  }
  Hello h;
  auto rank = Field(j, "rank", 32);
  auto mtu = Field(j, "mtu", 32);
  auto rkey = Field(j, "rkey", 32);
  auto addr = Field(j, "addr", 64);
  auto len = Field(j, "len", 64);
  for (const auto* r : {&rank, &mtu, &rkey, &addr, &len}) {
    if (!r->ok()) return r->error();
  }
  h.rank = static_cast<uint32_t>(*rank);
  h.mtu = static_cast<uint32_t>(*mtu);
  h.rkey = static_cast<uint32_t>(*rkey);
  h.addr = *addr;
  h.len = *len;
  if (h.mtu != 256 && h.mtu != 512 && h.mtu != 1024 && h.mtu != 2048 && h.mtu != 4096) {
    return InvalidArgument(
        fmt::format("hello: mtu {} is not an IB MTU (256..4096, powers of two)", h.mtu));
  }
  if (h.len > 0 && h.addr + h.len < h.addr) return InvalidArgument("hello: addr + len overflows");
  if (!j.contains("ip") || !j["ip"].is_string()) return InvalidArgument("hello: 'ip' is missing");
  auto ip = ParseIpv4(j["ip"].get<std::string>());
  if (!ip.ok()) return InvalidArgument("hello: " + ip.error().message);
  h.ip = *ip;
  if (j.contains("gid") && (!j["gid"].is_string() || j["gid"].get<std::string>() != GidOf(h.ip))) {
    return InvalidArgument(
        fmt::format("hello: gid {} is not the IPv4-mapped {}", JsonText(j["gid"]), GidOf(h.ip)));
  }
  if (j.contains("mac")) {
    if (!j["mac"].is_string()) return InvalidArgument("hello: 'mac' must be a string");
    h.mac = j["mac"].get<std::string>();
  }
  if (!j.contains("qps") || !j["qps"].is_array() || j["qps"].empty()) {
    return InvalidArgument("hello: 'qps' must be a non-empty list");
  }
  if (j["qps"].size() > 4096) return InvalidArgument("hello: more than 4096 QPs");
  for (const auto& q : j["qps"]) {
    if (!q.is_object()) return InvalidArgument("hello: every qps entry is an object {qpn, psn}");
    auto qpn = Field(q, "qpn", 24);
    auto psn = Field(q, "psn", 24);
    if (!qpn.ok()) return qpn.error();
    if (!psn.ok()) return psn.error();
    h.qps.push_back({static_cast<uint32_t>(*qpn), static_cast<uint32_t>(*psn)});
  }
  return h;
}

// One TCP connection, read by lines.
struct Rendezvous::Conn {
  int fd = -1;
  std::string buf;
  ~Conn() {
    if (fd >= 0) ::close(fd);
  }
};

Rendezvous::Rendezvous(const RendezvousOptions& o) : o_(o) { conns_.resize(o.num_ranks); }

Rendezvous::~Rendezvous() = default;

Clock::time_point Rendezvous::Deadline() const { return Clock::now() + o_.timeout; }

Status Rendezvous::Send(uint32_t peer, const nlohmann::json& j) {
  std::string line = JsonText(j) + "\n";
  auto deadline = Deadline();
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = ::send(conns_[peer]->fd, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd p{conns_[peer]->fd, POLLOUT, 0};
      if (::poll(&p, 1, MsLeft(deadline)) == 0) {
        return Io(fmt::format("rank {}: sending timed out", peer));
      }
      continue;
    }
    return Io(fmt::format("rank {}: send: {}", peer, std::strerror(errno)));
  }
  return {};
}

Result<nlohmann::json> Rendezvous::Receive(uint32_t peer, std::string_view expect_key) {
  Conn& c = *conns_[peer];
  auto deadline = Deadline();
  for (;;) {
    size_t nl = c.buf.find('\n');
    if (nl != std::string::npos) {
      std::string line = c.buf.substr(0, nl);
      c.buf.erase(0, nl + 1);
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        return InvalidArgument(fmt::format("rank {}: not a JSON object: {:.200}", peer, line));
      }
      if (!expect_key.empty() && !j.contains(std::string(expect_key))) {
        return InvalidArgument(
            fmt::format("rank {}: expected its '{}' message, got {:.200}", peer, expect_key, line));
      }
      return j;
    }
    if (c.buf.size() > kMaxLine)
      return InvalidArgument(fmt::format("rank {}: a line over {} bytes", peer, kMaxLine));
    pollfd p{c.fd, POLLIN, 0};
    int r = ::poll(&p, 1, o_.progress ? 0 : MsLeft(deadline));
    if (r == 0 && o_.progress && Clock::now() < deadline) {
      o_.progress();
      continue;
    }
    if (r == 0) {
      return Io(fmt::format("rank {}: no '{}' message within {} ms", peer, expect_key,
                            o_.timeout.count()));
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      return Io(fmt::format("rank {}: poll: {}", peer, std::strerror(errno)));
    }
    char tmp[4096];
    ssize_t n = ::recv(c.fd, tmp, sizeof tmp, 0);
    if (n == 0)
      return Io(fmt::format("rank {}: closed the connection before its '{}'", peer, expect_key));
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return Io(fmt::format("rank {}: recv: {}", peer, std::strerror(errno)));
    }
    c.buf.append(tmp, static_cast<size_t>(n));
  }
}

Result<std::unique_ptr<Rendezvous>> Rendezvous::Connect(
    const RendezvousOptions& o, const std::function<Hello(uint32_t peer)>& mine,
    std::vector<Hello>* peers) {
  if (o.num_ranks < 2) return InvalidArgument("a rendezvous needs at least 2 ranks");
  if (o.rank >= o.num_ranks)
    return InvalidArgument(fmt::format("rank {} of {}", o.rank, o.num_ranks));
  if (o.ips.size() != o.num_ranks) {
    return InvalidArgument(fmt::format("{} addresses for {} ranks", o.ips.size(), o.num_ranks));
  }
  for (uint32_t r = 0; r < o.rank; ++r) {
    if (o.ips[r] == 0)
      return InvalidArgument(fmt::format("rank {}'s address is needed to dial it", r));
  }
  std::unique_ptr<Rendezvous> rv(new Rendezvous(o));
  auto make = [&]() { return o.make_socket ? o.make_socket() : ::socket(AF_INET, SOCK_STREAM, 0); };
  auto deadline = rv->Deadline();
  peers->assign(o.num_ranks, Hello{});

  // Listen first, so that higher ranks can dial while this one dials lower.
  int lfd = -1;
  if (o.rank + 1 < o.num_ranks) {
    lfd = make();
    if (lfd < 0) return Io(fmt::format("socket: {}", std::strerror(errno)));
    int one = 1;
    ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a = Sockaddr(o.ips[o.rank], o.port);
    if (::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(lfd, 64) != 0) {
      Error e = Io(fmt::format("listen on {}:{}: {}", Ipv4Text(o.ips[o.rank]), o.port,
                               std::strerror(errno)));
      ::close(lfd);
      return e;
    }
  }
  struct CloseListener {
    int fd;
    ~CloseListener() {
      if (fd >= 0) ::close(fd);
    }
  } closer{lfd};

  auto check_peer = [&](uint32_t peer, const nlohmann::json& j) -> Status {
    auto h = ParseHello(j);
    if (!h.ok()) return InvalidArgument(fmt::format("rank {}: {}", peer, h.error().message));
    if (h->rank != peer)
      return InvalidArgument(fmt::format("rank {} says it is rank {}", peer, h->rank));
    size_t want = mine(peer).qps.size();
    if (h->qps.size() != want) {
      return InvalidArgument(
          fmt::format("rank {} lists {} QPs, rank {} {} (give both the same --qps)", peer,
                      h->qps.size(), o.rank, want));
    }
    (*peers)[peer] = std::move(*h);
    return {};
  };

  // Dial every lower rank: send our hello at once, read theirs.
  for (uint32_t r = 0; r < o.rank; ++r) {
    for (;;) {
      int fd = make();
      if (fd < 0) return Io(fmt::format("socket: {}", std::strerror(errno)));
      // Non-blocking, so that an address nobody answers cannot outlast the
      // deadline in the kernel's SYN retries.
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      sockaddr_in a = Sockaddr(o.ips[r], o.port);
      int err = 0;
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        err = errno;
        if (err == EINPROGRESS) {
          pollfd p{fd, POLLOUT, 0};
          err = ETIMEDOUT;
          if (::poll(&p, 1, std::min(1000, MsLeft(deadline))) > 0) {
            socklen_t len = sizeof err;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
          }
        }
      }
      if (err == 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        rv->conns_[r] = std::make_unique<Conn>();
        rv->conns_[r]->fd = fd;
        break;
      }
      ::close(fd);
      if (Clock::now() >= deadline) {
        return Io(fmt::format("rank {} at {}:{}: {} (nobody answered within {} ms)", r,
                              Ipv4Text(o.ips[r]), o.port, std::strerror(err), o.timeout.count()));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (auto s = rv->Send(r, HelloJson(mine(r))); !s.ok()) return s.error();
    auto j = rv->Receive(r, "proto");
    if (!j.ok()) return j.error();
    if (auto s = check_peer(r, *j); !s.ok()) return s.error();
  }

  // Accept every higher rank; its hello says which it is.
  for (uint32_t left = o.num_ranks - 1 - o.rank; left > 0; --left) {
    pollfd p{lfd, POLLIN, 0};
    if (::poll(&p, 1, MsLeft(deadline)) <= 0) {
      std::string missing;
      for (uint32_t r = o.rank + 1; r < o.num_ranks; ++r) {
        if (!rv->conns_[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      return Io(fmt::format("rank(s) {} did not connect within {} ms", missing, o.timeout.count()));
    }
    int fd = ::accept(lfd, nullptr, nullptr);
    if (fd < 0) return Io(fmt::format("accept: {}", std::strerror(errno)));
    auto conn = std::make_unique<Conn>();
    conn->fd = fd;
    // Read its hello on a temporary slot, then file it under its rank.
    uint32_t slot = o.rank;
    rv->conns_[slot] = std::move(conn);
    auto j = rv->Receive(slot, "proto");
    auto taken = std::move(rv->conns_[slot]);
    if (!j.ok()) return j.error();
    auto h = ParseHello(*j);
    if (!h.ok()) return InvalidArgument("a connecting rank: " + h.error().message);
    uint32_t peer = h->rank;
    if (peer <= o.rank || peer >= o.num_ranks) {
      return InvalidArgument(fmt::format("a peer claims rank {}; rank {} accepts only ranks {}..{}",
                                         peer, o.rank, o.rank + 1, o.num_ranks - 1));
    }
    if (rv->conns_[peer]) return InvalidArgument(fmt::format("rank {} connected twice", peer));
    int one = 1;
    ::setsockopt(taken->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    rv->conns_[peer] = std::move(taken);
    // Answer before judging, so that a mismatch is reported on both sides.
    if (auto s = rv->Send(peer, HelloJson(mine(peer))); !s.ok()) return s.error();
    if (auto s = check_peer(peer, *j); !s.ok()) return s.error();
  }
  return rv;
}

Status Rendezvous::Ready() {
  for (uint32_t r = 0; r < o_.num_ranks; ++r) {
    if (conns_[r]) {
      if (auto s = Send(r, {{"ready", true}}); !s.ok()) return s;
    }
  }
  for (uint32_t r = 0; r < o_.num_ranks; ++r) {
    if (conns_[r]) {
      if (auto j = Receive(r, "ready"); !j.ok()) return j.error();
    }
  }
  return {};
}

Status Rendezvous::Barrier() {
  if (o_.rank != 0) {
    if (auto s = Send(0, {{"all_ready", true}}); !s.ok()) return s;
    auto j = Receive(0, "go");
    return j.ok() ? Status{} : Status{j.error()};
  }
  for (uint32_t r = 1; r < o_.num_ranks; ++r) {
    if (auto j = Receive(r, "all_ready"); !j.ok()) return j.error();
  }
  for (uint32_t r = 1; r < o_.num_ranks; ++r) {
    if (auto s = Send(r, {{"go", true}}); !s.ok()) return s;
  }
  return {};
}

Result<std::vector<PeerDone>> Rendezvous::Done(uint64_t received, uint64_t bad) {
  for (uint32_t r = 0; r < o_.num_ranks; ++r) {
    if (conns_[r]) {
      if (auto s = Send(r, {{"done", true}, {"received", received}, {"bad", bad}}); !s.ok()) {
        return s.error();
      }
    }
  }
  std::vector<PeerDone> out;
  for (uint32_t r = 0; r < o_.num_ranks; ++r) {
    if (!conns_[r]) continue;
    auto j = Receive(r, "done");
    if (!j.ok()) return j.error();
    PeerDone d{r, 0, 0};
    if ((*j).contains("received") && (*j)["received"].is_number_unsigned()) {
      d.received = (*j)["received"].get<uint64_t>();
    }
    if ((*j).contains("bad") && (*j)["bad"].is_number_unsigned())
      d.bad = (*j)["bad"].get<uint64_t>();
    out.push_back(d);
  }
  return out;
}

Status Rendezvous::Watch() {
  for (uint32_t r = 0; r < o_.num_ranks; ++r) {
    if (!conns_[r]) continue;
    Conn& c = *conns_[r];
    for (;;) {
      pollfd p{c.fd, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) break;
      char tmp[4096];
      ssize_t n = ::recv(c.fd, tmp, sizeof tmp, MSG_DONTWAIT);
      if (n == 0)
        return Io(fmt::format("rank {} closed its connection before its 'done' (it failed)", r));
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) break;
        return Io(fmt::format("rank {}: recv: {}", r, std::strerror(errno)));
      }
      if (c.buf.size() + static_cast<size_t>(n) > 4 * kMaxLine) {
        return InvalidArgument(fmt::format("rank {} sent more than it may during a run", r));
      }
      c.buf.append(tmp, static_cast<size_t>(n));
    }
  }
  return {};
}

}  // namespace ofan::rcx
