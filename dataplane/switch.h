// Switch: one ofan-dp instance, and the seams between its parts.
//
// It owns the ports, the worker lcores (one pipe each, or several pipes per
// lcore when there are fewer lcores than pipes) and the forwarding state they
// look up; the parts are stages and services of their own:
//   dataplane/stages/rx.h        RX: a vector from all of a worker's ports
//   dataplane/stages/parse.h     parse
//   dataplane/stages/route.h     route
//   dataplane/stages/balance.h   the LB lanes, and Lanes: where a policy is registered
//   dataplane/stages/rewrite.h   TTL, checksum, MACs, ECN CE
//   dataplane/egress/            port queue: buffer, ECN, shaper, priority, PFC
//   dataplane/stages/tx.h        TX: the device as the queue's TX hook
//   dataplane/exception/         ARP, ICMP echo, neighbours, frames for the agent
//   dataplane/snapshot.h         what the control side reads (views: control_views.h)
// dataplane/vector.cc runs the pipeline once per vector of up to kMaxVector
// packets. docs/packet-walk.md follows one packet through these files.
//
// Threads: worker lcores run Worker::Poll in a loop; the control thread (the
// main lcore) runs ServiceControl: exception frames, PFC generation, control
// services (bench traffic, later the agent's), table publication. Tests call
// PollWorker and ServiceControl themselves, single-threaded, for
// deterministic golden tests.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "dataplane/capture/port_capture.h"
#include "dataplane/config.h"
#include "dataplane/counters.h"
#include "dataplane/egress/emu_pfc.h"
#include "dataplane/egress/pfc.h"
#include "dataplane/egress/port_queue.h"
#include "dataplane/exception/exception_path.h"
#include "dataplane/exception/kernel_ports.h"
#include "dataplane/fabric/buffer_alarm.h"
#include "dataplane/fabric/host_stamp.h"
#include "dataplane/idle_wait.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb_choice.h"
#include "dataplane/snapshot.h"
#include "dataplane/stages/balance.h"
#include "dataplane/stages/parse.h"
#include "dataplane/stages/rewrite.h"
#include "dataplane/stages/route.h"
#include "dataplane/stages/rx.h"
#include "dataplane/stages/tx.h"
#include "dataplane/vector_constants.h"

struct rte_mempool;

namespace ofan::dp {

class Switch;
struct Worker;
struct FwdState;

// The pipeline over one vector, compiled per (switch role, LB lane): picked
// once per forwarding state, called once per vector (docs/design.md, rule 3).
using VectorFn = void (Switch::*)(Worker&, const FwdState&, rte_mbuf**, const RxSegment*, uint32_t,
                                  uint32_t);

// What workers look up; immutable once published (docs/design.md, rule 6), replaced by
// pointer swap, freed after every worker has moved past it.
struct FwdState {
  uint64_t generation = 0;
  LbChoice lb;
  std::vector<lb::PortMask> base_masks;  // from the fabric (or loaded), before admin state
  std::unique_ptr<lb::UplinkTable> table;
  std::unique_ptr<LaneState> lanes;  // the lane's LB objects (balance.h)
  size_t lane = 0;                   // its index in Lanes
  VectorFn run = nullptr;            // the vector pipeline for this role and lane
};

// Per port, what RX counts (ingress statistics), next to its device.
struct alignas(64) PortRx {
  bool present = false;
  bool device = false;  // a DPDK device (not so when the shared engine hosts the switch)
  uint16_t dpdk_port = 0;
  std::atomic<uint64_t> packets{0}, bytes{0};  // written by the port's owner only
  int wait_fd = -1;                            // its AF_XDP socket, for an idle owner to block on
};

struct alignas(64) Worker {
  uint32_t index = 0;
  unsigned lcore_id = 0;
  std::vector<uint32_t> ports;  // fat-tree ports whose pipe this worker runs
  // Per poll, every port may RX this many packets first (rx.h); TX per port
  // and poll: up to twice this.
  uint32_t port_share = 0;
  uint32_t rx_rotor = 0;
  LcoreCounters counters;
  std::atomic<uint64_t> seen_generation{0};
  std::atomic<uint64_t> busy_loops{0}, idle_loops{0};
  std::atomic<uint64_t> sleeps{
      0};  // idle backoff sleeps taken
           // The backoff's current sleep (0: spinning); written by the worker only.
  std::atomic<uint32_t> sleep_us{0};
  uint32_t idle_streak = 0;
  IdleWait idle;  // blocks on the ports' sockets where it can (idle_wait.h)
  // Of the last poll: ports holding frames back (shaper, PFC), and when the
  // first of them can leave.
  uint32_t held = 0;
  uint64_t ready_tsc = 0;
  // Bit p: port p's RX is held back, its lossless account too full for its
  // share (the per-switch engine's PFC, vector.cc); kPfcRxHeld counts each
  // time that starts.
  uint64_t rx_held = 0;
  std::atomic<uint64_t> shaper_waits{0};  // waits for the bucket, not for traffic
  // Scratch for one vector, here rather than on the stack: PacketKey has
  // member initialisers, and 256 of them would be zeroed on every call.
  alignas(64) lb::PacketKey keys[kMaxVector];
  // The vector's packets per (output port, queue) bucket b = 2 * port +
  // queue, in arrival order from slots[b * kMaxVector] up to tail[b], its
  // next free slot (one store and one pointer bump per packet, where a
  // count would be a multiply-add more); every bucket is empty between
  // vectors (tail[b] at its first slot: ResetBuckets).
  std::vector<rte_mbuf*> slots;
  rte_mbuf** tail[kMaxQueues] = {};
  uint32_t fill_bytes[kMaxQueues] = {};  // the sum of their pkt_len
  rte_mbuf** bucket(uint32_t b) { return slots.data() + static_cast<size_t>(b) * kMaxVector; }
  void ResetBuckets() {
    for (uint32_t b = 0; b < slots.size() / kMaxVector; ++b) tail[b] = bucket(b);
  }
  // Each port's MAC pair (next hop's, port's own), as of neighbour
  // generation mac_gen; bit p of unknown_neighbors: port p's next hop is
  // not known yet (its frames go to the broadcast MAC).
  uint64_t mac_gen = 0;
  uint64_t unknown_neighbors = 0;
  MacPair macs[kMaxPorts];
};

// How far the shared engine fell behind the wall clock (engine.h): written
// by its thread, read by every hosted switch's status, reset with the
// switches' queue statistics.
// A fabric behind the wall clock for more than this share of the time is
// CPU-bound: its hosts saw a distorted fabric that long (the per-switch
// engine's rule for its shapers' lost line time, emu/fabric/run.py, is the
// same 5%). Single stalls of a millisecond happen on two shared cores even
// when the engine is idle most of the time; they are counted, not flagged.
inline constexpr double kCpuBoundLagShare = 0.05;

struct EngineLag {
  std::atomic<uint64_t> events{0};    // passes that found the fabric behind
  std::atomic<uint64_t> late_tx{0};   // bursts to hosts sent late
  std::atomic<uint64_t> max_ps{0};    // the largest lag
  std::atomic<uint64_t> late_ps{0};   // time spent behind
  std::atomic<uint64_t> since_ps{0};  // emulated time of the last reset
  // Why it was behind: its longest pass, its latest wakeup (past the time
  // its wait meant to end: the OS's doing).
  std::atomic<uint64_t> pass_max_ps{0}, wake_late_max_ps{0};
  std::atomic<uint64_t> windows{0};
  std::atomic<uint64_t> threshold_ps{0};
  // Host frames (every one the engine took from a host's socket), those
  // with the kernel's receive time (engine.h's HostStamp), and those of
  // them seen after the fabric had run past it, so started later than sent
  // (by up to stamp_late_max_ps).
  std::atomic<uint64_t> host_frames{0}, host_stamped{0}, stamp_late{0}, stamp_late_max_ps{0};
  std::atomic<fabric::HostStamp> host_stamp{fabric::HostStamp::kKernel};  // for status
  void Reset(uint64_t now_ps) {
    events.store(0);
    late_tx.store(0);
    max_ps.store(0);
    late_ps.store(0);
    since_ps.store(now_ps);
    pass_max_ps.store(0);
    wake_late_max_ps.store(0);
    host_frames.store(0);
    host_stamped.store(0);
    stamp_late.store(0);
    stamp_late_max_ps.store(0);
  }
};

// What the shared fabric engine (dataplane/engine.h) gives a switch
// it hosts: its clock, and where each port's frames go. Such a switch has
// no device and no worker lcore of its own: the engine's thread runs its
// pipeline (EngineRun) and egress (EngineDrain); every port's egress is
// emulated (PortQueue, fabric/emu_port.h).
struct EngineAttach {
  const std::atomic<uint64_t>* now = nullptr;  // emulated time, ps
  uint64_t wall_origin_ns = 0;                 // wall-clock ns at emulated 0 (captures)
  std::vector<TxHook> tx;                      // per fat-tree port
  IdleWait* waker = nullptr;                   // told when the control thread queues frames
  const std::atomic<bool>* running = nullptr;  // the engine's thread runs
  EngineLag* lag = nullptr;
  // Per fat-tree port: a host's, the emulated time its PFC storm ends
  // (Switch::SetPortPfcStorm writes it, the engine reads it); nullptr for
  // the others.
  std::vector<std::atomic<uint64_t>*> storm_until;
};

class Switch {
 public:
  // EAL must be initialised and the port devices must exist (vdevs given to
  // EAL, or ring ports created by a test). `workers` = how many worker lcores
  // to plan for; 0 = manual (tests call PollWorker(0)). `engine`: hosted by
  // the shared engine (ports need no device then).
  static Result<std::unique_ptr<Switch>> Create(const DpConfig& c, uint32_t workers,
                                                const EngineAttach* engine = nullptr);
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
  // One control-thread step: exception frames, PFC generation, services.
  void ServiceControl();
  // A control-thread duty run by every ServiceControl (bench traffic; the
  // agent's sync later). Returns its id for RemoveControlService.
  size_t AddControlService(std::function<void()> f);
  void RemoveControlService(size_t id);

  // Control API.
  Snapshot TakeSnapshot(SnapshotParts parts = SnapshotParts{}) const;
  Status SetPolicy(const LbChoice& lb);
  Status SetPortAdmin(uint32_t port, bool up);
  // The port's cable cut (or whole again) behind the switch's back
  // (PortQueue::set_wire_cut): nothing is recomputed, the LB keeps the port.
  Status SetPortWire(uint32_t port, bool cut);
  // The host behind `port` sends continuous pause for `for_ms` of emulated
  // time, as a broken NIC does (0 ends it): the shared engine's, with PFC.
  Status SetPortPfcStorm(uint32_t port, uint32_t for_ms);
  // Valid-uplink masks per destination (the agent's tables).
  Status LoadMasks(const std::vector<lb::PortMask>& masks);
  // The control agent's last report (agent_report), kept as JSON text for
  // `agent`, with the steady-clock ms it came at. Control thread only: the
  // dataplane never reads it.
  void SetAgentReport(std::string json_text, int64_t now_ms) {
    agent_report_ = std::move(json_text);
    agent_report_ms_ = now_ms;
  }
  const std::string& agent_report() const { return agent_report_; }
  int64_t agent_report_ms() const { return agent_report_ms_; }
  void ResetQueueStats();
  ExceptionPath& exception_path() { return exception_; }
  // The ports' kernel interfaces (config control.kernel_ports), or null.
  const KernelPorts* kernel_ports() const { return kernel_.get(); }
  // Copies of ports' frames into pcapng files (capture/port_capture.h).
  Result<CaptureStatus> StartCapture(const CaptureRequest& r);
  PortCapture& capture() { return *capture_; }

  const DpConfig& config() const { return cfg_; }
  const lb::FatTree& tree() const { return tree_; }
  const Router& router() const { return router_; }
  uint32_t num_uplinks() const { return w_; }
  uint32_t num_workers() const { return static_cast<uint32_t>(workers_.size()); }
  Counters TotalCounters() const;
  // The DPDK port id of a fat-tree port (absent ports: error).
  Result<uint16_t> DpdkPort(uint32_t port) const;
  // Frames made by the control thread into a port's normal queue, as if
  // forwarded there (bench traffic): false if no mbuf or the queue is full.
  bool InjectFrame(uint32_t port, std::span<const uint8_t> frame);
  bool port_present(uint32_t port) const { return port < rx_.size() && rx_[port].present; }

  static Status RunWorkerLoop(Switch* sw, uint32_t worker);

  // The shared engine's side (its thread only). EngineRun: the pipeline
  // over a vector of frames received in the order of their times (each
  // mbuf's port = its fat-tree port, its FrameTime = its arrival); v.pkts
  // must have room for the padding past n. EngineDrain: every port sends
  // what starts before `now` (a stopped switch drops what waits).
  // EngineNextEvent: when a port next starts a frame, 0 if the control
  // thread queued frames, fabric::kNever if nothing waits.
  void EngineRun(RxVector& v);
  uint32_t EngineDrain(uint64_t now);
  uint64_t EngineNextEvent() const;
  // The engine's thread holds none of this switch's forwarding state (it
  // says so each time it wakes, so that a new table's publication ends).
  void EngineQuiescent();
  // Frames that reached a stopped switch, counted by the engine's thread.
  void EngineDropped(uint32_t n) { EngineCount(Counter::kDropSwitchDown, n); }
  void EngineCount(Counter c, uint32_t n) { workers_[0]->counters.Add(c, n); }
  bool engine_hosted() const { return engine_now_ != nullptr; }
  // A stopped switch (the emulator's failed switch, shared engine): frames
  // to it and in its queues are dropped and counted; its control socket
  // still answers.
  Status SetSwitchAdmin(bool up);
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }
  // The switch's clock: the TSC, or the engine's emulated ps.
  uint64_t Now() const;
  uint64_t clock_hz() const { return tsc_hz_; }

 private:
  explicit Switch(const DpConfig& c);
  Status SetupPorts();
  template <class QueueConfig>
  Status SetupEnginePorts(const QueueConfig& queue_config);
  Status SetupWorkers(uint32_t workers);
  Status SetupException();
  Result<std::unique_ptr<FwdState>> BuildState(const LbChoice& lb,
                                               std::vector<lb::PortMask> base) const;
  void Publish(std::unique_ptr<FwdState> next);
  void GeneratePfc(fabric::TimePs now);  // now: ps since the switch started (its TSC)
  // The per-switch engine's XOFF, from the worker that queued a vector: a
  // port whose frames took its ingress bytes past xoff pauses its peer now,
  // not at the control thread's next poll (egress/pfc.h).
  void XoffOnCrossing(Worker& wk, const RxSegment* seg, uint32_t nseg);
  // The ports' lossless thresholds (fabric/pfc.h), from their buffers and
  // links; an error names the port that cannot hold its headroom.
  Status SetupPfcThresholds();
  // Shared engine: the PFC frames EmuPfc decided, each queued on its port's
  // priority queue at its time; the ingress side's figures published.
  void FlushPfc(LcoreCounters& ctr);

  // The pipeline over one vector (dataplane/vector.cc), for a switch of
  // role kRole whose policy runs through Lane.
  template <lb::Role kRole, class Lane>
  void RunVector(Worker& wk, const FwdState& st, rte_mbuf** pkts, const RxSegment* seg,
                 uint32_t nseg, uint32_t n);
  static VectorFn VectorFnFor(lb::Role role, size_t lane);
  // The pass's two exits that are not a bucket (dataplane/vector.cc): a
  // frame it does not forward (PFC, a drop), and the egress of the buckets.
  // The parse's verdict and drop reason by value: the pass's ParsedPacket
  // never has its address taken, so it stays in registers.
  [[gnu::cold]] void NotForwarded(Worker& wk, rte_mbuf* m, uint16_t len, Verdict verdict,
                                  Counter drop, uint32_t in_port, uint64_t now);
  void EnqueueBuckets(Worker& wk, uint64_t now);
  void RefreshMacs(Worker& wk, uint64_t gen) const;

  struct PoolFree {
    void operator()(rte_mempool* p) const;
  };
  // First, so that it goes last: every frame of every part below is back in
  // it by then.
  std::unique_ptr<rte_mempool, PoolFree> pool_;
  DpConfig cfg_;
  lb::FatTree tree_;
  Router router_;
  uint32_t w_ = 0;                       // uplinks; uplink u is port w_ + u
  uint32_t frag_salt_ = 0;               // the hash salt of IPv4 fragments' uplinks
  std::vector<PortRx> rx_;               // indexed by fat-tree port (size k)
  std::vector<uint16_t> dpdk_port_;      // fat-tree port -> DPDK port (RX, as rx.h wants)
  std::vector<int32_t> port_of_dpdk_;    // dpdk port id -> fat-tree port, -1
  std::unique_ptr<IngressTally> tally_;  // PFC generation only
  std::vector<PortQueue> queues_;        // egress, indexed by fat-tree port
  std::vector<uint32_t> owner_;          // fat-tree port -> worker that owns its RX and TX
  std::vector<pkt::MacAddr> port_mac_;
  NeighborTable neighbors_;
  ExceptionPath exception_;
  std::unique_ptr<KernelPorts> kernel_;
  PfcGenerator pfc_gen_;
  // Per port (size k): the lossless thresholds when PFC is on (immutable
  // once set up: the control thread reads them).
  std::vector<fabric::PfcThresholds> pfc_th_;
  // Per port (size k, PFC on): the last storm asked of its host, in the
  // engine's ps [started, until) (kNever: none yet); the control thread
  // writes it (SetPortPfcStorm) and reads it (TakeSnapshot).
  struct StormWindow {
    std::atomic<uint64_t> started{fabric::kNever}, until{fabric::kNever};
  };
  std::unique_ptr<StormWindow[]> storms_;
  // Per port, the per-switch engine's: what it held as an ingress port, as
  // the control thread's GeneratePfc saw it (published to its queue).
  std::vector<QueueStats::Pfc> pfc_in_;
  // Shared engine with PFC: the engine thread's accounting and the frames
  // it decided; pfc_flushing_ is FlushPfc's (swapped with pending, no
  // allocation); a reset the control thread asked.
  std::unique_ptr<EmuPfc> emu_pfc_;
  std::vector<fabric::PfcAction> pfc_flushing_;
  std::atomic<bool> pfc_reset_{false};
  // The switch's buffer against its capacity (fabric/buffer_alarm.h): the
  // shared engine's thread samples it at the end of each window, in
  // emulated time; the per-switch engine's control thread as it polls.
  // Published for status; a reset (reset_queues) the sampler does.
  struct BufferPub {
    std::atomic<uint64_t> bytes{0}, max_bytes{0}, raised{0}, up_ps{0};
    std::atomic<bool> active{false}, reset{false};
  };
  fabric::BufferAlarm buffer_alarm_;
  BufferPub buffer_pub_;
  void SampleBuffer(uint64_t now_ps);
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
  uint64_t start_tsc_ = 0;
  LcoreCounters control_counters_;  // the control thread's own (exceptions it sends)
  ControlSender control_tx_;        // replies and PFC frames, to a port's priority queue
  std::vector<std::function<void()>> services_;
  std::unique_ptr<PortCapture> capture_;
  std::string agent_report_;  // "" until an agent reports
  int64_t agent_report_ms_ = 0;
  std::vector<DeviceTxCtx> tx_ctx_;  // per port: the TX hook's (stages/tx.h)
  // Hosted by the shared engine: its clock and hooks; nullptr otherwise.
  const std::atomic<uint64_t>* engine_now_ = nullptr;
  EngineAttach engine_;
  std::atomic<bool> stopped_{false};
  bool dropped_when_stopped_ = false;  // the engine has emptied the queues
};

}  // namespace ofan::dp
