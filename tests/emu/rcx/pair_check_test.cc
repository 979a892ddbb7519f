// The pair check's data (emu/rcx/pair_check.h) as docs/rc-exchange.md
// writes it: bytes, QP of a message, the message of the k-th SEND.
#include "emu/rcx/pair_check.h"

#include <gtest/gtest.h>

#include <vector>

namespace ofan::rcx {
namespace {

TEST(PairCheck, BytesAreTheDocumentsFormula) {
  for (uint64_t m : {0ull, 1ull, 77ull, 1ull << 33}) {
    std::vector<uint8_t> buf(5000);
    FillPairMessage(buf.data(), m, buf.size());
    for (uint64_t k = 0; k < buf.size(); ++k)
      ASSERT_EQ(buf[k], static_cast<uint8_t>((k * 7 + m * 13 + 1) & 0xff)) << m << " " << k;
    EXPECT_TRUE(PairMessageMatches(buf.data(), m, buf.size()));
    EXPECT_FALSE(PairMessageMatches(buf.data(), m + 1, buf.size()));
    buf[4321] ^= 1;
    EXPECT_FALSE(PairMessageMatches(buf.data(), m, buf.size()));
    EXPECT_TRUE(PairMessageMatches(buf.data(), m, 4321));
  }
}

TEST(PairCheck, QpsAndSendOrder) {
  const uint32_t n = 3;
  const uint64_t count = 10;
  std::vector<uint64_t> next(n, 0);
  for (uint64_t m = 0; m < count; ++m) {
    const uint32_t q = PairQp(m, n);
    EXPECT_EQ(PairSendMessage(q, next[q]++, n), m);
  }
  for (uint32_t q = 0; q < n; ++q) EXPECT_EQ(PairMessagesOn(q, count, n), next[q]);
  EXPECT_EQ(PairMessagesOn(5, 3, 8), 0u);
}

}  // namespace
}  // namespace ofan::rcx
