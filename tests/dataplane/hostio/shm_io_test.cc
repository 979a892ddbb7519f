// dataplane/hostio/shm_io.h: a switch end made in a temporary folder and a
// host end attached to it, in one process. Frames cross both ways whole and
// in order with the sender's time; a ring holds kShmSlots frames and Send
// takes no more until the consumer releases them; a consumer about to sleep
// (PrepareSleep) is woken through its fd() by the next Send, one that polls
// is never rung; a new host end does not see what waited for the one
// before; a file that is not a link is refused with its path in the
// message.
#include "dataplane/hostio/shm_io.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/steady_ms.h"

namespace ofan::hostio {
namespace {

std::vector<uint8_t> TestFrame(uint32_t seq) {
  std::vector<uint8_t> f(60 + seq % 1500);
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<uint8_t>(size_t{seq} * 7 + i);
  return f;
}

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

class ShmLink : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ofan-shm-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "h0").string();
    auto sw = CreateShmLink(path_);
    ASSERT_TRUE(sw.ok()) << sw.error().message;
    sw_ = std::move(*sw);
    auto host = OpenShmLink(path_);
    ASSERT_TRUE(host.ok()) << host.error().message;
    host_ = std::move(*host);
  }
  void TearDown() override {
    host_.reset();
    sw_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Sends frames first..first+n-1 on `from` (all taken), reads them on `to`.
  static void Cross(PacketIo& from, PacketIo& to, uint32_t first, uint32_t n) {
    std::vector<std::vector<uint8_t>> frames;
    std::vector<FrameView> views;
    views.reserve(n);
    for (uint32_t i = 0; i < n; ++i) frames.push_back(TestFrame(first + i));
    for (const auto& f : frames) views.push_back({f.data(), static_cast<uint32_t>(f.size())});
    const uint64_t before = MonotonicNs();
    ASSERT_EQ(from.Send(views), n);
    uint32_t got = 0;
    while (got < n) {
      FrameView v[64];
      const uint32_t k = to.Recv(v);
      ASSERT_GT(k, 0u) << "frames sent and not received: " << n - got;
      for (uint32_t i = 0; i < k; ++i, ++got) {
        EXPECT_EQ(std::vector<uint8_t>(v[i].data, v[i].data + v[i].len), frames[got]);
        EXPECT_GE(v[i].rx_ns, before);
        EXPECT_LE(v[i].rx_ns, MonotonicNs());
      }
    }
  }
  std::filesystem::path dir_;
  std::string path_;
  std::unique_ptr<PacketIo> sw_, host_;
};

TEST_F(ShmLink, FramesCrossBothWaysWholeInOrderWithTheSendersTime) {
  Cross(*host_, *sw_, 0, 100);
  Cross(*sw_, *host_, 1000, 100);
  // Half a ring a turn (the consumer holds its last batch until its next
  // Recv), eight turns: the indices wrap the ring four times.
  for (uint32_t turn = 0; turn < 8; ++turn) {
    Cross(*host_, *sw_, 2000 + turn * kShmSlots, kShmSlots / 2);
  }
  EXPECT_EQ(sw_->kind(), "shm");
  EXPECT_EQ(sw_->io_counters().rx, 100u + 4 * kShmSlots) << "past the ring's size, in turns";
  EXPECT_EQ(host_->io_counters().rx, 100u);
}

TEST_F(ShmLink, ARingHoldsItsSlotsUntilTheConsumerReleasesThem) {
  const std::vector<uint8_t> f = TestFrame(1);
  std::vector<FrameView> views(kShmSlots + 10,
                               FrameView{f.data(), static_cast<uint32_t>(f.size())});
  EXPECT_EQ(host_->Send(views), kShmSlots);
  EXPECT_EQ(host_->Send(views), 0u);
  EXPECT_EQ(host_->io_counters().tx_full, 10u + kShmSlots + 10u);
  FrameView v[64];
  EXPECT_EQ(sw_->Recv(v), 64u);
  EXPECT_EQ(host_->Send(views), 0u) << "held by the consumer until its next Recv";
  EXPECT_EQ(sw_->Recv(v), 64u);
  EXPECT_EQ(host_->Send(views), 64u);
}

// The doorbell: PrepareSleep() on an empty ring arms it, and the next Send
// rings it, once; with frames waiting (or held) PrepareSleep() says so and
// nothing rings; a consumer that only polls is never rung.
TEST_F(ShmLink, ADoorbellRingsOnlyForAConsumerAboutToSleep) {
  FrameView v[64];
  const std::vector<uint8_t> f = TestFrame(2);
  const FrameView one{f.data(), static_cast<uint32_t>(f.size())};
  EXPECT_EQ(sw_->Recv(v), 0u);
  ASSERT_EQ(host_->Send({&one, 1}), 1u);
  EXPECT_FALSE(Readable(sw_->fd())) << "a polling consumer: no doorbell";
  EXPECT_FALSE(sw_->PrepareSleep()) << "a frame waits";
  EXPECT_EQ(sw_->Recv(v), 1u);
  EXPECT_TRUE(sw_->PrepareSleep()) << "the one held is the caller's";
  EXPECT_EQ(sw_->Recv(v), 0u);
  EXPECT_TRUE(sw_->PrepareSleep());
  EXPECT_FALSE(Readable(sw_->fd()));
  ASSERT_EQ(host_->Send({&one, 1}), 1u);
  EXPECT_TRUE(Readable(sw_->fd())) << "armed: the Send rang";
  ASSERT_EQ(host_->Send({&one, 1}), 1u);
  EXPECT_EQ(sw_->Recv(v), 2u);
  EXPECT_FALSE(Readable(sw_->fd())) << "read off by the Recv that woke";
  ASSERT_EQ(host_->Send({&one, 1}), 1u);
  EXPECT_FALSE(Readable(sw_->fd())) << "disarmed by that Recv";
  EXPECT_EQ(sw_->Recv(v), 1u);
}

// The doorbell under a race: a producer thread sends in bursts of 1-64
// with pauses, a consumer that sleeps on fd() whenever Recv() finds
// nothing and PrepareSleep() agrees. A wakeup lost (a sleep that ends by its timeout with frames
// waiting) fails; every frame arrives once, in order.
TEST_F(ShmLink, NoWakeupIsLostBetweenTwoThreads) {
  constexpr uint32_t kTotal = 20000;
  std::thread producer([this] {
    uint32_t sent = 0, seed = 1;
    while (sent < kTotal) {
      seed = seed * 1103515245 + 12345;
      const uint32_t burst = std::min(kTotal - sent, 1 + (seed >> 16) % 64);
      std::vector<uint8_t> bytes(size_t{burst} * 4);
      std::vector<FrameView> v(burst);
      for (uint32_t i = 0; i < burst; ++i) {
        const uint32_t seq = sent + i;
        std::memcpy(&bytes[size_t{i} * 4], &seq, 4);
        v[i] = {&bytes[size_t{i} * 4], 4};
      }
      const uint32_t took = host_->Send(v);
      sent += took;
      if ((seed >> 8) % 4 == 0 || took < burst) std::this_thread::yield();
    }
  });
  uint32_t next = 0, lost = 0;
  while (next < kTotal) {
    FrameView v[64];
    const uint32_t n = sw_->Recv(v);
    for (uint32_t i = 0; i < n; ++i, ++next) {
      uint32_t seq = 0;
      std::memcpy(&seq, v[i].data, 4);
      ASSERT_EQ(seq, next);
    }
    if (n || !sw_->PrepareSleep()) continue;
    pollfd p{sw_->fd(), POLLIN, 0};
    if (poll(&p, 1, 2000) == 0) {
      FrameView w[1];
      if (sw_->Recv(w) > 0) ++lost;
      break;
    }
  }
  producer.join();
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(next, kTotal);
}

TEST_F(ShmLink, ANewHostEndDropsWhatWaitedForTheOldOne) {
  const std::vector<uint8_t> f = TestFrame(3);
  const FrameView one{f.data(), static_cast<uint32_t>(f.size())};
  ASSERT_EQ(sw_->Send({&one, 1}), 1u);
  host_.reset();
  auto again = OpenShmLink(path_);
  ASSERT_TRUE(again.ok()) << again.error().message;
  FrameView v[8];
  EXPECT_EQ((*again)->Recv(v), 0u);
  Cross(*sw_, **again, 10, 5);
}

TEST_F(ShmLink, AFileThatIsNotALinkIsRefusedByName) {
  const std::string other = (dir_ / "other").string();
  std::ofstream(other) << "not a link";
  auto bad = OpenShmLink(other);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find(other), std::string::npos) << bad.error().message;
  auto none = OpenShmLink((dir_ / "none").string());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ErrorCode::kNotFound);
  EXPECT_NE(none.error().message.find("--host-io shm"), std::string::npos) << none.error().message;
}

}  // namespace
}  // namespace ofan::hostio
