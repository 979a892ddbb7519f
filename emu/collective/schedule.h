// Schedules: what every rank of a collective writes where, and what it must
// wait for, as pure functions of (workload, ranks, size, seed, QPs, chunk).
//
// expects:  ScheduleParams (checked: MakeSchedule returns an error, never
//           crashes, on a bad value)
// gives:    one RankPlan per engine rank: the writes it posts (each one
//           chunk, on a QP chosen round robin so that more QPs give more
//           E-ECMP entropy), the messages it expects (keyed by sender, step
//           and chunk, which the writes carry in their immediate), the local
//           copies it does at the start, and what its receive buffer must
//           hold at the end (for verification)
// next:     RankEngine (rank_engine.h) runs a plan over a Transport;
//           NicBoundUs (lower_bound.h) reads the bytes each rank puts on the
//           wire; the driver (driver.h) sizes nothing: the transport's buffers
//           must be at least send_bytes / recv_bytes of the plan
//
// Sizes follow nccl-tests (doc/PERFORMANCE.md): S = msg_bytes is
//   permutation     what each rank sends to its one peer (Send/Receive);
//   all-to-all      each rank's whole send buffer, split in n chunks, chunk j
//                   to rank j (nccl-tests' alltoall: "count" is the buffer,
//                   count/nranks per peer); the chunk to itself is a local
//                   copy;
//   all-gather      the gathered buffer: rank r contributes block r of S;
//   reduce-scatter  each rank's input: rank r ends with block r of the sum;
//   incast          what each sender writes to rank 0, the one receiver,
//                   which keeps sender j's bytes at j * S (the senders:
//                   incast_senders of ranks 1..n-1, evenly spaced, so that
//                   ranks in host order spread over pods and edges).
// Where S is not a multiple of n, nccl-tests rounds the count down to one;
// we keep every byte instead: the split in n is as even as it gets (block
// sizes differ by at most one unit), so S is exactly what is reported and
// verified. An all-to-all receiver j stores its n chunks of len(j) side by
// side (chunk from i at i * len(j)), so its receive buffer is n * len(j).
//
// Rings (all-gather, reduce-scatter) are pipelined per chunk: a block is cut
// into the same chunks at every rank, and chunk c of step s+1 leaves as soon
// as chunk c of step s has arrived (and, in reduce-scatter, been added to
// this rank's own data), as NCCL's slices do. The transport writes only from
// the send buffer, so a forwarded chunk is first copied (all-gather) or
// reduced (reduce-scatter) from the receive buffer into the send buffer at
// the same offset; no block is ever written to there after it was sent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "emu/collective/transport.h"

namespace ofan::emu {

enum class Workload : uint8_t { kPermutation, kAllToAll, kAllGather, kReduceScatter, kIncast };

// "permutation", "alltoall", "allgather", "reducescatter", "incast"; Parse
// also takes ofan-emu's "perm" and "a2a".
std::string_view WorkloadName(Workload w);
Result<Workload> ParseWorkload(std::string_view name);

// The immediate of a write names the receiver's expected message: its ring
// step (0 for permutation and all-to-all) and its chunk index within the
// (sender, step) group.
inline constexpr uint32_t kImmChunkBits = 20;
inline constexpr uint32_t kMaxChunksPerGroup = 1u << kImmChunkBits;
inline constexpr uint32_t kMaxSteps = 1u << (32 - kImmChunkBits);
constexpr uint32_t MakeImm(uint32_t step, uint32_t chunk) {
  return (step << kImmChunkBits) | chunk;
}
constexpr uint32_t ImmStep(uint32_t imm) { return imm >> kImmChunkBits; }
constexpr uint32_t ImmChunk(uint32_t imm) { return imm & (kMaxChunksPerGroup - 1); }

inline constexpr uint64_t kMaxMsgBytes = uint64_t{1} << 40;  // keeps i * S in 64 bits
inline constexpr uint32_t kMaxRanks = 4096;

struct ScheduleParams {
  Workload workload = Workload::kPermutation;
  uint32_t num_ranks = 2;
  uint64_t msg_bytes = 0;  // S, as above; > 0
  uint64_t seed = 1;       // the permutation's pairs and the data pattern
  uint32_t qps_per_peer = 1;
  // Largest write (a multiple of 4). A transfer is cut into at least
  // qps_per_peer chunks when it is big enough, so that every QP carries some.
  uint64_t chunk_bytes = uint64_t{64} * 1024;
  // incast: how many ranks send to rank 0 (0: every other rank), and
  // whether the victim flow runs beside it (workload::VictimSrc to
  // workload::kVictimDst, msg_bytes; neither end an incast sender).
  uint32_t incast_senders = 0;
  bool victim = false;
  // Receiver-driven admission (NCCL's simple protocol, rank_engine.h): per
  // (sender, receiver) pair, `cts_channels` slots of `cts_channel_bytes`; a
  // sender writes a chunk (at most a slot) only on a clear-to-send of its
  // receiver, which grants the slot again once the chunk has arrived. 0:
  // off. cts_priority: the clear-to-sends go in the strict-priority class.
  uint32_t cts_channels = 0;
  uint64_t cts_channel_bytes = 0;
  bool cts_priority = true;
};
inline constexpr uint32_t kMaxCtsChannels = 1024;  // 2^RankEngine::kCtsSlotBits

// The incast's senders, in ascending order: `senders` of ranks 1..n-1
// (2..n-2 with the victim), evenly spaced (all of them for 0).
std::vector<Rank> IncastSenders(uint32_t num_ranks, uint32_t senders, bool victim = false);

// What a rank does with a message once it is in its receive buffer.
enum class OnArrival : uint8_t {
  kNone,          // final data, nothing to forward
  kCopyToSend,    // all-gather: copy to the send buffer, then forward
  kReduceToSend,  // reduce-scatter: send[x] += recv[x], then forward
  kReduceToRecv,  // reduce-scatter's last step: recv[x] += send[x] (the result)
};

inline constexpr uint32_t kNoDep = UINT32_MAX;

struct PlannedWrite {
  Rank peer = 0;
  uint32_t qp = 0;
  uint32_t step = 0;
  uint32_t chunk = 0;
  uint64_t src_off = 0;  // send buffer
  uint64_t dst_off = 0;  // the peer's receive buffer
  uint64_t len = 0;
  uint32_t after = kNoDep;  // index of the arrival (this rank's) it waits for
};

struct PlannedArrival {
  Rank from = 0;
  uint32_t step = 0;
  uint32_t chunk = 0;
  uint64_t off = 0;  // receive buffer
  uint64_t len = 0;
  OnArrival action = OnArrival::kNone;
  uint32_t unblocks = kNoDep;  // index of the write (this rank's) it enables
};

// send[src_off, +len) -> recv[dst_off, +len), before the first post.
struct LocalCopy {
  uint64_t src_off = 0;
  uint64_t dst_off = 0;
  uint64_t len = 0;
};

// What recv[recv_off, +len) must hold at the end: the bytes rank `src` had
// at send offset src_off.. (Pattern), or, with sum, the element-wise sum of
// every rank's input at the same offsets (SumPattern).
struct Expectation {
  uint64_t recv_off = 0;
  uint64_t len = 0;
  bool sum = false;
  Rank src = 0;
  uint64_t src_off = 0;
};

struct RankPlan {
  std::vector<PlannedWrite> writes;      // in posting order per (peer, qp)
  std::vector<PlannedArrival> arrivals;  // sorted by (from, step, chunk)
  std::vector<LocalCopy> local;
  std::vector<Expectation> expect;
  uint64_t send_bytes = 0;  // buffer sizes this plan needs
  uint64_t recv_bytes = 0;
  uint64_t WriteBytes() const;
  uint64_t ArrivalBytes() const;
  // Index into arrivals of the message (from, imm), or kNoDep.
  uint32_t FindArrival(Rank from, uint32_t imm) const;
};

struct Schedule {
  ScheduleParams params;
  std::vector<RankPlan> ranks;
  std::vector<Rank> peer_of;  // permutation: rank i sends to peer_of[i]
  uint32_t num_steps = 1;     // n - 1 for the rings
  uint64_t MaxSendBytes() const;
  uint64_t MaxRecvBytes() const;
};

Result<Schedule> MakeSchedule(const ScheduleParams& p);

// The even split used for blocks and chunks: part i of `total` bytes in
// `parts`, in units of `align` bytes (the last unit may be short): begin of
// part i, i in 0..parts (Split(t, k, a, k) == t). Parts are empty only when
// there are fewer units than parts.
uint64_t SplitBegin(uint64_t total, uint32_t parts, uint32_t align, uint32_t i);

// nccl-tests' bus bandwidth factor: (n-1)/n for all-gather, reduce-scatter
// and all-to-all; 1 for the permutation and the incast, Send/Receive ("algorithm
// bandwidth makes sense for point-to-point operations like Send/Receive",
// doc/PERFORMANCE.md; sendrecv.cu uses factor 1).
double BusBwFactor(Workload w, uint32_t n);

}  // namespace ofan::emu
