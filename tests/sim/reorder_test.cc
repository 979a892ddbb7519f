// ofan-sim --reorder and --receiver gbn (sim.h, dataplane/fabric/reorder.h):
// the edges' resequencing leaves one-path traffic alone, gives a go-back-N
// receiver a sprayed flow in order, accounts for every frame, gives up on
// time and on a full buffer without stranding a flow; go-back-N senders
// recover what a lossy fabric drops (as ooo ones do); bad settings say why.
#include <gtest/gtest.h>

#include <string>

#include "common/units.h"
#include "sim/sim.h"
#include "tests/sim/emu_scale.h"

namespace ofan::sim {
namespace {

// The emulator's scale (infinite buffers), where --reorder is measured
// beside it.
SimConfig EmuScale(const std::string& lb, uint64_t msg = 256 * kKiB) {
  return testing::EmuScale(lb, msg);
}

SimResult Simulate(const SimConfig& c) {
  auto r = RunSim(c);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : SimResult{};
}

// Each data frame that reached an edge's host port left its reorder buffer
// once, under exactly one of the counters.
uint64_t Accounted(const ReorderStats& ro) {
  return ro.in_order + ro.timeouts + ro.overflow + ro.table_full + ro.old;
}

TEST(SimReorder, OnePathPerFlowIsNeverHeldAndKeepsItsSchedule) {
  SimConfig c = EmuScale("ecmp");
  const SimResult off = Simulate(c);
  c.reorder = true;
  const SimResult on = Simulate(c);
  EXPECT_EQ(on.cct_us, off.cct_us);
  EXPECT_EQ(on.queue_max_pkts, off.queue_max_pkts);
  EXPECT_TRUE(on.reorder.on);
  EXPECT_FALSE(off.reorder.on);
  EXPECT_EQ(on.reorder.held, 0u);
  EXPECT_EQ(on.reorder.max_bytes, 0u);
  EXPECT_EQ(on.reorder.in_order, on.data_packets);
  EXPECT_EQ(on.reorder.ports, on.flows) << "a permutation: one flow per host port";
}

TEST(SimReorder, SprayingGivesAGoBackNReceiverItsFlowsInOrder) {
  for (const char* lb : {"rps", "ofan", "pofan", "ar"}) {
    SimConfig c = EmuScale(lb);
    c.receiver = Receiver::kGbn;
    const SimResult gbn = Simulate(c);
    c.reorder = true;
    const SimResult ro = Simulate(c);
    EXPECT_TRUE(gbn.gbn) << lb;
    EXPECT_EQ(gbn.flows_incomplete + ro.flows_incomplete, 0u) << lb;
    EXPECT_EQ(ro.out_of_seq, 0u) << lb;
    EXPECT_EQ(ro.naks, 0u) << lb;
    EXPECT_EQ(ro.retransmits, 0u) << lb;
    EXPECT_EQ(ro.duplicates, 0u) << lb;
    EXPECT_EQ(ro.data_packets, ro.reorder.in_order) << lb << ": every frame in order";
    EXPECT_GT(ro.reorder.held, 0u) << lb << " sprays: something waited";
    EXPECT_EQ(ro.reorder.timeouts + ro.reorder.overflow, 0u) << lb;
    if (gbn.out_of_seq > 0) {  // what the receiver dropped came again
      EXPECT_GT(gbn.naks, 0u) << lb;
      EXPECT_GE(gbn.retransmits, gbn.out_of_seq) << lb;
      EXPECT_GT(gbn.cct_us, ro.cct_us) << lb;
    }
  }
  // RPS reorders at this scale; without the stage rxe goes back N.
  SimConfig c = EmuScale("rps");
  c.receiver = Receiver::kGbn;
  EXPECT_GT(Simulate(c).out_of_seq, 0u);
}

TEST(SimReorder, AnOutOfOrderReceiverSeesTheSameDeliveriesEitherWay) {
  SimConfig c = EmuScale("rps");
  const SimResult off = Simulate(c);
  c.reorder = true;
  const SimResult on = Simulate(c);
  EXPECT_EQ(on.data_received, off.data_received);
  EXPECT_EQ(on.flows_incomplete, 0u);
  EXPECT_EQ(Accounted(on.reorder), on.data_packets);
  EXPECT_GT(on.reorder.max_hold_us, 0.0);
}

TEST(SimReorder, AWaitEndsAtTheTimeout) {
  SimConfig c = EmuScale("rps");
  c.reorder = true;
  c.reorder_timeout_us = 50;  // well under RPS's skew at 25 Mb/s
  const SimResult r = Simulate(c);
  EXPECT_GT(r.reorder.timeouts, 0u);
  EXPECT_LE(r.reorder.max_hold_us, 50.0 + 1e-6);
  EXPECT_EQ(r.flows_incomplete, 0u);
  EXPECT_EQ(Accounted(r.reorder), r.data_packets);
}

TEST(SimReorder, AFullBufferStrandsNoFlow) {
  // One frame of buffer: early frames find it full all the time. Nothing
  // is lost in the fabric, so no flow may wait out a timeout (10 s, not
  // the tiny buffer's drain time) for a PSN the buffer let go
  // (dataplane/fabric/reorder.h, GiveUp).
  SimConfig c = EmuScale("rps");
  c.reorder = true;
  c.reorder_bytes = c.frame_bytes();
  c.reorder_timeout_us = fabric::kReorderMaxTimeoutUs;
  const SimResult r = Simulate(c);
  EXPECT_GT(r.reorder.overflow, 0u);
  EXPECT_EQ(r.reorder.timeouts, 0u);
  EXPECT_EQ(r.reorder.max_frames, 1u);
  EXPECT_EQ(r.reorder.max_bytes, c.frame_bytes());
  EXPECT_EQ(Accounted(r.reorder), r.data_packets);
  EXPECT_EQ(r.flows_incomplete, 0u);
}

TEST(SimReorder, LosslessFabricAndResequencingLeaveNothingToRecover) {
  for (const char* lb : {"rps", "ofan"}) {
    SimConfig c = EmuScale(lb, kMiB);
    c.buffer_bytes = 256 * kKiB;
    c.pfc = true;
    c.reorder = true;
    c.receiver = Receiver::kGbn;
    const SimResult r = Simulate(c);
    EXPECT_EQ(r.flows_incomplete, 0u) << lb;
    EXPECT_EQ(r.out_of_seq + r.naks + r.retransmits + r.timeouts, 0u) << lb;
    EXPECT_EQ(r.pfc.lossless_drops + r.drops_buffer, 0u) << lb;
  }
}

TEST(SimReorder, GoBackNRecoversWhatALossyFabricDrops) {
  SimConfig c = EmuScale("ecmp", 256 * kKiB);
  c.workload = WorkloadKind::kIncast;  // 15 to 1 into 64 KiB buffers
  c.buffer_bytes = 64 * kKiB;
  const SimResult ooo = Simulate(c);  // the holes sent again (loss_recovery_test.cc)
  EXPECT_GT(ooo.drops_buffer, 0u);
  EXPECT_EQ(ooo.flows_incomplete, 0u);
  c.receiver = Receiver::kGbn;
  const SimResult gbn = Simulate(c);
  EXPECT_GT(gbn.drops_buffer, 0u);
  EXPECT_EQ(gbn.flows_incomplete, 0u);
  EXPECT_GT(gbn.retransmits, 0u);
  EXPECT_GT(gbn.naks + gbn.timeouts, 0u);
}

TEST(SimReorder, OfansDepthStaysBelowRpssAsTheTreeGrows) {
  // The claim bench/run-reorder-sim measures at k=12 and 64, here at k=8 at
  // the paper's scale (800 Gb/s, 4 KiB frames).
  auto depth = [](const char* lb) {
    SimConfig c;
    c.k = 8;
    c.msg_bytes = kMiB;
    EXPECT_TRUE(ApplyLbName(lb, c).ok());
    c.reorder = true;
    return Simulate(c).reorder.max_frames;
  };
  const uint64_t ofan = depth("ofan"), rps = depth("rps");
  EXPECT_GT(ofan, 0u);
  EXPECT_LT(2 * ofan, rps);
}

TEST(SimReorder, TheDefaultWaitIsTheBuffersDrainTime) {
  SimConfig c = EmuScale("ofan");
  EXPECT_EQ(c.ReorderTimeoutUs(), 83'887u) << "256 KiB at 25 Mb/s";
  c.link_gbps = 800;
  EXPECT_EQ(c.ReorderTimeoutUs(), 3u) << "2.6 us, rounded up";
  c.reorder_timeout_us = 500;
  EXPECT_EQ(c.ReorderTimeoutUs(), 500u);
}

TEST(SimReorder, BadSettingsSayWhy) {
  auto error = [](auto mutate) -> std::string {
    SimConfig c = EmuScale("ofan");
    mutate(c);
    auto r = RunSim(c);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.error().message;
  };
  EXPECT_NE(error([](SimConfig& c) {
              c.receiver = Receiver::kGbn;
              c.cca = Cca::kDctcp;
              c.buffer_bytes = 800'000;
            }).find("--receiver gbn"),
            std::string::npos);
  EXPECT_NE(error([](SimConfig& c) {
              c.reorder = true;
              c.reorder_bytes = 1000;
            }).find("--reorder-kb"),
            std::string::npos);
  EXPECT_NE(error([](SimConfig& c) {
              c.reorder = true;
              c.reorder_timeout_us = fabric::kReorderMaxTimeoutUs + 1;
            }).find("--reorder-timeout-us"),
            std::string::npos);
  EXPECT_TRUE(ParseReceiver("gbn").ok());
  EXPECT_FALSE(ParseReceiver("go-back").ok());
}

}  // namespace
}  // namespace ofan::sim
