// ofan-sim --pfc (sim.h's PFC model, dataplane/fabric/pfc.h): lossless
// under any load, the same schedule as the lossy FIFO when nothing pauses,
// pause where a congestion tree grows, the watchdog's actions, bad input.
#include <gtest/gtest.h>

#include <string>

#include "common/units.h"
#include "sim/sim.h"
#include "sim/workload.h"
#include "tests/sim/emu_scale.h"

namespace ofan::sim {
namespace {

// The emulator's scale with its default 256 KiB port buffers.
SimConfig EmuScale(const std::string& lb, uint64_t msg) {
  return testing::EmuScale(lb, msg, 256 * kKiB);
}

uint64_t PauseFramesRx(const SimResult& r) {
  uint64_t n = 0;
  for (const StageStats& s : r.stages) n += s.pause_frames;
  return n;
}

TEST(SimPfc, OneFlowThatNeverFillsABufferRunsTheLossySchedule) {
  // One sender: its data and its ACKs never share a port, so strict
  // priority changes nothing, and nothing crosses xoff.
  SimConfig c = EmuScale("ecmp", 256 * kKiB);
  c.workload = WorkloadKind::kIncast;
  c.incast_senders = 1;
  auto lossy = RunSim(c);
  c.pfc = true;
  auto pfc = RunSim(c);
  ASSERT_TRUE(lossy.ok() && pfc.ok());
  EXPECT_EQ(pfc->cct_us, lossy->cct_us);
  EXPECT_EQ(pfc->queue_max_pkts, lossy->queue_max_pkts);
  EXPECT_EQ(pfc->pfc.pause_frames, 0u);
  EXPECT_TRUE(pfc->pfc.on);
  EXPECT_FALSE(lossy->pfc.on);
}

TEST(SimPfc, IncastLosesNothingUnderPfcAndDropsWithout) {
  SimConfig c = EmuScale("ecmp", kMiB);
  c.workload = WorkloadKind::kIncast;  // 15 to 1
  c.pfcwd_detect_ms = 5000;            // the congestion tree outlasts 200 ms at 25 Mb/s
  auto lossy = RunSim(c);
  ASSERT_TRUE(lossy.ok());
  EXPECT_GT(lossy->drops_buffer, 0u);
  EXPECT_GT(lossy->retransmits, 0u);  // the hosts send what was lost again
  EXPECT_EQ(lossy->flows_incomplete, 0u);
  c.pfc = true;
  auto r = RunSim(c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->flows, 15u);
  EXPECT_EQ(r->flows_incomplete, 0u);
  EXPECT_EQ(r->drops_buffer, 0u);
  EXPECT_EQ(r->pfc.lossless_drops, 0u);
  EXPECT_EQ(r->pfc.watchdog_fired, 0u);
  EXPECT_EQ(r->data_received, r->data_packets);
  EXPECT_GT(r->pfc.pause_frames, 0u);
  EXPECT_GT(r->pfc.xoff_events, 0u);
  // Every frame a switch sent reached its peer (switch or host).
  EXPECT_EQ(PauseFramesRx(*r) + r->pfc.host_pause_frames, r->pfc.pause_frames);
  EXPECT_LE(r->pfc.headroom_max_bytes, r->pfc.headroom_bytes);
  // The receiver's own link is never paused (hosts do not pause), and the
  // pause spread back to the senders' NICs.
  EXPECT_EQ(r->stages[static_cast<int>(Stage::kEdgeDown)].pause_frames, 0u);
  EXPECT_GT(r->pfc.host_pause_frames, 0u);
  EXPECT_GT(r->pfc.host_paused_us, 0.0);
  EXPECT_GE(r->cct_us, r->cct_lower_bound_us * (1 - 1e-9));
}

TEST(SimPfc, PausedTimeAddsUpPerStage) {
  SimConfig c = EmuScale("ofan", kMiB);
  c.workload = WorkloadKind::kIncast;
  c.incast_senders = 7;
  c.pfc = true;
  auto r = RunSim(c);
  ASSERT_TRUE(r.ok());
  double sum = 0;
  for (const StageStats& s : r->stages) {
    sum += s.paused_us;
    EXPECT_LE(s.paused_us, s.queues * r->cct_us * (1 + 1e-9)) << s.name;
  }
  EXPECT_DOUBLE_EQ(sum, r->pfc.paused_us);
  EXPECT_GT(sum, 0.0);
  EXPECT_EQ(r->flows_incomplete, 0u);
}

TEST(SimPfc, WatchdogDropsWhatAStormedQueueHoldsOrOnlyAlerts) {
  // 15 to 1 at 25 Mb/s: upstream queues stay paused past 200 ms.
  SimConfig c = EmuScale("ecmp", kMiB);
  c.workload = WorkloadKind::kIncast;
  c.pfc = true;
  auto drop = RunSim(c);
  ASSERT_TRUE(drop.ok());
  EXPECT_GT(drop->pfc.watchdog_fired, 0u);
  EXPECT_GT(drop->pfc.watchdog_dropped, 0u);
  EXPECT_EQ(drop->pfc.lossless_drops, 0u);
  c.pfcwd_action = fabric::PfcWdAction::kAlert;
  auto alert = RunSim(c);
  ASSERT_TRUE(alert.ok());
  EXPECT_GT(alert->pfc.watchdog_fired, 0u);
  EXPECT_EQ(alert->pfc.watchdog_dropped, 0u);
  EXPECT_EQ(alert->flows_incomplete, 0u);
}

TEST(SimPfc, PermutationUnderEveryPolicyIsLossless) {
  for (const char* lb : {"ecmp", "rps", "ar", "ofan", "pofan", "conga", "sglb", "drb"}) {
    SimConfig c = EmuScale(lb, 256 * kKiB);
    c.pfc = true;
    auto r = RunSim(c);
    ASSERT_TRUE(r.ok()) << lb;
    EXPECT_EQ(r->flows_incomplete, 0u) << lb;
    EXPECT_EQ(r->drops_buffer + r->pfc.lossless_drops + r->pfc.watchdog_dropped, 0u) << lb;
    EXPECT_EQ(r->acks_received, r->data_packets) << lb;
    EXPECT_GE(r->cct_us, r->cct_lower_bound_us * (1 - 1e-9)) << lb;
  }
}

TEST(SimPfc, BadConfigurationsSayWhy) {
  auto error = [](auto mutate) -> std::string {
    SimConfig c = EmuScale("ecmp", kMiB);
    c.pfc = true;
    mutate(c);
    auto r = RunSim(c);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.error().message;
  };
  EXPECT_NE(error([](SimConfig& c) { c.buffer_bytes = 0; }).find("--pfc needs --buffer"),
            std::string::npos);
  EXPECT_NE(error([](SimConfig& c) { c.buffer_bytes = 8000; }).find("headroom"), std::string::npos);
  EXPECT_NE(error([](SimConfig& c) { c.pfcwd_detect_ms = 99; }).find("--pfcwd-detect-ms"),
            std::string::npos);
  EXPECT_NE(error([](SimConfig& c) { c.pfcwd_restore_ms = 60001; }).find("--pfcwd-restore-ms"),
            std::string::npos);
  EXPECT_NE(error([](SimConfig& c) { c.pfc_quanta = 0; }).find("--pfc-quanta"), std::string::npos);
  EXPECT_NE(error([](SimConfig& c) {
              c.workload = WorkloadKind::kIncast;
              c.incast_senders = 16;
            }).find("--incast-senders 16"),
            std::string::npos);
  EXPECT_NE(error([](SimConfig& c) { c.incast_senders = 3; }).find("--workload incast"),
            std::string::npos);
}

TEST(SimPfc, TheVictimFlowRunsBesideTheIncast) {
  SimConfig c = EmuScale("ecmp", 64 * kKiB);
  c.workload = WorkloadKind::kIncast;
  c.incast_victim = true;
  auto t = lb::FatTree::Make(4, 3);
  auto flows = MakeWorkload(c, *t);
  ASSERT_TRUE(flows.ok());
  ASSERT_EQ(flows->size(), 14u);  // 13 to host 0, the victim 15 -> 1
  EXPECT_EQ(flows->back().src, 15u);
  EXPECT_EQ(flows->back().dst, 1u);
  for (size_t i = 0; i + 1 < flows->size(); ++i) {
    EXPECT_EQ((*flows)[i].dst, 0u);
    EXPECT_NE((*flows)[i].src, 1u);
    EXPECT_NE((*flows)[i].src, 15u);
  }
  c.pfc = true;
  auto r = RunSim(c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->flows_incomplete, 0u);
  c.incast_senders = 14;
  EXPECT_FALSE(RunSim(c).ok());
  c.incast_senders = 0;
  c.workload = WorkloadKind::kPerm;
  EXPECT_FALSE(RunSim(c).ok());
}

TEST(SimPfc, IncastSendersAreOfanCollsSpreadOverPods) {
  SimConfig c = EmuScale("ecmp", kMiB);
  c.workload = WorkloadKind::kIncast;
  c.incast_senders = 3;
  auto t = lb::FatTree::Make(4, 3);
  ASSERT_TRUE(t.ok());
  auto flows = MakeWorkload(c, *t);
  ASSERT_TRUE(flows.ok());
  ASSERT_EQ(flows->size(), 3u);
  const uint32_t want[] = {1, 6, 11};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*flows)[i].src, want[i]);
    EXPECT_EQ((*flows)[i].dst, 0u);
    EXPECT_EQ((*flows)[i].bytes, kMiB);
  }
}

}  // namespace
}  // namespace ofan::sim
