#include "emu/collective/pattern.h"

#include <gtest/gtest.h>

#include <vector>

namespace ofan::emu {
namespace {

TEST(Pattern, FillAtAnyOffsetMatchesTheByteFormula) {
  for (uint64_t off : {0ull, 1ull, 2ull, 3ull, 4ull, 1001ull}) {
    for (size_t len : {0u, 1u, 3u, 4u, 5u, 17u}) {
      std::vector<uint8_t> b(len);
      FillPattern(b, 3, off, 9);
      for (size_t i = 0; i < len; ++i) EXPECT_EQ(b[i], PatternByte(3, off + i, 9));
    }
  }
}

// Past the word loop's chunks (256 words) and at every alignment, for a
// rank's data and for the sum of ranks: the fill is the formula, byte for
// byte, whichever target's loop the CPU ran.
TEST(Pattern, LongFillsMatchTheByteFormula) {
  for (uint64_t off : {0ull, 1ull, 3ull, 4098ull}) {
    for (size_t len : {1023u, 1031u, 5000u}) {
      std::vector<uint8_t> b(len), s(len);
      FillPattern(b, 3, off, 9);
      FillSumPattern(s, 5, off, 9);
      for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ(b[i], PatternByte(3, off + i, 9)) << off << " " << len << " " << i;
        ASSERT_EQ(s[i], SumPatternByte(5, off + i, 9)) << off << " " << len << " " << i;
      }
    }
  }
}

// The data's definition does not move (buffers filled by one build are
// checked by another: VM hosts run ofan-coll built on the host).
TEST(Pattern, WordsAreTheDefinedOnes) {
  EXPECT_EQ(PatternWord(3, 12345, 9), 0x7848d039u);
  EXPECT_EQ(PatternWord(0, 0, 1), 0x7439611eu);
  EXPECT_EQ(PatternWord(15, 1ull << 40, 0xdeadbeef), 0x4e4a1791u);
}

TEST(Pattern, DependsOnRankOffsetAndSeed) {
  std::vector<uint8_t> a(64), b(64), c(64), d(64);
  FillPattern(a, 0, 0, 1);
  FillPattern(b, 1, 0, 1);
  FillPattern(c, 0, 0, 2);
  FillPattern(d, 0, 64, 1);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  // Every word of two ranks differs (the rank step is odd).
  for (uint64_t w = 0; w < 1000; ++w) EXPECT_NE(PatternWord(2, w, 5), PatternWord(7, w, 5));
}

// The closed form of the sum equals adding every rank's buffer with
// ReduceAdd, also over a short tail word.
TEST(Pattern, SumClosedFormEqualsTheReduction) {
  for (uint32_t n : {1u, 2u, 3u, 16u}) {
    for (size_t len : {1u, 3u, 4u, 7u, 4099u}) {
      std::vector<uint8_t> acc(len), mine(len), want(len);
      FillPattern(acc, 0, 0, 11);
      for (Rank r = 1; r < n; ++r) {
        FillPattern(mine, r, 0, 11);
        ReduceAdd(acc, mine);
      }
      FillSumPattern(want, n, 0, 11);
      EXPECT_EQ(acc, want) << "n=" << n << " len=" << len;
      for (size_t i = 0; i < len; ++i) ASSERT_EQ(want[i], SumPatternByte(n, i, 11));
    }
  }
}

TEST(Pattern, ReduceAddWrapsPerWord) {
  std::vector<uint8_t> a = {0xff, 0xff, 0xff, 0xff, 0x01, 0x00};
  const std::vector<uint8_t> b = {0x01, 0x00, 0x00, 0x00, 0xff, 0x01};
  ReduceAdd(a, b);
  // 0xffffffff + 1 wraps to 0 without touching the next word; the tail
  // 0x0001 + 0x01ff = 0x0200.
  EXPECT_EQ(a, (std::vector<uint8_t>{0, 0, 0, 0, 0x00, 0x02}));
}

}  // namespace
}  // namespace ofan::emu
