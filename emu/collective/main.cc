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
      "ofan-coll: one collective (permutation, all-to-all, ring all-gather, ring\n"
      "reduce-scatter or incast) of ofan-emu's engine, verified, with nccl-tests' algbw/busbw."};
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
  // --transport verbs
  uint32_t rank = 0;
  std::string addrs_text, device;
  uint16_t rc_port = rcx::kDefaultPort;
  double setup_s = 30;
  uint32_t recv_depth = 256;
  uint32_t ack_timeout = 14;  // verbs/qp_attr.h's kLocalAckTimeout
  app.add_option("--transport", transport,
                 "loopback (in memory, every rank here) or verbs (rxe: one rank, --rank/--addrs)")
      ->capture_default_str();
  app.add_option("--workload", workload, "permutation, alltoall, allgather, reducescatter, incast")
      ->capture_default_str();
  app.add_flag("--victim", sp.victim,
               "incast: the last rank also sends --msg to rank 1, the receiver's edge neighbour "
               "(a flow that shares the incast's upstream ports, not its last hop)");
  bool cts = false;
  std::string channel_bytes = "64KiB", cts_class = "prio";
  uint32_t channels = 2;
  app.add_flag("--cts", cts,
               "receiver-driven admission (NCCL's simple protocol): a chunk goes only into one "
               "of --channels slots of --channel-bytes its receiver cleared, and the receiver "
               "clears a slot again once its chunk arrived");
  app.add_option("--channels", channels, "--cts: slots per (sender, receiver) pair")
      ->capture_default_str();
  app.add_option("--channel-bytes", channel_bytes, "--cts: a slot's bytes (the chunk size then)")
      ->capture_default_str();
  app.add_option("--cts-class", cts_class,
                 "--cts: the clear-to-sends' class, prio (DSCP 48: the switches' strict-priority "
                 "queue) or data (the data's DSCP)")
      ->capture_default_str();
  app.add_option("--incast-senders", sp.incast_senders,
                 "incast: ranks that send to rank 0, evenly spaced (0: every other rank)")
      ->capture_default_str();
  CLI::Option* ranks_opt =
      app.add_option("--ranks", sp.num_ranks, "number of ranks, 2..4096 (verbs: --addrs' count)")
          ->capture_default_str();
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
  app.add_option("--rank", rank, "verbs: this process's rank")->capture_default_str();
  app.add_option("--addrs", addrs_text, "verbs: every rank's IPv4 address, IP0,IP1,...");
  app.add_option("--device", device, "verbs: RDMA device (default: the first)");
  app.add_option("--rc-port", rc_port, "verbs: ofan-rc-1 TCP port")->capture_default_str();
  app.add_option("--setup-timeout-s", setup_s, "verbs: connection setup and each later wait")
      ->capture_default_str();
  app.add_option("--recv-depth", recv_depth, "verbs: receive WRs posted per QP")
      ->capture_default_str();
  app.add_option("--ack-timeout", ack_timeout,
                 "verbs: local ACK timeout, 4.096 us x 2^N (1..31; 14 = 67 ms)")
      ->capture_default_str();
  app.add_flag("--json", as_json, "print one JSON object");
  std::vector<std::string> merge_files;
  CLI::App* merge = app.add_subcommand(
      "merge",
      "print one result from the partial results (one JSON object per line) of the "
      "processes that ran one collective");
  merge->add_option("FILE", merge_files, "result files (none or '-': stdin)");
  if (auto rc = ParseCommandLine(app, argc, argv)) return *rc;
  if (merge->parsed()) return RunMerge(merge_files);
  auto usage = [](const std::string& m) { return UsageError("ofan-coll", m); };
  const bool verbs = transport == "verbs";
  if (transport != "loopback" && !verbs) {
    return usage("--transport: loopback or verbs, not '" + transport + "'");
  }
#ifndef OFAN_HAVE_VERBS
  if (verbs) return usage("--transport verbs: this ofan-coll was built without libibverbs");
#endif
  std::vector<uint32_t> ips;
  if (verbs) {
    if (addrs_text.empty()) return usage("--transport verbs needs --addrs IP0,IP1,...");
    std::stringstream ss(addrs_text);
    for (std::string tok; std::getline(ss, tok, ',');) {
      auto a = rcx::ParseIpv4(tok);
      if (!a) return usage("--addrs: " + a.error().message);
      ips.push_back(*a);
    }
    if (ranks_opt->count() && sp.num_ranks != ips.size()) {
      return usage(fmt::format("--ranks {} but --addrs names {}", sp.num_ranks, ips.size()));
    }
    sp.num_ranks = static_cast<uint32_t>(ips.size());
    if (rank >= sp.num_ranks) {
      return usage(
          fmt::format("--rank {} is not one of the {} ranks of --addrs", rank, sp.num_ranks));
    }
    if (std::set<uint32_t>(ips.begin(), ips.end()).size() != ips.size()) {
      return usage("--addrs names an address twice");
    }
    if (!(setup_s > 0 && setup_s <= 86400)) return usage("--setup-timeout-s must be in (0, 86400]");
    if (recv_depth == 0) return usage("--recv-depth must be > 0");
    if (ack_timeout < 1 || ack_timeout > 31) return usage("--ack-timeout must be in 1..31");
  } else if (!addrs_text.empty() || rank != 0 || !device.empty()) {
    return usage("--rank, --addrs and --device are for --transport verbs");
  }
  auto w = ParseWorkload(workload);
  if (!w) return usage(w.error().message);
  sp.workload = *w;
  auto m = ParseSize(msg);
  if (!m) return usage("--msg: " + m.error().message);
  sp.msg_bytes = *m;
  auto c = ParseSize(chunk);
  if (!c) return usage("--chunk: " + c.error().message);
  sp.chunk_bytes = *c;
  for (const char* opt : {"--channels", "--channel-bytes", "--cts-class"}) {
    if (app.count(opt) && !cts) return usage(std::string(opt) + " is --cts's: give --cts");
  }
  if (cts) {
    auto cb = ParseSize(channel_bytes);
    if (!cb) return usage("--channel-bytes: " + cb.error().message);
    if (channels == 0) return usage("--channels must be at least 1");
    if (cts_class != "prio" && cts_class != "data")
      return usage("--cts-class: prio or data, not '" + cts_class + "'");
    if (app.count("--chunk"))
      return usage("--chunk and --cts: a chunk is a slot (--channel-bytes)");
    sp.cts_channels = channels;
    sp.cts_channel_bytes = *cb;
    sp.cts_priority = cts_class == "prio";
    sp.chunk_bytes = *cb;
  }
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
  o.deadline = std::chrono::milliseconds(deadline_ms);
  if (bound.link_gbps > 0) o.bound = bound;
  CollectiveResult r;
  nlohmann::json j;
  if (verbs) {
#ifdef OFAN_HAVE_VERBS
    verbs::VerbsRankOptions vo;
    vo.rank = rank;
    vo.ips = ips;
    vo.device = device;
    vo.port = rc_port;
    vo.setup_timeout = std::chrono::milliseconds(static_cast<int64_t>(setup_s * 1000));
    vo.max_outstanding = lo.max_outstanding;
    vo.recv_depth = recv_depth;
    vo.ack_timeout = static_cast<uint8_t>(ack_timeout);
    // The transport sleeps on its completion channel and wakes at the first
    // completion: a long idle wait costs no latency, a short one spins.
    o.idle_wait_us = 50'000;
    const verbs::VerbsRankOutcome v = verbs::RunVerbsRank(*s, vo, o);
    r = v.result;
    j = verbs::VerbsRankJson(v);
#endif
  } else {
    LoopbackFabric fabric(lo);
    r = RunCollective(*s, fabric.endpoints(), o);
    j = ResultJson(r);
  }
  if (as_json) {
    std::cout << JsonText(j) << "\n";
  } else if (r.ok()) {
    std::cout << fmt::format(
        "{} {} ranks {} qps {}{}: cct {:.3f} us, algbw {:.3f} Gb/s, busbw {:.3f} "
        "Gb/s{}, verified\n",
        WorkloadName(r.workload), r.num_ranks, FormatSize(r.msg_bytes), r.qps_per_peer,
        r.partial() ? fmt::format(" (rank {} only)", rank) : "", r.cct_us, r.algbw_gbps,
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
