// Stage 6: TX, a port's device as the egress stage's TX hook.
//
// expects:   frames ready to leave, one burst, from PortQueue (the owner
//            lcore of the port)
// modifies:  nothing: the device takes what it can
// next:      the wire; what the device refuses stays with the queue, staged
#pragma once

#include <rte_ethdev.h>

#include <cstdint>

#include "dataplane/egress/port_queue.h"

namespace ofan::dp {

inline uint16_t DeviceTxBurst(void* ctx, rte_mbuf** pkts, uint16_t n) {
  return rte_eth_tx_burst(static_cast<uint16_t>(reinterpret_cast<uintptr_t>(ctx)), 0, pkts, n);
}
inline TxHook DeviceTx(uint16_t dpdk_port) {
  return TxHook{&DeviceTxBurst, reinterpret_cast<void*>(static_cast<uintptr_t>(dpdk_port))};
}

}  // namespace ofan::dp
