#include "common/main_guard.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace ofan {
namespace {

TEST(GuardMain, PassesTheExitCodeThrough) {
  EXPECT_EQ(GuardMain("prog", 9, [] { return 0; }), 0);
  EXPECT_EQ(GuardMain("prog", 9, [] { return 2; }), 2);
}

TEST(GuardMain, AThrownExceptionBecomesItsExitCodeAndAMessage) {
  testing::internal::CaptureStderr();
  const int rc = GuardMain("prog", 9, []() -> int { throw std::runtime_error("boom"); });
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 9);
  EXPECT_EQ(err, "prog: internal error: boom\n");
}

}  // namespace
}  // namespace ofan
