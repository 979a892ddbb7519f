#include "sim/failures.h"

#include <algorithm>
#include <bit>

#include "common/rng.h"

namespace ofan::sim {

bool AllFlowsRoutable(const lb::FatTree& t, const lb::LinkSet& failed,
                      const std::vector<Flow>& flows) {
  for (const Flow& f : flows) {
    const lb::HostId dst(f.dst);
    const lb::SwitchId e = t.edge_switch_of(lb::HostId(f.src));
    if (t.is_below(e, dst)) continue;
    if (t.valid_uplinks(e, t.dest_of(e, dst), failed) == 0) return false;
  }
  return true;
}

Result<lb::LinkSet> DrawFailures(const lb::FatTree& t, double p, uint64_t seed,
                                 const std::vector<Flow>& flows) {
  lb::LinkSet failed(t.num_links());
  if (p <= 0) return failed;
  Rng rng(SplitMix64(seed) ^ 0xFA11ull);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    for (uint32_t l = 0; l < t.num_links(); ++l) failed.set_failed(l, rng.Uniform() < p);
    if (AllFlowsRoutable(t, failed, flows)) return failed;
  }
  return MakeError(
      ErrorCode::kInfeasible,
      "no failure set out of 1000 draws keeps every flow connected; lower --fail-prob");
}

double RhoMax(const lb::FatTree& t, const lb::LinkSet& failed, const std::vector<Flow>& flows) {
  // Load per inter-switch link direction, in units of one host's line rate.
  std::vector<double> up(t.num_links(), 0.0), down(t.num_links(), 0.0);
  std::vector<double> host_out(static_cast<size_t>(t.num_hosts()), 0.0);
  std::vector<double> host_in(host_out.size(), 0.0);
  for (const Flow& f : flows) {
    host_out[f.src] += static_cast<double>(f.bytes);
    host_in[f.dst] += static_cast<double>(f.bytes);
  }
  // Each host's NIC sends its bytes in the same time; a flow's rate is its
  // share of its source's bytes.
  for (const Flow& f : flows) {
    const double rate = static_cast<double>(f.bytes) / host_out[f.src];
    const lb::HostId dst(f.dst);
    const lb::SwitchId e = t.edge_switch_of(lb::HostId(f.src));
    if (t.is_below(e, dst)) continue;
    const lb::SwitchId fe = t.edge_switch_of(dst);
    const lb::PortMask em = t.valid_uplinks(e, t.dest_of(e, dst), failed);
    const double share = rate / std::popcount(em);
    for (int j = 0; j < t.w(); ++j) {
      if (!(em & (lb::PortMask{1} << j))) continue;
      up[t.uplink_id(e, j)] += share;
      down[t.uplink_id(fe, j)] += share;  // agg j of the destination pod -> fe
      if (t.levels() == 3 && t.pod_of(dst) != t.pod_of(lb::HostId(f.src))) {
        const lb::SwitchId a = t.agg(t.pod_of(lb::HostId(f.src)), j);
        const lb::SwitchId ad = t.agg(t.pod_of(dst), j);
        const lb::PortMask am = t.valid_uplinks(a, t.pod_of(dst), failed);
        const double s2 = share / std::popcount(am);
        for (int c = 0; c < t.w(); ++c) {
          if (!(am & (lb::PortMask{1} << c))) continue;
          up[t.uplink_id(a, c)] += s2;
          down[t.uplink_id(ad, c)] += s2;
        }
      }
    }
  }
  double worst = 1.0;
  for (double x : up) worst = std::max(worst, x);
  for (double x : down) worst = std::max(worst, x);
  // Host downlinks: a receiver gets data from several senders.
  std::vector<double> in_rate(host_in.size(), 0.0);
  for (const Flow& f : flows) in_rate[f.dst] += static_cast<double>(f.bytes) / host_out[f.src];
  for (double x : in_rate) worst = std::max(worst, x);
  return 1.0 / worst;
}

}  // namespace ofan::sim
