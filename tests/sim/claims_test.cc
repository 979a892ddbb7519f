// The paper's §6 claims (sim/paper/claims.h) judged from hand-made rows: a
// claim whose rows are missing or measured nothing is not computed, never
// holding; every figure's plan gives its claims the rows they look up.
//
// expects:   nothing but the claims library (no simulation runs here)
// modifies:  nothing
// next:      a claim changed in claims.cc gets rows here that make it hold
//            and fail
#include "sim/paper/claims.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "sim/paper/figures.h"

namespace ofan::sim::paper {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A measured row: one seed, a bound of 100 us, CCT increase `infl`.
Row Measured(PointKey key, double infl, double queue = 10) {
  Row r;
  r.key = std::move(key);
  r.hosts = HostsOf(r.key.k, r.key.levels);
  r.seeds = 1;
  r.cct_lower_bound_us = 100;
  r.cct_us = 100 * (1 + infl);
  r.cct_inflation = infl;
  r.queue_max_pkts = queue;
  r.frame_bytes = r.key.payload + 62;
  r.frame_wire_bytes = r.frame_bytes + 20;
  return r;
}

// Every point of a figure's default plan, measured: the switch schemes
// (Ofan, POfan) at 1 %, REPS and AR at 10 % and 12 %, DRB at 8 %.
std::vector<Row> PlanRows(const Figure& f) {
  std::vector<Row> rows;
  for (const PointKey& k : f.plan(Size::kDefault).points) {
    const double infl = k.lb == Reps() ? 0.10 : k.lb == Ar() ? 0.12 : k.lb == Drb() ? 0.08 : 0.01;
    rows.push_back(Measured(k, infl));
  }
  return rows;
}

void ExpectAll(const std::vector<Claim>& claims, Verdict v, const std::string& what) {
  ASSERT_FALSE(claims.empty()) << what;
  for (const Claim& c : claims) {
    EXPECT_EQ(c.verdict, v) << what << ": " << c.text << " -- " << c.measured;
    EXPECT_EQ(c.holds(), v == Verdict::kHolds) << what << ": " << c.text;
  }
}

TEST(Claims, VerdictNames) {
  EXPECT_EQ(VerdictName(Verdict::kHolds), "holds");
  EXPECT_EQ(VerdictName(Verdict::kFails), "does not hold");
  EXPECT_EQ(VerdictName(Verdict::kNotComputed), "not computed");
}

TEST(Claims, JudgeIsNotComputedOnNaNOrInfinity) {
  EXPECT_EQ(Judge("t", {1, 2}, true, "m").verdict, Verdict::kHolds);
  EXPECT_EQ(Judge("t", {1, 2}, false, "m").verdict, Verdict::kFails);
  EXPECT_EQ(Judge("t", {}, true, "m").verdict, Verdict::kHolds);
  for (double bad : {kNaN, std::numeric_limits<double>::infinity()}) {
    const Claim c = Judge("t", {1, bad}, true, "m");
    EXPECT_EQ(c.verdict, Verdict::kNotComputed);
    EXPECT_FALSE(c.holds());
    EXPECT_EQ(c.text, "t");
    EXPECT_NE(c.measured.find("not computed"), std::string::npos) << c.measured;
  }
}

TEST(Claims, ARowThatMeasuredNothingHasNoInflation) {
  PointKey k;
  k.lb = Ofan();
  const Row good = Measured(k, 0.05);
  EXPECT_DOUBLE_EQ(Inflation(good), 0.05);
  EXPECT_DOUBLE_EQ(Cct(good), 105);
  Row r = good;
  r.seeds = 0;
  EXPECT_TRUE(std::isnan(Inflation(r)));
  EXPECT_TRUE(std::isnan(Cct(r)));
  r = good;
  r.cct_lower_bound_us = 0;  // sim.cc gives such a run an inflation of 0
  r.cct_inflation = 0;
  EXPECT_TRUE(std::isnan(Inflation(r)));
  r = good;
  r.flows_incomplete = 1;
  EXPECT_TRUE(std::isnan(Inflation(r)));
  r = good;
  r.cct_inflation = kNaN;
  EXPECT_TRUE(std::isnan(Inflation(r)));
}

TEST(Claims, NoRowsHoldNoClaim) {
  for (const Figure& f : Figures()) {
    ExpectAll(f.claims({}), Verdict::kNotComputed, "figure " + std::string(f.id));
  }
}

TEST(Claims, RowsThatMeasuredNothingHoldNoClaim) {
  for (const Figure& f : Figures()) {
    std::vector<Row> rows = PlanRows(f);
    for (Row& r : rows) {
      r.cct_inflation = kNaN;
      r.cct_us = kNaN;
    }
    ExpectAll(f.claims(rows), Verdict::kNotComputed, "figure " + std::string(f.id) + ", NaN");
    rows = PlanRows(f);
    for (Row& r : rows) r.seeds = 0;
    ExpectAll(f.claims(rows), Verdict::kNotComputed, "figure " + std::string(f.id) + ", no seeds");
  }
}

// One NaN row among measured ones: the claims that look it up are not
// computed, and none of them holds because of it.
TEST(Claims, ANaNRowMakesTheClaimsThatNeedItNotComputed) {
  PointKey k;
  std::vector<Row> rows;
  for (const std::string& lb : PaperLbs()) {
    k.lb = lb;
    for (int size : {4, 16}) {
      k.k = size;
      rows.push_back(Measured(k, lb == Reps() || lb == Ar() ? 0.10 : 0.01));
    }
  }
  rows.back().cct_inflation = kNaN;  // 4Ofan at k=16
  const auto claims = Fig5bClaims(rows);
  ASSERT_EQ(claims.size(), 2U);
  EXPECT_EQ(claims[0].verdict, Verdict::kNotComputed) << claims[0].measured;
  EXPECT_EQ(claims[1].verdict, Verdict::kNotComputed) << claims[1].measured;
}

// Every claim finds the rows it looks up among its figure's plan: none is
// left not computed by a key the plan does not run.
TEST(Claims, EveryFiguresPlanFeedsItsClaims) {
  for (const Figure& f : Figures()) {
    for (const Claim& c : f.claims(PlanRows(f))) {
      EXPECT_NE(c.verdict, Verdict::kNotComputed)
          << "figure " << f.id << ": " << c.text << " -- " << c.measured;
    }
  }
}

}  // namespace
}  // namespace ofan::sim::paper
