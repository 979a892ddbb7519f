// libFuzzer target: frames through a whole switch, not one stage: the vector
// pass, the LB lanes, buckets, egress queues, PFC frames and the control
// thread's exception path (ARP, ICMP echo, LLDP) on real mbufs.
//
// Input: records of [port: 1 byte][length: 2 bytes, big-endian][frame], at
// most 64 of them; a short last record takes what is left. Every frame given
// to the switch must be received (counted in rx_packets), and nothing may
// crash or touch memory it does not own (ASan).
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tests/fuzz/fuzz_switch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ofan::dp;
  static fuzz::FuzzSwitch f = fuzz::MakeFuzzSwitch();
  const uint64_t rx0 = f.sw->TotalCounters().Get(Counter::kRxPackets);
  uint64_t given = 0;
  size_t at = 0;
  for (int i = 0; i < 64 && at + 3 <= size; ++i) {
    const uint32_t port = data[at] % 4;
    const size_t want = static_cast<size_t>(data[at + 1]) << 8 | data[at + 2];
    at += 3;
    const size_t len = std::min({want, size - at, size_t{2048}});
    rte_mbuf* m = rte_pktmbuf_alloc(f.pool);
    if (!m) break;  // frames held by a paused port: the pool refills as they leave
    char* d = rte_pktmbuf_append(m, static_cast<uint16_t>(len));
    if (d == nullptr && len != 0) {
      rte_pktmbuf_free(m);
      break;
    }
    if (len) std::memcpy(d, data + at, len);
    at += len;
    m->port = f.ports[port].id;  // the ring PMD leaves it to the sender, as tests do
    if (rte_ring_enqueue(f.ports[port].rx, m) != 0) {
      rte_pktmbuf_free(m);
      break;
    }
    ++given;
  }
  for (int i = 0; i < 4; ++i) f.sw->PollWorker(0);
  f.sw->ServiceControl();  // exceptions; replies go out on the next poll
  f.sw->PollWorker(0);
  if (f.sw->TotalCounters().Get(Counter::kRxPackets) - rx0 != given) __builtin_trap();
  for (const auto& p : f.ports) {
    rte_mbuf* m;
    while (rte_ring_dequeue(p.tx, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
  }
  return 0;
}
