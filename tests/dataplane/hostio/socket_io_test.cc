// dataplane/hostio's AF_XDP socket with the stamping XDP program
// (xsk_program.h): on a veth pair in a namespace of the test's own, every
// frame sent on one end (xa) arrives on the other's (xb) socket whole, with the
// CLOCK_MONOTONIC time the interface received it, in the span of the test's
// own clock readings around the send and the receive, in send order; in the
// driver's hook (veth's, as the shared engine attaches it) and in generic
// mode; without the stamp option a frame carries none. Root: skipped
// otherwise.
#include <gtest/gtest.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/netns.h"
#include "common/steady_ms.h"
#include "dataplane/hostio/packet_io.h"

namespace ofan::hostio {
namespace {

constexpr uint16_t kTestEthertype = 0x88B5;  // IEEE local experimental
constexpr uint32_t kFrames = 100;

std::vector<uint8_t> TestFrame(uint32_t seq) {
  std::vector<uint8_t> f(64 + seq % 200, 0);
  for (int i = 0; i < 6; ++i) f[i] = 0xFF;
  f[6] = 0x02;
  f[12] = kTestEthertype >> 8;
  f[13] = kTestEthertype & 0xFF;
  for (int i = 0; i < 4; ++i) f[14 + i] = static_cast<uint8_t>(seq >> (8 * i));
  return f;
}

class XskStamp : public ::testing::TestWithParam<bool> {  // native_first
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (a namespace, a veth pair, AF_XDP)";
    ns_ = "ofxs" + std::to_string(getpid()) + "-" + std::to_string(n_++);
    ASSERT_EQ(std::system(("ip netns add " + ns_).c_str()), 0);
    made_ = true;
    ASSERT_EQ(std::system(("ip -n " + ns_ + " link add name xa type veth peer name xb && ip -n " +
                           ns_ + " link set xa up && ip -n " + ns_ + " link set xb up")
                              .c_str()),
              0);
  }
  void TearDown() override {
    if (made_) std::system(("ip netns del " + ns_).c_str());
  }
  // Sends kFrames test frames on xa (AF_PACKET) and reads them on xb's
  // socket; the other frames (the kernel's own IPv6 ND on new links) are
  // left out. Returns the frames' receive times in arrival order.
  std::vector<uint64_t> SendAndReceive(const IoOptions& opts, uint64_t& before, uint64_t& after) {
    auto ia = ReadIface(ns_, "xa");
    auto ib = ReadIface(ns_, "xb");
    EXPECT_TRUE(ia.ok() && ib.ok());
    if (!ia.ok() || !ib.ok()) return {};
    auto rx = OpenAfXdp(*ib, opts);
    EXPECT_TRUE(rx.ok()) << (rx.ok() ? "" : rx.error().message);
    auto tx = OpenAfPacket(*ia);
    EXPECT_TRUE(tx.ok()) << (tx.ok() ? "" : tx.error().message);
    if (!rx.ok() || !tx.ok()) return {};
    std::vector<std::vector<uint8_t>> frames;
    std::vector<FrameView> views;
    for (uint32_t i = 0; i < kFrames; ++i) frames.push_back(TestFrame(i));
    for (const auto& f : frames)
      views.push_back(FrameView{f.data(), static_cast<uint32_t>(f.size())});
    before = MonotonicNs();
    EXPECT_EQ((*tx)->Send(views), kFrames);
    std::vector<uint64_t> times;
    uint32_t next = 0;
    for (int waits = 0; next < kFrames && waits < 200; ++waits) {
      FrameView got[64];
      const uint32_t n = (*rx)->Recv(got);
      for (uint32_t i = 0; i < n; ++i) {
        if (got[i].len < 18 || got[i].data[12] != (kTestEthertype >> 8) ||
            got[i].data[13] != (kTestEthertype & 0xFF))
          continue;
        const std::vector<uint8_t> want = TestFrame(next++);
        EXPECT_EQ(std::vector<uint8_t>(got[i].data, got[i].data + got[i].len), want);
        times.push_back(got[i].rx_ns);
      }
      if (!n) {
        pollfd p{(*rx)->fd(), POLLIN, 0};
        poll(&p, 1, 10);
      }
    }
    after = MonotonicNs();
    EXPECT_EQ(next, kFrames) << "frames that reached xb's socket";
    return times;
  }
  static inline int n_ = 0;
  std::string ns_;
  bool made_ = false;
};

TEST_P(XskStamp, EachFrameCarriesTheTimeTheInterfaceReceivedIt) {
  IoOptions opts;
  opts.stamp = true;
  opts.native_first = GetParam();
  uint64_t before = 0, after = 0;
  const std::vector<uint64_t> t = SendAndReceive(opts, before, after);
  ASSERT_EQ(t.size(), kFrames);
  for (uint32_t i = 0; i < kFrames; ++i) {
    EXPECT_GE(t[i], before) << "frame " << i;
    EXPECT_LE(t[i], after) << "frame " << i;
    if (i) {
      EXPECT_GE(t[i], t[i - 1]) << "frame " << i;
    }
  }
}

TEST_P(XskStamp, WithoutTheOptionAFrameCarriesNoTime) {
  IoOptions opts;
  opts.native_first = GetParam();
  uint64_t before = 0, after = 0;
  const std::vector<uint64_t> t = SendAndReceive(opts, before, after);
  ASSERT_EQ(t.size(), kFrames);
  for (uint32_t i = 0; i < kFrames; ++i) EXPECT_EQ(t[i], 0u) << "frame " << i;
}

std::string ModeName(const ::testing::TestParamInfo<bool>& p) {
  return p.param ? "Driver" : "Generic";
}
INSTANTIATE_TEST_SUITE_P(Modes, XskStamp, ::testing::Values(true, false), ModeName);

}  // namespace
}  // namespace ofan::hostio
