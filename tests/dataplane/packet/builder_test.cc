#include "dataplane/packet/builder.h"

#include <gtest/gtest.h>

#include <cstring>

#include "common/rng.h"

namespace ofan::pkt {
namespace {

TEST(Builder, FillsLengthsAndChecksum) {
  auto f = PacketBuilder()
               .Eth(MacAddr{{2, 0, 0, 0, 0, 1}}, MacAddr{{2, 0, 0, 0, 0, 2}})
               .Ipv4(0x0A000002, 0x0A000003)
               .Udp(1000, 4791)
               .Bth(0x0A, 17, 3)
               .Payload(100)
               .Build();
  ASSERT_EQ(f.size(), 14u + 20 + 8 + 12 + 100 + 4);
  EXPECT_EQ(f[12], 0x08);
  EXPECT_EQ(f[13], 0x00);
  EXPECT_EQ((f[16] << 8) | f[17], static_cast<int>(f.size() - 14));
  EXPECT_EQ((f[38] << 8) | f[39], static_cast<int>(f.size() - 34));
  EXPECT_EQ(Ipv4Checksum(&f[14], 20), 0);
  EXPECT_EQ(f[23], ipproto::kUdp);
}

TEST(Builder, IcrcIgnoresMutableFieldsButNotPayload) {
  auto f = PacketBuilder()
               .Eth(MacAddr{}, MacAddr{})
               .Ipv4(1, 2, 64, 2)
               .Udp(1, 4791)
               .Bth(0x0A, 1, 1)
               .Payload(64)
               .Build();
  const uint32_t len = static_cast<uint32_t>(f.size() - 14 - 4);
  const uint32_t base = RoceIcrc(&f[14], len);
  auto g = f;
  g[14 + 8] = 3;    // TTL
  g[14 + 1] = 3;    // ECN CE
  g[14 + 10] ^= 1;  // checksum
  g[34 + 6] ^= 1;   // UDP checksum
  EXPECT_EQ(RoceIcrc(&g[14], len), base);
  g[f.size() - 10] ^= 1;  // payload
  EXPECT_NE(RoceIcrc(&g[14], len), base);
}

// The parser's swap-free check agrees with the RFC 1071 checksum on random
// headers, on headers whose checksum was filled in, and on the all-zero one.
TEST(Checksum, SwapFreeVerifyAgreesWithTheFullChecksum) {
  Rng rng(7);
  uint8_t h[20];
  for (int t = 0; t < 20000; ++t) {
    for (auto& b : h) b = static_cast<uint8_t>(rng.Below(256));
    // Every fourth, bytes near 0xFF: the 64-bit adds carry out.
    if (t % 4 >= 2) {
      for (auto& b : h) b = static_cast<uint8_t>(0xFF - rng.Below(3));
    }
    if (t % 2) {  // make it valid
      h[10] = h[11] = 0;
      const uint16_t c = Ipv4Checksum(h, 20);
      h[10] = static_cast<uint8_t>(c >> 8);
      h[11] = static_cast<uint8_t>(c);
    }
    ASSERT_EQ(Ipv4Checksum20Ok(h), Ipv4Checksum(h, 20) == 0) << "case " << t;
    ASSERT_EQ(Ipv4Checksum20(h), Ipv4Checksum(h, 20)) << "case " << t;
  }
  std::memset(h, 0, sizeof h);
  EXPECT_FALSE(Ipv4Checksum20Ok(h));
  std::memset(h, 0xFF, sizeof h);  // sums to all ones: verifies
  EXPECT_EQ(Ipv4Checksum20Ok(h), Ipv4Checksum(h, 20) == 0);
  EXPECT_TRUE(Ipv4Checksum20Ok(h));
}

}  // namespace
}  // namespace ofan::pkt
