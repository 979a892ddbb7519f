#include "workload/fsdp.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "common/rng.h"

namespace ofan::workload {

Result<LlamaModel> ParseLlamaModel(std::string_view name) {
  for (const LlamaModel& m : kLlama3) {
    if (m.name == name) return m;
  }
  return InvalidArgument(fmt::format("unknown model '{}' (expected 8b|70b|405b)", name));
}

std::vector<uint32_t> ServerPlacement(uint32_t servers, uint64_t seed) {
  Rng rng(SplitMix64(seed) ^ 0xF5D2ull);
  std::vector<uint32_t> p(servers);
  std::iota(p.begin(), p.end(), 0u);
  for (uint32_t i = servers; i > 1; --i) std::swap(p[i - 1], p[rng.Below(i)]);
  return p;
}

Result<std::vector<RingSend>> FsdpRingSchedule(uint32_t n, uint32_t server_gpus, FsdpPhase phase,
                                               const std::vector<uint32_t>& placement,
                                               uint32_t max_steps) {
  if (server_gpus == 0 || n % server_gpus != 0 || n / server_gpus < 2) {
    return InvalidArgument(fmt::format(
        "FSDP2 needs the GPUs (hosts: {}) to be at least two servers of {}", n, server_gpus));
  }
  const uint32_t R = n / server_gpus;
  if (placement.size() != R) {
    return InvalidArgument("FSDP2: placement is not one slot per server");
  }
  auto host = [&](uint32_t logical) {
    return placement[logical / server_gpus] * server_gpus + logical % server_gpus;
  };
  std::vector<RingSend> out;
  const uint32_t steps = std::min(R - 1, max_steps);
  out.reserve(size_t{steps} * n);
  for (uint32_t s = 0; s < steps; ++s) {
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t ring = i % server_gpus, j = i / server_gpus;
      const uint32_t chunk =
          phase == FsdpPhase::kReduceScatter ? (j + R - s) % R : (j + 1 + R - s) % R;
      out.push_back({s, host(i), host((i + server_gpus) % n), ring * R + chunk});
    }
  }
  return out;
}

Result<std::vector<Flow>> FsdpFlows(uint32_t n, uint32_t server_gpus, const LlamaModel& model,
                                    uint32_t layers, uint32_t phases, uint32_t payload,
                                    uint64_t seed) {
  if (layers == 0 || layers > model.layers) {
    return InvalidArgument(
        fmt::format("--fsdp-layers must be in [1, {}] for Llama-3 {}", model.layers, model.name));
  }
  if (phases < 1 || phases > 2) {
    return InvalidArgument("FSDP2: one or two phases");
  }
  const std::vector<uint32_t> placement = ServerPlacement(n / std::max(1u, server_gpus), seed);
  // Step 0 has every pair once (and the schedule's checks); only it is built:
  // the whole schedule is (R - 1) x n sends.
  auto step0 = FsdpRingSchedule(n, server_gpus, FsdpPhase::kReduceScatter, placement, 1);
  if (!step0) return step0.error();
  const uint64_t steps = n / server_gpus - 1;
  const uint64_t bytes = uint64_t{phases} * steps * layers * model.packets_per_step * payload;
  std::vector<Flow> flows;
  flows.reserve(n);
  for (const RingSend& r : *step0) flows.push_back({r.src, r.dst, bytes});
  return flows;
}

}  // namespace ofan::workload
