#include "emu/collective/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace ofan::emu {

double AlgBwGbps(uint64_t bytes, double us) {
  if (!(us > 0)) return 0;
  return static_cast<double>(bytes) * 8.0 / (us * 1e3);
}

void ComputeBandwidths(CollectiveResult* r) {
  r->cct_us = 0;
  for (double t : r->rank_us) r->cct_us = std::max(r->cct_us, t);
  r->algbw_gbps = AlgBwGbps(r->msg_bytes, r->cct_us);
  r->busbw_gbps = r->algbw_gbps * BusBwFactor(r->workload, r->num_ranks);
}

Result<CollectiveResult> MergeResults(std::span<const CollectiveResult> parts) {
  auto bad = [](std::string m) { return MakeError(ErrorCode::kInvalidArgument, std::move(m)); };
  if (parts.empty()) return bad("no results to merge");
  const CollectiveResult& a = parts[0];
  CollectiveResult m = a;
  m.local_ranks.clear();
  m.rank_us.assign(a.num_ranks, 0);
  m.cct_lower_bound_us.reset();
  m.verified = true;
  m.bad_ranks = 0;
  m.error.clear();
  std::vector<bool> seen(a.num_ranks, false);
  for (const CollectiveResult& p : parts) {
    if (p.workload != a.workload || p.num_ranks != a.num_ranks || p.msg_bytes != a.msg_bytes ||
        p.qps_per_peer != a.qps_per_peer || p.seed != a.seed) {
      return bad("the results are not of one collective (workload, ranks, size, QPs, seed)");
    }
    for (size_t i = 0; i < p.local_ranks.size(); ++i) {
      const Rank r = p.local_ranks[i];
      if (r >= a.num_ranks || seen[r]) return bad(fmt::format("rank {} is in two results", r));
      seen[r] = true;
      if (i < p.rank_us.size()) m.rank_us[r] = p.rank_us[i];
    }
    if (!m.cct_lower_bound_us) m.cct_lower_bound_us = p.cct_lower_bound_us;
    m.verified = m.verified && p.verified;
    m.bad_ranks += p.bad_ranks;
    if (m.error.empty()) m.error = p.error;
  }
  // A part that failed early may not know its ranks; its error stands.
  for (Rank r = 0; r < a.num_ranks && m.error.empty(); ++r) {
    if (!seen[r]) return bad(fmt::format("no result has rank {}", r));
  }
  m.local_ranks.resize(a.num_ranks);
  std::iota(m.local_ranks.begin(), m.local_ranks.end(), 0u);
  ComputeBandwidths(&m);
  return m;
}

nlohmann::json ResultJson(const CollectiveResult& r) {
  nlohmann::json j = {
      {"workload", std::string(WorkloadName(r.workload))},
      {"ranks", r.num_ranks},
      {"hosts", r.hosts},
      {"msg_bytes", r.msg_bytes},
      {"qps_per_peer", r.qps_per_peer},
      {"seed", r.seed},
      {"local_ranks", r.local_ranks},
      {"partial", r.partial()},
      {"cct_us", r.cct_us},
      {"rank_us", r.rank_us},
      {"algbw_gbps", r.algbw_gbps},
      {"busbw_gbps", r.busbw_gbps},
      {"cct_lower_bound_us", nullptr},
      {"lower_bound_kind", "nic_bound"},
      {"verified", r.verified},
      {"bad_ranks", r.bad_ranks},
      {"error", r.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.error)},
  };
  if (r.cct_lower_bound_us) j["cct_lower_bound_us"] = *r.cct_lower_bound_us;
  return j;
}

}  // namespace ofan::emu
