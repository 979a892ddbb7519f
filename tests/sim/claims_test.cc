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

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "sim/paper/figures.h"
#include "workload/fsdp.h"

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

// Fig. 13's note says what its plans run: the paper's bytes by default and
// at full size, 1/100 of them when tiny.
TEST(Claims, Fig13NoteMatchesItsPlans) {
  const Figure* f = FindFigure("13");
  ASSERT_NE(f, nullptr);
  for (Size s : {Size::kTiny, Size::kDefault, Size::kFull}) {
    for (const PointKey& k : f->plan(s).points) {
      EXPECT_DOUBLE_EQ(k.moe_scale, s == Size::kTiny ? 0.01 : 1.0) << SizeName(s);
    }
  }
  bool said = false;
  for (std::string_view n : f->model_notes) {
    said = said || n.find("default and full sizes send the paper's bytes") != n.npos;
  }
  EXPECT_TRUE(said);
}

// ---- One claim function at a time: rows that make each claim hold, fail,
// and (where it needs rows of its own) not computed.

using Set = std::function<void(PointKey&)>;

// lb's measured row at the point `set` makes of the default key.
Row R(const std::string& lb, double infl, const Set& set = nullptr, double sem = 0,
      double queue = 10) {
  PointKey k;
  k.lb = lb;
  if (set) set(k);
  Row r = Measured(k, infl, queue);
  r.cct_inflation_sem = sem;
  return r;
}

Set K(int k) {
  return [k](PointKey& p) { p.k = k; };
}

// REPS, AR, Ofan and 4Ofan at each fat tree k.
std::vector<Row> BySize(const std::vector<std::pair<int, std::array<double, 4>>>& at,
                        double sem = 0) {
  std::vector<Row> rows;
  for (const auto& [k, v] : at) {
    for (size_t i = 0; i < 4; ++i) rows.push_back(R(PaperLbs()[i], v[i], K(k), sem));
  }
  return rows;
}

Row* Get(std::vector<Row>& rows, const std::string& lb, const std::function<bool(const Row&)>& at) {
  for (Row& r : rows) {
    if (r.key.lb == lb && at(r)) return &r;
  }
  ADD_FAILURE() << "no row of " << lb;
  static Row none;
  return &none;
}

#define EXPECT_VERDICT(claims, i, v)                                                           \
  do {                                                                                         \
    ASSERT_LT(size_t{i}, (claims).size());                                                     \
    EXPECT_EQ((claims)[i].verdict, (v)) << (claims)[i].text << " -- " << (claims)[i].measured; \
  } while (0)

constexpr Verdict kH = Verdict::kHolds, kF = Verdict::kFails, kN = Verdict::kNotComputed;

TEST(Claims, AboutAndNotably) {
  EXPECT_TRUE(About(0.05, 0.05));
  EXPECT_TRUE(About(0.038, 0.05));
  EXPECT_TRUE(About(0.062, 0.05));
  EXPECT_FALSE(About(0.037, 0.05));
  EXPECT_FALSE(About(0.063, 0.05));
  EXPECT_FALSE(About(kNaN, 0.05));
  EXPECT_TRUE(Notably(1.26, 1));
  EXPECT_FALSE(Notably(1.25, 1));
  EXPECT_FALSE(Notably(1.1, 1));
  EXPECT_FALSE(Notably(kNaN, 1));
}

TEST(Claims, Fig5a) {
  // k=4 is 16 hosts, k=16 is 1,024: gaps 5 and 11 points as the paper's.
  auto rows = BySize({{4, {0.07, 0.06, 0.009, 0.01}}, {16, {0.14, 0.13, 0.015, 0.02}}});
  auto c = Fig5aClaims(rows);
  ASSERT_EQ(c.size(), 3U);
  EXPECT_VERDICT(c, 0, kH);
  EXPECT_VERDICT(c, 1, kH);
  EXPECT_VERDICT(c, 2, kH);
  // The gap grows, but to 7 points, not about 11.
  Get(rows, Ar(), [](const Row& r) { return r.key.k == 16; })->cct_inflation = 0.09;
  c = Fig5aClaims(rows);
  EXPECT_VERDICT(c, 0, kH);
  EXPECT_VERDICT(c, 1, kF);
  // 4Ofan above AR at 16 hosts; 4Ofan farther from Ofan than from the best.
  rows = BySize({{4, {0.07, 0.06, 0.009, 0.065}}, {16, {0.14, 0.13, 0.015, 0.02}}});
  c = Fig5aClaims(rows);
  EXPECT_VERDICT(c, 0, kF);
  EXPECT_VERDICT(c, 1, kF);
  EXPECT_VERDICT(c, 2, kF);
  // Without a 1,024-host row (the tiny size) the gap's two ends are not
  // both measured.
  rows = BySize({{4, {0.07, 0.06, 0.009, 0.01}}, {6, {0.14, 0.13, 0.015, 0.02}}});
  c = Fig5aClaims(rows);
  EXPECT_VERDICT(c, 0, kH);
  EXPECT_VERDICT(c, 1, kN);
  EXPECT_VERDICT(c, 2, kH);
}

TEST(Claims, Fig5bHoldsWithinTheSeedsSpread) {
  auto rows = BySize({{4, {0.07, 0.06, 0.02, 0.03}}, {10, {0.07, 0.06, 0.01, 0.02}}});
  auto c = Fig5bClaims(rows);
  ASSERT_EQ(c.size(), 2U);
  EXPECT_VERDICT(c, 0, kH);
  EXPECT_VERDICT(c, 1, kH);  // 3 -> 4 points
  // 3 -> 2.5 points: a drop, with one seed (no spread) it fails...
  rows = BySize({{4, {0.07, 0.06, 0.02, 0.03}}, {10, {0.07, 0.06, 0.02, 0.035}}});
  EXPECT_VERDICT(Fig5bClaims(rows), 1, kF);
  // ... and holds within two standard errors (0.5 points per row: the
  // difference's is 1 point, so 2 points may drop) ...
  rows = BySize({{4, {0.07, 0.06, 0.02, 0.03}}, {10, {0.07, 0.06, 0.02, 0.035}}}, 0.005);
  EXPECT_VERDICT(Fig5bClaims(rows), 1, kH);
  // ... but not a drop of 2.5 points.
  rows = BySize({{4, {0.07, 0.06, 0.02, 0.03}}, {10, {0.07, 0.06, 0.02, 0.055}}}, 0.005);
  EXPECT_VERDICT(Fig5bClaims(rows), 1, kF);
  // One size: no trend to judge.
  rows = BySize({{4, {0.07, 0.06, 0.02, 0.03}}});
  EXPECT_VERDICT(Fig5bClaims(rows), 1, kN);
}

TEST(Claims, Fig6) {
  auto make = [](double two_at_16, double drb_at_16) {
    std::vector<Row> rows;
    const std::vector<std::string> lbs = {Ofan(), NOfan(1), NOfan(2), NOfan(4), Drb()};
    const double at4[] = {0.01, 0.012, 0.011, 0.0105, 0.012};
    const double at16[] = {0.03, 0.08, two_at_16, 0.04, drb_at_16};
    for (size_t i = 0; i < lbs.size(); ++i) {
      rows.push_back(R(lbs[i], at4[i], K(4)));
      rows.push_back(R(lbs[i], at16[i], K(16)));
    }
    return rows;
  };
  auto c = Fig6Claims(make(0.05, 0.13));  // 1Ofan at (0.08-0.03)/(0.13-0.03) = 0.5
  ASSERT_EQ(c.size(), 2U);
  EXPECT_VERDICT(c, 0, kH);
  EXPECT_VERDICT(c, 1, kH);
  c = Fig6Claims(make(0.0305, 0.40));  // 2Ofan's gap shrinks; 1Ofan at 0.14
  EXPECT_VERDICT(c, 0, kF);
  EXPECT_VERDICT(c, 1, kF);
  c = Fig6Claims(make(0.05, 0.03));  // DRB = Ofan: no span to be half of
  EXPECT_VERDICT(c, 1, kN);
}

TEST(Claims, Fig7) {
  auto make = [](double gap_at_16m, double reps_at_16m) {
    std::vector<Row> rows;
    const uint64_t msgs[] = {64 * 1024, 1 << 20, 16 << 20};
    for (uint64_t m : msgs) {
      Set at = [m](PointKey& p) { p.msg_bytes = m; };
      const bool last = m == msgs[2];
      rows.push_back(R(Reps(), last ? reps_at_16m : 0.10, at));
      rows.push_back(R(Ar(), last ? 0.01 + gap_at_16m : 0.08, at));
      rows.push_back(R(Ofan(), 0.005, at));
      rows.push_back(R(NOfan(4), 0.01, at));
    }
    return rows;
  };
  auto c = Fig7aClaims(make(0.01, 0.13));  // gap 7 -> 1 points; REPS 1.3x
  ASSERT_EQ(c.size(), 3U);
  EXPECT_VERDICT(c, 0, kH);
  EXPECT_VERDICT(c, 1, kH);
  EXPECT_VERDICT(c, 2, kH);
  c = Fig7aClaims(make(0.07, 0.12));  // gap 7 -> 7 points; REPS 1.2x: not notably
  EXPECT_VERDICT(c, 1, kF);
  EXPECT_VERDICT(c, 2, kF);
  EXPECT_VERDICT(Fig7aClaims(make(0.01, 0.125)), 2, kF);  // 1.25x: the edge of 'about'
  EXPECT_VERDICT(Fig7aClaims(make(0.01, 0.05)), 2, kF);   // REPS gets better
  auto b = Fig7bClaims(make(0.01, 0.13));
  ASSERT_EQ(b.size(), 2U);
  EXPECT_VERDICT(b, 0, kH);
  EXPECT_VERDICT(b, 1, kH);
  EXPECT_VERDICT(Fig7bClaims(make(0.08, 0.13)), 1, kF);
}

// Ofan's CCT increase per payload; Thm. 6 from the 4 KiB row gives 8 KiB:
// alpha = 82 B x 4 MiB / 8 KiB^2 = 5.125 packets, i.e. 0.214 us of excess
// over the bound at 800 Gb/s and 4,178 B frames.
std::vector<Row> Payloads(uint32_t ofan_best, uint32_t reps_best, uint32_t ar_best) {
  std::vector<Row> rows;
  const double excess_at_4k = 5.125 * 4178 / 1e5 / 100;  // of the 100 us bound
  for (uint32_t p : {1024U, 2048U, 4096U, 8192U, 16384U}) {
    Set at = [p](PointKey& k) {
      k.payload = p;
      k.msg_bytes = 4 << 20;
    };
    const double ofan = p == 4096 ? excess_at_4k : p == ofan_best ? 0.001 : 0.005;
    rows.push_back(R(Ofan(), ofan, at));
    rows.push_back(R(Reps(), p == reps_best ? 0.05 : 0.1, at));
    rows.push_back(R(Ar(), p == ar_best ? 0.05 : 0.1, at));
  }
  return rows;
}

TEST(Claims, Fig8) {
  auto a = Fig8aClaims(Payloads(8192, 4096, 2048));
  ASSERT_EQ(a.size(), 2U);
  EXPECT_VERDICT(a, 0, kH);
  EXPECT_VERDICT(a, 1, kH);
  auto b = Fig8bClaims(Payloads(8192, 4096, 2048));
  ASSERT_EQ(b.size(), 3U);
  EXPECT_VERDICT(b, 0, kH);
  EXPECT_VERDICT(b, 1, kH);
  EXPECT_VERDICT(b, 2, kH);
  // Best at 2 KiB, inside the sweep but not the grid point Thm. 6 names;
  // REPS's best no smaller than Ofan's.
  b = Fig8bClaims(Payloads(2048, 2048, 1024));
  EXPECT_VERDICT(b, 0, kH);
  EXPECT_VERDICT(b, 1, kF);
  EXPECT_VERDICT(b, 2, kF);
  // Best at the sweep's end: no sweet spot inside it.
  EXPECT_VERDICT(Fig8aClaims(Payloads(16384, 1024, 1024)), 0, kF);
  // Two payloads are no sweep.
  auto two = Payloads(8192, 4096, 2048);
  two.erase(
      std::remove_if(two.begin(), two.end(), [](const Row& r) { return r.key.payload > 2048; }),
      two.end());
  EXPECT_VERDICT(Fig8aClaims(two), 0, kN);
}

TEST(Claims, Fig9) {
  auto make = [](double ofan_at_10, double sem) {
    std::vector<Row> rows;
    for (double p : {0.0, 0.05, 0.1}) {
      Set at = [p](PointKey& k) { k.fail_prob = p; };
      const double base = p == 0.1 ? 0.88 : p;
      rows.push_back(R(Reps(), base + 0.05, at, sem));
      rows.push_back(R(Ar(), base + 0.0078, at, sem));
      rows.push_back(R(Ofan(), p == 0.1 ? ofan_at_10 : base + 0.0022, at, sem));
      rows.push_back(R(NOfan(4), base + 0.0098, at, sem));
    }
    return rows;
  };
  auto c = Fig9Claims(make(0.8822, 0));
  ASSERT_EQ(c.size(), 2U);
  EXPECT_VERDICT(c, 0, kH);
  EXPECT_VERDICT(c, 1, kH);
  // Ofan 0.02 points above AR at 10 %: with no spread a reversal ...
  c = Fig9Claims(make(0.8880, 0));
  EXPECT_VERDICT(c, 0, kF);
  EXPECT_VERDICT(c, 1, kF);
  // ... within two standard errors of 0.1 point each, the order is kept;
  // Ofan still does not outperform AR there.
  c = Fig9Claims(make(0.8880, 0.001));
  EXPECT_VERDICT(c, 0, kF);
  EXPECT_VERDICT(c, 1, kH);
}

TEST(Claims, Fig10) {
  auto make = [](double reps, double ofan_queue) {
    Set at = [](PointKey& k) {
      k.k = 64;
      k.levels = 2;
    };
    return std::vector<Row>{R(Reps(), reps, at, 0, 49), R(Ar(), 0.18, at, 0, 61),
                            R(Ofan(), 0.03, at, 0, ofan_queue), R(NOfan(4), 0.035, at, 0, 13)};
  };
  auto c = Fig10Claims(make(0.20, 12));  // cuts: 1 - 1.035/1.18 = 12.3 % at the least
  ASSERT_EQ(c.size(), 3U);
  EXPECT_VERDICT(c, 0, kH);
  EXPECT_VERDICT(c, 1, kH);
  EXPECT_VERDICT(c, 2, kH);
  // Below REPS by 10.5 points, but the CCT only 9.2 % lower: a relative
  // cut, not points; and Ofan's queue above REPS's.
  c = Fig10Claims(make(0.14, 50));
  EXPECT_VERDICT(c, 0, kH);
  EXPECT_VERDICT(c, 1, kF);
  EXPECT_VERDICT(c, 2, kF);
  c = Fig10Claims({make(0.2, 12)[0]});
  EXPECT_VERDICT(c, 0, kN);
  EXPECT_VERDICT(c, 1, kN);
  EXPECT_VERDICT(c, 2, kN);
}

std::vector<Row> Mixes(double ar, double rs, double rp, double agg, double edge) {
  auto place = [](std::string pl) { return Set([pl](PointKey& k) { k.placement = pl; }); };
  const std::string mix = NOfan(4) + "+" + Ar();
  return {R(Ar(), ar, place("all")),
          R(NOfan(4), 0.02, place("all")),
          R(mix, rs, place("random-switches")),
          R(mix, rp, place("random-pods")),
          R(mix, agg, place("agg")),
          R(mix, edge, place("edge"))};
}

TEST(Claims, Fig11) {
  auto c = Fig11Claims(Mixes(0.13, 0.10, 0.10, 0.12, 0.08));  // midpoint 7.5 %
  ASSERT_EQ(c.size(), 4U);
  for (size_t i = 0; i < 4; ++i) EXPECT_VERDICT(c, i, kH);
  c = Fig11Claims(Mixes(0.13, 0.10, 0.10, 0.13, 0.07));  // agg ties AR; edge below the midpoint
  EXPECT_VERDICT(c, 0, kF);
  EXPECT_VERDICT(c, 1, kH);
  EXPECT_VERDICT(c, 2, kF);
  EXPECT_VERDICT(c, 3, kH);
  c = Fig11Claims(Mixes(0.20, 0.15, 0.12, 0.15, 0.12));  // midpoint 11 %; edge ties a pod
  EXPECT_VERDICT(c, 0, kH);
  EXPECT_VERDICT(c, 1, kF);
  EXPECT_VERDICT(c, 2, kH);
  EXPECT_VERDICT(c, 3, kF);
  auto no_ar = Mixes(0.13, 0.10, 0.10, 0.12, 0.08);
  no_ar.erase(no_ar.begin());
  c = Fig11Claims(no_ar);
  EXPECT_VERDICT(c, 0, kN);
  EXPECT_VERDICT(c, 1, kN);
  EXPECT_VERDICT(c, 2, kN);
  EXPECT_VERDICT(c, 3, kH);  // needs the mixes only
}

TEST(Claims, Fig12) {
  auto make = [](double reps_dctcp_x, double ofan_dctcp, double mswift_ar) {
    auto with = [](Cca c) { return Set([c](PointKey& k) { k.cca = c; }); };
    return std::vector<Row>{
        R(Reps(), 0.15, with(Cca::kNone)),
        R(Ar(), 0.08, with(Cca::kNone)),
        R(Ofan(), 0.008, with(Cca::kNone)),
        R(NOfan(4), 0.009, with(Cca::kNone)),
        R(Reps(), reps_dctcp_x * 1.15 - 1, with(Cca::kDctcp)),
        R(Ar(), 3.2 * 1.08 - 1, with(Cca::kDctcp)),
        R(Ofan(), ofan_dctcp, with(Cca::kDctcp)),
        R(NOfan(4), 0.008, with(Cca::kDctcp)),
        R(Reps(), 0.60, with(Cca::kNscc)),
        R(Ar(), 0.47, with(Cca::kNscc)),
        R(Ofan(), 0.019, with(Cca::kNscc)),
        R(NOfan(4), 0.021, with(Cca::kNscc)),
        R(Reps(), 1.45, with(Cca::kMswift)),
        R(Ar(), mswift_ar, with(Cca::kMswift)),
        R(Ofan(), 0.06, with(Cca::kMswift)),
        R(NOfan(4), 0.07, with(Cca::kMswift)),
    };
  };
  auto c = Fig12Claims(make(3.5, 0.005, 2.25));
  ASSERT_EQ(c.size(), 5U);
  for (size_t i = 0; i < 5; ++i) EXPECT_VERDICT(c, i, kH);
  c = Fig12Claims(make(2.0, 0.06, 0.15));  // MSwift's least gap 8 points: < 14, < NSCC's
  EXPECT_VERDICT(c, 0, kF);
  EXPECT_VERDICT(c, 1, kF);
  EXPECT_VERDICT(c, 2, kH);
  EXPECT_VERDICT(c, 3, kF);
  EXPECT_VERDICT(c, 4, kF);
}

TEST(Claims, Fig13) {
  // none/no EPLB, none/EPLB, NSCC/no EPLB, NSCC/EPLB: REPS, AR, Ofan.
  auto make = [](double ofan_none_eplb, double ofan_nscc_eplb) {
    std::vector<Row> rows;
    const double v[4][3] = {{0.011, 0.0085, 0.0049},
                            {0.0125, 0.0067, ofan_none_eplb},
                            {0.0518, 0.0306, 0.0131},
                            {0.0721, 0.0446, ofan_nscc_eplb}};
    int i = 0;
    for (Cca c : {Cca::kNone, Cca::kNscc}) {
      for (bool eplb : {false, true}) {
        Set at = [c, eplb](PointKey& k) {
          k.cca = c;
          k.eplb = eplb;
        };
        rows.push_back(R(Reps(), v[i][0], at));
        rows.push_back(R(Ar(), v[i][1], at));
        rows.push_back(R(Ofan(), v[i][2], at));
        ++i;
      }
    }
    return rows;
  };
  auto c = Fig13Claims(make(0.0028, 0.0122));
  ASSERT_EQ(c.size(), 4U);
  for (size_t i = 0; i < 4; ++i) EXPECT_VERDICT(c, i, kH);
  // A tie with AR is not "a bit better"; Ofan 0.9x AR's is not "clearly".
  c = Fig13Claims(make(0.0067, 0.04));
  EXPECT_VERDICT(c, 0, kF);
  EXPECT_VERDICT(c, 1, kH);
  EXPECT_VERDICT(c, 2, kF);
  EXPECT_VERDICT(c, 3, kF);
}

TEST(Claims, Fig14) {
  // Per CCA: REPS, AR, Ofan, 4Ofan at 8b, 70b, 405b.
  auto make = [](double ofan_nscc_405, double ar_nscc_405, double ofan_mswift_70) {
    std::vector<Row> rows;
    const double nscc[3][4] = {{0.39, 0.25, 0.02, 0.021},
                               {0.39, 0.24, 0.015, 0.016},
                               {0.39, ar_nscc_405, ofan_nscc_405, 0.0146}};
    const double mswift[3][4] = {
        {0.65, 1.3, 0.03, 0.03}, {0.70, 1.1, ofan_mswift_70, 0.02}, {0.60, 1.0, 0.01538, 0.01667}};
    for (Cca c : {Cca::kNscc, Cca::kMswift}) {
      for (int m = 0; m < 3; ++m) {
        Set at = [c, m](PointKey& k) {
          k.cca = c;
          k.model = std::string(workload::kLlama3[m].name);
        };
        for (size_t i = 0; i < 4; ++i) {
          rows.push_back(R(PaperLbs()[i], (c == Cca::kNscc ? nscc : mswift)[m][i], at));
        }
      }
    }
    return rows;
  };
  auto c = Fig14Claims(make(0.0125, 0.22, 0.02));  // NSCC: 0.22 / 0.0125 = 17.6x
  ASSERT_EQ(c.size(), 8U);
  for (size_t i = 0; i < 8; ++i) EXPECT_VERDICT(c, i, kH);
  // Ofan at the bound (1,100x, not about 16x); AR 0.25 -> 0.19 (0.76x
  // holds), Ofan up from 8b to 70b under MSwift.
  c = Fig14Claims(make(0.0002, 0.19, 0.04));
  EXPECT_VERDICT(c, 0, kF);
  EXPECT_VERDICT(c, 4, kH);
  EXPECT_VERDICT(c, 7, kF);
  c = Fig14Claims(make(0.0125, 0.18, 0.02));  // 0.72x: not about constant
  EXPECT_VERDICT(c, 4, kF);
}

}  // namespace
}  // namespace ofan::sim::paper
