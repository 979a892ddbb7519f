#include "sim/workload.h"

#include <gtest/gtest.h>

#include <set>

namespace ofan::sim {
namespace {

lb::FatTree Tree(int k, int levels = 3) { return *lb::FatTree::Make(k, levels); }

TEST(Workload, PermutationIsADerangementAndDependsOnTheSeed) {
  const lb::FatTree t = Tree(8);
  SimConfig c;
  c.k = 8;
  std::vector<Flow> first;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    c.seed = seed;
    auto flows = MakeWorkload(c, t);
    ASSERT_TRUE(flows.ok());
    ASSERT_EQ(flows->size(), 128u);
    std::set<uint32_t> dsts;
    for (const Flow& f : *flows) {
      EXPECT_NE(f.src, f.dst);
      EXPECT_EQ(f.bytes, c.msg_bytes);
      dsts.insert(f.dst);
    }
    EXPECT_EQ(dsts.size(), 128u);
    if (seed == 1) first = *flows;
  }
  c.seed = 1;
  auto again = MakeWorkload(c, t);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ((*again)[i].dst, first[i].dst);
  c.seed = 2;
  auto other = MakeWorkload(c, t);
  size_t same = 0;
  for (size_t i = 0; i < first.size(); ++i) same += (*other)[i].dst == first[i].dst;
  EXPECT_LT(same, first.size() / 2);
}

TEST(Workload, AllToAllAndPair) {
  const lb::FatTree t = Tree(4);
  SimConfig c;
  c.k = 4;
  c.workload = WorkloadKind::kA2a;
  auto a2a = MakeWorkload(c, t);
  ASSERT_TRUE(a2a.ok());
  EXPECT_EQ(a2a->size(), 16u * 15u);
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  for (const Flow& f : *a2a) pairs.insert({f.src, f.dst});
  EXPECT_EQ(pairs.size(), 240u);
  c.workload = WorkloadKind::kPair;
  auto pair = MakeWorkload(c, t);
  ASSERT_EQ(pair->size(), 2u);
  EXPECT_EQ((*pair)[0].src, 0u);
  EXPECT_EQ((*pair)[0].dst, 15u);
  EXPECT_EQ((*pair)[1].src, 15u);
  EXPECT_EQ((*pair)[1].dst, 0u);
}

TEST(Matrix, ParsesIndicesAddressesSizesAndComments) {
  const lb::FatTree t = Tree(4);
  auto flows = ParseMatrix(
      "# src dst size\n"
      "0 15 1MiB\n"
      "\n"
      "10.3.1.3 10.0.0.2 4096   # by address\n",
      t);
  ASSERT_TRUE(flows.ok()) << flows.error().message;
  ASSERT_EQ(flows->size(), 2u);
  EXPECT_EQ((*flows)[0].bytes, 1u << 20);
  EXPECT_EQ((*flows)[1].src, 15u);
  EXPECT_EQ((*flows)[1].dst, 0u);
  EXPECT_EQ((*flows)[1].bytes, 4096u);
}

TEST(Matrix, RejectsBadLinesWithTheLineNumber) {
  const lb::FatTree t = Tree(4);
  const char* bad[] = {
      "0 1\n",              // missing size
      "0 1 1MiB extra\n",   // trailing junk
      "0 16 1MiB\n",        // host out of range
      "0 0 1MiB\n",         // self
      "0 1 0\n",            // empty flow
      "0 1 12XB\n",         // bad size
      "11.0.0.2 1 1MiB\n",  // foreign address
      "10.0.0.1 1 1MiB\n",  // slot below 2
      "1.2.3 1 1MiB\n",     // not an address
      "x 1 1MiB\n",         // not a host
      "# nothing\n",        // no flows
  };
  for (const char* text : bad) {
    auto r = ParseMatrix(std::string("# header\n") + text, t);
    ASSERT_FALSE(r.ok()) << text;
    if (std::string(text).rfind('#', 0) != 0) {
      EXPECT_NE(r.error().message.find("line 2"), std::string::npos) << r.error().message;
    }
  }
}

TEST(Matrix, MissingFileIsAnIoError) {
  const lb::FatTree t = Tree(4);
  SimConfig c;
  c.k = 4;
  c.workload = WorkloadKind::kMatrix;
  c.matrix_file = "/nonexistent/matrix.txt";
  auto r = MakeWorkload(c, t);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kIo);
}

}  // namespace
}  // namespace ofan::sim
