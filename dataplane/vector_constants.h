// Vector-wide constants of ofan-dp's fast path: how many packets move at once
// and how many (port, queue) buckets a vector can fill. Every stage sizes its
// scratch from these, so they live apart from any one stage.
#pragma once

#include <cstdint>

#include "dataplane/packet/frame_budget.h"

namespace ofan::dp {

inline constexpr uint32_t kMaxPorts = 64;    // a k <= 64 switch
inline constexpr uint32_t kMaxBurst = 64;    // one RX or TX burst (config `burst` <= this)
inline constexpr uint32_t kMaxVector = 256;  // packets a worker runs through the pipeline at once
// Egress queues per port: strict priority (ACK/NAK/CNP, control) and normal.
inline constexpr uint32_t kQueuesPerPort = 2;
inline constexpr int kPrioQueue = 0;
inline constexpr int kNormalQueue = 1;
inline constexpr uint32_t kMaxQueues = kQueuesPerPort * kMaxPorts;  // (port, queue) buckets
// An mbuf's data room: the frame budget's (dataplane/packet/frame_budget.h).
using pkt::kMbufDataRoom;

}  // namespace ofan::dp
