// ofan-coll: runs one collective of the engine over a transport and prints
// its result (a table line, or one JSON object with --json). Transports:
// the in-memory loopback (--transport loopback, all ranks in this process:
// a check of the engine and of a caller's JSON plumbing without a fabric),
// and libibverbs (--transport verbs, where built: ONE rank per process,
// --rank R of --addrs, connected to the others by ofan-rc-1 and started on
// rank 0's go; it prints that rank's partial result, with the rxe
// hw_counters deltas). `ofan-coll merge FILE...` combines the partial
// results of one collective (merge_cli.h). With --link-gbps it reports the
// NIC-bound, over the paths of a fat tree (--k, --levels) between the
// ranks' hosts (--hosts).
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
#include "emu/collective/merge_cli.h"
#include "emu/rcx/rc_exchange.h"
#ifdef OFAN_HAVE_VERBS
#include "emu/verbs/verbs_rank.h"
#endif

namespace ofan::emu {
namespace {

constexpr int kExitOk = 0, kExitFailed = 1;  // 2, a bad command line: UsageError

// "0,5,9" -> {0, 5, 9}.
Result<std::vector<uint32_t>> ParseHosts(const std::string& text) {
  std::vector<uint32_t> hosts;
  std::stringstream ss(text);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.empty() || tok.size() > 9 || tok.find_first_not_of("0123456789") != std::string::npos) {
      return InvalidArgument(fmt::format("--hosts: '{}' is not a host index", tok));
    }
    hosts.push_back(static_cast<uint32_t>(std::stoul(tok)));
  }
  return hosts;
}

// The command line, before it becomes a schedule and run options.
struct CollArgs {
  std::string workload = "allgather", msg = "1MiB", chunk = "64KiB", transport = "loopback";
  ScheduleParams sp;
  LoopbackOptions lo;
  uint32_t deadline_ms = 60'000;
  NicBoundParams bound;
  bool as_json = false;
  int k = 0, levels = 3;
  std::string hosts_text;
  bool cts = false;
  std::string channel_bytes = "64KiB", cts_class = "prio";
  uint32_t channels = 2;
  CLI::Option* ranks_opt = nullptr;
  // --transport verbs
  uint32_t rank = 0;
  std::string addrs_text, device;
  uint16_t rc_port = rcx::kDefaultPort;
  double setup_s = 30;
  uint32_t recv_depth = 256;
  uint32_t ack_timeout = 14;  // verbs/qp_attr.h's kLocalAckTimeout
  std::vector<uint32_t> ips;  // --addrs, parsed
  CollArgs() { sp.num_ranks = 8; }
};

void AddCollectiveOptions(CLI::App& app, CollArgs& a) {
  ScheduleParams& sp = a.sp;
  app.add_option("--transport", a.transport,
                 "loopback (in memory, every rank here) or verbs (rxe: one rank, --rank/--addrs)")
      ->capture_default_str();
  app.add_option("--workload", a.workload,
                 "permutation, alltoall, allgather, reducescatter, incast")
      ->capture_default_str();
  app.add_flag("--victim", sp.victim,
               "incast: the last rank also sends --msg to rank 1, the receiver's edge neighbour "
               "(a flow that shares the incast's upstream ports, not its last hop)");
  app.add_flag("--cts", a.cts,
               "receiver-driven admission (NCCL's simple protocol): a chunk goes only into one "
               "of --channels slots of --channel-bytes its receiver cleared, and the receiver "
               "clears a slot again once its chunk arrived");
  app.add_option("--channels", a.channels, "--cts: slots per (sender, receiver) pair")
      ->capture_default_str();
  app.add_option("--channel-bytes", a.channel_bytes, "--cts: a slot's bytes (the chunk size then)")
      ->capture_default_str();
  app.add_option("--cts-class", a.cts_class,
                 "--cts: the clear-to-sends' class, prio (DSCP 48: the switches' strict-priority "
                 "queue) or data (the data's DSCP)")
      ->capture_default_str();
  app.add_option("--incast-senders", sp.incast_senders,
                 "incast: ranks that send to rank 0, evenly spaced (0: every other rank)")
      ->capture_default_str();
  a.ranks_opt =
      app.add_option("--ranks", sp.num_ranks, "number of ranks, 2..4096 (verbs: --addrs' count)")
          ->capture_default_str();
  app.add_option("--msg", a.msg, "size S as nccl-tests defines it per workload, e.g. 1MiB")
      ->capture_default_str();
  app.add_option("--qps", sp.qps_per_peer, "RC QPs per peer")->capture_default_str();
  app.add_option("--chunk", a.chunk, "largest single write")->capture_default_str();
  app.add_option("--seed", sp.seed, "permutation pairs and data pattern")->capture_default_str();
  app.add_option("--max-outstanding", a.lo.max_outstanding, "writes in flight per (peer, QP)")
      ->capture_default_str();
  app.add_option("--delay-us", a.lo.delay_us, "loopback: post-to-delivery delay")
      ->capture_default_str();
  app.add_option("--reorder", a.lo.max_hold, "loopback: hold messages up to this many polls")
      ->capture_default_str();
  app.add_option("--deadline-ms", a.deadline_ms, "fail the run after this long")
      ->capture_default_str();
}

void AddBoundOptions(CLI::App& app, CollArgs& a) {
  app.add_option("--link-gbps", a.bound.link_gbps, "link rate for the NIC-bound (0: no bound)")
      ->check(GbpsRate(/*or_zero=*/true))
      ->capture_default_str();
  app.add_option("--rho", a.bound.rho, "hosts paced at this fraction of the link rate")
      ->capture_default_str();
  app.add_option("--latency-us", a.bound.link_latency_us, "propagation per link")
      ->capture_default_str();
  app.add_option("--mtu", a.bound.mtu, "RoCE MTU")->capture_default_str();
  app.add_option("--k", a.k, "fat tree radix for the bound's path lengths (0: 2 links everywhere)")
      ->capture_default_str();
  app.add_option("--levels", a.levels, "fat tree levels (2 or 3)")->capture_default_str();
  app.add_option("--hosts", a.hosts_text, "fabric host of each rank, e.g. 0,5,9 (default 0..n-1)");
}

void AddVerbsOptions(CLI::App& app, CollArgs& a) {
  app.add_option("--rank", a.rank, "verbs: this process's rank")->capture_default_str();
  app.add_option("--addrs", a.addrs_text, "verbs: every rank's IPv4 address, IP0,IP1,...");
  app.add_option("--device", a.device, "verbs: RDMA device (default: the first)");
  app.add_option("--rc-port", a.rc_port, "verbs: ofan-rc-1 TCP port")->capture_default_str();
  app.add_option("--setup-timeout-s", a.setup_s, "verbs: connection setup and each later wait")
      ->capture_default_str();
  app.add_option("--recv-depth", a.recv_depth, "verbs: receive WRs posted per QP")
      ->capture_default_str();
  app.add_option("--ack-timeout", a.ack_timeout,
                 "verbs: local ACK timeout, 4.096 us x 2^N (1..31; 14 = 67 ms)")
      ->capture_default_str();
  app.add_flag("--json", a.as_json, "print one JSON object");
}

// --transport, and for verbs the ranks' addresses and the verbs options.
Status ApplyTransport(CollArgs& a) {
  const bool verbs = a.transport == "verbs";
  if (a.transport != "loopback" && !verbs) {
    return InvalidArgument("--transport: loopback or verbs, not '" + a.transport + "'");
  }
#ifndef OFAN_HAVE_VERBS
  if (verbs)
    return InvalidArgument("--transport verbs: this ofan-coll was built without libibverbs");
#endif
  if (!verbs) {
    if (!a.addrs_text.empty() || a.rank != 0 || !a.device.empty()) {
      return InvalidArgument("--rank, --addrs and --device are for --transport verbs");
    }
    return {};
  }
  if (a.addrs_text.empty()) return InvalidArgument("--transport verbs needs --addrs IP0,IP1,...");
  std::stringstream ss(a.addrs_text);
  for (std::string tok; std::getline(ss, tok, ',');) {
    auto ip = rcx::ParseIpv4(tok);
    if (!ip) return InvalidArgument("--addrs: " + ip.error().message);
    a.ips.push_back(*ip);
  }
  if (a.ranks_opt->count() && a.sp.num_ranks != a.ips.size()) {
    return InvalidArgument(
        fmt::format("--ranks {} but --addrs names {}", a.sp.num_ranks, a.ips.size()));
  }
  a.sp.num_ranks = static_cast<uint32_t>(a.ips.size());
  if (a.rank >= a.sp.num_ranks) {
    return InvalidArgument(
        fmt::format("--rank {} is not one of the {} ranks of --addrs", a.rank, a.sp.num_ranks));
  }
  if (std::set<uint32_t>(a.ips.begin(), a.ips.end()).size() != a.ips.size()) {
    return InvalidArgument("--addrs names an address twice");
  }
  if (!(a.setup_s > 0 && a.setup_s <= 86400))
    return InvalidArgument("--setup-timeout-s must be in (0, 86400]");
  if (a.recv_depth == 0) return InvalidArgument("--recv-depth must be > 0");
  if (a.ack_timeout < 1 || a.ack_timeout > 31)
    return InvalidArgument("--ack-timeout must be in 1..31");
  return {};
}

// The schedule's sizes and --cts's slots.
Status ApplySchedule(const CLI::App& app, CollArgs& a) {
  ScheduleParams& sp = a.sp;
  auto w = ParseWorkload(a.workload);
  if (!w) return w.error();
  sp.workload = *w;
  auto m = ParseSize(a.msg);
  if (!m) return InvalidArgument("--msg: " + m.error().message);
  sp.msg_bytes = *m;
  auto c = ParseSize(a.chunk);
  if (!c) return InvalidArgument("--chunk: " + c.error().message);
  sp.chunk_bytes = *c;
  for (const char* opt : {"--channels", "--channel-bytes", "--cts-class"}) {
    if (app.count(opt) && !a.cts)
      return InvalidArgument(std::string(opt) + " is --cts's: give --cts");
  }
  if (a.cts) {
    auto cb = ParseSize(a.channel_bytes);
    if (!cb) return InvalidArgument("--channel-bytes: " + cb.error().message);
    if (a.channels == 0) return InvalidArgument("--channels must be at least 1");
    if (a.cts_class != "prio" && a.cts_class != "data")
      return InvalidArgument("--cts-class: prio or data, not '" + a.cts_class + "'");
    if (app.count("--chunk"))
      return InvalidArgument("--chunk and --cts: a chunk is a slot (--channel-bytes)");
    sp.cts_channels = a.channels;
    sp.cts_channel_bytes = *cb;
    sp.cts_priority = a.cts_class == "prio";
    sp.chunk_bytes = *cb;
  }
  return {};
}

// The ranks' hosts and, with --k, the tree whose paths the NIC-bound takes
// (tree must outlive o: the bound's hops refer to it).
Status ApplyHosts(CollArgs& a, std::optional<lb::FatTree>& tree, RunOptions& o) {
  if (!a.hosts_text.empty()) {
    auto h = ParseHosts(a.hosts_text);
    if (!h) return h.error();
    if (h->size() != a.sp.num_ranks) {
      return InvalidArgument(
          fmt::format("--hosts names {} hosts for {} ranks", h->size(), a.sp.num_ranks));
    }
    if (std::set<uint32_t>(h->begin(), h->end()).size() != h->size()) {
      return InvalidArgument("--hosts names a host twice");
    }
    o.hosts = *h;
  }
  if (a.k != 0) {
    auto t = lb::FatTree::Make(a.k, a.levels);
    if (!t) return InvalidArgument("--k / --levels: " + t.error().message);
    tree = *t;
    const auto n_hosts = static_cast<uint32_t>(tree->num_hosts());
    for (uint32_t i = 0; i < a.sp.num_ranks; ++i) {
      const uint32_t h = o.hosts.empty() ? i : o.hosts[i];
      if (h >= n_hosts) {
        return InvalidArgument(
            fmt::format("host {} is not in a k={} tree of {} hosts", h, a.k, n_hosts));
      }
    }
    a.bound.hops = [&tree](uint32_t x, uint32_t y) {
      return tree->hops(lb::HostId(x), lb::HostId(y));
    };
  }
  o.deadline = std::chrono::milliseconds(a.deadline_ms);
  if (a.bound.link_gbps > 0) o.bound = a.bound;
  return {};
}

// The collective over the transport: its result and its JSON.
std::pair<CollectiveResult, nlohmann::json> RunOne(const Schedule& s, const CollArgs& a,
                                                   RunOptions& o) {
  if (a.transport == "verbs") {
#ifdef OFAN_HAVE_VERBS
    verbs::VerbsRankOptions vo;
    vo.rank = a.rank;
    vo.ips = a.ips;
    vo.device = a.device;
    vo.port = a.rc_port;
    vo.setup_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.setup_s * 1000));
    vo.max_outstanding = a.lo.max_outstanding;
    vo.recv_depth = a.recv_depth;
    vo.ack_timeout = static_cast<uint8_t>(a.ack_timeout);
    // The transport sleeps on its completion channel and wakes at the first
    // completion: a long idle wait costs no latency, a short one spins.
    o.idle_wait_us = 50'000;
    const verbs::VerbsRankOutcome v = verbs::RunVerbsRank(s, vo, o);
    return {v.result, verbs::VerbsRankJson(v)};
#endif
  }
  LoopbackFabric fabric(a.lo);
  CollectiveResult r = RunCollective(s, fabric.endpoints(), o);
  nlohmann::json j = ResultJson(r);
  return {std::move(r), std::move(j)};
}

int Main(int argc, char** argv) {
  CLI::App app{
      "ofan-coll: one collective (permutation, all-to-all, ring all-gather, ring\n"
      "reduce-scatter or incast) of ofan-emu's engine, verified, with nccl-tests' algbw/busbw."};
  app.set_version_flag("--version", fmt::format("ofan-coll {}", kOfanVersion));
  CollArgs a;
  AddCollectiveOptions(app, a);
  AddBoundOptions(app, a);
  AddVerbsOptions(app, a);
  std::vector<std::string> merge_files;
  CLI::App* merge = app.add_subcommand(
      "merge",
      "print one result from the partial results (one JSON object per line) of the "
      "processes that ran one collective");
  merge->add_option("FILE", merge_files, "result files (none or '-': stdin)");
  if (auto rc = ParseCommandLine(app, argc, argv)) return *rc;
  if (merge->parsed()) return RunMerge(merge_files);
  auto usage = [](const std::string& m) { return UsageError("ofan-coll", m); };
  if (Status st = ApplyTransport(a); !st) return usage(st.error().message);
  if (Status st = ApplySchedule(app, a); !st) return usage(st.error().message);
  auto s = MakeSchedule(a.sp);
  if (!s) return usage(s.error().message);
  a.lo.num_ranks = a.sp.num_ranks;
  a.lo.qps_per_peer = a.sp.qps_per_peer;
  a.lo.send_bytes = s->MaxSendBytes();
  a.lo.recv_bytes = s->MaxRecvBytes();
  a.lo.seed = a.sp.seed;
  if (a.lo.max_outstanding == 0) return usage("--max-outstanding must be > 0");
  RunOptions o;
  std::optional<lb::FatTree> tree;
  if (Status st = ApplyHosts(a, tree, o); !st) return usage(st.error().message);
  const auto [r, j] = RunOne(*s, a, o);
  if (a.as_json) {
    std::cout << JsonText(j) << "\n";
  } else if (r.ok()) {
    std::cout << fmt::format(
        "{} {} ranks {} qps {}{}: cct {:.3f} us, algbw {:.3f} Gb/s, busbw {:.3f} "
        "Gb/s{}, verified\n",
        WorkloadName(r.workload), r.num_ranks, FormatSize(r.msg_bytes), r.qps_per_peer,
        r.partial() ? fmt::format(" (rank {} only)", a.rank) : "", r.cct_us, r.algbw_gbps,
        r.busbw_gbps,
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
