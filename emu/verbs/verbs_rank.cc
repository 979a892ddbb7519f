#include "emu/verbs/verbs_rank.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <numeric>

#include "emu/rcx/rc_exchange.h"
#include "emu/verbs/device.h"
#include "emu/verbs/verbs_transport.h"

namespace ofan::verbs {
namespace {

// What a rank that failed before its run reports: enough of the collective
// for MergeResults to place it, and the error.
emu::CollectiveResult Failed(const emu::Schedule& s, const emu::RunOptions& run, emu::Rank rank,
                             std::string error) {
  emu::CollectiveResult r;
  r.workload = s.params.workload;
  r.num_ranks = s.params.num_ranks;
  r.msg_bytes = s.params.msg_bytes;
  r.qps_per_peer = s.params.qps_per_peer;
  r.seed = s.params.seed;
  r.hosts = run.hosts;
  if (r.hosts.empty()) {
    r.hosts.resize(r.num_ranks);
    std::iota(r.hosts.begin(), r.hosts.end(), 0u);
  }
  r.local_ranks = {rank};
  r.error = fmt::format("rank {}: {}", rank, error);
  return r;
}

}  // namespace

VerbsRankOutcome RunVerbsRank(const emu::Schedule& s, const VerbsRankOptions& o,
                              const emu::RunOptions& run) {
  VerbsRankOutcome v;
  v.device = o.device;
  const uint32_t n = s.params.num_ranks;
  auto fail = [&](const std::string& e) {
    v.result = Failed(s, run, o.rank, e);
    return v;
  };
  if (o.ips.size() != n || o.rank >= n) {
    return fail(fmt::format("{} addresses for {} ranks", o.ips.size(), n));
  }
  auto dev = Device::Open(o.device);
  if (!dev) return fail(dev.error().message);
  v.device = (*dev)->name();
  auto gid = (*dev)->FindGid(o.ips[o.rank]);
  if (!gid) return fail(gid.error().message);

  std::unique_ptr<rcx::Rendezvous> rv;
  VerbsTransportConfig tc;
  tc.rank = o.rank;
  tc.num_ranks = n;
  tc.qps_per_peer = s.params.qps_per_peer;
  tc.max_outstanding = o.max_outstanding;
  tc.recv_depth = o.recv_depth;
  tc.send_bytes = s.MaxSendBytes();
  tc.recv_bytes = s.MaxRecvBytes();
  tc.gid = *gid;
  tc.mtu = o.mtu;
  tc.ack_timeout = o.ack_timeout;
  // Clear-to-sends in the strict-priority class need a QP of their own.
  tc.priority_qp = s.params.cts_channels > 0 && s.params.cts_priority;
  tc.watch = [&rv]() { return rv ? rv->Watch() : Status{}; };
  auto t = VerbsTransport::Create(**dev, tc);
  if (!t) return fail(t.error().message);
  v.mtu = (*t)->mtu();

  rcx::RendezvousOptions ro;
  ro.rank = o.rank;
  ro.num_ranks = n;
  ro.ips = o.ips;
  ro.port = o.port;
  ro.timeout = o.setup_timeout;
  std::vector<rcx::Hello> peers;
  auto r = rcx::Rendezvous::Connect(
      ro, [&](uint32_t peer) { return (*t)->HelloTo(peer); }, &peers);
  if (!r) return fail(r.error().message);
  rv = std::move(*r);
  // Every rank sizes its receive buffer from the same schedule; another
  // length means another collective (--workload, --msg or --ranks).
  for (emu::Rank p = 0; p < n; ++p) {
    if (p != o.rank && peers[p].len != tc.recv_bytes) {
      return fail(
          fmt::format("rank {}'s receive buffer is {} bytes, this rank's {}: give every "
                      "rank the same --workload, --msg, --chunk and --addrs",
                      p, peers[p].len, tc.recv_bytes));
    }
  }
  if (Status st = (*t)->Connect(peers); !st) return fail(st.error().message);
  if (Status st = rv->Ready(); !st) return fail(st.error().message);
  if (Status st = rv->Barrier(); !st) return fail(st.error().message);

  auto before = ReadCounters((*dev)->counters_dir());
  emu::Transport* ts[] = {t->get()};
  v.result = emu::RunCollective(s, ts, run);
  if (before) {
    if (auto after = ReadCounters((*dev)->counters_dir())) {
      v.counters = CounterDeltas(*before, *after);
    }
  }
  // A run that failed (not one whose data differed) sends no done: its
  // peers see the connection close at once.
  if (!v.result.ok() && v.result.bad_ranks == 0) return v;
  // The slowest rank may finish up to the run's deadline after this one.
  rv->set_timeout(std::max(o.setup_timeout,
                           std::chrono::duration_cast<std::chrono::milliseconds>(run.deadline)));
  auto done = rv->Done((*t)->arrived(), v.result.bad_ranks);
  if (!done && v.result.ok())
    v.result.error = fmt::format("rank {}: {}", o.rank, done.error().message);
  return v;
}

nlohmann::json VerbsRankJson(const VerbsRankOutcome& v) {
  nlohmann::json j = emu::ResultJson(v.result);
  j["transport"] = "verbs";
  j["device"] = v.device;
  j["mtu"] = v.mtu;
  j["rxe_counters"] = CountersJson(v.counters);
  return j;
}

}  // namespace ofan::verbs
