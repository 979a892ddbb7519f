// ofan-sim's transport (sim/transport/): each CCA cuts its window
// on marks and losses and grows it back, every flow completes when the
// buffers drop packets, runs are a function of their seed, and --cca none is
// the fixed-rate model with no recovery at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/units.h"
#include "sim/sim.h"
#include "sim/transport/cca.h"

namespace ofan::sim {
namespace {

// Every CCA but none, from the list that registers them.
std::vector<Cca> AllCcas() {
  std::vector<Cca> out;
  for (int i = 1; i < kNumCcas; ++i) out.push_back(static_cast<Cca>(i));
  return out;
}

std::string CcaParamName(const ::testing::TestParamInfo<Cca>& i) {
  return std::string(CcaName(i.param));
}

// The matrix files Incast writes, removed when the test program ends.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const std::string& p : paths) std::remove(p.c_str());
  }
};
TempFiles& Temps() {
  static TempFiles t;
  return t;
}

// Two senders in other pods into host 8 of a k=4 fat tree: its downlink is a
// 2:1 bottleneck while the short flow lasts; the long one (traced, flow 0)
// has the link alone afterwards.
SimConfig Incast(Cca cca, uint64_t buffer) {
  const std::string path = ::testing::TempDir() + "transport_incast_" + std::string(CcaName(cca)) +
                           std::to_string(buffer) + ".txt";
  std::ofstream(path) << "0 8 " << 8 * kMiB << "\n4 8 " << 4 * kMiB << "\n";
  Temps().paths.push_back(path);
  SimConfig c;
  c.k = 4;
  c.workload = WorkloadKind::kMatrix;
  c.matrix_file = path;
  EXPECT_TRUE(ApplyLbName("ofan", c).ok());
  c.cca = cca;
  c.buffer_bytes = buffer;
  c.trace_flow = 0;
  return c;
}

void ExpectComplete(const SimResult& r, uint64_t unique_packets) {
  EXPECT_EQ(r.flows_incomplete, 0u);
  EXPECT_EQ(r.data_received - r.duplicates, unique_packets);
  EXPECT_EQ(r.data_packets, unique_packets + r.retransmits);
  const uint64_t drops = r.drops_buffer + r.drops_link_down + r.drops_no_route;
  EXPECT_EQ(r.data_packets + r.ack_packets, r.data_received + r.acks_received + drops);
}

class Transport : public ::testing::TestWithParam<Cca> {};

TEST_P(Transport, WindowFallsOnMarksAndRecovers) {
  SimConfig c = Incast(GetParam(), kCcaBufferBytes);
  auto r = RunSim(c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ExpectComplete(*r, (8 + 4) * kMiB / c.payload);
  EXPECT_GT(r->ecn_marks, 0u);
  const auto& tr = r->cwnd_trace;
  ASSERT_GT(tr.size(), 100u);
  auto by_window = [](const auto& a, const auto& b) { return a.second < b.second; };
  const auto lowest = std::min_element(tr.begin(), tr.end(), by_window);
  const auto highest_before = std::max_element(tr.begin(), lowest + 1, by_window);
  EXPECT_LT(lowest->second, 0.8 * highest_before->second) << "the window did not fall on marks";
  const auto highest_after = std::max_element(lowest, tr.end(), by_window);
  EXPECT_GE(highest_after->second, lowest->second + 2) << "the window did not grow back";
}

TEST_P(Transport, EveryFlowCompletesDespiteDrops) {
  // A 5-frame buffer: the incast drops packets; a permutation with random
  // spraying at k=4 reorders and drops.
  SimConfig c = Incast(GetParam(), 5 * 4158);
  auto r = RunSim(c);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GT(r->drops_buffer, 0u);
  EXPECT_GT(r->retransmits, 0u);
  ExpectComplete(*r, (8 + 4) * kMiB / c.payload);

  SimConfig p;
  p.k = 4;
  p.msg_bytes = 512 * kKiB;
  ASSERT_TRUE(ApplyLbName("rps", p).ok());
  p.cca = GetParam();
  p.buffer_bytes = 4 * 4158;
  p.ecn_bytes = 2 * 4158;
  auto q = RunSim(p);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_GT(q->drops_buffer, 0u);
  ExpectComplete(*q, q->flows * (p.msg_bytes / p.payload));
}

TEST_P(Transport, DeterministicPerSeed) {
  SimConfig c = Incast(GetParam(), 8 * 4158);
  auto a = RunSim(c), b = RunSim(c);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->cct_us, b->cct_us);
  EXPECT_EQ(a->events, b->events);
  EXPECT_EQ(a->retransmits, b->retransmits);
  EXPECT_EQ(a->timeouts, b->timeouts);
  EXPECT_EQ(a->cwnd_trace, b->cwnd_trace);
}

INSTANTIATE_TEST_SUITE_P(Ccas, Transport, ::testing::ValuesIn(AllCcas()), CcaParamName);

TEST(TransportNone, FixedRateSendsTheHolesAgainAtItsTimeout) {
  // --cca none: no window; a drop is found by the host's timeout and sent
  // again (sim/sim.cc OooLoss), no duplicate, no window trace.
  SimConfig c = Incast(Cca::kNone, 5 * 4158);
  auto r = RunSim(c);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->drops_buffer, 0u);
  EXPECT_EQ(r->flows_incomplete, 0u);
  EXPECT_GE(r->retransmits, r->drops_buffer);
  EXPECT_GT(r->timeouts, 0u);
  EXPECT_EQ(r->duplicates, 0u);
  EXPECT_TRUE(r->cwnd_trace.empty());
}

TEST(TransportNone, NamesParseAndBadOnesAreRefused) {
  EXPECT_EQ(*ParseCca("none"), Cca::kNone);
  for (Cca c : AllCcas()) EXPECT_EQ(*ParseCca(CcaName(c)), c);
  auto bad = ParseCca("reno");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown congestion control 'reno'"), std::string::npos);
  EXPECT_NE(bad.error().message.find(CcaNames()), std::string::npos);
}

}  // namespace
}  // namespace ofan::sim
