#include "sim/workload.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "workload/fsdp.h"
#include "workload/moe.h"

namespace ofan::sim {
namespace {

Result<std::string> ReadFile(const std::string& path, const char* what) {
  std::ifstream f(path);
  if (!f) return MakeError(ErrorCode::kIo, fmt::format("cannot read {} file '{}'", what, path));
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return MakeError(ErrorCode::kIo, fmt::format("error reading '{}'", path));
  return ss.str();
}

Result<std::vector<Flow>> Moe(const SimConfig& c, uint32_t n, WorkloadInfo* info) {
  workload::MoeShape shape;
  shape.server_gpus = c.server_gpus;
  Result<workload::MoeTokens> m = workload::MoeTokens{};
  std::string origin;
  if (!c.moe_matrix_file.empty()) {
    auto text = ReadFile(c.moe_matrix_file, "MoE matrix");
    if (!text) return text.error();
    m = workload::ParseMoeTokens(*text, n);
    if (!m) return MakeError(m.error().code, c.moe_matrix_file + ": " + m.error().message);
    origin = fmt::format("MoE token matrix read from {}", c.moe_matrix_file);
  } else {
    m = workload::GenerateMoeTokens(n, c.seed, shape);
    if (!m) return m.error();
    origin = fmt::format(
        "MoE token matrix GENERATED (seed {}, skew sigma {:.3f}): the paper's Qwen3-235B trace is "
        "not public; shaped to its 492 MB mean and 1.48x busiest receiver",
        c.seed, m->skew_sigma);
  }
  const workload::ExpertPlacement p =
      c.moe_eplb ? workload::EplbPlacement(*m, c.seed) : workload::RandomPlacement(n, c.seed);
  auto t = workload::MoeDispatch(*m, p, shape, c.moe_scale);
  if (!t) return t.error();
  if (info != nullptr) {
    info->note = fmt::format(
        "{}; {} placement; over the fabric: {:.1f} MB mean sent per GPU, busiest receiver "
        "{:.3f}x the mean{}",
        origin, c.moe_eplb ? "EPLB (2 slots per GPU)" : "random one-expert-per-GPU",
        t->mean_sent_bytes / 1e6, t->busiest_ratio,
        c.moe_scale != 1.0 ? fmt::format(" (flows scaled by {})", c.moe_scale) : "");
    info->mean_sent_bytes = t->mean_sent_bytes * c.moe_scale;
    info->busiest_ratio = t->busiest_ratio;
    info->local_bytes = t->local_bytes;
  }
  return std::move(t->flows);
}

}  // namespace

uint32_t DefaultPayload(WorkloadKind w, uint32_t payload) {
  return w == WorkloadKind::kMoe ? 65536 : payload;
}

Result<std::vector<Flow>> MakeWorkload(const SimConfig& c, const lb::FatTree& tree,
                                       WorkloadInfo* info) {
  const uint32_t n = static_cast<uint32_t>(tree.num_hosts());
  std::vector<Flow> flows;
  switch (c.workload) {
    case WorkloadKind::kPerm: {
      const std::vector<uint32_t> p = RandomDerangement(n, c.seed);
      for (uint32_t i = 0; i < n; ++i) flows.push_back({i, p[i], c.msg_bytes});
      break;
    }
    case WorkloadKind::kA2a:
      for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t j = 1; j < n; ++j) flows.push_back({i, (i + j) % n, c.msg_bytes});
      }
      break;
    case WorkloadKind::kA2aHost: {
      // --msg per host, split as evenly as bytes allow: the first msg % (n-1)
      // flows of each host carry one byte more.
      const uint64_t per = c.msg_bytes / (n - 1), extra = c.msg_bytes % (n - 1);
      if (per == 0) {
        return InvalidArgument(
            fmt::format("--workload a2a-host: --msg {} B is less than one byte per "
                        "flow ({} flows per host)",
                        c.msg_bytes, n - 1));
      }
      for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t j = 1; j < n; ++j) flows.push_back({i, (i + j) % n, per + (j <= extra)});
      }
      break;
    }
    case WorkloadKind::kPair:
      flows.push_back({0, n - 1, c.msg_bytes});
      flows.push_back({n - 1, 0, c.msg_bytes});
      break;
    case WorkloadKind::kMatrix: {
      auto text = ReadFile(c.matrix_file, "matrix");
      if (!text) return text.error();
      return ParseMatrix(*text, tree);
    }
    case WorkloadKind::kIncast:
      for (const uint32_t s : workload::IncastSenders(n, c.incast_senders, c.incast_victim))
        flows.push_back({s, 0, c.msg_bytes});
      if (c.incast_victim)
        flows.push_back({workload::VictimSrc(n), workload::kVictimDst, c.msg_bytes});
      break;
    case WorkloadKind::kMoe:
      return Moe(c, n, info);
    case WorkloadKind::kFsdp: {
      auto model = workload::ParseLlamaModel(c.fsdp_model);
      if (!model) return model.error();
      auto f = workload::FsdpFlows(n, c.server_gpus, *model, c.fsdp_layers, c.fsdp_phases,
                                   c.payload, c.seed);
      if (!f) return f.error();
      if (info != nullptr) {
        info->note = fmt::format(
            "FSDP2 backward pass, Llama-3 {}: {} layer(s), {}, {} rings of {} servers (random "
            "placement, seed {}), {} packets of {} B per flow per ring step",
            model->name, c.fsdp_layers,
            c.fsdp_phases == 2 ? "ReduceScatter + AllGather" : "ReduceScatter", c.server_gpus,
            n / c.server_gpus, c.seed, model->packets_per_step, c.payload);
      }
      return f;
    }
  }
  return flows;
}

}  // namespace ofan::sim
