// The pair check of docs/rc-exchange.md ("The pair check"), the rdma-core
// side (`ofan-verbs peer`): two programs, one listening (rank 0) and one
// connecting (rank 1), connect N RC QPs by ofan-rc-1 and move M messages of
// S bytes with RDMA WRITE WITH IMMEDIATE or SEND, every byte checked.
//
// expects:  an rxe (or other RoCE) device whose GID table has this host's
//           IPv4 address as a RoCE v2 GID; the peer given the same --op,
//           --count, --size and --qps (for WRITEs a different count or size
//           is named at setup from its hello's buffer length, a different
//           --qps by the rendezvous; a SEND's hello len means nothing)
// gives:    message m on QP m % N, byte k = (k * 7 + m * 13 + 1) & 0xff;
//           write: to the peer's addr + m * S with immediate m; send: the
//           k-th arrival on QP q is message q + k * N, placed at m * S; at
//           most `depth` sends in flight and `recv_depth` receive WRs posted
//           per QP (reposted as they complete); the receiver's buffer is
//           M * S (the hello's len; 0 when this side only sends). A result
//           with the counts, time, Gb/s (payload bits this side sent and
//           received, over the time from both sides ready to this side
//           done) and the device's hw_counters deltas; ok when everything
//           sent was acknowledged and everything expected arrived intact.
//           A failed work completion, the deadline, or a peer that goes
//           away ends the run with an error naming the QP and the reason;
//           nothing waits past the deadlines
// next:     ofan_verbs.cc prints PairCheckJson or a line
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "emu/rcx/pair_check.h"
#include "emu/verbs/hw_counters.h"

namespace ofan::verbs {

enum class PairOp : uint8_t { kWrite, kSend };
enum class Direction : uint8_t { kBoth, kTx, kRx };  // what this side sends

struct PairCheckOptions {
  bool listen = true;      // rank 0; else connect to connect_ip (rank 1)
  uint32_t listen_ip = 0;  // host order; 0: every address
  uint32_t connect_ip = 0;
  std::optional<uint32_t> ip;  // this side's address; default the listen address or
                               // the device's first IPv4 RoCE v2 GID
  uint16_t port = 18515;
  PairOp op = PairOp::kWrite;
  uint64_t count = 1000;
  uint64_t size = 4096;
  uint32_t qps = 1;
  Direction direction = Direction::kBoth;
  std::string device;         // "": the first
  uint32_t mtu = 0;           // 0: the port's active MTU
  uint32_t depth = 32;        // sends in flight per QP
  uint32_t recv_depth = 128;  // receive WRs posted per QP
  std::chrono::milliseconds setup_timeout{30'000};
  std::chrono::milliseconds run_timeout{60'000};
};

inline constexpr uint64_t kMaxPairBytes = uint64_t{1} << 30;  // M * S

struct PairCheckResult {
  std::string error;  // empty: ok
  PairOp op = PairOp::kWrite;
  Direction direction = Direction::kBoth;
  std::string device;
  uint32_t mtu = 0;  // the path MTU used
  uint64_t messages = 0, size = 0;
  uint32_t qps = 0;
  uint64_t sent = 0;  // acknowledged
  uint64_t received = 0, bad = 0;
  std::optional<uint64_t> peer_received, peer_bad;  // from its done
  double seconds = 0, gbps = 0;
  Counters counters;  // deltas over the run
  bool ok() const { return error.empty(); }
};

// Byte k of message m: ofan-rc-1's pattern, defined once for both stacks.
using rcx::PairByte;

// Checks the options (an error names the one that is wrong).
std::optional<std::string> CheckPairOptions(const PairCheckOptions& o);
PairCheckResult RunPairCheck(const PairCheckOptions& o);
nlohmann::json PairCheckJson(const PairCheckResult& r);

}  // namespace ofan::verbs
