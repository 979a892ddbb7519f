// FSDP2's backward pass (paper §6.7) as fabric flows: the inter-server part
// of a hierarchical ring ReduceScatter of gradients and AllGather of weights.
//
// Expects: n GPUs = the tree's hosts, as n / server_gpus servers of
// server_gpus (at least two servers). Logical GPU i is rank i % server_gpus
// of logical server i / server_gpus; logical servers are placed on the
// physical ones (hosts s*server_gpus .. +server_gpus-1) by a seeded random
// permutation (§6.7: "random server placement").
// Gives: the ring schedule, who sends which shard to whom at each step
// (FsdpRingSchedule), and the flows ofan-sim runs (FsdpFlows).
// Why: §6.7's Fig. 14 traffic. server_gpus parallel rings (logical GPU i ->
// i + server_gpus mod n) of R = n / server_gpus members each; ring r carries
// part r of a layer cut into R shards, so one ring step moves one 1/n shard
// (1/1,024 on the paper's cluster); R - 1 steps per phase.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "workload/workload.h"

namespace ofan::workload {

struct LlamaModel {
  std::string_view name;
  uint32_t layers;
  // §6.7 as stated: "119 packets per flow per layer in Llama-3 8B (32
  // layers), 418 in Llama-3 70B (80 layers) and 1533 in Llama-3 405B (126
  // layers)" with FP8 and 4 KB payloads on 1,024 GPUs. They are about twice
  // one FP8 1/1,024 shard of a layer (8e9 / 32 / 1,024 / 4,096 = 59.6): we
  // take the paper's figures as they are, as one ring step's flow, on any
  // cluster size (a cluster of other than 1,024 GPUs runs fewer or more
  // steps of the paper's shard, not other shards).
  uint32_t packets_per_step;
};
inline constexpr LlamaModel kLlama3[] = {{"8b", 32, 119}, {"70b", 80, 418}, {"405b", 126, 1533}};
Result<LlamaModel> ParseLlamaModel(std::string_view name);

enum class FsdpPhase : uint8_t { kReduceScatter, kAllGather };

struct RingSend {
  uint32_t step;   // 0 .. R-2
  uint32_t src;    // host
  uint32_t dst;    // host
  uint32_t shard;  // global shard of the layer, 0 .. n-1 (ring r's shard c is r * R + c)
};

// Logical server -> physical server slot; pure function of (servers, seed).
std::vector<uint32_t> ServerPlacement(uint32_t servers, uint64_t seed);

// Every send of one phase of one layer. ReduceScatter: at step s member j of
// a ring sends its partial sum of chunk (j - s) mod R to member j + 1, so
// member j ends holding chunk (j + 1) mod R reduced. AllGather: at step s
// member j forwards chunk (j + 1 - s) mod R, its own at s = 0. Only the
// first max_steps steps if fewer.
Result<std::vector<RingSend>> FsdpRingSchedule(uint32_t n, uint32_t server_gpus, FsdpPhase phase,
                                               const std::vector<uint32_t>& placement,
                                               uint32_t max_steps = UINT32_MAX);

// ofan-sim's flows: one per GPU, to its ring successor, of
// phases x (R - 1) x layers x packets_per_step x payload bytes. The
// simulator has no dependencies between flows, so the steps between one
// pair (always the same pair in a ring) are one flow: a step's wait for its
// predecessor's data is not modelled (at line rate in lockstep the next
// step's data arrives while the current one is sent).
Result<std::vector<Flow>> FsdpFlows(uint32_t n, uint32_t server_gpus, const LlamaModel& model,
                                    uint32_t layers, uint32_t phases, uint32_t payload,
                                    uint64_t seed);

}  // namespace ofan::workload
