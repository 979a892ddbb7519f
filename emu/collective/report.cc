#include "emu/collective/report.h"

#include <algorithm>

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

nlohmann::json ResultJson(const CollectiveResult& r) {
  nlohmann::json j = {
      {"workload", std::string(WorkloadName(r.workload))},
      {"ranks", r.num_ranks},
      {"hosts", r.hosts},
      {"msg_bytes", r.msg_bytes},
      {"qps_per_peer", r.qps_per_peer},
      {"seed", r.seed},
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
