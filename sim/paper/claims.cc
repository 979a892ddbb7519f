// The §6 claims as functions of rows (contract: claims.h). Each claim's
// text quotes the paper's words and says how they are read (claims.h's
// vocabulary); a claim that needs a row the rows lack, or one that
// measured nothing, is NotComputed.
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

// ---- Looking rows up -------------------------------------------------------

using Pred = std::function<bool(const Row&)>;
using Get = std::function<double(const Row&)>;  // a figure's swept value
using Show = std::function<std::string(double)>;

bool AnyRow(const Row&) { return true; }

const Row* Find(const std::vector<Row>& rows, const std::string& lb, const Pred& pred) {
  for (const Row& r : rows) {
    if (r.key.lb == lb && pred(r)) return &r;
  }
  return nullptr;
}

// A measurement of lb's row matching pred: its CCT increase, the increase's
// standard error over the seeds, its CCT or its max queue; NaN if there is
// no such row or it measured nothing (Inflation).
double Measure(const std::vector<Row>& rows, const std::string& lb, const Pred& pred,
               double Row::*field) {
  const Row* r = Find(rows, lb, pred);
  return r && !std::isnan(Inflation(*r)) ? r->*field : kNaN;
}
double Infl(const std::vector<Row>& rows, const std::string& lb, const Pred& pred) {
  return Measure(rows, lb, pred, &Row::cct_inflation);
}
double Sem(const std::vector<Row>& rows, const std::string& lb, const Pred& pred) {
  return Measure(rows, lb, pred, &Row::cct_inflation_sem);
}
double CctOf(const std::vector<Row>& rows, const std::string& lb, const Pred& pred) {
  return Measure(rows, lb, pred, &Row::cct_us);
}
double QueueOf(const std::vector<Row>& rows, const std::string& lb, const Pred& pred) {
  return Measure(rows, lb, pred, &Row::queue_max_pkts);
}

// The rows of one lb matching pred, in row order.
std::vector<const Row*> Of(const std::vector<Row>& rows, const std::string& lb,
                           const Pred& pred = AnyRow) {
  std::vector<const Row*> out;
  for (const Row& r : rows) {
    if (r.key.lb == lb && pred(r)) out.push_back(&r);
  }
  return out;
}

// The swept values that rows of any of `lbs` have, ascending.
std::vector<double> Xs(const std::vector<Row>& rows, const std::vector<std::string>& lbs,
                       const Get& get) {
  std::vector<double> xs;
  for (const auto& lb : lbs) {
    for (const Row* r : Of(rows, lb)) xs.push_back(get(*r));
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  return xs;
}
Pred At(const Get& get, double x) {
  return [get, x](const Row& r) { return get(r) == x; };
}

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
bool AnyNaN(const std::vector<double>& xs) {
  return std::any_of(xs.begin(), xs.end(), [](double x) { return !std::isfinite(x); });
}

// min over `a` minus max over `b` of the CCT increase at the rows matching
// pred: how far every scheme of b stays below every scheme of a.
double Margin(const std::vector<Row>& rows, const std::vector<std::string>& a,
              const std::vector<std::string>& b, const Pred& pred) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& n : a) lo = Least({lo, Infl(rows, n, pred)});
  for (const auto& n : b) hi = Greatest({hi, Infl(rows, n, pred)});
  return lo - hi;
}

// The gap between the best of REPS and AR and `lb` at pred, in points of
// CCT increase, with its standard error over the seeds.
struct Gap {
  double pts = kNaN;
  double sem = kNaN;
};
Gap GapToBestExisting(const std::vector<Row>& rows, const std::string& lb, const Pred& pred) {
  const double reps = Infl(rows, Reps(), pred), ar = Infl(rows, Ar(), pred);
  const std::string& best = reps <= ar ? Reps() : Ar();
  const double ours = Infl(rows, lb, pred);
  return {Least({reps, ar}) - ours, std::hypot(Sem(rows, best, pred), Sem(rows, lb, pred))};
}

// ---- Claims shared by several figures --------------------------------------

// "`ours` stay below `theirs` at every point of the sweep": the margin at
// each swept value that any of them ran.
Claim BelowEverywhere(const std::vector<Row>& rows, std::string text,
                      const std::vector<std::string>& theirs, const std::vector<std::string>& ours,
                      const Get& get, const Show& show) {
  std::vector<std::string> all = theirs;
  all.insert(all.end(), ours.begin(), ours.end());
  const std::vector<double> xs = Xs(rows, all, get);
  if (xs.empty()) return NotComputed(std::move(text), "rows missing");
  double worst = std::numeric_limits<double>::infinity();
  std::string where;
  for (double x : xs) {
    const double m = Margin(rows, theirs, ours, At(get, x));
    if (std::isnan(m)) {
      return NotComputed(std::move(text), fmt::format("a row is missing at {}", show(x)));
    }
    if (m < worst) worst = m, where = show(x);
  }
  return Judge(std::move(text), {worst}, worst > 0,
               fmt::format("smallest margin {} at {} ({} points)", Pp(worst), where, xs.size()));
}

Claim OrderEverywhere(const std::vector<Row>& rows, std::string_view what, const Get& get,
                      const Show& show) {
  return BelowEverywhere(
      rows,
      fmt::format("the relative ordering holds: Ofan and 4Ofan stay below REPS and AR at every "
                  "{} (CCT increase, strictly)",
                  what),
      {Reps(), Ar()}, {Ofan(), NOfan(4)}, get, show);
}

// The gap between 4Ofan and the best of REPS and AR at the smallest and the
// largest swept value, and along the sweep.
struct GapEnds {
  Gap first, last;
  double x0 = kNaN, x1 = kNaN;
  std::string along;
};
GapEnds EndsOfGap(const std::vector<Row>& rows, const Get& get) {
  GapEnds e;
  const std::vector<double> xs = Xs(rows, PaperLbs(), get);
  if (xs.size() < 2) return e;
  e.x0 = xs.front();
  e.x1 = xs.back();
  e.first = GapToBestExisting(rows, NOfan(4), At(get, e.x0));
  e.last = GapToBestExisting(rows, NOfan(4), At(get, e.x1));
  for (double x : xs) {
    e.along +=
        (e.along.empty() ? "" : ", ") + Pp(GapToBestExisting(rows, NOfan(4), At(get, x)).pts);
  }
  return e;
}

// 5b, 5c: "the magnitude of their CCT performance differences holds or even
// increases as the network size grows".
Claim GapHoldsOrGrows(const std::vector<Row>& rows, const Get& get, const Show& show,
                      std::string_view what) {
  std::string text = fmt::format(
      "the CCT gap between 4Ofan and the best of REPS and AR holds or even increases from the "
      "smallest to the largest {} (points of CCT increase; holds: no drop beyond {:g} standard "
      "errors over the seeds)",
      what, kSpreadSems);
  const GapEnds e = EndsOfGap(rows, get);
  if (std::isnan(e.x0)) return NotComputed(std::move(text), "fewer than two swept values");
  const double slack = kSpreadSems * std::hypot(e.first.sem, e.last.sem);
  return Judge(
      std::move(text), {e.first.pts, e.last.pts, slack}, e.last.pts >= e.first.pts - slack,
      fmt::format("{} at {} -> {} at {} ({:+.2f} pp, allowed drop {}; along the sweep: {})",
                  Pp(e.first.pts), show(e.x0), Pp(e.last.pts), show(e.x1),
                  100 * (e.last.pts - e.first.pts), Pp(slack), e.along));
}

// 7a, 7b: "the absolute CCT gap between them decreases with increasing
// message size".
Claim GapDecreases(const std::vector<Row>& rows, const Get& get, const Show& show) {
  std::string text =
      "the absolute CCT gap between 4Ofan and the best of REPS and AR decreases with increasing "
      "message size (points of CCT increase, strictly lower at the largest message than at the "
      "smallest)";
  const GapEnds e = EndsOfGap(rows, get);
  if (std::isnan(e.x0)) return NotComputed(std::move(text), "fewer than two swept values");
  return Judge(std::move(text), {e.first.pts, e.last.pts}, e.last.pts < e.first.pts,
               fmt::format("{} at {} -> {} at {} ({:+.2f} pp; along the sweep: {})",
                           Pp(e.first.pts), show(e.x0), Pp(e.last.pts), show(e.x1),
                           100 * (e.last.pts - e.first.pts), e.along));
}

double HostsX(const Row& r) { return r.hosts; }
std::string ShowHosts(double h) { return fmt::format("{:g} hosts", h); }
double MsgX(const Row& r) { return static_cast<double>(r.key.msg_bytes); }
std::string ShowMsg(double m) { return FormatSize(static_cast<uint64_t>(m)); }
double PayloadX(const Row& r) { return r.key.payload; }

// ---- Fig. 8: packet size -----------------------------------------------------

// The row of lb's lowest CCT; none if a row of lb measured nothing.
const Row* BestPayload(const std::vector<Row>& rows, const std::string& lb) {
  const Row* b = nullptr;
  for (const Row* r : Of(rows, lb)) {
    if (std::isnan(Cct(*r))) return nullptr;
    if (!b || r->cct_us < b->cct_us) b = r;
  }
  return b;
}

std::vector<Claim> PacketSizeClaims(const std::vector<Row>& rows) {
  std::vector<Claim> out;
  std::string t1 =
      "the graph shows a clear sweet spot in packet size at which CCT is optimized: Ofan's CCT "
      "is lowest strictly inside the swept payloads ('clear' is not given a number)";
  std::string t2 =
      "the model (Thm. 6) roughly predicts the packet-size sweet spot observed in simulation: "
      "of the swept payloads, Ofan's best is the nearest (log scale) to sqrt(H D / alpha), "
      "i.e. the grid cannot tell them apart (Thm. 6's CCT increase is not checked)";
  const std::vector<double> xs = Xs(rows, {Ofan()}, PayloadX);
  const Row* b = BestPayload(rows, Ofan());
  if (xs.size() < 3 || !b)
    return {NotComputed(t1, "rows missing"), NotComputed(t2, "rows missing")};
  out.push_back(
      Judge(t1, {b->cct_us}, b->key.payload != xs.front() && b->key.payload != xs.back(),
            fmt::format("lowest CCT {:.2f} us at payload {} (swept {}..{})", b->cct_us,
                        FormatSize(b->key.payload), ShowMsg(xs.front()), ShowMsg(xs.back()))));
  // Thm. 6: P - H = sqrt(H D / alpha), H the per-packet overhead on the
  // wire (header + gap), D the message, alpha Ofan's constant queueing in
  // packets: its CCT excess over the bound at the payload nearest 4 KiB,
  // in frame times of that payload.
  const Row* ref = Of(rows, Ofan()).front();
  for (const Row* r : Of(rows, Ofan())) {
    if (std::abs(std::log2(r->key.payload / 4096.0)) <
        std::abs(std::log2(ref->key.payload / 4096.0)))
      ref = r;
  }
  static const double link_bytes_per_us = SimConfig{}.link_gbps * 1e3 / 8;
  const double overhead = ref->frame_wire_bytes - ref->key.payload;
  const double alpha =
      (Cct(*ref) - ref->cct_lower_bound_us) * link_bytes_per_us / ref->frame_wire_bytes;
  const double d = static_cast<double>(ref->key.msg_bytes);
  const double thm6 = alpha > 0 ? std::sqrt(overhead * d / alpha) : kNaN;  // the payload, P - H
  double nearest = xs.front();
  for (double x : xs) {
    if (std::abs(std::log2(x / thm6)) < std::abs(std::log2(nearest / thm6))) nearest = x;
  }
  out.push_back(Judge(t2, {alpha, thm6}, nearest == b->key.payload,
                      fmt::format("simulated best {} B, Thm. 6 {:.0f} B (H = {:.0f} B, D = {}, "
                                  "alpha = {:.2f} packets from Ofan at {}), nearest swept {} B",
                                  b->key.payload, thm6, overhead, FormatSize(ref->key.msg_bytes),
                                  alpha, FormatSize(ref->key.payload), nearest)));
  return out;
}

}  // namespace

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
  if (AnyNaN(inputs)) {
    return NotComputed(std::move(text), "a row is missing or measured nothing (" + measured + ")");
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

bool About(double v, double x) { return std::abs(v - x) <= kAbout * std::abs(x); }
bool Notably(double v, double x) { return v > (1 + kAbout) * x; }

// ---- Fig. 5: network size ------------------------------------------------------

std::vector<Claim> Fig5aClaims(const std::vector<Row>& rows) {
  std::vector<Claim> out;
  out.push_back(OrderEverywhere(rows, "network size", HostsX, ShowHosts));
  {
    // "the CCT gap between 4Ofan and existing algorithms grows from about
    // 5% with 16 nodes to about 11% with 1,024 nodes"
    constexpr double kSmall = 0.05, kLarge = 0.11;
    std::string text = fmt::format(
        "the CCT gap between 4Ofan and the best of REPS and AR grows from about 5 % with 16 "
        "nodes to about 11 % with 1,024 (points of CCT increase, each within ±{:.0f} %: "
        "{:.2f}-{:.2f} and {:.2f}-{:.2f})",
        100 * kAbout, 100 * kSmall * (1 - kAbout), 100 * kSmall * (1 + kAbout),
        100 * kLarge * (1 - kAbout), 100 * kLarge * (1 + kAbout));
    const Gap g16 = GapToBestExisting(rows, NOfan(4), At(HostsX, 16));
    const Gap g1024 = GapToBestExisting(rows, NOfan(4), At(HostsX, 1024));
    out.push_back(Judge(
        std::move(text), {g16.pts, g1024.pts}, About(g16.pts, kSmall) && About(g1024.pts, kLarge),
        fmt::format("{} at 16 hosts, {} at 1024 hosts", Pp(g16.pts), Pp(g1024.pts))));
  }
  std::string text =
      "the gap between 4Ofan and Ofan remains reasonably small: at every size below the gap "
      "between 4Ofan and the best of REPS and AR ('reasonably small' is not given a number)";
  const std::vector<double> xs = Xs(rows, PaperLbs(), HostsX);
  if (xs.empty()) {
    out.push_back(NotComputed(std::move(text), "rows missing"));
    return out;
  }
  double worst = -std::numeric_limits<double>::infinity();
  std::string where;
  for (double x : xs) {
    const Pred at = At(HostsX, x);
    const double pofan_gap = Infl(rows, NOfan(4), at) - Infl(rows, Ofan(), at);
    const double existing_gap = GapToBestExisting(rows, NOfan(4), at).pts;
    if (std::isnan(pofan_gap - existing_gap)) {
      out.push_back(NotComputed(std::move(text), "a row is missing at " + ShowHosts(x)));
      return out;
    }
    if (pofan_gap - existing_gap > worst) {
      worst = pofan_gap - existing_gap;
      where = fmt::format("{}: 4Ofan-Ofan {} vs best existing-4Ofan {}", ShowHosts(x),
                          Pp(pofan_gap), Pp(existing_gap));
    }
  }
  out.push_back(Judge(std::move(text), {worst}, worst < 0, "closest at " + where));
  return out;
}

std::vector<Claim> Fig5bClaims(const std::vector<Row>& rows) {
  return {OrderEverywhere(rows, "network size", HostsX, ShowHosts),
          GapHoldsOrGrows(rows, HostsX, ShowHosts, "network size")};
}

// ---- Fig. 6: pipe size --------------------------------------------------------

std::vector<Claim> Fig6Claims(const std::vector<Row>& rows) {
  std::vector<Claim> out;
  const std::vector<std::string> pofans = {NOfan(1), NOfan(2), NOfan(4)};
  std::string t1 =
      "as network grows, the gap between POfan and Ofan expands: for each of 1Ofan, 2Ofan and "
      "4Ofan, its CCT increase minus Ofan's is larger at the largest size than at the smallest "
      "(strictly; 'somewhat moderately' is not given a number)";
  std::string t2 = fmt::format(
      "the power of consolidation at the aggregation switches roughly corresponds to half the "
      "CCT gap between Ofan and DRB: (1Ofan - Ofan) / (DRB - Ofan) at the largest size within "
      "0.5 ± {:.0f} % ({:.3f}-{:.3f})",
      100 * kAbout, 0.5 * (1 - kAbout), 0.5 * (1 + kAbout));
  std::vector<std::string> lbs = pofans;
  lbs.push_back(Ofan());
  lbs.push_back(Drb());
  const std::vector<double> xs = Xs(rows, lbs, HostsX);
  if (xs.size() < 2)
    return {NotComputed(t1, "fewer than two sizes"), NotComputed(t2, "rows missing")};
  const Pred first = At(HostsX, xs.front()), last = At(HostsX, xs.back());
  bool expands = true;
  std::vector<double> measured;
  std::string list;
  for (const auto& lb : pofans) {
    const double g0 = Infl(rows, lb, first) - Infl(rows, Ofan(), first);
    const double g1 = Infl(rows, lb, last) - Infl(rows, Ofan(), last);
    expands = expands && g1 > g0;
    measured.insert(measured.end(), {g0, g1});
    list += fmt::format("{}{} {} -> {}", list.empty() ? "" : "; ", lb, Pp(g0), Pp(g1));
  }
  out.push_back(
      Judge(t1, measured, expands,
            fmt::format("{} ({} to {})", list, ShowHosts(xs.front()), ShowHosts(xs.back()))));
  const double o = Infl(rows, Ofan(), last), one = Infl(rows, NOfan(1), last),
               drb = Infl(rows, Drb(), last);
  const double pos = (one - o) / (drb - o);
  out.push_back(Judge(t2, {o, one, drb, pos}, About(pos, 0.5),
                      fmt::format("{:.2f} at {} (Ofan {}, 1Ofan {}, DRB {})", pos,
                                  ShowHosts(xs.back()), Pct(o), Pct(one), Pct(drb))));
  return out;
}

// ---- Fig. 7: message size -----------------------------------------------------

std::vector<Claim> Fig7bClaims(const std::vector<Row>& rows) {
  return {OrderEverywhere(rows, "message size", MsgX, ShowMsg), GapDecreases(rows, MsgX, ShowMsg)};
}

std::vector<Claim> Fig7aClaims(const std::vector<Row>& rows) {
  auto out = Fig7bClaims(rows);
  std::string text = fmt::format(
      "REPS gets notably worse at very large message size (the paper conjectures REPS's "
      "freezing mode): its CCT increase at the largest message is more than {:.0f} % above the "
      "one at the message before (notably: out of the ±{:.0f} % of 'about')",
      100 * kAbout, 100 * kAbout);
  const std::vector<double> xs = Xs(rows, {Reps()}, MsgX);
  if (xs.size() < 2) {
    out.push_back(NotComputed(std::move(text), "fewer than two message sizes"));
    return out;
  }
  const double x0 = xs[xs.size() - 2], x1 = xs.back();
  const double a = Infl(rows, Reps(), At(MsgX, x0)), b = Infl(rows, Reps(), At(MsgX, x1));
  out.push_back(Judge(std::move(text), {a, b}, Notably(b, a),
                      fmt::format("{} at {} -> {} at {} ({:.2f}x)", Pct(a), ShowMsg(x0), Pct(b),
                                  ShowMsg(x1), b / a)));
  return out;
}

// ---- Fig. 8: packet size ------------------------------------------------------

std::vector<Claim> Fig8aClaims(const std::vector<Row>& rows) { return PacketSizeClaims(rows); }

std::vector<Claim> Fig8bClaims(const std::vector<Row>& rows) {
  auto out = PacketSizeClaims(rows);
  std::string t =
      "Fig. 8(b) shows how the shorter queue sizes of Ofan also encourage larger packets: "
      "Ofan's best payload is larger than REPS's and than AR's (strictly)";
  const Row* o = BestPayload(rows, Ofan());
  const Row* r = BestPayload(rows, Reps());
  const Row* a = BestPayload(rows, Ar());
  if (!o || !r || !a) {
    out.push_back(NotComputed(std::move(t), "rows missing"));
    return out;
  }
  out.push_back(
      Judge(std::move(t), {}, o->key.payload > r->key.payload && o->key.payload > a->key.payload,
            fmt::format("best payload: Ofan {}, REPS {}, AR {}", FormatSize(o->key.payload),
                        FormatSize(r->key.payload), FormatSize(a->key.payload))));
  return out;
}

// ---- Fig. 9: link failures -----------------------------------------------------

std::vector<Claim> Fig9Claims(const std::vector<Row>& rows) {
  const Get prob = [](const Row& r) { return r.key.fail_prob; };
  const Show show = [](double p) { return fmt::format("p={:g}", p); };
  std::vector<Claim> out;
  out.push_back(BelowEverywhere(
      rows,
      "Ofan keeps outperforming REPS and AR: its CCT increase is below both at every failure "
      "probability (strictly)",
      {Reps(), Ar()}, {Ofan()}, prob, show));
  std::string text = fmt::format(
      "the relative ordering of the LB schemes is kept about the same: no pair of REPS, AR, "
      "Ofan and 4Ofan is reversed from its order without failures by more than {:g} standard "
      "errors over the seeds, at any failure probability",
      kSpreadSems);
  const std::vector<double> xs = Xs(rows, PaperLbs(), prob);
  if (xs.size() < 2) {
    out.push_back(NotComputed(std::move(text), "fewer than two failure probabilities"));
    return out;
  }
  const std::vector<std::string> lbs = PaperLbs();
  std::vector<double> measured;
  bool kept = true;
  double largest = -std::numeric_limits<double>::infinity();  // the most reversed pair
  std::string largest_at;
  for (const auto& a : lbs) {
    for (const auto& b : lbs) {
      const double a0 = Infl(rows, a, At(prob, xs.front())),
                   b0 = Infl(rows, b, At(prob, xs.front()));
      measured.insert(measured.end(), {a0, b0});
      if (!(a0 < b0)) continue;  // each ordered pair once, a below b
      for (size_t i = 1; i < xs.size(); ++i) {
        const Pred at = At(prob, xs[i]);
        const double d = Infl(rows, a, at) - Infl(rows, b, at);  // > 0: reversed
        const double allowed = kSpreadSems * std::hypot(Sem(rows, a, at), Sem(rows, b, at));
        measured.insert(measured.end(), {d, allowed});
        kept = kept && d <= allowed;
        if (d > largest) {
          largest = d;
          largest_at =
              fmt::format("{} - {} = {} at {} (allowed {})", a, b, Pp(d), show(xs[i]), Pp(allowed));
        }
      }
    }
  }
  const char* what = largest > 0 ? "largest reversal" : "no pair reversed; closest";
  out.push_back(Judge(std::move(text), measured, kept, fmt::format("{}: {}", what, largest_at)));
  return out;
}

// ---- Fig. 10: two-level fat tree ---------------------------------------------

std::vector<Claim> Fig10Claims(const std::vector<Row>& rows) {
  const std::string t1 =
      "Ofan and 4Ofan keep outperforming REPS and AR: each one's CCT increase is below both "
      "(strictly)";
  const std::string t2 =
      "Ofan and 4Ofan reduce the CCT by over 11 %: 1 - CCT(Ofan or 4Ofan) / CCT(REPS or AR) > "
      "0.11 for each of the four pairs (a relative cut of the CCT)";
  const std::string t3 =
      "Ofan's and 4Ofan's max queues are below REPS's and AR's (Fig. 10(b); the text's 'keep "
      "outperforming' read on the queue panel)";
  const double o = Infl(rows, Ofan(), AnyRow), p = Infl(rows, NOfan(4), AnyRow),
               r = Infl(rows, Reps(), AnyRow), a = Infl(rows, Ar(), AnyRow);
  std::vector<Claim> out;
  const double margin = Least({r, a}) - Greatest({o, p});
  out.push_back(Judge(t1, {margin}, margin > 0,
                      fmt::format("margin {}; CCT increase: Ofan {}, 4Ofan {}, REPS {}, AR {}",
                                  Pp(margin), Pct(o), Pct(p), Pct(r), Pct(a))));
  double least = std::numeric_limits<double>::infinity();
  std::string where;
  for (const auto& x : {Ofan(), NOfan(4)}) {
    for (const auto& y : {Reps(), Ar()}) {
      const double cut = 1 - CctOf(rows, x, AnyRow) / CctOf(rows, y, AnyRow);
      if (std::isnan(cut) || cut < least) {
        least = cut;
        where = x;
        where += " vs ";
        where += y;
      }
      if (std::isnan(least)) break;
    }
  }
  out.push_back(
      Judge(t2, {least}, least > 0.11, fmt::format("smallest cut {} ({})", Pct(least), where)));
  const double ours = Greatest({QueueOf(rows, Ofan(), AnyRow), QueueOf(rows, NOfan(4), AnyRow)});
  const double theirs = Least({QueueOf(rows, Reps(), AnyRow), QueueOf(rows, Ar(), AnyRow)});
  out.push_back(Judge(
      t3, {ours, theirs}, ours < theirs,
      fmt::format("max queue {:.1f} (Ofan, 4Ofan) vs {:.1f} (REPS, AR) packets", ours, theirs)));
  return out;
}

// ---- Fig. 11: incremental deployment ------------------------------------------

std::vector<Claim> Fig11Claims(const std::vector<Row>& rows) {
  constexpr double kPaperMid = 0.073;
  const std::string t1 =
      "introducing 4Ofan in some switches only decreases the CCT (mixing is not harmful): "
      "every mix's CCT is below AR's (strictly)";
  const std::string t2 = fmt::format(
      "the midpoint between the CCT increases of AR and 4Ofan is 7.3 % (within ±{:.0f} %: "
      "{:.2f}-{:.2f} %)",
      100 * kAbout, 100 * kPaperMid * (1 - kAbout), 100 * kPaperMid * (1 + kAbout));
  const std::string t3 =
      "the reduction in CCT is less than proportional: the CCT increase in all mixes is "
      "slightly higher than the midpoint (strictly higher; 'slightly' is not capped, as §6.5's "
      "'a bit')";
  const std::string t4 =
      "the best place to deploy 4Ofan is at the edge switches: the edge mix has the lowest CCT "
      "increase of the four (strictly)";
  const Pred all = [](const Row& r) { return r.key.placement == "all"; };
  const double ar = Infl(rows, Ar(), all), po = Infl(rows, NOfan(4), all);
  const double ar_cct = CctOf(rows, Ar(), all);
  const auto mixes = Of(rows, NOfan(4) + "+" + Ar());
  if (mixes.empty()) {
    return {NotComputed(t1, "no mix"), NotComputed(t2, "no mix"), NotComputed(t3, "no mix"),
            NotComputed(t4, "no mix")};
  }
  const double mid = (ar + po) / 2;
  bool below_ar = true, above_mid = true;
  std::vector<double> measured;  // the mixes'
  const Row* best = nullptr;
  bool tie = false;
  std::string list;
  for (const Row* m : mixes) {
    const double i = Inflation(*m);
    below_ar = below_ar && Cct(*m) < ar_cct;
    above_mid = above_mid && i > mid;
    measured.push_back(i);
    if (!best || i < Inflation(*best)) {
      best = m, tie = false;
    } else if (i == Inflation(*best)) {
      tie = true;
    }
    list += fmt::format("{}{} {}", list.empty() ? "" : ", ", m->key.placement, Pct(i));
  }
  std::vector<double> with_ar = measured, with_mid = measured;
  with_ar.push_back(ar_cct);
  with_mid.push_back(mid);
  return {Judge(t1, with_ar, below_ar, fmt::format("AR {}; {}", Pct(ar), list)),
          Judge(t2, {mid}, About(mid, kPaperMid),
                fmt::format("midpoint {} (AR {}, 4Ofan {})", Pct(mid), Pct(ar), Pct(po))),
          Judge(t3, with_mid, above_mid, fmt::format("midpoint {}; {}", Pct(mid), list)),
          Judge(t4, measured, !tie && best->key.placement == "edge",
                fmt::format("best: {}{}", best->key.placement, tie ? " (tied)" : ""))};
}

// ---- Fig. 12: congestion control ------------------------------------------------

std::vector<Claim> Fig12Claims(const std::vector<Row>& rows) {
  auto with = [](Cca c) { return Pred([c](const Row& r) { return r.key.cca == c; }); };
  std::vector<Claim> out;
  {
    const double fr =
        CctOf(rows, Reps(), with(Cca::kDctcp)) / CctOf(rows, Reps(), with(Cca::kNone));
    const double fa = CctOf(rows, Ar(), with(Cca::kDctcp)) / CctOf(rows, Ar(), with(Cca::kNone));
    out.push_back(Judge(
        "with DCTCP, the CCTs of REPS and AR are multiplied by 3-4x (each one's CCT over its CCT "
        "without CCA, in [3, 4])",
        {fr, fa}, fr >= 3 && fr <= 4 && fa >= 3 && fa <= 4,
        fmt::format("REPS {:.2f}x, AR {:.2f}x", fr, fa)));
  }
  {
    const double o = Infl(rows, Ofan(), with(Cca::kDctcp)),
                 p = Infl(rows, NOfan(4), with(Cca::kDctcp));
    out.push_back(Judge("with DCTCP, POfan (4Ofan) and Ofan have a CCT increase under 1 %", {o, p},
                        o < 0.01 && p < 0.01, fmt::format("Ofan {}, 4Ofan {}", Pct(o), Pct(p))));
  }
  double gaps[2] = {kNaN, kNaN};
  const std::pair<Cca, double> spraying[] = {{Cca::kNscc, 0.08}, {Cca::kMswift, 0.14}};
  for (int i = 0; i < 2; ++i) {
    const auto [cca, at_least] = spraying[i];
    const std::string t = fmt::format(
        "with {}, REPS's and AR's CCT inflation worsens by at least {:.0f} % vs Ofan and 4Ofan "
        "(points of CCT increase, the least of the four pairs)",
        CcaName(cca), 100 * at_least);
    gaps[i] = Margin(rows, {Reps(), Ar()}, {Ofan(), NOfan(4)}, with(cca));
    out.push_back(
        Judge(t, {gaps[i]}, gaps[i] >= at_least, fmt::format("smallest gap {}", Pp(gaps[i]))));
  }
  out.push_back(Judge(
      "the difference is a bit larger with MSwift than with NSCC, as it targets smaller queues "
      "(the least gaps above; strictly larger, 'a bit' not capped: the paper's own are 8 % and "
      "14 %)",
      {gaps[0], gaps[1]}, gaps[1] > gaps[0],
      fmt::format("MSwift {} vs NSCC {}", Pp(gaps[1]), Pp(gaps[0]))));
  return out;
}

// ---- Fig. 13: MoE ------------------------------------------------------------------

std::vector<Claim> Fig13Claims(const std::vector<Row>& rows) {
  auto at = [](Cca c, bool eplb) {
    return Pred([c, eplb](const Row& r) { return r.key.cca == c && r.key.eplb == eplb; });
  };
  // Ofan's lead over the best of REPS and AR: in CCT (relative) and in
  // points of CCT increase.
  auto cut = [&](Cca c, bool eplb) {
    const Pred p = at(c, eplb);
    return 1 - CctOf(rows, Ofan(), p) / Least({CctOf(rows, Reps(), p), CctOf(rows, Ar(), p)});
  };
  auto gap = [&](Cca c, bool eplb) { return Margin(rows, {Reps(), Ar()}, {Ofan()}, at(c, eplb)); };
  std::vector<Claim> out;
  const double c0 = cut(Cca::kNone, false), c1 = cut(Cca::kNone, true);
  out.push_back(Judge(
      "without CCA, Ofan's CCT is still a bit better than REPS's and AR's, at both skews (CCT "
      "strictly lower than both; 'a bit' not capped)",
      {c0, c1}, c0 > 0 && c1 > 0,
      fmt::format("CCT {} lower (no EPLB), {} lower (EPLB)", Pct(c0), Pct(c1))));
  const double n0 = gap(Cca::kNone, false), n1 = gap(Cca::kNone, true), s0 = gap(Cca::kNscc, false),
               s1 = gap(Cca::kNscc, true);
  out.push_back(Judge(
      "with NSCC the differences become larger: Ofan's margin below the best of REPS and AR is "
      "larger with NSCC than without CCA, at both skews (points of CCT increase, strictly)",
      {n0, n1, s0, s1}, s0 > n0 && s1 > n1,
      fmt::format("no EPLB {} -> {}, EPLB {} -> {}", Pp(n0), Pp(s0), Pp(n1), Pp(s1))));
  out.push_back(Judge(
      "especially with a smaller skew: the margin grows more from no CCA to NSCC with EPLB than "
      "without (strictly)",
      {n0, n1, s0, s1}, s1 - n1 > s0 - n0,
      fmt::format("{} (EPLB) vs {} (no EPLB)", Pp(s1 - n1), Pp(s0 - n0))));
  const Pred e0 = at(Cca::kNscc, false), e1 = at(Cca::kNscc, true);
  const double o0 = Infl(rows, Ofan(), e0), o1 = Infl(rows, Ofan(), e1);
  const double b0 = Least({Infl(rows, Reps(), e0), Infl(rows, Ar(), e0)}),
               b1 = Least({Infl(rows, Reps(), e1), Infl(rows, Ar(), e1)});
  out.push_back(Judge(
      fmt::format("with NSCC Ofan clearly outperforms other algorithms, at both skews: the best "
                  "of REPS's and AR's CCT increase is more than {:.0f} % above Ofan's (clearly: "
                  "out of the ±{:.0f} % of 'about')",
                  100 * kAbout, 100 * kAbout),
      {o0, o1, b0, b1}, Notably(b0, o0) && Notably(b1, o1),
      fmt::format("Ofan {} vs {} (no EPLB), {} vs {} (EPLB)", Pct(o0), Pct(b0), Pct(o1), Pct(b1))));
  return out;
}

// ---- Fig. 14: FSDP2 -------------------------------------------------------------------

std::vector<Claim> Fig14Claims(const std::vector<Row>& rows) {
  auto at = [](Cca c, std::string_view m) {
    return Pred([c, m](const Row& r) { return r.key.cca == c && r.key.model == m; });
  };
  std::vector<std::string_view> models;
  for (const workload::LlamaModel& m : workload::kLlama3) models.push_back(m.name);
  const std::string_view smallest = models.front(), largest = models.back();
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
        "at 405B with {}, {} reduces the CCT increase beyond baseline by {:.0f}x against the "
        "best of REPS and AR (within ±{:.0f} %: {:.1f}-{:.1f}x)",
        CcaName(w.cca), w.lb, w.factor, 100 * kAbout, w.factor * (1 - kAbout),
        w.factor * (1 + kAbout));
    const Pred p = at(w.cca, largest);
    const double ours = Infl(rows, w.lb, p);
    const double best = Least({Infl(rows, Reps(), p), Infl(rows, Ar(), p)});
    const double f = best / ours;
    out.push_back(Judge(t, {ours, best, f}, About(f, w.factor),
                        fmt::format("{:.1f}x ({} vs {})", f, Pct(ours), Pct(best))));
  }
  for (Cca c : {Cca::kNscc, Cca::kMswift}) {
    const std::string t = fmt::format(
        "with {}, REPS's and AR's overheads remain about constant: each one's CCT increase at "
        "{} within ±{:.0f} % of its value at {}",
        CcaName(c), largest, 100 * kAbout, smallest);
    std::vector<double> measured;
    bool constant = true;
    std::string list;
    for (const auto& lb : {Reps(), Ar()}) {
      const double i0 = Infl(rows, lb, at(c, smallest)), i1 = Infl(rows, lb, at(c, largest));
      measured.insert(measured.end(), {i0, i1});
      constant = constant && About(i1, i0);
      list += fmt::format("{}{} {} -> {} ({:.2f}x)", list.empty() ? "" : "; ", lb, Pct(i0), Pct(i1),
                          i1 / i0);
    }
    out.push_back(Judge(t, measured, constant, list));
  }
  for (Cca c : {Cca::kNscc, Cca::kMswift}) {
    const std::string t = fmt::format(
        "with {}, the relative CCT increase for Ofan drops as model size scales (strictly, "
        "from each model to the next larger)",
        CcaName(c));
    std::vector<double> measured;
    bool drops = true;
    std::string list;
    for (std::string_view m : models) {
      const double i = Infl(rows, Ofan(), at(c, m));
      if (!measured.empty()) drops = drops && i < measured.back();
      measured.push_back(i);
      list += fmt::format("{}{} {}", list.empty() ? "" : " -> ", m, Pct(i));
    }
    out.push_back(Judge(t, measured, drops, list));
  }
  return out;
}

}  // namespace ofan::sim::paper
