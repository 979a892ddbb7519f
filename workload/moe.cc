#include "workload/moe.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <sstream>

#include "common/rng.h"

namespace ofan::workload {
namespace {

double Normal(Rng& rng) {  // Box-Muller
  const double u1 = std::max(rng.Uniform(), 1e-300), u2 = rng.Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

Status CheckGpus(uint32_t n, uint32_t server_gpus) {
  if (n > kMaxMoeGpus) {  // n x n matrices of doubles: 2,048 GPUs is 32 MiB each
    return InvalidArgument(
        fmt::format("MoE: at most {} GPUs (hosts), this tree has {}", kMaxMoeGpus, n));
  }
  if (server_gpus == 0 || n % server_gpus != 0 || n / server_gpus < 2) {
    return InvalidArgument(fmt::format(
        "MoE needs the GPUs (hosts: {}) to be at least two servers of {}", n, server_gpus));
  }
  return {};
}

// fabric[g * n + p]: bytes GPU g sends over the fabric to GPU p.
std::vector<double> Fabric(uint32_t n, const std::vector<double>& t, const ExpertPlacement& pl,
                           const MoeShape& s, double* local) {
  std::vector<double> f(size_t{n} * n, 0.0);
  double loc = 0;
  for (uint32_t g = 0; g < n; ++g) {
    const uint32_t gs = g / s.server_gpus, rank = g % s.server_gpus;
    for (uint32_t e = 0; e < n; ++e) {
      const double bytes = t[size_t{g} * n + e] * static_cast<double>(s.token_bytes);
      if (bytes == 0) continue;
      for (const auto& [h, share] : pl[e]) {
        const uint32_t hs = h / s.server_gpus;
        if (hs == gs) {
          loc += bytes * share;
        } else {
          f[size_t{g} * n + size_t{hs} * s.server_gpus + rank] += bytes * share;
        }
      }
    }
  }
  if (local != nullptr) *local = loc;
  return f;
}

struct Shape {
  double mean_sent = 0, busiest = 0;
};

Shape ShapeOf(uint32_t n, const std::vector<double>& f) {
  Shape s;
  std::vector<double> recv(n, 0.0);
  double total = 0;
  for (uint32_t g = 0; g < n; ++g) {
    for (uint32_t p = 0; p < n; ++p) {
      total += f[size_t{g} * n + p];
      recv[p] += f[size_t{g} * n + p];
    }
  }
  s.mean_sent = total / n;
  s.busiest = *std::max_element(recv.begin(), recv.end());
  return s;
}

std::vector<double> AsDouble(const MoeTokens& m) {
  return std::vector<double>(m.tokens.begin(), m.tokens.end());
}

}  // namespace

ExpertPlacement RandomPlacement(uint32_t n, uint64_t seed) {
  Rng rng(SplitMix64(seed) ^ 0x40E5ull);
  std::vector<uint32_t> gpu(n);
  std::iota(gpu.begin(), gpu.end(), 0u);
  for (uint32_t i = n; i > 1; --i) std::swap(gpu[i - 1], gpu[rng.Below(i)]);
  ExpertPlacement p(n);
  for (uint32_t e = 0; e < n; ++e) p[e] = {{gpu[e], 1.0}};
  return p;
}

ExpertPlacement EplbPlacement(const MoeTokens& m, uint64_t seed) {
  const uint32_t n = m.n;
  std::vector<double> load(n, 0.0);
  for (uint32_t g = 0; g < n; ++g) {
    for (uint32_t e = 0; e < n; ++e) load[e] += static_cast<double>(m.tokens[size_t{g} * n + e]);
  }
  std::vector<uint32_t> replicas(n, 1);
  for (uint32_t extra = 0; extra < n; ++extra) {
    uint32_t best = 0;
    for (uint32_t e = 1; e < n; ++e) {
      if (load[e] / replicas[e] > load[best] / replicas[best]) best = e;
    }
    ++replicas[best];
  }
  struct Slot {
    uint32_t expert;
    double load;
  };
  std::vector<Slot> slots;
  for (uint32_t e = 0; e < n; ++e) {
    for (uint32_t r = 0; r < replicas[e]; ++r) slots.push_back({e, load[e] / replicas[e]});
  }
  std::stable_sort(slots.begin(), slots.end(),
                   [](const Slot& a, const Slot& b) { return a.load > b.load; });
  std::vector<double> gpu_load(n, 0.0);
  std::vector<uint32_t> used(n, 0);
  std::vector<uint32_t> gpu_of_slot(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    uint32_t best = n;
    for (uint32_t g = 0; g < n; ++g) {
      if (used[g] < 2 && (best == n || gpu_load[g] < gpu_load[best])) best = g;
    }
    gpu_of_slot[i] = best;
    gpu_load[best] += slots[i].load;
    ++used[best];
  }
  const ExpertPlacement shuffle = RandomPlacement(n, seed ^ 0xE91Bull);  // a random relabelling
  ExpertPlacement p(n);
  for (size_t i = 0; i < slots.size(); ++i) {
    const uint32_t e = slots[i].expert;
    p[e].push_back({shuffle[gpu_of_slot[i]][0].first, 1.0 / replicas[e]});
  }
  return p;
}

Result<MoeTokens> GenerateMoeTokens(uint32_t n, uint64_t seed, const MoeShape& s) {
  if (Status st = CheckGpus(n, s.server_gpus); !st) return st.error();
  if (!(s.busiest_ratio > 1.0) || !(s.mean_sent_bytes > 0) || s.top_k == 0) {
    return InvalidArgument("MoE shape: needs ratio > 1, mean > 0, top_k");
  }
  Rng rng(SplitMix64(seed) ^ 0x3D0Eull);
  std::vector<double> z(n), noise(size_t{n} * n);
  for (double& v : z) v = Normal(rng);
  for (double& v : noise) v = std::exp(0.3 * Normal(rng));
  const ExpertPlacement pl = RandomPlacement(n, seed);
  // Rows of share, each summing to 1 (one token copy per GPU).
  auto shares = [&](double sigma) {
    std::vector<double> t(size_t{n} * n);
    for (uint32_t g = 0; g < n; ++g) {
      double sum = 0;
      for (uint32_t e = 0; e < n; ++e) {
        sum += t[size_t{g} * n + e] = std::exp(sigma * z[e]) * noise[size_t{g} * n + e];
      }
      for (uint32_t e = 0; e < n; ++e) t[size_t{g} * n + e] /= sum;
    }
    return t;
  };
  auto ratio = [&](double sigma) {
    const Shape sh = ShapeOf(n, Fabric(n, shares(sigma), pl, s, nullptr));
    return sh.busiest / sh.mean_sent;
  };
  double lo = 0, hi = 8;
  if (ratio(lo) > s.busiest_ratio || ratio(hi) < s.busiest_ratio) {
    return MakeError(ErrorCode::kInfeasible,
                     fmt::format("MoE generator: busiest/mean {:.3f} is outside what {} GPUs "
                                 "give ({:.3f}..{:.3f})",
                                 s.busiest_ratio, n, ratio(lo), ratio(hi)));
  }
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (ratio(mid) < s.busiest_ratio ? lo : hi) = mid;
  }
  const double sigma = (lo + hi) / 2;
  std::vector<double> t = shares(sigma);
  const double per_copy = ShapeOf(n, Fabric(n, t, pl, s, nullptr)).mean_sent;
  const double copies = s.mean_sent_bytes / per_copy;  // token copies per GPU
  MoeTokens m{n, std::vector<uint64_t>(t.size()), sigma};
  for (size_t i = 0; i < t.size(); ++i) m.tokens[i] = std::llround(t[i] * copies);
  return m;
}

Result<MoeTokens> ParseMoeTokens(const std::string& text, uint32_t n) {
  if (n == 0 || n > kMaxMoeGpus) {
    return InvalidArgument(fmt::format("MoE matrix: {} GPUs, expected 1..{}", n, kMaxMoeGpus));
  }
  MoeTokens m{n, {}, 0};
  m.tokens.reserve(size_t{n} * n);
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  uint32_t rows = 0;
  bool any = false;
  auto err = [&](const std::string& what) {
    return InvalidArgument(fmt::format("MoE matrix line {}: {}", lineno, what));
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream ls(line);
    std::string tok;
    uint32_t cols = 0;
    while (ls >> tok) {
      uint64_t v = 0;
      const auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
      if (ec != std::errc() || end != tok.data() + tok.size()) {
        return err(fmt::format("'{}' is not a non-negative integer token count", tok));
      }
      if (v > 1'000'000'000'000ull) return err(fmt::format("{} token copies is too many", v));
      if (cols == n) return err(fmt::format("more than {} columns (one per expert)", n));
      if (rows == n) return err(fmt::format("more than {} rows (one per GPU)", n));
      m.tokens.push_back(v);
      any = any || v > 0;
      ++cols;
    }
    if (cols == 0) continue;
    if (cols != n) return err(fmt::format("{} columns, expected {} (one per expert)", cols, n));
    ++rows;
  }
  if (rows != n) {
    return InvalidArgument(
        fmt::format("MoE matrix: {} rows, expected {} (one per GPU = host)", rows, n));
  }
  if (!any) return InvalidArgument("MoE matrix: every count is zero");
  return m;
}

Result<MoeTraffic> MoeDispatch(const MoeTokens& m, const ExpertPlacement& p, const MoeShape& s,
                               double scale) {
  const uint32_t n = m.n;
  if (Status st = CheckGpus(n, s.server_gpus); !st) return st.error();
  if (m.tokens.size() != size_t{n} * n || p.size() != n) {
    return InvalidArgument("MoE dispatch: matrix and placement sizes");
  }
  if (!(scale > 0 && scale <= 1e3)) {
    return InvalidArgument("MoE dispatch: scale must be in (0, 1000]");
  }
  double local = 0;
  const std::vector<double> f = Fabric(n, AsDouble(m), p, s, &local);
  const Shape sh = ShapeOf(n, f);
  MoeTraffic tr;
  tr.mean_sent_bytes = sh.mean_sent;
  tr.busiest_recv_bytes = sh.busiest;
  tr.busiest_ratio = sh.mean_sent > 0 ? sh.busiest / sh.mean_sent : 0;
  tr.local_bytes = static_cast<uint64_t>(std::llround(local));
  for (uint32_t g = 0; g < n; ++g) {
    for (uint32_t q = 0; q < n; ++q) {
      const uint64_t b = static_cast<uint64_t>(std::llround(f[size_t{g} * n + q] * scale));
      if (b > 0) tr.flows.push_back({g, q, b});
    }
  }
  if (tr.flows.empty()) {
    return InvalidArgument("MoE dispatch: no token crosses the fabric (all stay inside servers)");
  }
  return tr;
}

}  // namespace ofan::workload
