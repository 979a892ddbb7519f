#include "emu/collective/lower_bound.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "common/units.h"

namespace ofan::emu {

uint64_t WriteWireBytes(uint64_t len, uint32_t mtu) {
  const uint64_t packets = std::max<uint64_t>(1, (len + mtu - 1) / mtu);
  return len + packets * kWirePerPacket + kRethBytes + kImmDtBytes;
}

uint64_t LastFrameWireBytes(uint64_t len, uint32_t mtu) {
  const uint64_t packets = std::max<uint64_t>(1, (len + mtu - 1) / mtu);
  const uint64_t last_payload = len - (packets - 1) * mtu;
  return last_payload + kWirePerPacket + kImmDtBytes + (packets == 1 ? kRethBytes : 0);
}

Result<double> NicBoundUs(const Schedule& s, std::span<const uint32_t> hosts,
                          const NicBoundParams& p) {
  auto bad = [](std::string m) { return InvalidArgument(std::move(m)); };
  const uint32_t n = s.params.num_ranks;
  if (auto r = LinkRate::FromGbps(p.link_gbps, "the bound's link rate"); !r) return r.error();
  if (!(p.rho > 0 && p.rho <= 1)) return bad(fmt::format("rho {} is not in (0, 1]", p.rho));
  if (!(p.link_latency_us >= 0)) return bad("link latency must be >= 0");
  if (p.mtu < 256 || p.mtu > 4096) return bad(fmt::format("MTU {} is not in 256..4096", p.mtu));
  if (!hosts.empty() && hosts.size() != n) {
    return bad(fmt::format("{} hosts for {} ranks", hosts.size(), n));
  }
  auto host = [&](Rank r) { return hosts.empty() ? r : hosts[r]; };
  const double bits_per_us = p.link_gbps * 1e3;  // at R
  double bound = 0;
  for (Rank r = 0; r < n; ++r) {
    const RankPlan& plan = s.ranks[r];
    if (plan.writes.empty()) continue;
    uint64_t wire = 0;
    double tail = std::numeric_limits<double>::infinity();
    for (const PlannedWrite& w : plan.writes) {
      wire += WriteWireBytes(w.len, p.mtu);
      const int h = p.hops ? p.hops(host(r), host(w.peer)) : 2;
      if (h < 1)
        return bad(fmt::format("{} links between hosts {} and {}", h, host(r), host(w.peer)));
      const double t =
          2 * h * p.link_latency_us +
          (h - 1) * 8.0 * static_cast<double>(LastFrameWireBytes(w.len, p.mtu)) / bits_per_us +
          h * 8.0 * kAckWireBytes / bits_per_us;
      tail = std::min(tail, t);
    }
    const double nic = 8.0 * static_cast<double>(wire) / (p.rho * bits_per_us);
    bound = std::max(bound, nic + tail);
  }
  // The receivers' links: what reaches a rank crosses its one link at R,
  // after at least the shortest path's propagation.
  for (Rank r = 0; r < n; ++r) {
    const RankPlan& plan = s.ranks[r];
    if (plan.arrivals.empty()) continue;
    uint64_t wire = 0;
    int hmin = INT32_MAX;
    for (const PlannedArrival& a : plan.arrivals) {
      wire += WriteWireBytes(a.len, p.mtu);
      hmin = std::min(hmin, p.hops ? p.hops(host(a.from), host(r)) : 2);
    }
    bound =
        std::max(bound, 8.0 * static_cast<double>(wire) / bits_per_us + hmin * p.link_latency_us);
  }
  return bound;
}

}  // namespace ofan::emu
