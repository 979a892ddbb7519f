// ofan-sim: packet-level simulation of a fat tree running one LB policy (or,
// for incremental deployment, a mix of them: sim/placement.h), to reproduce
// the paper's queue laws (Thm. 1, 2, 5, 7; Fig. 4) and CCTs on the same LB
// code the dataplane runs.
//
// Exit codes: 0 success; 1 the run failed (the message says why); 2 bad
// command line; 3 the run finished but some flows did not complete (packets
// were dropped: finite --buffer with --cca none, or failures without a path).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "common/cli.h"
#include "common/json_text.h"
#include "common/main_guard.h"
#include "common/units.h"
#include "common/version.h"
#include "dataplane/lb/policy.h"
#include "sim/config.h"
#include "sim/paper/paper.h"
#include "sim/plot.h"
#include "sim/report.h"
#include "sim/runner.h"
#include "sim/sim.h"
#include "sim/workload.h"

namespace ofan::sim {
namespace {

using nlohmann::json;

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2, kExitIncomplete = 3;

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

struct RunError {
  std::mutex mu;
  std::optional<Error> first;
  void Set(const Error& e) {
    std::lock_guard<std::mutex> l(mu);
    if (!first) first = e;
  }
};

Result<json> RunSeeds(const SimConfig& base, uint32_t seeds, unsigned jobs) {
  std::vector<SimResult> runs(seeds);
  std::vector<uint64_t> seed_list(seeds);
  RunError err;
  ParallelFor(seeds, std::min<unsigned>(jobs, seeds), [&](size_t i) {
    SimConfig c = base;
    c.seed = base.seed + i;
    c.progress = base.progress && seeds == 1;
    seed_list[i] = c.seed;
    auto r = RunSim(c);
    if (!r) return err.Set(r.error());
    runs[i] = *r;
  });
  if (err.first) return *err.first;
  return AggregateJson(base, seed_list, runs);
}

int Sweep(const SimConfig& base, const std::vector<std::string>& lbs,
          const std::vector<uint64_t>& msgs, uint32_t seeds, unsigned jobs, bool as_json,
          const std::string& plot, const std::string& plot_script, const std::string& out_json) {
  struct Point {
    SimConfig cfg;
    std::string lb;
    uint64_t msg;
    uint64_t seed;
    SimResult r;
  };
  std::vector<Point> pts;
  for (const std::string& name : lbs) {
    for (uint64_t m : msgs) {
      for (uint32_t s = 0; s < seeds; ++s) {
        Point p{base, name, m, base.seed + s, {}};
        if (Status st = ApplyLbName(name, p.cfg); !st) {
          std::cerr << "ofan-sim: " << st.error().message << "\n";
          return kExitUsage;
        }
        p.cfg.msg_bytes = m;
        p.cfg.seed = p.seed;
        p.cfg.progress = false;
        pts.push_back(p);
      }
    }
  }
  std::vector<BatchRun> batch;
  batch.reserve(pts.size());
  for (const Point& p : pts) {
    batch.push_back({p.cfg, static_cast<double>(p.msg),
                     fmt::format("{:<7} {:>8} seed {}", p.lb, FormatSize(p.msg), p.seed)});
  }
  auto results = RunBatch(batch, jobs, "sweep");
  if (!results) {
    std::cerr << "ofan-sim: " << results.error().message << "\n";
    return kExitFailed;
  }
  for (size_t i = 0; i < pts.size(); ++i) pts[i].r = (*results)[i];
  // Aggregate per (lb, msg).
  json rows = json::array();
  for (const std::string& name : lbs) {
    for (uint64_t m : msgs) {
      std::vector<SimResult> rs;
      std::vector<uint64_t> ss;
      SimConfig cfg = base;
      for (const Point& p : pts) {
        if (p.lb == name && p.msg == m) rs.push_back(p.r), ss.push_back(p.seed), cfg = p.cfg;
      }
      json a = AggregateJson(cfg, ss, rs);
      a["lb"] = name;
      a["msg_bytes"] = m;
      a.erase("runs");
      rows.push_back(a);
    }
  }
  // Growth exponent: slope of log(max queue) against log(m), first to last size.
  json growth = json::object();
  for (const std::string& name : lbs) {
    double q0 = 0, q1 = 0;
    for (const json& r : rows) {
      if (r["lb"] != name) continue;
      if (r["msg_bytes"] == msgs.front()) q0 = r["queue_max_pkts"].get<double>();
      if (r["msg_bytes"] == msgs.back()) q1 = r["queue_max_pkts"].get<double>();
    }
    const double ratio = static_cast<double>(msgs.back()) / static_cast<double>(msgs.front());
    growth[name] = (q0 > 0 && q1 > 0 && ratio > 1) ? std::log(q1 / q0) / std::log(ratio) : 0.0;
  }
  json out{{"sweep", rows}, {"growth_exponent", growth}, {"config", ConfigJson(base)}};
  out["config"].erase("lb");
  out["config"].erase("msg");
  out["config"].erase("msg_bytes");
  out["seeds"] = seeds;
  if (!out_json.empty() || !plot.empty()) {
    if (Status st = WriteAndPlot(JsonText(out, 2), out_json, plot, plot_script); !st) {
      std::cerr << "ofan-sim: " << st.error().message << "\n";
      return kExitFailed;
    }
  }
  if (as_json) {
    std::cout << JsonText(out, 2) << "\n";
    return kExitOk;
  }
  auto table = [&](const char* title, const char* key, double scale, int prec) {
    std::vector<std::string> header{"msg"};
    for (const auto& n : lbs) header.push_back(n);
    std::vector<std::vector<std::string>> trs;
    for (uint64_t m : msgs) {
      std::vector<std::string> row{FormatSize(m)};
      for (const auto& n : lbs) {
        for (const json& r : rows) {
          if (r["lb"] == n && r["msg_bytes"] == m) {
            row.push_back(fmt::format("{:.{}f}", scale * r[key].get<double>(), prec));
          }
        }
      }
      trs.push_back(row);
    }
    std::cout << title << "\n" << FormatTable(header, trs) << "\n";
  };
  std::cout << fmt::format("ofan-sim sweep: {} k={} levels={}, {} seed(s) per point\n\n",
                           WorkloadName(base.workload), base.k, base.levels, seeds);
  table("Max queue (data packets), any switch queue (Fig. 4b):", "queue_max_pkts", 1, 1);
  table("Time-average queue (data packets), over all switch queues:", "queue_avg_pkts", 1, 3);
  table("CCT inflation over the lower bound (%):", "cct_inflation", 100, 2);
  std::vector<std::vector<std::string>> g;
  for (const auto& n : lbs) {
    const double e = growth[n].get<double>();
    const char* cls = e > 0.75  ? "~linear (Theta(m))"
                      : e > 0.3 ? "~sqrt (Theta(sqrt m))"
                                : "bounded (Theta(1))";
    g.push_back({n, fmt::format("{:.2f}", e), cls});
  }
  std::cout << "Growth of the max queue from " << FormatSize(msgs.front()) << " to "
            << FormatSize(msgs.back()) << " (log-log slope):\n"
            << FormatTable({"lb", "exponent", "class"}, g);
  if (!plot.empty()) std::cout << "\nplot: " << plot << "\n";
  return kExitOk;
}

// What the command line gives, before it becomes a SimConfig.
struct SimArgs {
  SimConfig c;
  std::string lb_name = "ofan", host_name, workload = "perm", msg = "1MiB", buffer = "0",
              ecn = "80000", cca = "none", pfcwd_action = "drop", receiver = "ooo";
  uint64_t reorder_kb = fabric::kReorderDefaultBytes / 1024;
  std::string lb_tiers, lb_placement, lb_rest = "ar";
  std::string ar_quanta, msgs_list, lbs_list = "ecmp,rps,rr,ar,ofan,pofan", plot, out_json;
  uint32_t seeds = 1;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  bool as_json = false, sweep = false, progress = false, no_progress = false, list_policies = false;
  double flowlet_gap_us = 2.0, glb_period_us = 1.0;
};

void AddFabricOptions(CLI::App& app, SimArgs& a) {
  SimConfig& c = a.c;
  app.add_option("--k", c.k, "switch radix: even, 4..64")->capture_default_str();
  app.add_option("--levels", c.levels, "2 (leaf-spine, k^2/2 hosts) or 3 (fat tree, k^3/4 hosts)")
      ->capture_default_str();
  app.add_option(
         "--lb", a.lb_name,
         "switch policy: " + std::string(lb::PolicyNameList()) +
             " (--list-policies; rsq = rps);\n"
             "<N>ofan: POfan with N-port pipes, e.g. 4ofan (the paper's 4Ofan; overrides "
             "--pipe-size);\n"
             "or a host scheme with its switch side: drb (host rotation + source routing),\n"
             "ethereal (one source-routed subflow per path, ACKs on the reverse path),\n"
             "reps (recycled entropies + ECMP), spray (random entropy per packet + ECMP)")
      ->capture_default_str();
  app.add_option("--lb-tiers", a.lb_tiers,
                 "incremental deployment (§6.4): a policy per switch tier, e.g. "
                 "edge=4ofan,agg=ar (tiers edge|agg|core; a tier not named runs --lb)");
  app.add_option("--lb-placement", a.lb_placement,
                 "incremental deployment (§6.4, Fig. 11): --lb on half of the edge and agg "
                 "switches, --lb-rest on the others: random-switches|random-pods|agg|edge");
  app.add_option("--lb-rest", a.lb_rest, "--lb-placement: the policy of the switches outside it")
      ->capture_default_str();
  app.add_option(
      "--host", a.host_name,
      "host entropy scheme: fixed|spray|drb|reps|ethereal (default: fixed, or set by --lb)");
  app.add_option("--pipe-size", c.policy.pipe_size, "POfan: ports per pipe (1 = 1Ofan, 4 = 4Ofan)")
      ->capture_default_str();
}

Status ApplyPolicy(const CLI::App& app, SimArgs& a) {
  SimConfig& c = a.c;
  if (Status s = ApplyLbName(a.lb_name, c); !s) return s;
  if (!a.host_name.empty()) {
    auto h = ParseHostScheme(a.host_name);
    if (!h) return h.error();
    c.host = *h;
  }
  if (!a.lb_tiers.empty() && !a.lb_placement.empty())
    return InvalidArgument("--lb-tiers and --lb-placement are two ways to mix; give one");
  if (app.count("--lb-rest") && a.lb_placement.empty())
    return InvalidArgument("--lb-rest needs --lb-placement");
  if (!a.lb_tiers.empty()) {
    if (Status s = ApplyLbTiers(a.lb_tiers, c); !s) return s;
  }
  if (!a.lb_placement.empty()) {
    if (Status s = ApplyLbPlacement(a.lb_placement, a.lb_rest, c); !s) return s;
  }
  return {};
}

void AddWorkloadOptions(CLI::App& app, SimArgs& a) {
  SimConfig& c = a.c;
  app.add_option("--workload", a.workload,
                 "perm (random derangement) | a2a (all-to-all, --msg per flow: Fig. 5b) | a2a-host "
                 "(all-to-all, --msg per host: Fig. 5c) | pair (App. A: host 0 <-> last host) | "
                 "matrix | moe (§6.6 MoE dispatch, k=8: 128 GPUs) | fsdp (§6.7 FSDP2 backward, "
                 "k=16: 1,024 GPUs) | incast (--incast-senders hosts to host 0, --msg each)")
      ->capture_default_str();
  app.add_flag("--victim", c.incast_victim,
               "incast: and a victim flow, the last host to host 1 (the receiver's edge "
               "neighbour), as ofan-emu run --victim");
  app.add_option("--incast-senders", c.incast_senders,
                 "incast: hosts that send to host 0, evenly spaced over the others (0: every "
                 "other host), as ofan-emu run --workload incast picks them")
      ->capture_default_str();
  app.add_option("--matrix", c.matrix_file,
                 "traffic matrix file for --workload matrix: lines 'SRC DST SIZE'");
  app.add_option("--moe-matrix", c.moe_matrix_file,
                 "moe: GPU-to-expert token matrix file (n lines of n counts; default: generated "
                 "from the seed)");
  app.add_flag("--eplb", c.moe_eplb, "moe: EPLB placement, two expert slots per GPU (less skew)");
  app.add_option("--moe-scale", c.moe_scale,
                 "moe: multiply every flow's bytes (1 = the paper's 492 MB mean per GPU)")
      ->capture_default_str();
  app.add_option("--model", c.fsdp_model, "fsdp: Llama-3 8b | 70b | 405b")->capture_default_str();
  app.add_option("--fsdp-layers", c.fsdp_layers, "fsdp: layers of the backward pass")
      ->capture_default_str();
  app.add_option("--fsdp-phases", c.fsdp_phases, "fsdp: 1 = ReduceScatter, 2 = + AllGather")
      ->capture_default_str();
  app.add_option("--server-gpus", c.server_gpus, "moe, fsdp: GPUs (hosts) per server")
      ->capture_default_str();
  app.add_option("--msg", a.msg, "message size per flow, e.g. 64KiB, 1MiB, 16MiB")
      ->capture_default_str();
  app.add_option("--seeds", a.seeds, "number of seeds (runs); reports mean and SEM")
      ->capture_default_str();
  app.add_option("--seed", c.seed, "first seed")->capture_default_str();
}

Status ApplyWorkload(const CLI::App& app, SimArgs& a) {
  SimConfig& c = a.c;
  auto w = ParseWorkload(a.workload);
  if (!w) return w.error();
  c.workload = *w;
  if (app.count("--payload") == 0) c.payload = DefaultPayload(c.workload, c.payload);
  auto m = ParseSize(a.msg);
  if (!m) return InvalidArgument("--msg: " + m.error().message);
  c.msg_bytes = *m;
  return {};
}

void AddLinkOptions(CLI::App& app, SimArgs& a) {
  SimConfig& c = a.c;
  app.add_option("--link-gbps", c.link_gbps, "link rate (Gb/s)")->capture_default_str();
  app.add_option("--latency-us", c.latency_us, "propagation delay per link (us)")
      ->capture_default_str();
  app.add_option("--payload", c.payload, "data payload per packet (bytes; moe: 65536 by default)")
      ->capture_default_str();
  app.add_option("--header", c.header, "header bytes per data packet")->capture_default_str();
  app.add_option("--ack-bytes", c.ack_bytes, "ACK frame size (bytes)")->capture_default_str();
  app.add_option("--gap-bytes", c.gap_bytes, "inter-frame gap + preamble (bytes)")
      ->capture_default_str();
  app.add_option("--load", c.load, "rho: hosts pace data at this fraction of line rate, (0, 1]")
      ->capture_default_str();
  app.add_option("--host-burst", c.host_burst,
                 "the host pacer's bucket in data frames: up to this many at line rate to catch "
                 "up (1: strictly periodic)")
      ->capture_default_str();
}

void AddQueueOptions(CLI::App& app, SimArgs& a) {
  SimConfig& c = a.c;
  app.add_option("--buffer", a.buffer,
                 "per-port buffer, e.g. 800KB; 0 = infinite (with --cca none drops are not "
                 "recovered). Default: infinite; with a --cca, the paper's 800000 B")
      ->capture_default_str();
  app.add_option("--ecn", a.ecn,
                 "CE-mark data above this backlog (bytes; 0 = off; the paper's 80 KB). Marks "
                 "feed REPS and the CCAs")
      ->capture_default_str();
  app.add_option("--cca", a.cca,
                 "the hosts' congestion control and loss recovery (retransmission after 3 + "
                 "the flow's paths later packets were acked, or at the timeout):" +
                     CcaHelp())
      ->capture_default_str();
  app.add_flag("--pfc", c.pfc,
               "PFC on every link, as ofan-emu up --pfc: data lossless (per ingress port XOFF "
               "at buffer - headroom, XON two frames below), ACKs and PFC frames in a "
               "strict-priority queue; needs --buffer");
  app.add_option("--pfc-quanta", c.pfc_quanta,
                 "--pfc: the pause an XOFF asks (quanta of 512 bit times)")
      ->capture_default_str();
  app.add_option("--pfcwd-detect-ms", c.pfcwd_detect_ms,
                 "--pfc: a data queue paused with frames waiting this long fires the watchdog")
      ->capture_default_str();
  app.add_option("--pfcwd-restore-ms", c.pfcwd_restore_ms,
                 "--pfc: the watchdog restores after this long without pause")
      ->capture_default_str();
  app.add_option("--pfcwd-action", a.pfcwd_action,
                 "--pfc: what a stormed queue does: drop | forward | alert")
      ->capture_default_str();
  app.add_flag("--reorder", c.reorder,
               "resequencing at the destination edge, as ofan-emu up --reorder: each edge's "
               "host-facing port holds a flow's early data frames until the gap fills or they "
               "waited --reorder-timeout-us");
  app.add_option("--reorder-kb", a.reorder_kb, "--reorder: each host port's buffer (KiB)")
      ->capture_default_str();
  app.add_option("--reorder-timeout-us", c.reorder_timeout_us,
                 "--reorder: how long a frame may wait for the gap before it (us; default: the "
                 "time the link takes to send the reorder buffer)");
  app.add_option("--receiver", a.receiver,
                 "what a receiving NIC does with an early data packet: ooo (places it: the "
                 "paper's hosts, uroce --ooo) | gbn (rxe: drops it, NAKs the gap once; the "
                 "sender goes back N; needs --cca none)")
      ->capture_default_str();
  app.add_option("--rto-us", c.rto_us,
                 "with --cca none: the hosts' retransmission timeout in us, as uroce's (0: ten "
                 "base RTTs and a full buffer's drain per hop); a lost packet is sent again "
                 "after it: go-back-N (--receiver gbn) or the holes one by one (ooo, uroce --ooo)")
      ->capture_default_str();
  app.add_option("--init-window", c.init_window_bdps,
                 "with a --cca: the first window, in BDPs of the flow's path (base RTT x line "
                 "rate), (0, 16]")
      ->capture_default_str();
}

Status ApplyQueues(const CLI::App& app, SimArgs& a) {
  SimConfig& c = a.c;
  auto b = ParseSize(a.buffer);
  if (!b) return InvalidArgument("--buffer: " + b.error().message);
  c.buffer_bytes = *b;
  auto cc = ParseCca(a.cca);
  if (!cc) return InvalidArgument("--cca: " + cc.error().message);
  c.cca = *cc;
  // The paper runs its CCAs over 800 KB buffers (§6, footnote 6).
  if (c.cca != Cca::kNone && app.count("--buffer") == 0) c.buffer_bytes = kCcaBufferBytes;
  auto wd = fabric::ParsePfcWdAction(a.pfcwd_action);
  if (!wd) return InvalidArgument("--pfcwd-action " + wd.error().message);
  c.pfcwd_action = *wd;
  for (const char* opt :
       {"--pfc-quanta", "--pfcwd-detect-ms", "--pfcwd-restore-ms", "--pfcwd-action"}) {
    if (app.count(opt) && !c.pfc)
      return InvalidArgument(std::string(opt) + " is --pfc's: give --pfc");
  }
  for (const char* opt : {"--reorder-kb", "--reorder-timeout-us"}) {
    if (app.count(opt) && !c.reorder)
      return InvalidArgument(std::string(opt) + " is --reorder's: give --reorder");
  }
  if (a.reorder_kb == 0 || a.reorder_kb > (uint64_t{1} << 20)) {
    return InvalidArgument(
        fmt::format("--reorder-kb must be in [1, {}], got {}", uint64_t{1} << 20, a.reorder_kb));
  }
  c.reorder_bytes = a.reorder_kb * 1024;
  if (app.count("--reorder-timeout-us") && c.reorder_timeout_us == 0) {
    return InvalidArgument(fmt::format("--reorder-timeout-us must be in [1, {}], got 0",
                                       fabric::kReorderMaxTimeoutUs));
  }
  auto rcv = ParseReceiver(a.receiver);
  if (!rcv) return InvalidArgument("--receiver: " + rcv.error().message);
  c.receiver = *rcv;
  auto e = ParseSize(a.ecn);
  if (!e) return InvalidArgument("--ecn: " + e.error().message);
  c.ecn_bytes = *e;
  return {};
}

void AddTuningOptions(CLI::App& app, SimArgs& a) {
  SimConfig& c = a.c;
  app.add_option("--fail-prob", c.fail_prob,
                 "each edge-agg and agg-core link fails with this probability (§6.2); hosts then "
                 "pace at rho_max")
      ->capture_default_str();
  app.add_option("--ar-quanta", a.ar_quanta,
                 "AR queue-level thresholds as fractions of --ar-buffer, e.g. 0.05,0.1,0.2");
  app.add_option("--ar-buffer", c.policy.ar_buffer_bytes, "AR: buffer the quanta refer to (bytes)")
      ->capture_default_str();
  app.add_option("--drill-samples", c.policy.drill_samples, "DRILL: random samples per decision")
      ->capture_default_str();
  app.add_option("--glb-period-us", a.glb_period_us,
                 "SGLB: how often switches learn the levels of the links beyond (us)")
      ->capture_default_str();
  app.add_option("--flowlet-gap-us", a.flowlet_gap_us,
                 "flowlet: idle gap that starts a new flowlet (us)")
      ->capture_default_str();
}

Status ApplyTuning(const CLI::App&, SimArgs& a) {
  SimConfig& c = a.c;
  if (!a.ar_quanta.empty()) {
    auto q = SplitList(a.ar_quanta);
    if (q.size() != 3) return InvalidArgument("--ar-quanta takes three comma-separated fractions");
    for (int i = 0; i < 3; ++i) {
      try {
        c.policy.ar_quanta[i] = std::stod(q[static_cast<size_t>(i)]);
      } catch (...) {
        return InvalidArgument("--ar-quanta: '" + q[static_cast<size_t>(i)] + "' is not a number");
      }
    }
  }
  if (!(a.flowlet_gap_us >= 0)) return InvalidArgument("--flowlet-gap-us must be >= 0");
  c.policy.flowlet_gap_ps = static_cast<lb::TimePs>(a.flowlet_gap_us * 1e6);
  if (!(a.glb_period_us > 0 && a.glb_period_us <= 1e6))
    return InvalidArgument("--glb-period-us must be in (0, 1e6]");
  c.policy.glb_period_ps = std::max<lb::TimePs>(1, static_cast<lb::TimePs>(a.glb_period_us * 1e6));
  return {};
}

void AddRunOptions(CLI::App& app, SimArgs& a) {
  app.add_flag("--json", a.as_json, "print one JSON object instead of tables");
  app.add_flag("--list-policies", a.list_policies, std::string(lb::kListPoliciesHelp));
  app.add_flag("--progress", a.progress,
               "show a progress bar on stderr (default when stderr is a terminal)");
  app.add_flag("--no-progress", a.no_progress, "never show a progress bar");
  app.add_option("--jobs", a.jobs, "parallel runs (seeds, sweep points)")->capture_default_str();
  app.add_flag("--sweep", a.sweep, "Fig. 4(b)-style sweep: queues vs message size per policy");
  app.add_option("--msgs", a.msgs_list,
                 "sweep message sizes (default 64KiB,...,16MiB by powers of 2)");
  app.add_option("--lbs", a.lbs_list, "sweep policies (comma separated, as --lb)")
      ->capture_default_str();
  app.add_option("--plot", a.plot, "sweep: write a PNG plot here (needs python3-matplotlib)");
  app.add_option("--out-json", a.out_json, "sweep: also write the JSON result to this file");
}

Status ApplyRuns(const CLI::App&, SimArgs& a) {
  if (a.seeds == 0 || a.seeds > 10000) return InvalidArgument("--seeds must be in [1, 10000]");
  if (a.jobs == 0) a.jobs = 1;
  a.c.progress = !a.no_progress && (a.progress || (!a.as_json && isatty(STDERR_FILENO)));
  a.c.policy.seed = a.c.seed;
  return {};
}

// The option groups, in the order --help lists them; each group's checks
// run in this order too, after parsing.
struct OptionGroup {
  void (*add)(CLI::App&, SimArgs&);
  Status (*apply)(const CLI::App&, SimArgs&);  // null: the options need no check
};
const OptionGroup kOptionGroups[] = {
    {AddFabricOptions, ApplyPolicy}, {AddWorkloadOptions, ApplyWorkload},
    {AddLinkOptions, nullptr},       {AddQueueOptions, ApplyQueues},
    {AddTuningOptions, ApplyTuning}, {AddRunOptions, ApplyRuns},
};

// --sweep: every point's configuration checked before the first runs.
int SweepMain(SimArgs& a) {
  auto usage = [](const std::string& m) { return UsageError("ofan-sim", m); };
  std::vector<uint64_t> msgs;
  if (a.msgs_list.empty()) {
    for (uint64_t s = uint64_t{64} * 1024; s <= uint64_t{16} * 1024 * 1024; s *= 2)
      msgs.push_back(s);
  } else {
    for (const auto& s : SplitList(a.msgs_list)) {
      auto v = ParseSize(s);
      if (!v) return usage("--msgs: " + v.error().message);
      msgs.push_back(*v);
    }
    std::sort(msgs.begin(), msgs.end());
  }
  auto names = SplitList(a.lbs_list);
  if (names.empty() || msgs.empty())
    return usage("--sweep needs at least one --lbs and one --msgs entry");
  // A mix refuses some policies: say so now, not after minutes of sweeping.
  for (const auto& n : names) {
    SimConfig probe = a.c;
    if (Status s = ApplyLbName(n, probe); !s) return usage("--lbs: " + s.error().message);
    if (Status s = probe.Validate(); !s) return usage("--lbs " + n + ": " + s.error().message);
  }
  if (Status s = a.c.Validate(); !s) return usage(s.error().message);
  std::string plot_script;
  if (!a.plot.empty()) {  // before the sweep, not after minutes of it
    auto found = FindPlotScript("plot_sweep.py", "OFAN_PLOT_SCRIPT");
    if (!found) {
      std::cerr << "ofan-sim: " << found.error().message << "\n";
      return kExitFailed;
    }
    plot_script = std::move(*found);
  }
  return Sweep(a.c, names, msgs, a.seeds, a.jobs, a.as_json, a.plot, plot_script, a.out_json);
}

int Main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "paper") return PaperMain(argc - 1, argv + 1);
  CLI::App app{
      "ofan-sim: packet-level fat-tree simulator for the LB policies of dataplane/lb.\n"
      "Defaults are the paper's §6 scenario: k=12 3-level fat tree (432 hosts), 800 Gb/s,\n"
      "0.5 us links, 4096 B payload + 62 B header, 64 B ACKs, 20 B gap, 1 MiB permutation.\n"
      "ofan-sim paper --list | --figure F: one §6 figure's sweep beside the paper's claims\n"
      "(ofan-sim paper --help)."};
  app.set_version_flag("--version", fmt::format("ofan-sim {}", kOfanVersion));
  SimArgs a;
  for (const OptionGroup& g : kOptionGroups) g.add(app, a);
  if (auto rc = ParseCommandLine(app, argc, argv)) return *rc;
  if (a.list_policies) {
    std::cout << (a.as_json ? JsonText(lb::PolicyListJson(), 1) + "\n" : lb::PolicyListText());
    return kExitOk;
  }
  for (const OptionGroup& g : kOptionGroups) {
    if (!g.apply) continue;
    if (Status s = g.apply(app, a); !s) return UsageError("ofan-sim", s.error().message);
  }
  if (a.sweep) return SweepMain(a);
  if (Status s = a.c.Validate(); !s) return UsageError("ofan-sim", s.error().message);
  auto r = RunSeeds(a.c, a.seeds, a.jobs);
  if (!r) {
    std::cerr << "ofan-sim: " << r.error().message << "\n";
    return r.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitFailed;
  }
  if (a.as_json) {
    std::cout << r->dump(2) << "\n";
  } else {
    std::cout << SummaryTable(*r);
  }
  return (*r)["flows_incomplete"].get<double>() > 0 ? kExitIncomplete : kExitOk;
}

}  // namespace
}  // namespace ofan::sim

int main(int argc, char** argv) {
  // 1: the run failed, as for any other error.
  return ofan::GuardMain("ofan-sim", 1, [&] { return ofan::sim::Main(argc, argv); });
}
