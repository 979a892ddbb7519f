// capture/pcapng.h: the blocks byte for byte (written out by hand from the
// format's description), and a file read back by an independent reader.
#include "dataplane/capture/pcapng.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/dataplane/capture/pcapng_reader.h"

namespace ofan::dp {
namespace {

TEST(Pcapng, EnhancedPacketBlockByHand) {
  const std::vector<uint8_t> frame = {1, 2, 3, 4, 5};
  const auto b =
      PcapngWriter::EnhancedPacket(1, 0x0000000200000003ull, CaptureDir::kOut, frame, 60);
  const std::vector<uint8_t> want = {
      6,  0, 0, 0,              // type: enhanced packet
      52, 0, 0, 0,              // total length
      1,  0, 0, 0,              // interface 1
      2,  0, 0, 0,              // timestamp, high 32 bits
      3,  0, 0, 0,              // low 32 bits
      5,  0, 0, 0,              // captured length
      60, 0, 0, 0,              // length on the wire
      1,  2, 3, 4, 5, 0, 0, 0,  // the frame, padded to 32 bits
      2,  0, 4, 0,              // epb_flags, 4 bytes
      2,  0, 0, 0,              // outbound
      0,  0, 0, 0,              // end of options
      52, 0, 0, 0,              // total length again
  };
  EXPECT_EQ(b, want);
}

TEST(Pcapng, SectionAndInterfaceBlocksByHand) {
  const auto shb = PcapngWriter::SectionHeader("ab");
  const std::vector<uint8_t> want_shb = {
      0x0A, 0x0D, 0x0D, 0x0A, 40,   0,    0,    0,     // type, length
      0x4D, 0x3C, 0x2B, 0x1A, 1,    0,    0,    0,     // byte-order magic, version 1.0
      0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,  // section length: not given
      4,    0,    2,    0,    'a',  'b',  0,    0,     // shb_userappl "ab"
      0,    0,    0,    0,    40,   0,    0,    0};
  EXPECT_EQ(shb, want_shb);
  const auto idb = PcapngWriter::InterfaceDescription("e0:p2", 4096);
  const std::vector<uint8_t> want_idb = {1, 0,  0, 0, 44,  0,   0,   0,  // type, length
                                         1, 0,  0, 0,                    // Ethernet, reserved
                                         0, 16, 0, 0,                    // snaplen 4096
                                         2, 0,  5, 0, 'e', '0', ':', 'p', '2', 0, 0, 0,  // if_name
                                         9, 0,  1, 0, 9,   0,   0,   0,  // if_tsresol: ns
                                         0, 0,  0, 0, 44,  0,   0,   0};
  EXPECT_EQ(idb, want_idb);
}

TEST(Pcapng, WritesAFileTheReaderReadsBack) {
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("ofan-pcapng-{}.pcapng", getpid()))
          .string();
  {
    auto w = PcapngWriter::Create(path, "test");
    ASSERT_TRUE(w) << w.error().message;
    ASSERT_EQ(*w->AddInterface("s:p0", 4096), 0u);
    ASSERT_EQ(*w->AddInterface("s:p3", 128), 1u);
    std::vector<uint8_t> f(100);
    for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<uint8_t>(i);
    ASSERT_TRUE(w->Write(0, 1'700'000'000'123'456'789ull, CaptureDir::kIn, f, 100));
    ASSERT_TRUE(
        w->Write(1, 1'700'000'000'223'456'789ull, CaptureDir::kOut, std::span(f).first(61), 1500));
    EXPECT_FALSE(w->Write(2, 0, CaptureDir::kIn, f, 100)) << "no interface 2";
    ASSERT_TRUE(w->Close());
  }
  std::string why;
  const auto r = testing::ReadPcapng(path, &why);
  std::filesystem::remove(path);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->app, "test");
  EXPECT_EQ(r->iface_names, (std::vector<std::string>{"s:p0", "s:p3"}));
  EXPECT_EQ(r->snaplens, (std::vector<uint32_t>{4096, 128}));
  ASSERT_EQ(r->packets.size(), 2u);
  EXPECT_EQ(r->packets[0].time_ns, 1'700'000'000'123'456'789ull);
  EXPECT_EQ(r->packets[0].flags, 1u);
  EXPECT_EQ(r->packets[0].bytes.size(), 100u);
  EXPECT_EQ(r->packets[1].iface, 1u);
  EXPECT_EQ(r->packets[1].flags, 2u);
  EXPECT_EQ(r->packets[1].orig_len, 1500u);
  EXPECT_EQ(r->packets[1].bytes.size(), 61u);
  EXPECT_EQ(r->packets[1].bytes[60], 60);
  EXPECT_FALSE(PcapngWriter::Create("/nonexistent/dir/x.pcapng", "t")) << "a clear error";
}

}  // namespace
}  // namespace ofan::dp
