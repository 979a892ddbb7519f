// Switch: one ofan-dp instance. Owns the ports, the per-port egress queues,
// the worker lcores (one pipe each, or several pipes per lcore when there are
// fewer lcores than pipes), the forwarding state they look up, and the
// exception path. The pipeline (dataplane/vector.cc) runs once per vector of
// up to kMaxVector packets, RX'd from all of a worker's ports (stages in
// dataplane/stages/):
//   RX -> parse + route + TTL check + LB (immediate lanes) + rewrite, one pass
//      -> LB (deferred lanes: Ofan-combined) + rewrite -> per-port buckets
//      -> egress enqueue ... egress drain -> TX
// See docs/packet-walk.md for one packet's path through these files.
//
// Threads: worker lcores run Worker::Poll in a loop; the control thread (the
// main lcore) runs ServiceControl: exception frames (ARP/LLDP/ICMP to the
// switch), the control socket, table publication. Tests call PollWorker and
// ServiceControl themselves, single-threaded, for deterministic golden tests.
#pragma once

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "dataplane/config.h"
#include "dataplane/counters.h"
#include "dataplane/egress.h"
#include "dataplane/lb/any_policy.h"
#include "dataplane/lb/policies/ofan_shared.h"
#include "dataplane/stages/balance.h"
#include "dataplane/stages/parse.h"
#include "dataplane/stages/rewrite.h"
#include "dataplane/stages/route.h"

struct rte_mempool;

namespace ofan::dp {

class Switch;
struct Worker;
struct FwdState;

// One RX burst of a vector: its packets are pkts[start, start + n).
struct RxSegment {
  uint32_t port;
  uint16_t start;
  uint16_t n;
};

// The pipeline over one vector, compiled per (switch role, LB lane): picked
// once per forwarding state, called once per vector (rule 3).
using VectorFn = void (Switch::*)(Worker&, const FwdState&, rte_mbuf**, const RxSegment*, uint32_t,
                                  uint32_t);

// Per-lcore LB objects of one forwarding state.
struct LcoreLb {
  std::unique_ptr<lb::AnyPolicy> any;          // every policy but shared Ofan
  std::unique_ptr<lb::OfanAtomic> atomic;      // Ofan-atomic
  std::unique_ptr<lb::OfanCombined> combined;  // Ofan-combined
};

// What workers look up; immutable once published (rule 6), replaced by
// pointer swap, freed after every worker has moved past it.
struct FwdState {
  uint64_t generation = 0;
  lb::PolicyKind kind = lb::PolicyKind::kOfan;
  OfanMode mode = OfanMode::kCombined;
  std::vector<lb::PortMask> base_masks;  // from the fabric (or loaded), before admin state
  std::unique_ptr<lb::UplinkTable> table;
  std::unique_ptr<lb::SharedOfanTable> shared;
  std::vector<LcoreLb> lcore;  // one per worker
  LaneKind lane = LaneKind::kAny;
  VectorFn run = nullptr;  // the vector pipeline for this role and lane
};

struct alignas(64) Worker {
  uint32_t index = 0;
  unsigned lcore_id = 0;
  std::vector<uint32_t> ports;  // fat-tree ports whose pipe this worker runs
  // Per poll, every port may RX this many packets first; room left in the
  // vector goes to ports that gave all of theirs (up to one more share each,
  // round robin from rx_rotor). TX per port and poll: up to twice this.
  uint32_t port_share = 0;
  uint32_t rx_rotor = 0;
  LcoreCounters counters;
  std::atomic<uint64_t> seen_generation{0};
  std::atomic<uint64_t> busy_loops{0}, idle_loops{0};
  std::atomic<uint64_t> sleeps{0};       // idle backoff sleeps taken
  std::atomic<uint32_t> sleep_us_now{0};  // the backoff's current sleep (0: spinning)
  uint32_t idle_streak = 0;
  uint32_t sleep_us = 0;
  // Scratch for one vector, here rather than on the stack: PacketKey has
  // member initialisers, and 256 of them would be zeroed on every call.
  alignas(64) lb::PacketKey keys[kMaxVector];
  // The vector's packets per (output port, queue) bucket b = 2 * port +
  // queue, in arrival order: slots[b * kMaxVector + i], i < fill[b]. fill is
  // all zero between vectors.
  std::vector<rte_mbuf*> slots;
  uint16_t fill[kMaxQueues] = {};
  uint32_t fill_bytes[kMaxQueues] = {};  // the sum of their pkt_len
  // Each port's MAC pair (next hop's, port's own), as of neighbour
  // generation mac_gen; bit p of unknown_neighbors: port p's next hop is
  // not known yet (its frames go to the broadcast MAC).
  uint64_t mac_gen = 0;
  uint64_t unknown_neighbors = 0;
  MacPair macs[64];
};

class Switch {
 public:
  // EAL must be initialised and the port devices must exist (vdevs given to
  // EAL, or ring ports created by a test). `workers` = how many worker lcores
  // to plan for; 0 = manual (tests call PollWorker(0)).
  static Result<std::unique_ptr<Switch>> Create(const DpConfig& c, uint32_t workers);
  ~Switch();
  Switch(const Switch&) = delete;
  Switch& operator=(const Switch&) = delete;

  // Launches worker i on the i-th worker lcore and returns; Stop() joins.
  Status Launch();
  void Stop();
  bool running() const { return running_.load(); }

  // One worker iteration (RX all its ports, drain all its egress queues).
  // Returns the packets it handled.
  uint32_t PollWorker(uint32_t worker);
  // One control-thread step: exception frames, deferred frees.
  void ServiceControl();

  // Control API (JSON in the shape of the control socket's replies).
  nlohmann::json StatusJson() const;
  nlohmann::json CountersJson() const;
  nlohmann::json PortsJson() const;
  nlohmann::json QueuesJson() const;
  nlohmann::json PointersJson() const;
  Status SetPolicy(lb::PolicyKind kind, OfanMode mode);
  Status SetPortAdmin(uint32_t port, bool up);
  // Valid-uplink masks per destination (the agent's tables).
  Status LoadMasks(const std::vector<lb::PortMask>& masks);
  void ResetQueueStats();
  // Forwarding benchmark on loopback ports (net_ring): keeps `population`
  // valid RoCE frames of `frame_bytes` circulating, injecting them into the
  // down ports' egress queues and replacing every frame the switch drops
  // (TTL expiry after 254 laps, mostly). 0 turns it off.
  Status StartBenchTraffic(uint32_t population, uint32_t frame_bytes);

  const DpConfig& config() const { return cfg_; }
  uint32_t num_workers() const { return static_cast<uint32_t>(workers_.size()); }
  Counters TotalCounters() const;
  // The DPDK port id of a fat-tree port (absent ports: error).
  Result<uint16_t> DpdkPort(uint32_t port) const;

  static Status RunWorkerLoop(Switch* sw, uint32_t worker);

 private:
  explicit Switch(const DpConfig& c);
  Status SetupPorts();
  Status SetupWorkers(uint32_t workers);
  Result<std::unique_ptr<FwdState>> BuildState(lb::PolicyKind kind, OfanMode mode,
                                               std::vector<lb::PortMask> base) const;
  void Publish(std::unique_ptr<FwdState> next);

  // The pipeline over one vector (dataplane/vector.cc), for a switch of
  // role kRole whose policy runs through Lane.
  template <lb::Role kRole, class Lane>
  void RunVector(Worker& wk, const FwdState& st, rte_mbuf** pkts, const RxSegment* seg,
                 uint32_t nseg, uint32_t n);
  static VectorFn VectorFnFor(lb::Role role, LaneKind lane);
  uint32_t Drain(Worker& wk, uint32_t port, uint64_t now);
  // n frames for one queue of a port, `bytes` = the sum of their pkt_len.
  void Enqueue(Worker& wk, uint32_t port, int queue, rte_mbuf** pkts, uint32_t n, uint64_t bytes,
               uint64_t now);
  void HandlePfc(Worker& wk, uint32_t in_port, const uint8_t* frame, uint32_t len, uint64_t now);
  void SendPfc(uint32_t port, bool pause);
  void ReleaseIngress(rte_mbuf* m);
  bool SendControlFrame(uint32_t port, const uint8_t* frame, uint32_t len);
  void HandleException(rte_mbuf* m);

  DpConfig cfg_;
  lb::FatTree tree_;
  Router router_;
  uint32_t w_ = 0;  // uplinks; uplink u is port w_ + u
  rte_mempool* pool_ = nullptr;
  rte_ring* exception_ring_ = nullptr;
  std::vector<EgressPort> egress_;               // indexed by fat-tree port (size k)
  std::vector<int32_t> port_of_dpdk_;            // dpdk port id -> fat-tree port, -1
  std::vector<uint32_t> owner_;                  // fat-tree port -> worker that owns its RX and TX
  std::vector<std::atomic<uint64_t>> neighbor_;  // per port: MAC | 1<<48 when known
  std::atomic<uint64_t> neighbor_gen_{1};        // bumped after a change to neighbor_
  void RefreshMacs(Worker& wk, uint64_t gen) const;
  std::vector<pkt::MacAddr> port_mac_;
  // Egress queue by [RoCE][size class], from the config: the priority queue
  // for ACK/NAK/CNP (priority_ack) and non-RoCE control (priority_control).
  uint8_t queue_of_[2][lb::kNumSizeClasses] = {};
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<FwdState*> state_{nullptr};
  std::vector<std::unique_ptr<FwdState>> retired_;
  uint64_t next_generation_ = 1;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_{false};
  std::vector<unsigned> launched_lcores_;
  uint64_t tsc_hz_ = 1;
  double bytes_per_tsc_ = 0;  // shaper rate; 0 = unlimited
  double pfc_tsc_per_quantum_ = 0;
  uint64_t start_tsc_ = 0;
  LcoreCounters control_counters_;  // the control thread's own (exceptions it sends)
  static constexpr uint32_t kBenchFlows =
      16384;  // distinct flows (UDP source ports) of the bench traffic
  uint32_t bench_frame_ = 0;
  std::vector<std::vector<uint8_t>> bench_frames_;  // prebuilt (BuildBenchFrames)
  std::vector<uint32_t> bench_down_;                // the ports they enter through
  uint64_t bench_seq_ = 0;
  uint64_t bench_drops_seen_ = 0;
  void BuildBenchFrames();
  uint32_t InjectBench(uint32_t n);
};

}  // namespace ofan::dp
