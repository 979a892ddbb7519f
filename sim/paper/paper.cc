#include "sim/paper/paper.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/cli.h"
#include "common/json_text.h"
#include "common/units.h"
#include "sim/paper/figures.h"
#include "sim/plot.h"
#include "sim/report.h"
#include "sim/runner.h"
#include "workload/fsdp.h"

namespace ofan::sim {
namespace {

using nlohmann::json;
using paper::Claim;
using paper::Field;
using paper::Figure;
using paper::PointKey;
using paper::Row;
using paper::Size;

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;
constexpr const char* kProg = "ofan-sim paper";

int Usage(const std::string& m) {
  std::cerr << kProg << ": " << m << " (see " << kProg << " --help)\n";
  return kExitUsage;
}

json FieldJson(Field f, const Row& r) {
  switch (f) {
    case Field::kCca:
      return CcaName(r.key.cca);
    case Field::kK:
      return r.key.k;
    case Field::kHosts:
      return r.hosts;
    case Field::kMsg:
      return r.key.msg_bytes;
    case Field::kPacket:
      return r.key.payload;
    case Field::kFailProb:
      return r.key.fail_prob;
    case Field::kPlacement:
      return r.key.placement;
    case Field::kModel:
      return r.key.model;
    case Field::kEplb:
      return r.key.eplb;
  }
  return nullptr;
}

std::string FieldText(Field f, const Row& r) {
  switch (f) {
    case Field::kMsg:
      return FormatSize(r.key.msg_bytes);
    case Field::kPacket:
      return FormatSize(r.key.payload);
    case Field::kFailProb:
      return fmt::format("{:g}", r.key.fail_prob);
    default: {
      const json j = FieldJson(f, r);
      return j.is_string() ? j.get<std::string>() : j.dump();
    }
  }
}

// Relative cost of a run, to start the largest first: data packets, twice
// with a CCA (windows, retransmissions).
double Cost(const SimConfig& c) {
  const double hosts = paper::HostsOf(c.k, c.levels);
  double pkts = hosts * static_cast<double>(c.msg_bytes) / c.payload;
  if (c.workload == WorkloadKind::kA2a) pkts *= hosts - 1;
  if (c.workload == WorkloadKind::kMoe) pkts = hosts * 492e6 * c.moe_scale / c.payload;
  if (c.workload == WorkloadKind::kFsdp) {
    for (const auto& m : workload::kLlama3) {
      if (m.name == c.fsdp_model) pkts = hosts * m.packets_per_step * (hosts / 8) * c.fsdp_phases;
    }
  }
  return c.cca == Cca::kNone ? pkts : 2 * pkts;
}

std::string Label(const Figure& f, const PointKey& k, const SimConfig& c) {
  Row r;
  r.key = k;
  r.hosts = paper::HostsOf(c.k, c.levels);
  std::string s = fmt::format("{:<10}", k.lb);
  for (Field x : f.fields) s += fmt::format(" {}={}", FieldName(x), FieldText(x, r));
  return s + fmt::format(" seed {}", c.seed);
}

Row Aggregate(const PointKey& key, const SimConfig& cfg, const std::vector<SimResult>& runs) {
  Row r;
  r.key = key;
  r.seeds = static_cast<uint32_t>(runs.size());
  const double n = static_cast<double>(runs.size());
  for (const SimResult& x : runs) {
    r.hosts = x.hosts;
    r.cct_us += x.cct_us / n;
    r.cct_lower_bound_us += x.cct_lower_bound_us / n;
    r.cct_inflation += x.cct_inflation / n;
    r.queue_max_pkts += x.queue_max_pkts / n;
    r.utilization += x.utilization / n;
    r.retransmits += static_cast<double>(x.retransmits) / n;
    r.flows_incomplete += static_cast<double>(x.flows_incomplete) / n;
  }
  if (runs.size() > 1) {
    double ss = 0;
    for (const SimResult& x : runs)
      ss += (x.cct_inflation - r.cct_inflation) * (x.cct_inflation - r.cct_inflation);
    r.cct_inflation_sem = std::sqrt(ss / (n - 1) / n);
  }
  r.frame_bytes = cfg.frame_bytes();
  r.frame_wire_bytes = cfg.frame_bytes() + cfg.gap_bytes;
  return r;
}

// The figure's fields, and the fabric (k, hosts) of every figure.
json RowJson(const Figure& f, const Row& r) {
  json j{{"lb", r.key.lb}};
  for (Field x : f.fields) j[std::string(FieldName(x))] = FieldJson(x, r);
  for (Field x : {Field::kK, Field::kHosts}) j[std::string(FieldName(x))] = FieldJson(x, r);
  j["seeds"] = r.seeds;
  j["cct_us"] = r.cct_us;
  j["cct_lower_bound_us"] = r.cct_lower_bound_us;
  j["cct_inflation"] = r.cct_inflation;
  j["cct_inflation_sem"] = r.cct_inflation_sem;
  j["queue_max_pkts"] = r.queue_max_pkts;
  j["utilization"] = r.utilization;
  j["retransmits"] = r.retransmits;
  j["flows_incomplete"] = r.flows_incomplete;
  return j;
}

std::vector<std::string> Notes(const Figure& f, Size size, uint32_t seeds,
                               const paper::Plan& plan) {
  std::vector<std::string> notes;
  if (size != Size::kFull) {
    const paper::Plan full = f.plan(Size::kFull);
    if (full.setup != plan.setup) {
      notes.push_back(fmt::format("{} size is smaller than the paper's: it runs {}; --full runs {}",
                                  SizeName(size), plan.setup, full.setup));
    }
  }
  if (seeds < 10) {
    notes.push_back(
        fmt::format("{} seed(s) per point; the paper runs every scenario at least 10 "
                    "times (--full: 10)",
                    seeds));
  }
  for (std::string_view n : f.model_notes) notes.emplace_back(n);
  return notes;
}

void PrintTable(const Figure& f, const std::vector<Row>& rows) {
  std::vector<std::string> header{"lb"};
  for (Field x : f.fields) header.emplace_back(FieldName(x));
  bool cca = false, incomplete = false;
  for (const Row& r : rows) {
    cca = cca || r.key.cca != Cca::kNone;
    incomplete = incomplete || r.flows_incomplete > 0;
  }
  for (const char* h : {"CCT (us)", "CCT +%", "+-", "max queue", "util"}) header.emplace_back(h);
  if (cca) header.emplace_back("retx");
  if (incomplete) header.emplace_back("incomplete");
  std::vector<std::vector<std::string>> out;
  for (const Row& r : rows) {
    std::vector<std::string> line{r.key.lb};
    for (Field x : f.fields) line.push_back(FieldText(x, r));
    line.push_back(fmt::format("{:.2f}", r.cct_us));
    line.push_back(fmt::format("{:.2f}", 100 * r.cct_inflation));
    line.push_back(fmt::format("{:.2f}", 100 * r.cct_inflation_sem));
    line.push_back(fmt::format("{:.1f}", r.queue_max_pkts));
    line.push_back(fmt::format("{:.3f}", r.utilization));
    if (cca) line.push_back(fmt::format("{:.0f}", r.retransmits));
    if (incomplete) line.push_back(fmt::format("{:.1f}", r.flows_incomplete));
    out.push_back(std::move(line));
  }
  std::cout << FormatTable(header, out);
}

int List(bool as_json) {
  json list = json::array();
  for (const Figure& f : paper::Figures()) {
    json j{{"figure", f.id},
           {"title", f.title},
           {"paper_setup", f.paper_setup},
           {"runs", f.missing.empty()}};
    if (!f.missing.empty()) j["missing"] = f.missing;
    list.push_back(j);
    if (!as_json) {
      std::cout << fmt::format(
          "{:<4}{}{}\n", f.id, f.title,
          f.missing.empty() ? "" : " (cannot run yet: engine feature missing)");
    }
  }
  if (as_json) std::cout << JsonText(list, 2) << "\n";
  return kExitOk;
}

}  // namespace

int PaperMain(int argc, char** argv) {
  CLI::App app{
      "ofan-sim paper: one of the paper's §6 figures (Figs. 5-14), its sweep run in process,\n"
      "the rows printed beside the paper's claims, each marked holds / does not hold / not\n"
      "computed (a row it needs is missing or measured nothing) with the measured numbers.\n"
      "The default size finishes in minutes on 2 cores (fewer seeds, sometimes a smaller\n"
      "fabric, said in the output); --full runs the paper's sizes.",
      kProg};
  std::string figure, size_name = "default", plot;
  bool list = false, full = false, as_json = false, no_progress = false;
  std::optional<uint32_t> seeds;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  app.add_flag("--list", list, "name the figures, one per line (with --json: as JSON)");
  app.add_option("--figure", figure, "the figure to run: 5a|5b|5c|6|7a|7b|8a|8b|9|10|11|12|13|14");
  app.add_option("--size", size_name,
                 "tiny (seconds: tests) | default (minutes on 2 cores) | full (the paper's)")
      ->capture_default_str();
  app.add_flag("--full", full, "the paper's sizes and seeds (= --size full)");
  app.add_option("--seeds", seeds, "seeds per point (default: the size's)");
  app.add_option("--jobs", jobs, "parallel runs")->capture_default_str();
  app.add_flag("--json", as_json, "print one JSON object instead of tables");
  app.add_option("--plot", plot, "write a PNG plot here (needs python3-matplotlib)");
  app.add_flag("--no-progress", no_progress, "no progress lines on stderr");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return Usage(e.what());
  }
  if (ParseOnly()) return 0;
  if (list) return List(as_json);
  if (figure.empty()) return Usage("give --figure F or --list");
  const Figure* fig = paper::FindFigure(figure);
  if (fig == nullptr) {
    std::string ids;
    for (const Figure& f : paper::Figures()) ids += (ids.empty() ? "" : "|") + std::string(f.id);
    return Usage(fmt::format("--figure: unknown figure '{}' (expected {})", figure, ids));
  }
  auto size = paper::ParseRunSize(size_name);
  if (!size) return Usage(size.error().message);
  if (full) {
    if (app.count("--size") > 0 && *size != Size::kFull) return Usage("--full contradicts --size");
    *size = Size::kFull;
  }
  if (seeds && (*seeds == 0 || *seeds > 10000)) return Usage("--seeds must be in [1, 10000]");
  if (jobs == 0) jobs = 1;
  if (!fig->missing.empty()) {
    std::cerr << kProg << ": figure " << fig->id << " cannot run yet: " << fig->missing << "\n";
    return kExitUsage;
  }
  std::string plot_script;
  if (!plot.empty()) {  // before the runs, not after minutes of them
    auto found = FindPlotScript("plot_paper.py", "OFAN_PAPER_PLOT_SCRIPT");
    if (!found) {
      std::cerr << "ofan-sim: " << found.error().message << "\n";
      return kExitFailed;
    }
    plot_script = std::move(*found);
  }

  const paper::Plan plan = fig->plan(*size);
  const uint32_t n_seeds = seeds.value_or(plan.seeds);
  std::vector<BatchRun> batch;
  std::vector<SimConfig> configs;  // one per point, seed 1
  for (const PointKey& k : plan.points) {
    for (uint32_t s = 1; s <= n_seeds; ++s) {
      auto c = paper::PointConfig(k, s);
      if (!c) return Usage(fmt::format("figure {}: {}", fig->id, c.error().message));
      if (s == 1) configs.push_back(*c);
      batch.push_back({*c, Cost(*c), Label(*fig, k, *c)});
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string what = fmt::format("paper {}", fig->id);
  if (!no_progress) {
    std::cerr << fmt::format("{}: {} runs ({} points x {} seeds), {} size, {} job(s)\n", what,
                             batch.size(), plan.points.size(), n_seeds, SizeName(*size), jobs);
  }
  auto results = RunBatch(batch, jobs, no_progress ? std::string() : what);
  if (!results) {
    std::cerr << "ofan-sim: " << results.error().message << "\n";
    return kExitFailed;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<Row> rows;
  for (size_t p = 0; p < plan.points.size(); ++p) {
    std::vector<SimResult> runs(results->begin() + static_cast<long>(p * n_seeds),
                                results->begin() + static_cast<long>((p + 1) * n_seeds));
    rows.push_back(Aggregate(plan.points[p], configs[p], runs));
  }
  const std::vector<Claim> claims = fig->claims(rows);
  const std::vector<std::string> notes = Notes(*fig, *size, n_seeds, plan);

  json out{{"figure", fig->id},       {"title", fig->title}, {"paper_setup", fig->paper_setup},
           {"size", SizeName(*size)}, {"seeds", n_seeds},    {"setup", plan.setup},
           {"x", FieldName(fig->x)}};
  out["facets"] = json::array();
  for (Field x : fig->facets) out["facets"].push_back(FieldName(x));
  out["rows"] = json::array();
  for (const Row& r : rows) out["rows"].push_back(RowJson(*fig, r));
  out["claims"] = json::array();
  for (const Claim& c : claims) {
    out["claims"].push_back({{"text", c.text},
                             {"holds", c.holds()},
                             {"verdict", paper::VerdictName(c.verdict)},
                             {"measured", c.measured}});
  }
  out["notes"] = notes;

  if (!plot.empty()) {
    if (Status st = WriteAndPlot(JsonText(out, 2), "", plot, plot_script); !st) {
      std::cerr << "ofan-sim: " << st.error().message << "\n";
      return kExitFailed;
    }
  }
  if (!no_progress) {
    std::cerr << fmt::format("{}: {} runs in {:.1f} s\n", what, batch.size(), wall);
  }
  if (as_json) {
    std::cout << JsonText(out, 2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("Fig. {}: {}\npaper: {}\nhere ({} size, {} seed(s) per point): {}\n\n",
                           fig->id, fig->title, fig->paper_setup, SizeName(*size), n_seeds,
                           plan.setup);
  PrintTable(*fig, rows);
  std::cout << "\nThe paper's claims, from these rows:\n";
  for (const Claim& c : claims) {
    std::cout << fmt::format("  [{}] {}\n      measured: {}\n", paper::VerdictName(c.verdict),
                             c.text, c.measured);
  }
  std::cout << "\nNotes:\n";
  for (const std::string& n : notes) std::cout << "  - " << n << "\n";
  if (!plot.empty()) std::cout << "\nplot: " << plot << "\n";
  return kExitOk;
}

}  // namespace ofan::sim
