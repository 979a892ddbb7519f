// MoE dispatch traffic (paper §6.6) as fabric flows.
//
// Expects: n GPUs = the tree's hosts, GPU g on server g / server_gpus (n a
// multiple of it, at least two servers), one expert per GPU (n experts), a
// GPU-to-expert matrix of token copies (row g: what GPU g routes to each
// expert), either generated here or read from a file (ParseMoeTokens).
// Gives: the flows that cross the fabric when dispatch is a hierarchical
// all-to-all (each GPU sends the tokens for a remote server to its same-rank
// peer there, which forwards them over NVLink, as §6.6 describes DeepEP), and
// the matrix's shape over the fabric (mean sent per GPU, busiest receiver).
// Why: the paper's Qwen3-235B trace is not public; GenerateMoeTokens builds a
// seeded matrix with the shape §6.6 states (492 MB mean sent per GPU over the
// fabric, busiest GPU receiving 1.48x the mean) so that Fig. 13's traffic can
// be run, and says that it is generated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "workload/workload.h"

namespace ofan::workload {

// The largest GPU count the MoE workload takes (its matrices are n x n).
inline constexpr uint32_t kMaxMoeGpus = 2048;

struct MoeShape {
  double mean_sent_bytes = 492e6;  // §6.6: per GPU, over the fabric
  double busiest_ratio = 1.48;     // §6.6: busiest fabric receiver / mean
  uint32_t top_k = 8;              // experts per token (Qwen3-235B)
  uint64_t token_bytes = 8192;     // hidden 4,096 in BF16
  uint32_t server_gpus = 8;
};

// n x n token copies, row-major: tokens[g * n + e].
struct MoeTokens {
  uint32_t n = 0;
  std::vector<uint64_t> tokens;
  double skew_sigma = 0;  // generated: the popularity skew that gave the shape
};

// Generator (assumptions, none from a trace): expert e's popularity is
// exp(sigma * z_e), z_e standard normal; GPU g's share for e is that times a
// per-(g, e) lognormal factor (sd 0.3: GPUs see different token batches);
// each GPU routes the same number of token copies. sigma is found by
// bisection so that, under the seed's expert placement, the busiest fabric
// receiver gets busiest_ratio x the mean; then the copies per GPU are scaled
// so that the mean sent over the fabric is mean_sent_bytes, and rounded.
// Pure function of (n, seed, shape). Errors: n not a multiple of
// server_gpus or fewer than two servers; a shape it cannot reach.
Result<MoeTokens> GenerateMoeTokens(uint32_t n, uint64_t seed, const MoeShape& shape = {});

// Token-matrix file: n lines of n non-negative integers (token copies from
// GPU row to expert column), separated by spaces or tabs; '#' starts a
// comment; blank lines are skipped. Errors name the line and say what is
// wrong: a wrong row or column count, a token that is not a number, a value
// above 1e12, an all-zero matrix.
Result<MoeTokens> ParseMoeTokens(const std::string& text, uint32_t n);

// Expert e -> the GPUs holding it, with the share of e's tokens each gets.
using ExpertPlacement = std::vector<std::vector<std::pair<uint32_t, double>>>;

// One expert per GPU, uniformly at random (§6.6: "at each run"); pure in seed.
ExpertPlacement RandomPlacement(uint32_t n, uint64_t seed);

// EPLB (§6.6): two expert slots per GPU; the n extra slots go one at a time
// to the expert of largest load per replica, then slots are packed, largest
// first, on the least-loaded GPU with a free slot; GPU ids are then shuffled
// by the seed. A replicated expert's tokens are split evenly among its
// replicas (the mean of EPLB's per-token choice).
ExpertPlacement EplbPlacement(const MoeTokens& m, uint64_t seed);

struct MoeTraffic {
  std::vector<Flow> flows;        // fabric flows only, bytes > 0
  double mean_sent_bytes = 0;     // per GPU, over the fabric
  double busiest_recv_bytes = 0;  // the fabric receiver with most bytes
  double busiest_ratio = 0;       // busiest_recv_bytes / mean_sent_bytes
  uint64_t local_bytes = 0;       // stayed inside servers (NVLink only)
};

// The hierarchical dispatch of m under placement p; `scale` multiplies
// every flow's bytes (quick runs). Errors: sizes that do not match, nothing
// crossing the fabric.
Result<MoeTraffic> MoeDispatch(const MoeTokens& m, const ExpertPlacement& p,
                               const MoeShape& shape = {}, double scale = 1.0);

}  // namespace ofan::workload
