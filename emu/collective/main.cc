// ofan-coll: runs one collective of the engine over a transport and prints
// its result (a table line, or one JSON object with --json). Today the only
// transport is the in-memory loopback (--transport loopback): a check of the
// engine and of a caller's JSON plumbing without a fabric; uroce and
// libibverbs transports plug in where the loopback fabric is made. With
// --link-gbps it reports the NIC-bound, over the paths of a fat tree (--k,
// --levels) between the ranks' hosts (--hosts).
//
// Exit codes: 0 the run completed and verified; 1 it failed (the message,
// and the JSON's "error", say why); 2 bad command line.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/json_text.h"
#include "common/main_guard.h"
#include "common/units.h"
#include "common/version.h"
#include "dataplane/lb/fat_tree.h"
#include "emu/collective/driver.h"
#include "emu/collective/loopback.h"

namespace ofan::emu {
namespace {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

// "0,5,9" -> {0, 5, 9}.
Result<std::vector<uint32_t>> ParseHosts(const std::string& text) {
  std::vector<uint32_t> hosts;
  std::stringstream ss(text);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.empty() || tok.size() > 9 || tok.find_first_not_of("0123456789") != std::string::npos) {
      return MakeError(ErrorCode::kInvalidArgument,
                       fmt::format("--hosts: '{}' is not a host index", tok));
    }
    hosts.push_back(static_cast<uint32_t>(std::stoul(tok)));
  }
  return hosts;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "ofan-coll: one collective (permutation, all-to-all, ring all-gather or ring\n"
      "reduce-scatter) of ofan-emu's engine, verified, with nccl-tests' algbw/busbw."};
  app.set_version_flag("--version", fmt::format("ofan-coll {}", kOfanVersion));
  std::string workload = "allgather", msg = "1MiB", chunk = "64KiB", transport = "loopback";
  ScheduleParams sp;
  sp.num_ranks = 8;
  LoopbackOptions lo;
  uint32_t deadline_ms = 60'000;
  NicBoundParams bound;
  bool as_json = false;
  int k = 0, levels = 3;
  std::string hosts_text;
  app.add_option("--transport", transport, "loopback (in memory)")->capture_default_str();
  app.add_option("--workload", workload, "permutation, alltoall, allgather, reducescatter")
      ->capture_default_str();
  app.add_option("--ranks", sp.num_ranks, "number of ranks, 2..4096")->capture_default_str();
  app.add_option("--msg", msg, "size S as nccl-tests defines it per workload, e.g. 1MiB")
      ->capture_default_str();
  app.add_option("--qps", sp.qps_per_peer, "RC QPs per peer")->capture_default_str();
  app.add_option("--chunk", chunk, "largest single write")->capture_default_str();
  app.add_option("--seed", sp.seed, "permutation pairs and data pattern")->capture_default_str();
  app.add_option("--max-outstanding", lo.max_outstanding, "writes in flight per (peer, QP)")
      ->capture_default_str();
  app.add_option("--delay-us", lo.delay_us, "loopback: post-to-delivery delay")
      ->capture_default_str();
  app.add_option("--reorder", lo.max_hold, "loopback: hold messages up to this many polls")
      ->capture_default_str();
  app.add_option("--deadline-ms", deadline_ms, "fail the run after this long")
      ->capture_default_str();
  app.add_option("--link-gbps", bound.link_gbps, "link rate for the NIC-bound (0: no bound)")
      ->capture_default_str();
  app.add_option("--rho", bound.rho, "hosts paced at this fraction of the link rate")
      ->capture_default_str();
  app.add_option("--latency-us", bound.link_latency_us, "propagation per link")
      ->capture_default_str();
  app.add_option("--mtu", bound.mtu, "RoCE MTU")->capture_default_str();
  app.add_option("--k", k, "fat tree radix for the bound's path lengths (0: 2 links everywhere)")
      ->capture_default_str();
  app.add_option("--levels", levels, "fat tree levels (2 or 3)")->capture_default_str();
  app.add_option("--hosts", hosts_text, "fabric host of each rank, e.g. 0,5,9 (default 0..n-1)");
  app.add_flag("--json", as_json, "print one JSON object");
  if (auto rc = ParseCommandLine(app, argc, argv)) return *rc;
  auto usage = [](const std::string& m) { return UsageError("ofan-coll", m); };
  if (transport != "loopback") return usage("--transport: only 'loopback' is built in");
  auto w = ParseWorkload(workload);
  if (!w) return usage(w.error().message);
  sp.workload = *w;
  auto m = ParseSize(msg);
  if (!m) return usage("--msg: " + m.error().message);
  sp.msg_bytes = *m;
  auto c = ParseSize(chunk);
  if (!c) return usage("--chunk: " + c.error().message);
  sp.chunk_bytes = *c;
  auto s = MakeSchedule(sp);
  if (!s) return usage(s.error().message);

  lo.num_ranks = sp.num_ranks;
  lo.qps_per_peer = sp.qps_per_peer;
  lo.send_bytes = s->MaxSendBytes();
  lo.recv_bytes = s->MaxRecvBytes();
  lo.seed = sp.seed;
  if (lo.max_outstanding == 0) return usage("--max-outstanding must be > 0");
  RunOptions o;
  if (!hosts_text.empty()) {
    auto h = ParseHosts(hosts_text);
    if (!h) return usage(h.error().message);
    if (h->size() != sp.num_ranks) {
      return usage(fmt::format("--hosts names {} hosts for {} ranks", h->size(), sp.num_ranks));
    }
    if (std::set<uint32_t>(h->begin(), h->end()).size() != h->size()) {
      return usage("--hosts names a host twice");
    }
    o.hosts = *h;
  }
  std::optional<lb::FatTree> tree;
  if (k != 0) {
    auto t = lb::FatTree::Make(k, levels);
    if (!t) return usage("--k / --levels: " + t.error().message);
    tree = std::move(*t);
    const auto n_hosts = static_cast<uint32_t>(tree->num_hosts());
    for (uint32_t i = 0; i < sp.num_ranks; ++i) {
      const uint32_t h = o.hosts.empty() ? i : o.hosts[i];
      if (h >= n_hosts) {
        return usage(fmt::format("host {} is not in a k={} tree of {} hosts", h, k, n_hosts));
      }
    }
    bound.hops = [&](uint32_t a, uint32_t b) { return tree->hops(lb::HostId(a), lb::HostId(b)); };
  }
  LoopbackFabric fabric(lo);
  o.deadline = std::chrono::milliseconds(deadline_ms);
  if (bound.link_gbps > 0) o.bound = bound;
  const CollectiveResult r = RunCollective(*s, fabric.endpoints(), o);
  if (as_json) {
    std::cout << JsonText(ResultJson(r)) << "\n";
  } else if (r.ok()) {
    std::cout << fmt::format(
        "{} {} ranks {} qps {}: cct {:.3f} us, algbw {:.3f} Gb/s, busbw {:.3f} "
        "Gb/s{}, verified\n",
        WorkloadName(r.workload), r.num_ranks, FormatSize(r.msg_bytes), r.qps_per_peer, r.cct_us,
        r.algbw_gbps, r.busbw_gbps,
        r.cct_lower_bound_us ? fmt::format(", NIC-bound {:.3f} us", *r.cct_lower_bound_us) : "");
  }
  if (!r.ok()) {
    std::cerr << "ofan-coll: " << r.error << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace
}  // namespace ofan::emu

int main(int argc, char** argv) {
  return ofan::GuardMain("ofan-coll", 1, [&] { return ofan::emu::Main(argc, argv); });
}
