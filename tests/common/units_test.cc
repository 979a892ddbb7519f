#include "common/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

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

TEST(LinkRate, ConvertsOneUnit) {
  const LinkRate r = *LinkRate::FromGbps(100, "rate");
  EXPECT_EQ(r.gbps(), 100);
  EXPECT_EQ(r.bits_per_second(), 100e9);
  EXPECT_EQ(r.bytes_per_second(), 12.5e9);
  EXPECT_EQ(r.ps_per_byte(), 80);                           // 80 ps a byte at 100 Gb/s
  EXPECT_EQ(LinkRate::Gbps(0.025).ps_per_byte(), 320'000);  // the demo's 25 Mb/s
  EXPECT_EQ(LinkRate::Gbps(kMaxLinkGbps).gbps(), kMaxLinkGbps);
}

TEST(LinkRate, RejectsWhatIsNotARateNamingIt) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {0.0, -0.0, -1.0, nan, inf, -inf, kMaxLinkGbps * 1.0001}) {
    auto r = LinkRate::FromGbps(bad, "--link-gbps");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(r.error().message.rfind("--link-gbps must be in (0, 100000] Gb/s, got ", 0), 0u)
        << r.error().message;
  }
  // 0 is "none" where a tool allows it; the rest is rejected as before.
  EXPECT_FALSE(LinkRate::FromGbpsOrZero(0, "egress.rate_gbps")->has_value());
  EXPECT_EQ((*LinkRate::FromGbpsOrZero(0.1, "egress.rate_gbps"))->gbps(), 0.1);
  for (double bad : {-1.0, nan, inf, 1e6}) {
    auto r = LinkRate::FromGbpsOrZero(bad, "egress.rate_gbps");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message.rfind("egress.rate_gbps must be in [0, 100000] Gb/s (0: none)", 0),
              0u)
        << r.error().message;
  }
}

// Property: FromGbps accepts exactly the finite rates in (0, kMaxLinkGbps]
// and keeps them as given; the time of a byte times the bytes a second is
// a second.
TEST(LinkRate, AcceptsExactlyTheRange) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-12, 7);
  for (int i = 0; i < 10'000; ++i) {
    const double g = std::pow(10.0, exponent(rng)) * (i % 2 ? 1 : -1);
    auto r = LinkRate::FromGbps(g, "g");
    ASSERT_EQ(r.ok(), g > 0 && g <= kMaxLinkGbps) << g;
    if (!r.ok()) continue;
    EXPECT_EQ(r->gbps(), g);
    EXPECT_NEAR(r->ps_per_byte() * r->bytes_per_second(), 1e12, 1e12 * 1e-12);
  }
}

}  // namespace
}  // namespace ofan
