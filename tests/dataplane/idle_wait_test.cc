// IdleWait: a blocked worker wakes for a frame on one of its sockets (any
// readable fd stands in for an XSK here), for a kick from a producer, and at
// its timeout; a Notify when nobody waits costs no wakeup later.
#include "dataplane/idle_wait.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace ofan::dp {
namespace {

using Clock = std::chrono::steady_clock;

struct Pair {
  int fd[2] = {-1, -1};
  Pair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_DGRAM, 0, fd), 0); }
  ~Pair() {
    close(fd[0]);
    close(fd[1]);
  }
};

TEST(IdleWait, APortWithoutASocketKeepsTheWorkerSleeping) {
  IdleWait w;
  ASSERT_TRUE(w.Init({}));
  EXPECT_FALSE(w.can_block());
  Pair a;
  IdleWait v;
  ASSERT_TRUE(v.Init({a.fd[0], -1}));
  EXPECT_FALSE(v.can_block());
}

TEST(IdleWait, AFrameOnASocketEndsTheWait) {
  Pair a, b;
  IdleWait w;
  ASSERT_TRUE(w.Init({a.fd[0], b.fd[0]}));
  ASSERT_TRUE(w.can_block());
  ASSERT_EQ(write(b.fd[1], "x", 1), 1);
  const auto t0 = Clock::now();
  w.Begin();
  w.Wait(10'000'000);  // 10 s: only the frame can end it this soon
  w.End();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(w.wakeups_by_traffic(), 1u);
}

TEST(IdleWait, AProducersNotifyWakesAWaitingWorker) {
  Pair a;
  IdleWait w;
  ASSERT_TRUE(w.Init({a.fd[0]}));
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    w.Notify();
  });
  const auto t0 = Clock::now();
  w.Begin();
  w.Wait(10'000'000);
  w.End();
  producer.join();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(w.wakeups_by_traffic(), 0u) << "a kick is not traffic";
}

TEST(IdleWait, ANotifyWhileNobodyWaitsLeavesNoWakeupBehind) {
  Pair a;
  IdleWait w;
  ASSERT_TRUE(w.Init({a.fd[0]}));
  w.Notify();  // not waiting: no kick
  const auto t0 = Clock::now();
  w.Begin();
  w.Wait(50'000);  // 50 ms timeout
  w.End();
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(45));
}

TEST(IdleWait, AKickBeforeTheWaitIsNotLost) {
  Pair a;
  IdleWait w;
  ASSERT_TRUE(w.Init({a.fd[0]}));
  w.Begin();
  w.Notify();  // between Begin and Wait: the eventfd keeps it
  const auto t0 = Clock::now();
  w.Wait(10'000'000);
  w.End();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
}

TEST(IdleWait, NotesCountEveryNotifyAndKickWaitingOrNot) {
  Pair a;
  IdleWait w;
  ASSERT_TRUE(w.Init({a.fd[0]}));
  const uint64_t n0 = w.notes();
  w.Notify();  // nobody waits: no kick, but noted
  EXPECT_EQ(w.notes(), n0 + 1);
  w.Kick();
  EXPECT_EQ(w.notes(), n0 + 2);
}

TEST(IdleWait, AWaitNamesTheSocketsThatEndedIt) {
  Pair a, b, c;
  IdleWait w;
  ASSERT_TRUE(w.Init({a.fd[0], b.fd[0], c.fd[0]}));
  ASSERT_EQ(write(c.fd[1], "x", 1), 1);
  ASSERT_EQ(write(a.fd[1], "x", 1), 1);
  int ready[4];
  w.Begin();
  uint32_t n = w.Wait(10'000'000, ready, 4);
  w.End();
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(std::min(ready[0], ready[1]), std::min(a.fd[0], c.fd[0]));
  EXPECT_EQ(std::max(ready[0], ready[1]), std::max(a.fd[0], c.fd[0]));
  // More ready than it may name: unknown, so the caller polls them all.
  n = w.Wait(0, ready, 1);
  EXPECT_EQ(n, IdleWait::kReadyUnknown);
  // A kick alone names none.
  char buf[4];
  ASSERT_EQ(read(a.fd[0], buf, sizeof buf), 1);
  ASSERT_EQ(read(c.fd[0], buf, sizeof buf), 1);
  w.Kick();
  EXPECT_EQ(w.Wait(10'000'000, ready, 4), 0u);
}

TEST(IdleWait, ThePollableFdShowsAPendingKick) {
  IdleWait w;
  ASSERT_TRUE(w.InitAlways({}));
  pollfd p{w.pollable_fd(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);
  w.Begin();
  w.Notify();
  w.End();
  EXPECT_EQ(poll(&p, 1, 0), 1);
  w.Wait(0);  // takes the kick
  p.revents = 0;
  EXPECT_EQ(poll(&p, 1, 0), 0);
}

TEST(IdleWait, AfXdpFdsListsNoOtherSockets) {
  Pair a;
  const auto fds = AfXdpFds();
  for (const int fd : fds) {
    EXPECT_NE(fd, a.fd[0]);
    EXPECT_NE(fd, a.fd[1]);
  }
}

}  // namespace
}  // namespace ofan::dp
