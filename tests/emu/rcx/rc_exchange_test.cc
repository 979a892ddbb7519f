// ofan-rc-1 (emu/rcx/rc_exchange.h): hellos parsed and refused field by
// field; whole rendezvous of 2 and 4 ranks over loopback (127.0.0.x, one
// thread per rank) through hellos, ready, the go barrier and done; and the
// failures a user meets: another --qps on one side, another protocol, a
// rank nobody runs (bounded by the timeout, with a message naming it).
#include "emu/rcx/rc_exchange.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>

namespace ofan::rcx {
namespace {

Hello Sample() {
  Hello h;
  h.rank = 3;
  h.ip = 0x0A010002;
  h.mac = "02:01:00:05:00:02";
  h.rkey = 0x1234;
  h.addr = 1ull << 47;
  h.len = 1 << 20;
  h.qps = {{17, 4242}, {18, 9001}};
  return h;
}

TEST(Hello, RoundTripsAndNamesTheGid) {
  auto j = HelloJson(Sample());
  EXPECT_EQ(j["gid"], "::ffff:10.1.0.2");
  EXPECT_EQ(j["proto"], "ofan-rc-1");
  auto h = ParseHello(j);
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(*h, Sample());
}

TEST(Hello, RefusesWhatIsWrongWithAMessage) {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* says;
  };
  const Case cases[] = {
      {"proto", "ofan-rc-2", "speaks ofan-rc-2"},
      {"rank", -1, "'rank' must be an unsigned integer"},
      {"mtu", 1500u, "not an IB MTU"},
      {"ip", "10.1.0", "not an IPv4 address"},
      {"gid", "fe80::1", "not the IPv4-mapped"},
      {"qps", nlohmann::json::array(), "non-empty list"},
      {"qps", nlohmann::json::array({{{"qpn", 1u << 24}, {"psn", 0u}}}), "exceeds 24 bits"},
      {"len", 1.5, "'len' must be an unsigned integer"},
  };
  for (const auto& c : cases) {
    auto j = HelloJson(Sample());
    j[c.key] = c.value;
    auto h = ParseHello(j);
    ASSERT_FALSE(h.ok()) << c.key;
    EXPECT_NE(h.error().message.find(c.says), std::string::npos) << h.error().message;
  }
  auto j = HelloJson(Sample());
  j.erase("rkey");
  auto h = ParseHello(j);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("'rkey' is missing"), std::string::npos);
  EXPECT_FALSE(ParseHello(nlohmann::json::array()).ok());
}

uint16_t TestPort() {
  static std::atomic<uint16_t> next{static_cast<uint16_t>(20000 + std::random_device{}() % 20000)};
  return next++;
}

RendezvousOptions Options(uint32_t rank, uint32_t n, uint16_t port, int timeout_ms = 10'000) {
  RendezvousOptions o;
  o.rank = rank;
  o.num_ranks = n;
  for (uint32_t r = 0; r < n; ++r) o.ips.push_back(0x7F000001 + r);  // 127.0.0.(r+1)
  o.port = port;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  return o;
}

// This rank's hello to `peer`: QP numbers that name both ends.
Hello HelloFor(uint32_t rank, uint32_t peer, uint32_t qps) {
  Hello h;
  h.rank = rank;
  h.ip = 0x7F000001 + rank;
  h.rkey = 100 + rank;
  h.addr = 0x1000 * (rank + 1);
  h.len = 4096;
  for (uint32_t q = 0; q < qps; ++q) h.qps.push_back({rank * 256 + peer * 16 + q, rank * 1000 + q});
  return h;
}

TEST(Rendezvous, FourRanksConnectSynchroniseAndFinish) {
  const uint32_t n = 4;
  const uint16_t port = TestPort();
  std::vector<std::string> errors(n);
  std::vector<std::vector<Hello>> got(n);
  std::vector<std::vector<PeerDone>> dones(n);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto rv = Rendezvous::Connect(
          Options(r, n, port), [&](uint32_t peer) { return HelloFor(r, peer, 2); }, &got[r]);
      if (!rv.ok()) {
        errors[r] = rv.error().message;
        return;
      }
      Status s = (*rv)->Ready();
      if (s.ok()) s = (*rv)->Barrier();
      if (!s.ok()) {
        errors[r] = s.error().message;
        return;
      }
      auto d = (*rv)->Done(10 + r, 0);
      if (!d.ok()) {
        errors[r] = d.error().message;
        return;
      }
      dones[r] = *d;
    });
  }
  for (auto& t : threads) t.join();
  for (uint32_t r = 0; r < n; ++r) {
    ASSERT_EQ(errors[r], "") << "rank " << r;
    for (uint32_t p = 0; p < n; ++p) {
      if (p == r) continue;
      EXPECT_EQ(got[r][p], HelloFor(p, r, 2)) << r << " from " << p;
    }
    ASSERT_EQ(dones[r].size(), n - 1);
    for (const auto& d : dones[r]) EXPECT_EQ(d.received, 10 + d.rank);
  }
}

// A userspace stack keeps its QPs going while it waits for the peer's done:
// the wait calls its progress hook instead of sleeping, and still ends when
// the done arrives.
TEST(Rendezvous, WaitsCallTheProgressHook) {
  const uint16_t port = TestPort();
  std::atomic<uint64_t> calls{0};
  std::string e[2];
  uint64_t peer_received = 0;
  auto rank = [&](uint32_t r) {
    RendezvousOptions o = Options(r, 2, port);
    if (r == 0) {
      o.progress = [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a stack's own wait
      };
    }
    std::vector<Hello> peers;
    auto rv = Rendezvous::Connect(
        o, [&](uint32_t p) { return HelloFor(r, p, 1); }, &peers);
    if (!rv.ok()) {
      e[r] = rv.error().message;
      return;
    }
    Status s = (*rv)->Ready();
    if (!s.ok()) {
      e[r] = s.error().message;
      return;
    }
    // Rank 1 finishes later: rank 0 waits for its done, making progress.
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto d = (*rv)->Done(7 + r, 0);
    if (!d.ok()) {
      e[r] = d.error().message;
    } else if (r == 0) {
      peer_received = d->at(0).received;
    }
  };
  std::thread t0(rank, 0), t1(rank, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(e[0], "");
  EXPECT_EQ(e[1], "");
  EXPECT_EQ(peer_received, 8u);
  EXPECT_GT(calls.load(), 0u);
}

// Runs a two-rank rendezvous with per-rank QP counts; returns the errors.
std::pair<std::string, std::string> Pair(uint32_t qps0, uint32_t qps1, bool other_proto = false) {
  const uint16_t port = TestPort();
  std::string e[2];
  std::thread t0([&] {
    std::vector<Hello> peers;
    auto rv = Rendezvous::Connect(
        Options(0, 2, port, 3000), [&](uint32_t p) { return HelloFor(0, p, qps0); }, &peers);
    if (!rv.ok()) e[0] = rv.error().message;
  });
  if (other_proto) {
    // A peer that is not ofan-rc-1: a raw line on a plain socket.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    RendezvousOptions o = Options(1, 2, port, 3000);
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(o.ips[0]);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      const char line[] = "{\"proto\": \"ib-cm\", \"rank\": 1}\n";
      (void)!::write(fd, line, sizeof line - 1);
    }
    t0.join();
    ::close(fd);
    return {e[0], ""};
  }
  std::thread t1([&] {
    std::vector<Hello> peers;
    auto rv = Rendezvous::Connect(
        Options(1, 2, port, 3000), [&](uint32_t p) { return HelloFor(1, p, qps1); }, &peers);
    if (!rv.ok()) e[1] = rv.error().message;
  });
  t0.join();
  t1.join();
  return {e[0], e[1]};
}

TEST(Rendezvous, AnotherQpCountFailsOnBothSidesNamingIt) {
  auto [e0, e1] = Pair(2, 3);
  EXPECT_NE(e0.find("rank 1 lists 3 QPs, rank 0 2"), std::string::npos) << e0;
  EXPECT_NE(e1.find("rank 0 lists 2 QPs, rank 1 3"), std::string::npos) << e1;
}

TEST(Rendezvous, AnotherProtocolIsRefused) {
  auto [e0, e1] = Pair(1, 1, /*other_proto=*/true);
  EXPECT_NE(e0.find("speaks ib-cm"), std::string::npos) << e0;
}

TEST(Rendezvous, NobodyListeningEndsAtTheTimeoutNamingTheRank) {
  std::vector<Hello> peers;
  auto o = Options(1, 2, TestPort(), 500);
  auto t0 = std::chrono::steady_clock::now();
  auto rv = Rendezvous::Connect(
      o, [&](uint32_t p) { return HelloFor(1, p, 1); }, &peers);
  ASSERT_FALSE(rv.ok());
  EXPECT_NE(rv.error().message.find("rank 0 at 127.0.0.1"), std::string::npos)
      << rv.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

TEST(Rendezvous, WatchKeepsAnEarlyDoneAndSeesAPeerThatFailed) {
  const uint16_t port = TestPort();
  std::string e1;
  std::atomic<bool> rank1_done{false};
  std::thread t1([&] {
    std::vector<Hello> peers;
    auto rv = Rendezvous::Connect(
        Options(1, 2, port), [&](uint32_t p) { return HelloFor(1, p, 1); }, &peers);
    if (!rv.ok()) {
      e1 = rv.error().message;
      return;
    }
    Status s = (*rv)->Ready();
    auto d = s.ok() ? (*rv)->Done(7, 0) : Result<std::vector<PeerDone>>(s.error());
    if (!d.ok()) e1 = d.error().message;
    rank1_done = true;
  });
  std::vector<Hello> peers;
  auto rv = Rendezvous::Connect(
      Options(0, 2, port), [&](uint32_t p) { return HelloFor(0, p, 1); }, &peers);
  ASSERT_TRUE(rv.ok()) << rv.error().message;
  ASSERT_TRUE((*rv)->Ready().ok());
  // Rank 1's done arrives while rank 0 still runs: Watch reads it and keeps it.
  for (int i = 0; i < 100 && (*rv)->Watch().ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE((*rv)->Watch().ok());
  auto d = (*rv)->Done(3, 0);
  t1.join();
  ASSERT_EQ(e1, "");
  ASSERT_TRUE(d.ok()) << d.error().message;
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ(d->front().received, 7u);
  EXPECT_TRUE(rank1_done);

  // A peer that goes away mid-run (no done) is an error at once.
  const uint16_t port2 = TestPort();
  std::thread t2([&] {
    std::vector<Hello> p2;
    auto r2 = Rendezvous::Connect(
        Options(1, 2, port2), [&](uint32_t p) { return HelloFor(1, p, 1); }, &p2);
    if (r2.ok()) (void)(*r2)->Ready();
  });  // returns: its connection closes
  auto rv2 = Rendezvous::Connect(
      Options(0, 2, port2), [&](uint32_t p) { return HelloFor(0, p, 1); }, &peers);
  ASSERT_TRUE(rv2.ok()) << rv2.error().message;
  ASSERT_TRUE((*rv2)->Ready().ok());
  t2.join();
  Status w = (*rv2)->Watch();
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("rank 1 closed its connection"), std::string::npos)
      << w.error().message;
}

TEST(Rendezvous, RefusesBadOptions) {
  std::vector<Hello> peers;
  auto mine = [](uint32_t) { return Hello{}; };
  auto o = Options(0, 2, TestPort());
  o.num_ranks = 1;
  EXPECT_FALSE(Rendezvous::Connect(o, mine, &peers).ok());
  o = Options(2, 2, TestPort());
  EXPECT_FALSE(Rendezvous::Connect(o, mine, &peers).ok());
  o = Options(1, 2, TestPort());
  o.ips[0] = 0;
  auto rv = Rendezvous::Connect(o, mine, &peers);
  ASSERT_FALSE(rv.ok());
  EXPECT_NE(rv.error().message.find("address is needed"), std::string::npos);
}

}  // namespace
}  // namespace ofan::rcx
