// Capture through a whole switch over ring ports: what a port receives and
// sends comes out in the pcapng file, byte for byte, with its direction;
// --count stops it; a port not captured is not in the file; bad requests
// get clear errors. (Linked into switch_ring_test, whose main sets up EAL.)
#include "dataplane/capture/port_capture.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "dataplane/packet/builder.h"
#include "tests/dataplane/capture/pcapng_reader.h"
#include "tests/dataplane/ring_harness.h"

namespace ofan::dp {
namespace {

using pkt::MacAddr;
using pkt::PacketBuilder;
using testing::EdgeK4;
using testing::Frame;
using testing::RingSwitch;

Frame Udp(uint16_t sport, uint32_t dst) {
  return PacketBuilder()
      .Eth(MacAddr{{0x02, 0, 0, 0, 0, 0xFE}}, MacAddr{{0x02, 0xAA, 0, 0, 0, 1}})
      .Ipv4(0x0A000002, dst, 64, 0, pkt::ipproto::kUdp)
      .Udp(sport, 9000)
      .Payload(200, static_cast<uint8_t>(sport))
      .Build();
}

std::string TempFile(const char* tag) {
  return (std::filesystem::temp_directory_path() /
          fmt::format("ofan-capture-{}-{}.pcapng", tag, getpid()))
      .string();
}

TEST(Capture, BothDirectionsOfAPortByteForByte) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  ASSERT_TRUE(rs.ok());
  const std::string path = TempFile("both");
  const auto started = rs.sw().StartCapture({.ports = {0, 2, 3}, .file = path});
  ASSERT_TRUE(started) << started.error().message;
  EXPECT_TRUE(started->active);
  std::vector<Frame> sent;
  for (uint16_t i = 0; i < 20; ++i) {
    sent.push_back(Udp(static_cast<uint16_t>(1000 + i), 0x0A030103));  // up
    rs.Inject(0, sent.back());
  }
  rs.Inject(2, Udp(77, 0x0A000003));  // down to port 1, which is not captured
  rs.Run();
  const auto out = rs.CollectAll();
  const auto stopped = rs.sw().capture().Stop(started->id);
  ASSERT_TRUE(stopped);
  const CaptureStatus st = *stopped;
  EXPECT_FALSE(st.active);
  EXPECT_EQ(st.dropped, 0u);
  std::string why;
  const auto f = testing::ReadPcapng(path, &why);
  std::filesystem::remove(path);
  ASSERT_TRUE(f) << why;
  ASSERT_EQ(f->iface_names.size(), 3u);
  EXPECT_TRUE(f->iface_names[0].ends_with(":p0")) << f->iface_names[0];
  EXPECT_TRUE(f->iface_names[1].ends_with(":p2"));
  // Port 0 received the 20 as sent; ports 2 and 3 sent them as they left
  // (rewritten) and port 2 received the one for port 1.
  std::vector<Frame> in0, out_up;
  size_t in2 = 0;
  for (const auto& p : f->packets) {
    if (p.iface == 0) {
      EXPECT_EQ(p.flags, 1u) << "inbound";
      in0.push_back(p.bytes);
    } else if (p.flags == 2) {
      out_up.push_back(p.bytes);
    } else {
      ++in2;
    }
    EXPECT_EQ(p.bytes.size(), p.orig_len);
  }
  ASSERT_EQ(in0.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_TRUE(in0[i] == sent[i]) << i;
  EXPECT_EQ(in2, 1u);
  std::vector<Frame> left;
  for (uint32_t port : {2u, 3u}) {
    if (out.count(port)) left.insert(left.end(), out.at(port).begin(), out.at(port).end());
  }
  // What the ports sent, byte for byte (in any order across the two).
  ASSERT_EQ(out_up.size(), left.size());
  for (const Frame& fr : out_up) {
    auto it = std::find(left.begin(), left.end(), fr);
    ASSERT_NE(it, left.end()) << "a captured frame that no port sent";
    left.erase(it);
  }
  EXPECT_EQ(st.frames, f->packets.size());
  for (size_t i = 1; i < f->packets.size(); ++i) EXPECT_GT(f->packets[i].time_ns, 0u);
}

TEST(Capture, StopsAtCountAndKeepsSnaplen) {
  RingSwitch rs(EdgeK4(), {0, 1, 2, 3});
  const std::string path = TempFile("count");
  const auto started =
      rs.sw().StartCapture({.ports = {0}, .file = path, .snaplen = 64, .count = 5});
  ASSERT_TRUE(started);
  for (uint16_t i = 0; i < 12; ++i) rs.Inject(0, Udp(i, 0x0A030103));
  rs.Run();
  const CaptureStatus st = *rs.sw().capture().status(started->id);
  EXPECT_FALSE(st.active) << "stopped by itself at the count";
  EXPECT_EQ(st.frames, 5u);
  std::string why;
  const auto f = testing::ReadPcapng(path, &why);
  std::filesystem::remove(path);
  ASSERT_TRUE(f) << why;
  ASSERT_EQ(f->packets.size(), 5u);
  for (const auto& p : f->packets) {
    EXPECT_EQ(p.bytes.size(), 64u);
    EXPECT_EQ(p.orig_len, Udp(0, 0x0A030103).size());
  }
  // Port 0 may be captured again; captures of other ports run beside it,
  // not two of one port.
  const std::string a = TempFile("a"), b = TempFile("b");
  const auto ca = rs.sw().StartCapture({.ports = {0}, .file = a});
  const auto cb = rs.sw().StartCapture({.ports = {1, 2}, .file = b});
  ASSERT_TRUE(ca && cb);
  EXPECT_NE(ca->id, cb->id);
  const auto twice = rs.sw().StartCapture({.ports = {2}, .file = TempFile("c")});
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("already"), std::string::npos);
  rs.Inject(0, Udp(1, 0x0A000003));  // in on 0, out on 1
  rs.Run();
  ASSERT_TRUE(rs.sw().capture().Stop(ca->id));
  EXPECT_EQ(rs.sw().capture().status(cb->id)->frames, 1u) << "port 1's copy";
  EXPECT_EQ(rs.sw().capture().status(ca->id)->frames, 1u) << "port 0's copy";
  const auto all = rs.sw().capture().StopAll();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].id, cb->id);
  EXPECT_FALSE(rs.sw().capture().Stop(999)) << "no such capture";
  EXPECT_EQ(rs.sw().capture().statuses().size(), 3u) << "the ended ones stay listed";
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

TEST(Capture, BadRequestsGetClearErrors) {
  RingSwitch rs(EdgeK4(), {0, 1});  // ports 2 and 3 absent
  auto err = [&](CaptureRequest r) {
    const auto s = rs.sw().StartCapture(r);
    return s ? std::string("(started)") : s.error().message;
  };
  EXPECT_NE(err({.ports = {2}, .file = TempFile("x")}).find("no such port"), std::string::npos);
  EXPECT_NE(err({.ports = {}, .file = TempFile("x")}).find("no port"), std::string::npos);
  EXPECT_NE(err({.ports = {0, 0}, .file = TempFile("x")}).find("twice"), std::string::npos);
  EXPECT_NE(err({.ports = {0}, .file = TempFile("x"), .snaplen = 10}).find("snaplen"),
            std::string::npos);
  EXPECT_NE(err({.ports = {0}, .file = "/nonexistent/dir/f.pcapng"}).find("cannot create"),
            std::string::npos);
  EXPECT_TRUE(rs.sw().capture().statuses().empty());
}

}  // namespace
}  // namespace ofan::dp
