// A DPDK device as a port: one RX and one TX queue, MTU for the fabric's
// frames, promiscuous, started. Set up alike for a switch's own ports
// (switch.cc) and the shared engine's host ports kept on ethdevs
// (dataplane/engine.cc).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

struct rte_mempool;

namespace ofan::dp {

// Configures and starts DPDK port `id` with `rxd`/`txd` descriptors (as
// the device adjusts them), RX buffers from `pool`, on NUMA `socket`.
// Returns the AF_XDP socket its setup made (idle_wait.h: what an idle
// owner blocks on), or -1 if it made none. `what` names it in errors.
Result<int> StartPortDevice(uint16_t id, rte_mempool* pool, uint16_t rxd, uint16_t txd, int socket,
                            const std::string& what);

}  // namespace ofan::dp
