// ofan-sim's fixed-rate hosts (--cca none) recover what a lossy fabric
// drops, as the emulator's hosts do (sim/sim.cc OooLoss; uroce --ooo's
// completer): the holes sent again one by one after the timeout, every flow
// complete, the timeout --rto-us's when given, a flow no packet of which
// gets through given up after seven retries; a run without loss keeps its
// schedule bit for bit whatever the timeout; bad settings say why.
#include <gtest/gtest.h>

#include <string>

#include "common/units.h"
#include "sim/sim.h"
#include "tests/sim/emu_scale.h"

namespace ofan::sim {
namespace {

SimResult Simulate(const SimConfig& c) {
  auto r = RunSim(c);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : SimResult{};
}

// 15 senders to one receiver through 64 KiB buffers at the emulator's rate:
// the receiver's edge drops.
SimConfig LossyIncast(const std::string& lb = "ecmp") {
  SimConfig c = testing::EmuScale(lb, 256 * kKiB, 64 * kKiB);
  c.workload = WorkloadKind::kIncast;
  return c;
}

TEST(SimLossRecovery, AnOooReceiversSenderSendsTheHolesAgain) {
  const SimResult r = Simulate(LossyIncast());
  EXPECT_GT(r.drops_buffer, 0u);
  EXPECT_EQ(r.flows, 15u);
  EXPECT_EQ(r.flows_incomplete, 0u);
  EXPECT_GT(r.timeouts, 0u);
  // Each lost data packet sent again at least once; a probe only where
  // ACKs were lost (none are here: ACKs leave the receiver uncontended).
  EXPECT_GE(r.retransmits, r.drops_buffer);
  EXPECT_EQ(r.duplicates, 0u);
  EXPECT_EQ(r.data_received, r.data_packets - r.drops_buffer);
  EXPECT_GT(r.cct_us, r.cct_lower_bound_us);
}

TEST(SimLossRecovery, EveryPolicyCompletesALossyPermutation) {
  for (const char* lb : {"ecmp", "rps", "ar", "ofan", "pofan"}) {
    SimConfig c = testing::EmuScale(lb, 256 * kKiB, 16 * kKiB);
    const SimResult r = Simulate(c);
    EXPECT_EQ(r.flows_incomplete, 0u) << lb;
    EXPECT_EQ(r.retransmits == 0, r.drops_buffer == 0) << lb;
  }
}

TEST(SimLossRecovery, ARunWithoutLossKeepsItsScheduleWhateverTheTimeout) {
  SimConfig c = testing::EmuScale("rps", 256 * kKiB);  // unbounded buffers
  const SimResult a = Simulate(c);
  c.rto_us = 1;
  const SimResult b = Simulate(c);
  EXPECT_EQ(a.drops_buffer + b.drops_buffer, 0u);
  EXPECT_EQ(a.retransmits + a.timeouts + b.retransmits + b.timeouts, 0u);
  EXPECT_EQ(a.cct_us, b.cct_us);
  EXPECT_EQ(a.queue_max_pkts, b.queue_max_pkts);
  EXPECT_EQ(a.data_packets, b.data_packets);
}

TEST(SimLossRecovery, TheTimeoutIsTheHostsWhenGiven) {
  SimConfig c = LossyIncast();
  c.rto_us = 50'000;  // over the 21 ms a 64 KiB buffer takes to drain
  const SimResult fast = Simulate(c);
  c.rto_us = 400'000;
  const SimResult slow = Simulate(c);
  EXPECT_EQ(fast.flows_incomplete + slow.flows_incomplete, 0u);
  EXPECT_GT(fast.timeouts, 0u);
  // The last hole waits one timeout at least: the longer one ends later.
  EXPECT_GT(slow.cct_us, fast.cct_us);
  EXPECT_GT(slow.cct_us, 400'000.0);
}

TEST(SimLossRecovery, GoBackNTakesTheHostsTimeoutToo) {
  SimConfig c = LossyIncast();
  c.receiver = Receiver::kGbn;
  c.rto_us = 20'000;
  const SimResult r = Simulate(c);
  EXPECT_EQ(r.flows_incomplete, 0u);
  EXPECT_GT(r.retransmits, 0u);
}

TEST(SimLossRecovery, ASenderGivesUpAfterSevenTimeoutsInARow) {
  // A buffer smaller than a frame: every data packet is dropped at its
  // first switch, so no hole ever fills; each flow times out eight times
  // (seven of them sending its oldest hole again) and is given up.
  SimConfig c = testing::EmuScale("ecmp", 8 * 2048, 1000);
  c.rto_us = 20'000;
  const SimResult r = Simulate(c);
  ASSERT_GT(r.flows, 0u);
  EXPECT_EQ(r.flows_incomplete, r.flows);
  EXPECT_EQ(r.timeouts, 8 * r.flows);
  EXPECT_EQ(r.retransmits, 7 * r.flows);
  EXPECT_EQ(r.data_received, 0u);
}

TEST(SimLossRecovery, BadSettingsSayWhy) {
  SimConfig c = LossyIncast();
  c.rto_us = 60'000'001;
  auto r = RunSim(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--rto-us must be <= 60000000"), std::string::npos);
  c.rto_us = 1000;
  c.cca = Cca::kDctcp;
  r = RunSim(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--rto-us is the fixed-rate hosts' timeout"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace ofan::sim
