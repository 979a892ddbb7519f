// The paper's §6 claims as functions of measured rows: one function per
// figure, each returning that figure's claims judged from the rows it is
// given (figures.h names which function a figure uses).
//
// expects:   rows of any size and order, hand-made or from `ofan-sim paper`;
//            a claim looks its rows up by key (lb and the swept value)
// modifies:  nothing
// next:      every claim is kHolds, kFails or kNotComputed; it is
//            kNotComputed, never kHolds, when a row it needs is missing or
//            measured nothing (rows.h: no seeds, no bound, flows incomplete,
//            NaN), so an empty figure holds no claim
//            (tests/sim/claims_test.cc)
//
// Claims are computed from the rows and never from expected outcomes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/paper/rows.h"

namespace ofan::sim::paper {

enum class Verdict : uint8_t { kHolds, kFails, kNotComputed };
// "holds" | "does not hold" | "not computed"
std::string_view VerdictName(Verdict v);

struct Claim {
  std::string text;  // the paper's claim, as it is tested here
  Verdict verdict = Verdict::kNotComputed;
  std::string measured;  // what we measured, and by how much it holds or misses
  bool holds() const { return verdict == Verdict::kHolds; }
};

// `ok` judged from `inputs`: kNotComputed if any input is NaN or infinite
// (a row missing or without a measurement), else kHolds iff ok.
Claim Judge(std::string text, const std::vector<double>& inputs, bool ok, std::string measured);
Claim NotComputed(std::string text, std::string why);

// A row's CCT increase over the bound and its CCT; NaN when the row
// measured none (no seeds, no positive bound, flows incomplete, NaN).
double Inflation(const Row& r);
double Cct(const Row& r);

// How a claim reads the paper's words where they give no number; each
// claim's text repeats the reading it uses.
//   "about x", "roughly x", "about constant": within ±25 % of x (About);
//   "notably" or "clearly" above x: more than 25 % above x (Notably), out
//     of the band "about" allows;
//   "a bit" or "slightly" above: strictly above, with no cap: §6.5 calls
//     its own 8 % (NSCC) and 14 % (MSwift) "a bit larger";
//   "holds" (a gap that holds or grows) and "about the same" (an order):
//     no drop or reversal beyond two standard errors over the seeds
//     (kSpreadSems; with one seed, none at all);
//   "grows", "expands", "decreases", "below", "outperforms": strictly.
inline constexpr double kAbout = 0.25;
inline constexpr double kSpreadSems = 2;
bool About(double v, double x);    // |v - x| <= kAbout |x|
bool Notably(double v, double x);  // v > (1 + kAbout) x

// One function per figure of §6 (Fig. 5c's claims are Fig. 5b's).
std::vector<Claim> Fig5aClaims(const std::vector<Row>& rows);
std::vector<Claim> Fig5bClaims(const std::vector<Row>& rows);
std::vector<Claim> Fig6Claims(const std::vector<Row>& rows);
std::vector<Claim> Fig7aClaims(const std::vector<Row>& rows);
std::vector<Claim> Fig7bClaims(const std::vector<Row>& rows);
std::vector<Claim> Fig8aClaims(const std::vector<Row>& rows);
std::vector<Claim> Fig8bClaims(const std::vector<Row>& rows);
std::vector<Claim> Fig9Claims(const std::vector<Row>& rows);
std::vector<Claim> Fig10Claims(const std::vector<Row>& rows);
std::vector<Claim> Fig11Claims(const std::vector<Row>& rows);
std::vector<Claim> Fig12Claims(const std::vector<Row>& rows);
std::vector<Claim> Fig13Claims(const std::vector<Row>& rows);
std::vector<Claim> Fig14Claims(const std::vector<Row>& rows);

}  // namespace ofan::sim::paper
