// Benchmark traffic for a switch on loopback ports (net_ring, or any port
// that returns what it sends): keeps `population` valid RoCE frames of
// `frame_bytes` circulating, injecting them into the down ports' queues as
// if forwarded there, and replacing every frame the switch drops (TTL expiry
// after 254 laps, mostly) from the control thread. Used by ofan-dp's
// --bench-inject, bench/dataplane/switch_bench and the tests; not part of the
// switch.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/result.h"

namespace ofan::dp {

class Switch;

class BenchTraffic {
 public:
  // Builds the frames, injects the population and registers the
  // replacement as a control service of `sw` (which must outlive this).
  static Result<std::unique_ptr<BenchTraffic>> Start(Switch& sw, uint32_t population,
                                                     uint32_t frame_bytes);
  ~BenchTraffic();
  BenchTraffic(const BenchTraffic&) = delete;
  BenchTraffic& operator=(const BenchTraffic&) = delete;

  // Distinct flows (UDP source ports) of the traffic.
  static constexpr uint32_t kFlows = 16384;

 private:
  explicit BenchTraffic(Switch& sw) : sw_(sw) {}
  void BuildFrames(uint32_t frame_bytes);
  uint32_t Inject(uint32_t n);
  void Replace();

  Switch& sw_;
  size_t service_ = 0;
  std::vector<std::vector<uint8_t>> frames_;  // prebuilt
  std::vector<uint32_t> down_;                // the ports they enter through
  uint64_t seq_ = 0;
  uint64_t drops_seen_ = 0;
};

}  // namespace ofan::dp
