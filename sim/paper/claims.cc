// The §6 claims as functions of rows (contract: claims.h). Each claim's
// text says how it reads the paper's words; a claim that needs a row the
// rows lack, or one that measured nothing, is NotComputed.
#include "sim/paper/claims.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <utility>

#include "common/units.h"
#include "sim/transport/cca.h"
#include "workload/fsdp.h"

namespace ofan::sim::paper {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Pct(double x) { return fmt::format("{:.2f} %", 100 * x); }
std::string Pp(double x) { return fmt::format("{:.2f} pp", 100 * x); }
std::string Hosts(const Row& r) { return fmt::format("{} hosts", r.hosts); }
// ---- Looking rows up -------------------------------------------------------

using Pred = std::function<bool(const PointKey&)>;

const Row* Find(const std::vector<Row>& rows, const std::string& lb, const Pred& pred) {
  for (const Row& r : rows) {
    if (r.key.lb == lb && pred(r.key)) return &r;
  }
  return nullptr;
}

double Infl(const std::vector<Row>& rows, const std::string& lb, const Pred& pred) {
  const Row* r = Find(rows, lb, pred);
  return r ? Inflation(*r) : kNaN;
}

// The rows of one lb in row order (the plan's order of the swept value).
std::vector<const Row*> Of(
    const std::vector<Row>& rows, const std::string& lb,
    const Pred& pred = [](const PointKey&) { return true; }) {
  std::vector<const Row*> out;
  for (const Row& r : rows) {
    if (r.key.lb == lb && pred(r.key)) out.push_back(&r);
  }
  return out;
}

// A row's max queue; NaN when the row measured nothing (Inflation).
double Queue(const Row& r) { return std::isnan(Inflation(r)) ? kNaN : r.queue_max_pkts; }

// A claim that needs rows the run did not produce.
Claim Missing(std::string text) { return NotComputed(std::move(text), "rows missing"); }

// The least and the greatest of xs, NaN if any is NaN (std::min and
// std::max drop a NaN or keep it by argument order).
double Least(std::initializer_list<double> xs) {
  double m = std::numeric_limits<double>::infinity();
  for (double x : xs) m = std::isnan(x) || std::isnan(m) ? kNaN : std::min(m, x);
  return m;
}
double Greatest(std::initializer_list<double> xs) {
  double m = -std::numeric_limits<double>::infinity();
  for (double x : xs) m = std::isnan(x) || std::isnan(m) ? kNaN : std::max(m, x);
  return m;
}

// min over `a` minus max over `b` of the inflation at the rows matching
// pred: how far every scheme of b stays below every scheme of a; NaN if a
// row is missing or measured nothing.
double Margin(const std::vector<Row>& rows, const std::vector<std::string>& a,
              const std::vector<std::string>& b, const Pred& pred) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& n : a) lo = Least({lo, Infl(rows, n, pred)});
  for (const auto& n : b) hi = Greatest({hi, Infl(rows, n, pred)});
  return lo - hi;
}

// "b below a at every point of the sweep": the margin at each point.
template <class T, class Get>
Claim BelowEverywhere(const std::vector<Row>& rows, std::string text,
                      const std::vector<std::string>& a, const std::vector<std::string>& b, Get get,
                      const std::function<std::string(T)>& show) {
  // Every swept value any of the schemes ran: a scheme missing there
  // leaves the margin NaN.
  std::vector<T> values;
  for (const auto& lb : a) {
    for (const Row* r : Of(rows, lb)) values.push_back(get(r->key));
  }
  for (const auto& lb : b) {
    for (const Row* r : Of(rows, lb)) values.push_back(get(r->key));
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  if (values.empty()) return Missing(std::move(text));
  bool holds = true;
  double worst = std::numeric_limits<double>::infinity();
  std::string where;
  for (const T& v : values) {
    const double m = Margin(rows, a, b, [&](const PointKey& k) { return get(k) == v; });
    if (!(m > 0)) holds = false;
    if (m < worst || std::isnan(m)) worst = m, where = show(v);
    if (std::isnan(m)) break;
  }
  return Judge(
      std::move(text), {worst}, holds,
      fmt::format("smallest margin {} at {} ({} points)", Pp(worst), where, values.size()));
}

// The first and last row of one lb in a sweep.
std::pair<const Row*, const Row*> Ends(const std::vector<Row>& rows, const std::string& lb) {
  auto v = Of(rows, lb);
  if (v.empty()) return {nullptr, nullptr};
  return {v.front(), v.back()};
}

double BestExisting(const std::vector<Row>& rows, const Pred& pred) {
  return Least({Infl(rows, Reps(), pred), Infl(rows, Ar(), pred)});
}

// ---- Claims shared by several figures --------------------------------------

// 5b, 5c, 7b: Ofan and 4Ofan below REPS and AR at every point, and the gap
// at the last point compared with the first (grows: ratio > 1; holds: >=
// 3/4 of it; shrinks: < 1).
enum class GapTrend : uint8_t { kGrows, kHolds, kShrinks };

template <class Get>
std::vector<Claim> OrderAndGap(const std::vector<Row>& rows, Get get,
                               const std::function<std::string(decltype(get(PointKey{})))>& show,
                               std::string_view what, GapTrend trend,
                               std::string_view paper_numbers) {
  using T = decltype(get(PointKey{}));
  std::vector<Claim> out;
  out.push_back(BelowEverywhere<T>(
      rows, fmt::format("Ofan and 4Ofan stay below REPS and AR at every {}", what), {Reps(), Ar()},
      {Ofan(), NOfan(4)}, get, show));
  auto [first, last] = Ends(rows, NOfan(4));
  const char* verb = trend == GapTrend::kGrows   ? "grows"
                     : trend == GapTrend::kHolds ? "holds (at least 3/4 of it) or grows"
                                                 : "decreases";
  std::string text = fmt::format(
      "the CCT gap between 4Ofan and the best of REPS and AR {} from the smallest to the "
      "largest {}{}",
      verb, what, paper_numbers);
  if (!first || first == last) {
    out.push_back(Missing(std::move(text)));
    return out;
  }
  auto at = [&](const Row* r) {
    const auto v = get(r->key);
    return BestExisting(rows, [&](const PointKey& k) { return get(k) == v; }) - Inflation(*r);
  };
  const double g0 = at(first), g1 = at(last);
  const bool holds = trend == GapTrend::kGrows   ? g1 > g0
                     : trend == GapTrend::kHolds ? g1 >= 0.75 * g0
                                                 : g1 < g0;
  std::string along;
  for (const Row* r : Of(rows, NOfan(4))) along += (along.empty() ? "" : ", ") + Pp(at(r));
  out.push_back(Judge(
      std::move(text), {g0, g1}, holds,
      fmt::format("{} at {} -> {} at {} ({:+.2f} pp; along the sweep: {})", Pp(g0),
                  show(get(first->key)), Pp(g1), show(get(last->key)), 100 * (g1 - g0), along)));
  return out;
}

std::function<std::string(int)> ShowK(const std::vector<Row>& rows) {
  return [&rows](int k) {
    for (const Row& r : rows) {
      if (r.key.k == k) return fmt::format("k={} ({} hosts)", k, r.hosts);
    }
    return fmt::format("k={}", k);
  };
}
std::string ShowMsg(uint64_t m) { return FormatSize(m); }

auto GetK = [](const PointKey& k) { return k.k; };
auto GetMsg = [](const PointKey& k) { return k.msg_bytes; };

}  // namespace

std::vector<Claim> Fig5aClaims(const std::vector<Row>& rows) {
  auto out = OrderAndGap(rows, GetK, ShowK(rows), "network size", GapTrend::kGrows,
                         " (paper: about 5 % at 16 nodes to about 11 % at 1,024)");
  std::string text =
      "the gap between 4Ofan and Ofan remains reasonably small: below the gap between 4Ofan and "
      "the best of REPS and AR at every size";
  double worst = -std::numeric_limits<double>::infinity();
  bool holds = true;
  std::string where;
  for (const Row* r : Of(rows, NOfan(4))) {
    const int k = r->key.k;
    auto at = [k](const PointKey& p) { return p.k == k; };
    const double pofan_gap = Inflation(*r) - Infl(rows, Ofan(), at);
    const double existing_gap = BestExisting(rows, at) - Inflation(*r);
    if (!(pofan_gap < existing_gap)) holds = false;
    if (pofan_gap - existing_gap > worst || std::isnan(pofan_gap - existing_gap)) {
      worst = pofan_gap - existing_gap;
      where = fmt::format("{}: 4Ofan-Ofan {} vs best existing-4Ofan {}", ShowK(rows)(k),
                          Pp(pofan_gap), Pp(existing_gap));
      if (std::isnan(worst)) break;
    }
  }
  if (where.empty()) {
    out.push_back(Missing(std::move(text)));
  } else {
    out.push_back(Judge(std::move(text), {worst}, holds, "closest at " + where));
  }
  return out;
}
std::vector<Claim> Fig5bClaims(const std::vector<Row>& rows) {
  return OrderAndGap(rows, GetK, ShowK(rows), "network size", GapTrend::kHolds, "");
}

std::vector<Claim> Fig6Claims(const std::vector<Row>& rows) {
  std::vector<Claim> out;
  auto v = Of(rows, NOfan(4));
  std::string t1 = "the gap between POfan (4Ofan) and Ofan expands as the network grows";
  std::string t2 =
      "1Ofan sits about halfway between Ofan and DRB (consolidation at the aggregation "
      "switches is about half the Ofan-DRB gap): (1Ofan - Ofan) / (DRB - Ofan) in [0.25, 0.75] "
      "at the largest size";
  if (v.size() < 2) return {Missing(t1), Missing(t2)};
  auto gap = [&](const Row* r) {
    const int k = r->key.k;
    return Inflation(*r) - Infl(rows, Ofan(), [k](const PointKey& p) { return p.k == k; });
  };
  const double g0 = gap(v.front()), g1 = gap(v.back());
  out.push_back(Judge(
      t1, {g0, g1}, g1 > g0,
      fmt::format("{} at {} -> {} at {}", Pp(g0), Hosts(*v.front()), Pp(g1), Hosts(*v.back()))));
  const int k = v.back()->key.k;
  auto at = [k](const PointKey& p) { return p.k == k; };
  const double o = Infl(rows, Ofan(), at), one = Infl(rows, NOfan(1), at),
               drb = Infl(rows, Drb(), at);
  const double pos = (one - o) / (drb - o);
  out.push_back(Judge(t2, {pos}, pos >= 0.25 && pos <= 0.75,
                      fmt::format("{:.2f} at {} (Ofan {}, 1Ofan {}, DRB {})", pos, Hosts(*v.back()),
                                  Pct(o), Pct(one), Pct(drb))));
  return out;
}

std::vector<Claim> Fig7bClaims(const std::vector<Row>& rows) {
  return OrderAndGap<decltype(GetMsg)>(rows, GetMsg, ShowMsg, "message size", GapTrend::kShrinks,
                                       "");
}
std::vector<Claim> Fig7aClaims(const std::vector<Row>& rows) {
  auto out = Fig7bClaims(rows);
  std::string text =
      "REPS gets notably worse at very large message size (the paper conjectures REPS's freezing "
      "mode): its CCT increase at the largest message is above the one before";
  auto v = Of(rows, Reps());
  if (v.size() < 2) {
    out.push_back(Missing(text));
    return out;
  }
  const Row* a = v[v.size() - 2];
  const Row* b = v.back();
  const double ia = Inflation(*a), ib = Inflation(*b);
  out.push_back(Judge(text, {ia, ib}, ib > ia,
                      fmt::format("{} at {} -> {} at {}", Pct(ia), FormatSize(a->key.msg_bytes),
                                  Pct(ib), FormatSize(b->key.msg_bytes))));
  return out;
}

std::vector<Claim> Fig8Claims(const std::vector<Row>& rows) {
  std::vector<Claim> out;
  // The row of lb's lowest CCT; none if a row of lb measured nothing.
  auto best = [&](const std::string& lb) -> const Row* {
    const Row* b = nullptr;
    for (const Row* r : Of(rows, lb)) {
      if (std::isnan(Cct(*r))) return nullptr;
      if (!b || r->cct_us < b->cct_us) b = r;
    }
    return b;
  };
  auto v = Of(rows, Ofan());
  const std::string t1 =
      "there is a clear sweet spot in packet size: Ofan's CCT is lowest strictly inside the "
      "swept range";
  const std::string t2 =
      "Thm. 6 roughly predicts the simulated sweet spot: Ofan's best payload within 2x of "
      "sqrt(H D / alpha)";
  const std::string t3 =
      "Ofan's shorter queues encourage larger packets: Ofan's best payload is at least REPS's "
      "and AR's";
  const Row* b = best(Ofan());
  if (v.size() < 3 || !b) return {Missing(t1), Missing(t2), Missing(t3)};
  out.push_back(Judge(t1, {b->cct_us}, b != v.front() && b != v.back(),
                      fmt::format("lowest CCT {:.2f} us at payload {} (swept {}..{})", b->cct_us,
                                  FormatSize(b->key.payload), FormatSize(v.front()->key.payload),
                                  FormatSize(v.back()->key.payload))));
  // Thm. 6: P - H = sqrt(H D / alpha), H the per-packet overhead on the
  // wire (header + gap), D the message, alpha Ofan's constant queueing in
  // packets: its CCT excess over the bound at the payload nearest 4 KiB,
  // in frame times of that payload.
  const Row* ref = v.front();
  for (const Row* r : v) {
    if (std::abs(std::log2(r->key.payload / 4096.0)) <
        std::abs(std::log2(ref->key.payload / 4096.0)))
      ref = r;
  }
  static const double link_bytes_per_us = SimConfig{}.link_gbps * 1e3 / 8;
  const double overhead = ref->frame_wire_bytes - ref->key.payload;
  const double alpha =
      (ref->cct_us - ref->cct_lower_bound_us) * link_bytes_per_us / ref->frame_wire_bytes;
  const double d = static_cast<double>(ref->key.msg_bytes);
  const double thm6 = alpha > 0 ? std::sqrt(overhead * d / alpha) : 0;
  const double ratio = thm6 > 0 ? b->key.payload / thm6 : 0;
  out.push_back(Judge(t2, {alpha, thm6, ratio}, ratio >= 0.5 && ratio <= 2.0,
                      fmt::format("simulated {} B, Thm. 6 {:.0f} B (H = {:.0f} B, D = {}, alpha = "
                                  "{:.2f} packets from Ofan at {}), ratio {:.2f}",
                                  b->key.payload, thm6, overhead, FormatSize(ref->key.msg_bytes),
                                  alpha, FormatSize(ref->key.payload), ratio)));
  const Row* br = best(Reps());
  const Row* ba = best(Ar());
  if (!br || !ba) {
    out.push_back(Missing(t3));
    return out;
  }
  out.push_back(
      Judge(t3, {}, b->key.payload >= br->key.payload && b->key.payload >= ba->key.payload,
            fmt::format("best payload: Ofan {}, REPS {}, AR {}", FormatSize(b->key.payload),
                        FormatSize(br->key.payload), FormatSize(ba->key.payload))));
  return out;
}

std::vector<Claim> Fig9Claims(const std::vector<Row>& rows) {
  auto get = [](const PointKey& k) { return k.fail_prob; };
  std::vector<Claim> out;
  out.push_back(BelowEverywhere<double>(
      rows, "Ofan keeps outperforming REPS and AR at every failure probability", {Reps(), Ar()},
      {Ofan()}, get, [](double p) { return fmt::format("p={:g}", p); }));
  const std::string text =
      "the relative ordering of the LB schemes is kept about the same: the order at the highest "
      "failure probability is the order without failures";
  auto v = Of(rows, Ofan());
  if (v.size() < 2) {
    out.push_back(Missing(text));
    return out;
  }
  std::vector<double> measured;
  auto order = [&](double p) {
    std::vector<std::pair<double, std::string>> xs;
    for (const auto& lb : PaperLbs()) {
      xs.push_back({Infl(rows, lb, [p](const PointKey& k) { return k.fail_prob == p; }), lb});
      measured.push_back(xs.back().first);
    }
    std::sort(xs.begin(), xs.end());
    std::string s;
    for (const auto& [x, lb] : xs) s += (s.empty() ? "" : " < ") + lb;
    return s;
  };
  const std::string o0 = order(v.front()->key.fail_prob), o1 = order(v.back()->key.fail_prob);
  out.push_back(Judge(text, measured, o0 == o1,
                      fmt::format("p={:g}: {}; p={:g}: {}", v.front()->key.fail_prob, o0,
                                  v.back()->key.fail_prob, o1)));
  return out;
}

std::vector<Claim> Fig10Claims(const std::vector<Row>& rows) {
  std::vector<Claim> out;
  // As in Fig. 5a's "CCT gap", in points of CCT increase over the bound
  // (the plotted quantity); the relative CCT cut is shown beside it.
  const std::string t1 =
      "Ofan and 4Ofan reduce the CCT by over 11 % against REPS and AR (in points of CCT "
      "increase over the bound)";
  const std::string t2 = "Ofan's and 4Ofan's max queues are below REPS's and AR's (Fig. 10b)";
  auto any = [](const PointKey&) { return true; };
  const Row *o = Find(rows, Ofan(), any), *p = Find(rows, NOfan(4), any),
            *r = Find(rows, Reps(), any), *a = Find(rows, Ar(), any);
  if (!o || !p || !r || !a) return {Missing(t1), Missing(t2)};
  double least = std::numeric_limits<double>::infinity(), cut = 0;
  std::string where;
  for (const Row* x : {o, p}) {
    for (const Row* y : {r, a}) {
      const double gap = Inflation(*y) - Inflation(*x);
      if (gap < least || std::isnan(gap))
        least = gap, cut = 1 - Cct(*x) / Cct(*y), where = x->key.lb + " vs " + y->key.lb;
      if (std::isnan(least)) break;
    }
  }
  out.push_back(
      Judge(t1, {least}, least > 0.11,
            fmt::format("smallest {} ({}; CCT {} lower); CCT increase: Ofan {}, 4Ofan {}, "
                        "REPS {}, AR {}",
                        Pp(least), where, Pct(cut), Pct(Inflation(*o)), Pct(Inflation(*p)),
                        Pct(Inflation(*r)), Pct(Inflation(*a)))));
  const double ours = Greatest({Queue(*o), Queue(*p)});
  const double theirs = Least({Queue(*r), Queue(*a)});
  out.push_back(Judge(
      t2, {ours, theirs}, ours < theirs,
      fmt::format("max queue {:.1f} (Ofan, 4Ofan) vs {:.1f} (REPS, AR) packets", ours, theirs)));
  return out;
}

std::vector<Claim> Fig11Claims(const std::vector<Row>& rows) {
  const std::string t1 = "mixing is not harmful: every mix's CCT is at most AR's";
  const std::string t2 =
      "the reduction is less than proportional: every mix's CCT increase is at least the "
      "midpoint of AR's and 4Ofan's (paper: midpoint 7.3 %, mixes slightly higher)";
  const std::string t3 = "the best place to deploy 4Ofan is the edge switches";
  auto all = [](const PointKey& k) { return k.placement == "all"; };
  const Row* ar = Find(rows, Ar(), all);
  const Row* po = Find(rows, NOfan(4), all);
  auto mixes = Of(rows, NOfan(4) + "+" + Ar());
  if (!ar || !po || mixes.empty()) return {Missing(t1), Missing(t2), Missing(t3)};
  const double mid = (Inflation(*ar) + Inflation(*po)) / 2;
  bool h1 = true, h2 = true;
  std::vector<double> measured = {mid, Cct(*ar)};
  const Row* best = mixes.front();
  std::string list;
  for (const Row* m : mixes) {
    h1 = h1 && Cct(*m) <= Cct(*ar);
    h2 = h2 && Inflation(*m) >= mid;
    measured.push_back(Inflation(*m));
    if (Inflation(*m) < Inflation(*best)) best = m;
    list += fmt::format("{}{} {}", list.empty() ? "" : ", ", m->key.placement, Pct(Inflation(*m)));
  }
  return {Judge(t1, measured, h1, fmt::format("AR {}; {}", Pct(Inflation(*ar)), list)),
          Judge(t2, measured, h2, fmt::format("midpoint {}; {}", Pct(mid), list)),
          Judge(t3, measured, best->key.placement == "edge", "best: " + best->key.placement)};
}

std::vector<Claim> Fig12Claims(const std::vector<Row>& rows) {
  auto with = [](Cca c) { return [c](const PointKey& k) { return k.cca == c; }; };
  std::vector<Claim> out;
  {
    const std::string t =
        "DCTCP multiplies REPS's and AR's CCT by 3-4x (over their CCT without CCA)";
    const Row *r0 = Find(rows, Reps(), with(Cca::kNone)),
              *r1 = Find(rows, Reps(), with(Cca::kDctcp)), *a0 = Find(rows, Ar(), with(Cca::kNone)),
              *a1 = Find(rows, Ar(), with(Cca::kDctcp));
    if (!r0 || !r1 || !a0 || !a1) {
      out.push_back(Missing(t));
    } else {
      const double fr = Cct(*r1) / Cct(*r0), fa = Cct(*a1) / Cct(*a0);
      out.push_back(Judge(t, {fr, fa}, fr >= 3 && fr <= 4 && fa >= 3 && fa <= 4,
                          fmt::format("REPS {:.2f}x, AR {:.2f}x", fr, fa)));
    }
  }
  {
    const std::string t = "with DCTCP, Ofan and POfan (4Ofan) have a CCT increase under 1 %";
    const double o = Infl(rows, Ofan(), with(Cca::kDctcp)),
                 p = Infl(rows, NOfan(4), with(Cca::kDctcp));
    out.push_back(
        Judge(t, {o, p}, o < 0.01 && p < 0.01, fmt::format("Ofan {}, 4Ofan {}", Pct(o), Pct(p))));
  }
  double gaps[2] = {0, 0};
  const std::pair<Cca, double> spraying[] = {{Cca::kNscc, 0.08}, {Cca::kMswift, 0.14}};
  for (int i = 0; i < 2; ++i) {
    const auto [cca, at_least] = spraying[i];
    const std::string t = fmt::format(
        "with {}, REPS's and AR's CCT increase is at least {:.0f} % above Ofan's and 4Ofan's",
        CcaName(cca), 100 * at_least);
    gaps[i] = Margin(rows, {Reps(), Ar()}, {Ofan(), NOfan(4)}, with(cca));
    out.push_back(
        Judge(t, {gaps[i]}, gaps[i] >= at_least, fmt::format("smallest gap {}", Pp(gaps[i]))));
  }
  out.push_back(
      Judge("the gap is larger with MSwift than with NSCC (MSwift targets smaller queues)",
            {gaps[0], gaps[1]}, gaps[1] > gaps[0],
            fmt::format("MSwift {} vs NSCC {}", Pp(gaps[1]), Pp(gaps[0]))));
  return out;
}

std::vector<Claim> Fig13Claims(const std::vector<Row>& rows) {
  auto at = [](Cca c, bool eplb) {
    return [c, eplb](const PointKey& k) { return k.cca == c && k.eplb == eplb; };
  };
  auto gap = [&](Cca c, bool eplb) { return Margin(rows, {Reps(), Ar()}, {Ofan()}, at(c, eplb)); };
  std::vector<Claim> out;
  const double n0 = gap(Cca::kNone, false), n1 = gap(Cca::kNone, true), s0 = gap(Cca::kNscc, false),
               s1 = gap(Cca::kNscc, true);
  auto show = [](double g) { return std::isnan(g) ? std::string("n/a") : Pp(g); };
  out.push_back(Judge(
      "without CCA, Ofan's CCT is still a bit better than REPS's and AR's (both skews)", {n0, n1},
      n0 >= 0 && n1 >= 0, fmt::format("margin {} (no EPLB), {} (EPLB)", show(n0), show(n1))));
  out.push_back(Judge(
      "with NSCC the differences become larger than without CCA (both skews)", {n0, n1, s0, s1},
      s0 > n0 && s1 > n1,
      fmt::format("no EPLB {} -> {}, EPLB {} -> {}", show(n0), show(s0), show(n1), show(s1))));
  out.push_back(Judge(
      "with NSCC, especially with the smaller skew: the gap with EPLB exceeds the gap without",
      {s0, s1}, s1 > s0, fmt::format("{} (EPLB) vs {} (no EPLB)", show(s1), show(s0))));
  out.push_back(Judge("with NSCC Ofan clearly outperforms the others (both skews)", {s0, s1},
                      s0 > 0 && s1 > 0,
                      fmt::format("margin {} (no EPLB), {} (EPLB)", show(s0), show(s1))));
  return out;
}

std::vector<Claim> Fig14Claims(const std::vector<Row>& rows) {
  auto at = [](Cca c, std::string_view m) {
    return [c, m](const PointKey& k) { return k.cca == c && k.model == m; };
  };
  const std::string_view smallest = std::begin(workload::kLlama3)->name;
  const std::string_view largest = std::rbegin(workload::kLlama3)->name;
  std::vector<Claim> out;
  struct Want {
    Cca cca;
    std::string lb;
    double factor;
  };
  const Want wants[] = {{Cca::kNscc, Ofan(), 16},
                        {Cca::kNscc, NOfan(4), 15},
                        {Cca::kMswift, Ofan(), 39},
                        {Cca::kMswift, NOfan(4), 36}};
  for (const Want& w : wants) {
    const std::string t = fmt::format(
        "at 405B with {}, {} reduces the CCT increase over the best of REPS and AR by "
        "{:.0f}x (as at least that)",
        CcaName(w.cca), w.lb, w.factor);
    const double ours = Infl(rows, w.lb, at(w.cca, largest));
    const double best = BestExisting(rows, at(w.cca, largest));
    const double f = best / std::max(ours, 1e-9);
    out.push_back(Judge(t, {ours, best, f}, f >= w.factor,
                        fmt::format("{:.1f}x ({} vs {})", f, Pct(ours), Pct(best))));
  }
  for (Cca c : {Cca::kNscc, Cca::kMswift}) {
    const double o8 = Infl(rows, Ofan(), at(c, smallest)),
                 o405 = Infl(rows, Ofan(), at(c, largest));
    const double e8 = BestExisting(rows, at(c, smallest)),
                 e405 = BestExisting(rows, at(c, largest));
    const std::string t = fmt::format(
        "with {}, Ofan's CCT increase drops from 8B to 405B while REPS's and AR's stays about "
        "constant (best of them within 2x)",
        CcaName(c));
    const double r = e405 / e8;
    out.push_back(Judge(t, {o8, o405, e8, e405, r}, o405 < o8 && r >= 0.5 && r <= 2,
                        fmt::format("Ofan {} -> {}; best of REPS/AR {} -> {} ({:.2f}x)", Pct(o8),
                                    Pct(o405), Pct(e8), Pct(e405), r)));
  }
  return out;
}

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kHolds:
      return "holds";
    case Verdict::kFails:
      return "does not hold";
    case Verdict::kNotComputed:
      break;
  }
  return "not computed";
}

Claim Judge(std::string text, const std::vector<double>& inputs, bool ok, std::string measured) {
  for (double x : inputs) {
    if (!std::isfinite(x)) {
      return NotComputed(std::move(text),
                         "a row is missing or measured nothing (" + measured + ")");
    }
  }
  return {std::move(text), ok ? Verdict::kHolds : Verdict::kFails, std::move(measured)};
}

Claim NotComputed(std::string text, std::string why) {
  return {std::move(text), Verdict::kNotComputed, "not computed: " + std::move(why)};
}

double Inflation(const Row& r) {
  const bool measured = r.seeds > 0 && r.cct_lower_bound_us > 0 && r.flows_incomplete == 0;
  return measured && std::isfinite(r.cct_inflation) ? r.cct_inflation : kNaN;
}

double Cct(const Row& r) { return std::isnan(Inflation(r)) ? kNaN : r.cct_us; }

}  // namespace ofan::sim::paper
