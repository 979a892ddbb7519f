#include "common/units.h"

#include <gtest/gtest.h>

namespace ofan {
namespace {

TEST(ParseSize, AcceptsPlainAndBinarySuffixes) {
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("4096B"), 4096u);
  EXPECT_EQ(*ParseSize("64KiB"), 64u * 1024);
  EXPECT_EQ(*ParseSize("64k"), 64u * 1024);
  EXPECT_EQ(*ParseSize("1MiB"), 1u << 20);
  EXPECT_EQ(*ParseSize("16MB"), 16u << 20);
  EXPECT_EQ(*ParseSize(" 2GiB "), 2ull << 30);
}

TEST(ParseSize, RejectsGarbageWithAMessage) {
  for (const char* bad : {"", "abc", "-1", "1XB", "1.5MiB", "KiB", "99999999999999999999"}) {
    auto r = ParseSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_FALSE(r.error().message.empty());
  }
  EXPECT_FALSE(ParseSize("18446744073709551615GiB").ok());  // overflow
}

TEST(FormatSize, RoundTrips) {
  for (uint64_t v : {1ull, 4158ull, 65536ull, 1ull << 20, 3ull << 30}) {
    EXPECT_EQ(*ParseSize(FormatSize(v)), v);
  }
  EXPECT_EQ(FormatSize(kMiB), "1MiB");
  EXPECT_EQ(FormatSize(256 * kKiB), "256KiB");
}

}  // namespace
}  // namespace ofan
