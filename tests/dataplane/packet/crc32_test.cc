// dataplane/packet/crc32.h: the same CRC as zlib's crc32_z for every length
// from 0 to 5,000 bytes (the folding's 64-byte blocks, its 16-byte steps and
// zlib's tail), at every alignment of a 16-byte lane, from a fresh start and
// chained from another CRC; and the ICRC of a frame built by PacketBuilder
// (the check value RoceIcrcOk accepts) with it; RoceIcrc against its
// definition spelled out with zlib, at every IHL and short payload. On a CPU
// without PCLMULQDQ both sides are zlib's and the test still holds.
#include "dataplane/packet/crc32.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <vector>

#include "dataplane/packet/roce.h"

namespace ofan::pkt {
namespace {

TEST(Crc32, IsZlibsAtEveryLengthAlignmentAndStart) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> buf(5100);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t off = 0; off < 16; ++off) {
    for (size_t n = 0; n <= 5000; n += n < 300 ? 1 : 37) {
      const uint32_t start = n % 3 ? static_cast<uint32_t>(rng()) : 0;
      const auto want = static_cast<uint32_t>(crc32_z(start, buf.data() + off, n));
      ASSERT_EQ(Crc32(start, buf.data() + off, n), want) << "offset " << off << " length " << n;
    }
  }
}

TEST(Crc32, ChainsAsZlibDoes) {
  std::vector<uint8_t> buf(4096);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t cut : {0, 1, 63, 64, 65, 1000, 4095, 4096}) {
    const uint32_t whole = Crc32(0, buf.data(), buf.size());
    const uint32_t two = Crc32(Crc32(0, buf.data(), cut), buf.data() + cut, buf.size() - cut);
    EXPECT_EQ(two, whole) << cut;
  }
  // The standard check value: CRC-32 of "123456789".
  const uint8_t digits[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(Crc32(0, digits, sizeof digits), 0xCBF43926u);
}

// RoceIcrc's definition, spelled out with zlib over one buffer: 8 bytes of
// ones, then the datagram with TOS, TTL, both checksums and the BTH's
// FECN/BECN/reserved byte set to ones. RoceIcrc masks a copy of the headers
// and tops it up with payload so that Crc32 folds nearly all of it: every
// IHL (5-15) and payload length from 0 to 200 bytes and a few long ones
// cross each of its cuts.
TEST(Crc32, RoceIcrcIsTheMaskedDatagramsCrc) {
  std::mt19937 rng(7);
  std::vector<uint8_t> d(9000);
  for (uint32_t ihl = 5; ihl <= 15; ++ihl) {
    std::vector<uint32_t> payloads;
    for (uint32_t p = 0; p <= 200; ++p) payloads.push_back(p);
    for (uint32_t p : {1024u, 1027u, 2048u, 4096u, 8000u}) payloads.push_back(p);
    for (const uint32_t payload : payloads) {
      const uint32_t hdr = ihl * 4 + sizeof(UdpHdr) + sizeof(BthHdr);
      const uint32_t len = hdr + payload;
      for (uint32_t i = 0; i < len; ++i) d[i] = static_cast<uint8_t>(rng());
      d[0] = static_cast<uint8_t>(0x40 | ihl);
      std::vector<uint8_t> ref(8, 0xFF);
      ref.insert(ref.end(), d.begin(), d.begin() + len);
      uint8_t* ip = ref.data() + 8;
      ip[offsetof(Ipv4Hdr, tos)] = ip[offsetof(Ipv4Hdr, ttl)] = 0xFF;
      ip[offsetof(Ipv4Hdr, checksum)] = ip[offsetof(Ipv4Hdr, checksum) + 1] = 0xFF;
      uint8_t* udp = ip + ihl * 4;
      udp[offsetof(UdpHdr, checksum)] = udp[offsetof(UdpHdr, checksum) + 1] = 0xFF;
      udp[sizeof(UdpHdr) + offsetof(BthHdr, dest_qp)] = 0xFF;
      const auto want = static_cast<uint32_t>(crc32_z(0, ref.data(), ref.size()));
      ASSERT_EQ(RoceIcrc(d.data(), len), want) << "IHL " << ihl << " payload " << payload;
    }
  }
}

}  // namespace
}  // namespace ofan::pkt
