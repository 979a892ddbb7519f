// PFC frames against scapy's (tests/golden/pfc.golden, made by
// make_golden.py with scapy.contrib.mac_control): the frames ofan-dp builds
// byte for byte, and what a port reads from each, with PFC on priority 3
// (strict) and without (lenient).
#include <gtest/gtest.h>

#include <string>

#include "dataplane/egress/pfc.h"
#include "tests/golden/golden.h"

namespace ofan::dp {
namespace {

PauseRx KindOf(const std::string& s) {
  if (s == "ours") return PauseRx::kOurs;
  if (s == "notours") return PauseRx::kNotOurs;
  EXPECT_EQ(s, "malformed");
  return PauseRx::kMalformed;
}

TEST(PfcGolden, FramesAreScapysAndReadAsTheirClassSays) {
  const auto& file = golden::Fixture("pfc.golden");
  ASSERT_TRUE(file.ok()) << file.error().message;
  ASSERT_GE(file->frames.size(), 7u);
  uint32_t built = 0;
  for (const golden::Frame& f : file->frames) {
    SCOPED_TRACE(f.name);
    if (f.Has("build")) {
      const auto src = golden::ParseMac(f.Str("src"));
      ASSERT_TRUE(src.has_value());
      const auto ours = BuildPfcFrame(*src, static_cast<uint8_t>(f.Num("priority")),
                                      static_cast<uint16_t>(f.Num("quanta")));
      EXPECT_EQ(golden::Bytes(ours.begin(), ours.end()), f.in);
      ++built;
    }
    for (const bool strict : {true, false}) {
      const ReceivedPause r = ReadPause(f.in, 3, strict);
      const PauseRx want = KindOf(f.Str(strict ? "strict" : "lenient"));
      EXPECT_EQ(r.kind, want) << (strict ? "strict" : "lenient");
      if (want == PauseRx::kOurs) {
        EXPECT_EQ(r.quanta, f.Num("quanta"));
      }
    }
  }
  EXPECT_EQ(built, 3u);
}

}  // namespace
}  // namespace ofan::dp
