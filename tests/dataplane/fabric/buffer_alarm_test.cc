// BufferAlarm (dataplane/fabric/buffer_alarm.h): raised above 80 % of the
// capacity, once per excursion (cleared at 70 %), time up, the maximum and
// its reset; no capacity, no alarm.
#include "dataplane/fabric/buffer_alarm.h"

#include <gtest/gtest.h>

namespace ofan::fabric {
namespace {

TEST(BufferAlarm, RaisedAbove80PercentOncePerExcursion) {
  BufferAlarm a(1000);
  EXPECT_FALSE(a.Sample(0, 800));  // at the mark: not above it
  EXPECT_FALSE(a.active());
  EXPECT_TRUE(a.Sample(10, 801));
  EXPECT_TRUE(a.active());
  // Hovering between 70 % and 80 % and back above: the same alarm.
  EXPECT_FALSE(a.Sample(20, 750));
  EXPECT_FALSE(a.Sample(30, 900));
  EXPECT_EQ(a.raised(), 1u);
  EXPECT_EQ(a.up_ps(40), 30u);
  EXPECT_FALSE(a.Sample(50, 700));  // cleared at 70 %
  EXPECT_FALSE(a.active());
  EXPECT_EQ(a.up_ps(1000), 40u);
  EXPECT_TRUE(a.Sample(60, 1000));  // a second excursion
  EXPECT_EQ(a.raised(), 2u);
  EXPECT_EQ(a.up_ps(70), 50u);
  EXPECT_EQ(a.max_bytes(), 1000u);
}

TEST(BufferAlarm, ResetMaxStartsFromWhatIsHeld) {
  BufferAlarm a(1000);
  a.Sample(0, 900);
  a.Sample(1, 100);
  a.ResetMax();
  EXPECT_EQ(a.max_bytes(), 100u);
  EXPECT_EQ(a.raised(), 1u);  // the counts go on
}

TEST(BufferAlarm, NoCapacityNoAlarm) {
  BufferAlarm a(0);
  EXPECT_FALSE(a.Sample(0, 1u << 30));
  EXPECT_FALSE(a.active());
  EXPECT_EQ(a.max_bytes(), 1u << 30);
}

TEST(BufferAlarm, LargeBuffersDoNotOverflowThePercentage) {
  const uint64_t cap = uint64_t{1} << 56;
  BufferAlarm a(cap);
  EXPECT_FALSE(a.Sample(0, cap / 10 * 8));
  EXPECT_TRUE(a.Sample(1, cap / 10 * 9));
}

}  // namespace
}  // namespace ofan::fabric
