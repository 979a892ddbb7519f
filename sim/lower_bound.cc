#include "sim/lower_bound.h"

#include <algorithm>
#include <cmath>

namespace ofan::sim {

Timing Timing::From(const SimConfig& c) {
  const double bps = c.link_gbps * 1e9;
  return {c.frame_bytes() * 8.0 / bps, c.ack_bytes * 8.0 / bps, c.gap_bytes * 8.0 / bps,
          c.latency_us * 1e-6};
}

double AppendixABound(const Timing& t, uint64_t m, int hops, double rho) {
  if (m == 0) return 0;
  const double h = hops;
  const double td1 = t.td + t.tg, ta1 = t.ta + t.tg;  // Td', Ta'
  const double tp = h * t.hop;                        // one-way propagation
  const double s = td1 / rho;                         // data spacing in mode 1
  const double s2 = std::max(s, td1 + ta1);           // data spacing in mode 2
  // Mode 1: the receiver's first data packet arrives at t1; by then the host
  // has started i1 data packets of its own, Eq. (8) (rounded up: i1 = 78 with
  // the §6 values).
  const double t1 = tp + h * t.td;
  const uint64_t i1 = static_cast<uint64_t>(std::ceil((tp + (h - 1) * t.td) / s)) + 1;
  auto arrival = [&](uint64_t i) {  // last bit of data packet i at the receiver
    return i <= i1 ? t1 + static_cast<double>(i - 1) * s
                   : t1 + static_cast<double>(i1 - 1) * s + static_cast<double>(i - i1) * s2;
  };
  // An ACK leaves right after its data packet arrives: one gap-padded ACK
  // serialisation at the receiver, H-1 more on the way, and propagation.
  auto ack_after = [&](uint64_t i) { return arrival(i) + ta1 + (h - 1) * t.ta + tp; };
  // Mode 2: ACK i arrives at t1ACK + (i-1)(Td' + Ta') until i2 = m - i1 + 1.
  const double t1ack = arrival(std::min(i1, m)) + ta1;
  const int64_t i2 = static_cast<int64_t>(m) - static_cast<int64_t>(i1) + 1;
  double ack = 0, ack_i2 = 0;
  for (uint64_t i = 1; i <= m; ++i) {
    const int64_t si = static_cast<int64_t>(i);
    if (si <= i2) {
      ack = ack_i2 = t1ack + static_cast<double>(i - 1) * s2;
    } else if (i2 >= 1) {
      // Mode 3: ACKs back to back after ACK i2, but none before its data
      // packet arrived.
      ack = std::max(ack_i2 + static_cast<double>(si - i2) * ta1, ack_after(i));
    } else {
      // m < i1: no interleaving at all.
      ack = std::max(i == 1 ? 0.0 : ack + ta1, ack_after(i));
    }
  }
  return ack;
}

LowerBound CctLowerBound(const SimConfig& c, const lb::FatTree& tree,
                         const std::vector<Flow>& flows) {
  const Timing t = Timing::From(c);
  const uint32_t n = static_cast<uint32_t>(tree.num_hosts());
  auto packets = [&](uint64_t bytes) { return (bytes + c.payload - 1) / c.payload; };
  // Permutation-like (every host sends and receives at most one flow): App. A.
  std::vector<int> out(n, 0), in(n, 0);
  bool perm_like = true;
  for (const Flow& f : flows) perm_like &= ++out[f.src] == 1 && ++in[f.dst] == 1;
  LowerBound lb;
  if (perm_like) {
    for (const Flow& f : flows) {
      const int h = tree.hops(lb::HostId(f.src), lb::HostId(f.dst));
      lb.seconds = std::max(lb.seconds, AppendixABound(t, packets(f.bytes), h, c.load));
    }
    return lb;
  }
  lb.kind = "naive";
  std::vector<double> data_out(n, 0), data_in(n, 0);
  int max_hops = 2;
  for (const Flow& f : flows) {
    const double p = static_cast<double>(packets(f.bytes));
    data_out[f.src] += p;
    data_in[f.dst] += p;
    max_hops = std::max(max_hops, tree.hops(lb::HostId(f.src), lb::HostId(f.dst)));
  }
  const double td1 = t.td + t.tg, ta1 = t.ta + t.tg;
  for (uint32_t h = 0; h < n; ++h) {
    // A host's NIC sends its data (paced at rho) and one ACK per data packet it receives.
    const double nic = std::max(data_out[h] * td1 / c.load, 0.0) + data_in[h] * ta1;
    if (data_out[h] == 0 && data_in[h] == 0) continue;
    lb.seconds = std::max(lb.seconds, nic + (max_hops - 1) * t.ta + max_hops * t.hop);
    // Its downlink carries every data frame it receives and an ACK per data
    // frame it sent (incast, e.g. MoE's busiest receiver); then the last
    // ACK still leaves its NIC and crosses at least two links.
    const double rx = data_in[h] * td1 + data_out[h] * ta1;
    lb.seconds = std::max(lb.seconds, rx + 2 * t.ta + 2 * t.hop);
  }
  return lb;
}

}  // namespace ofan::sim
