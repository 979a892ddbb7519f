// Engine: every switch of an emulated fabric in one process (ofan-dp
// --fabric), links between them in memory, time emulated exactly.
//
// expects:   EAL initialised; one DpConfig per switch, whose ports are either
//            "mem:SWITCH:PORT" (an in-memory link to that port of that
//            switch, which names this one back) or a host's link: AF_XDP on
//            the host's veth (net_af_xdpN,iface=IF devargs, opened by
//            dataplane/hostio in the switch's `netns`, as uroce opens its
//            own), shared-memory rings with the host's process
//            ("shm:/PATH": dataplane/hostio/shm_io.h), or a DPDK device
//            ("ring:NAME" in tests); every port with a rate
// modifies:  the switches (each a Switch hosted by the engine: its own tables,
//            LB state, queues, counters, exception path; a control socket is
//            the caller's to serve), the host devices, the emulated clock
// next:      frames to hosts leave on their devices at their emulated times
//
// Time. The emulated clock is in ps since the engine started and never runs
// ahead of the wall clock. Every frame carries its emulated time (its
// arrival at the port it comes in on: fabric/frame_time.h); each port
// releases frames at the exact times its rate allows (fabric/emu_port.h,
// through PortQueue), so a switch's queues are what the load balancer made
// them, whatever the OS scheduler did. A frame from a host enters the host's
// wire when the host sent it (host_stamp kernel: the time the host port's
// XDP program saw it, dataplane/hostio/xsk_program.h; poll: when the engine
// took it from the socket), never before the time the fabric had run to
// (a frame seen too late for its time is counted: EngineLag), or when that
// wire is free again, and reaches the edge a serialisation and a latency
// later: the host-edge wire is emulated too.
//
// The loop is a conservative discrete-event simulation in windows: the
// window starts at the earliest pending event and is as long as the least
// time a frame takes from its start on any link to its arrival (the
// lookahead), so nothing sent in a window arrives within it and every
// switch can run its window alone; a switch takes its inputs merged in
// time order. With nothing due the thread sleeps until the next event or
// until a host sends; busy, it runs a pass per batch (a fraction of the lag
// threshold) and every event due by then in it, not a wakeup per event. When the wall clock is
// ahead of an event by more than the lag threshold (a frame time), the lag is counted: the run was
// CPU-bound (a host saw frames later than the fabric says they arrived).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/result.h"
#include "dataplane/config.h"
#include "dataplane/fabric/emu_port.h"
#include "dataplane/fabric/fifo.h"
#include "dataplane/fabric/host_stamp.h"
#include "dataplane/hostio/packet_io.h"
#include "dataplane/idle_wait.h"
#include "dataplane/stages/rx.h"
#include "dataplane/switch.h"

struct rte_mempool;

namespace ofan::dp {

// A host port's dev naming shared-memory rings: "shm:/PATH".
inline constexpr std::string_view kShmPrefix = "shm:";

struct EngineConfig {
  std::vector<DpConfig> switches;
  fabric::HostStamp host_stamp = fabric::kDefaultHostStamp;
  // Falling behind the wall clock by more than this is lag (0: the time of
  // a largest frame at the fastest link).
  double lag_us = 0;
  // While busy, a pass at most every this long (0: a quarter of the lag
  // threshold, at most 100 us).
  double batch_us = 0;
  uint32_t max_wait_us = 100000;  // the longest sleep when nothing is due
};

// A clock the engine runs against: ps since it started. Tests give their
// own; otherwise the TSC.
struct EngineClock {
  uint64_t (*now_ps)(void* ctx) = nullptr;
  void* ctx = nullptr;
};

// A clock the caller sets (tests, engine_bench): the engine runs to `ps`.
struct ManualClock {
  uint64_t ps = 0;
  EngineClock clock() {
    return EngineClock{[](void* c) { return static_cast<ManualClock*>(c)->ps; }, this};
  }
};

// The fabric file of `ofan-dp --fabric FILE`: `switches: [PATH, ...]`, the
// per-switch config files, and optional `engine: {lag_us: X, max_wait_us: N}`.
Result<EngineConfig> LoadFabricFile(const std::string& path);

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> Create(const EngineConfig& c,
                                                EngineClock clock = EngineClock{});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const std::vector<std::unique_ptr<Switch>>& switches() const { return switches_; }
  // Runs the loop on a thread of its own (pinned to EAL's first worker lcore
  // when there is one); Stop() joins it.
  Status Launch();
  void Stop();
  // One pass of the loop without sleeping (tests, with their clock): polls
  // the hosts, runs every window due by the clock's time. Returns the
  // windows run.
  uint32_t RunDue();
  uint64_t now_ps() const { return now_.load(std::memory_order_relaxed); }
  fabric::TimePs lookahead_ps() const { return lookahead_; }
  uint64_t lag_threshold_ps() const { return lag_threshold_; }
  EngineLag& lag() { return lag_; }

 private:
  struct InPort {  // frames on their way into a switch port, in time order
    fabric::Fifo<rte_mbuf*> fifo;
  };
  struct LinkCtx;  // a port's TX hook: to a peer's InPort, or to a host
  struct HostPort {
    uint32_t sw = 0, port = 0;
    // An AF_XDP socket of its own (net_af_xdp devargs: DPDK has only 32
    // ethdevs a process), or a DPDK device (ring: in tests, other vdevs).
    std::unique_ptr<hostio::PacketIo> io;
    uint16_t dev = 0;
    fabric::EmuWire wire;           // the host's wire to the edge (the edge port's)
    fabric::TimePs busy_until = 0;  // the host wire is free from then
    fabric::Fifo<rte_mbuf*> out;    // to the host, in time order, until due
    int fd = -1;                    // its AF_XDP socket, to sleep on
    uint64_t rx_nombuf = 0;         // frames dropped for want of an mbuf
    // PFC (the edge's pfc.enabled): the host NIC's MAC, emulated here,
    // honours the pause frames the edge sends it. Its wire is then a port
    // in emulated time (fabric/emu_port.h: queue 0 the other classes, 1 the
    // lossless one, which a pause stops at the next frame boundary): a
    // frame read from the host waits there until the engine reaches its
    // start, so that a pause that reaches the host first holds it. Each
    // pause frame reaches the host at a known time: `pause_changes` (when,
    // and until when it pauses), applied in time order.
    bool pfc = false;
    uint8_t pfc_priority = 0, pfc_dscp = 0;
    struct PauseChange {
      fabric::TimePs at = 0, until = 0;
    };
    fabric::Fifo<PauseChange> pause_changes;
    std::unique_ptr<fabric::EmuPort<rte_mbuf*>> nic;
    fabric::TimePs nic_offered = 0;  // the latest time offered to nic (offers never go back)
    // A PFC storm (a broken NIC's continuous pause: Switch::SetPortPfcStorm):
    // until when (storm_until_[this host's index], the control thread's),
    // and when its next XOFF leaves.
    fabric::TimePs storm_next = 0;
    // Its receive side (HostRxPause): XOFF out since, refreshed at, and the
    // pause frames it sent that way.
    bool rx_xoff = false;
    fabric::TimePs rx_refresh_at = 0;
    uint64_t rx_pause_frames = 0;
  };
  explicit Engine(EngineClock clock);
  Status Build(const EngineConfig& c);
  Status OpenHostPort(const DpConfig& sc, const PortConfig& pc, HostPort& h);
  uint64_t WallPs() const;
  void Loop();
  // `floor`: the earliest time a host's frame may enter its wire (the
  // fabric has run to it); `seen`: the time of a frame without the
  // kernel's stamp.
  uint32_t PollHosts(fabric::TimePs floor, fabric::TimePs seen);
  uint32_t PollHost(HostPort& h, fabric::TimePs floor, fabric::TimePs seen);
  // A frame's kernel receive time (CLOCK_MONOTONIC ns) on the engine's
  // clock, `floor` if earlier (counted in `count`, for EngineLag).
  struct HostStampCount {
    uint32_t stamped = 0, late = 0;
    uint64_t late_max_ps = 0;
  };
  fabric::TimePs HostFrameStart(uint64_t rx_ns, fabric::TimePs floor, HostStampCount& count) const;
  void PublishStamps(const HostStampCount& c);  // once per burst: atomics
  void AnchorMonotonic();
  uint64_t ReleaseToHosts(uint64_t wall);  // returns the latest release's lateness
  // PFC: a host whose device falls behind (frames due at it that it has not
  // taken, past fabric::kHostRxBufferBytes) pauses its edge, as a NIC whose
  // receive buffer fills does, and resumes it at half.
  void HostRxPause(HostPort& h, fabric::TimePs t);
  // A PFC frame from the host's NIC at t (or its last offer) asking
  // `quanta` (0: XON); false if no mbuf was to be had.
  bool SendHostPause(HostPort& h, fabric::TimePs t, uint16_t quanta);
  // PFC at the hosts' wires (HostPort::nic): the pauses that reached the
  // host by t applied; every frame that starts before `end` sent to the
  // edge; when the next one starts (kNever: none waits).
  void ApplyHostPauses(HostPort& h, fabric::TimePs t);
  // A storming host's XOFFs due before `end`, onto its NIC (strict priority).
  void StormFrames(uint32_t host, fabric::TimePs end);
  void AdvanceHostNics(uint64_t end);
  uint64_t NextHostStart() const;
  uint64_t NextEvent() const;  // a switch's or a frame to a host
  bool HostsMaySleep();
  uint64_t NextSwitchEvent() const;  // a switch's only
  void RunSwitch(uint32_t s, fabric::TimePs end);
  static void CaptureSent(const LinkCtx& l, rte_mbuf** pkts, uint16_t n);
  static uint16_t ToPeer(void* ctx, rte_mbuf** pkts, uint16_t n);
  static uint16_t ToHost(void* ctx, rte_mbuf** pkts, uint16_t n);

  EngineClock clock_;
  uint64_t tsc0_ = 0, tsc_hz_ = 1;
  std::pair<uint64_t, uint64_t> tsc_pair_;  // the TSC clock's context
  std::atomic<uint64_t> now_{0};            // emulated time done: every event before it ran
  std::atomic<bool> running_{false}, stop_{false};
  fabric::TimePs lookahead_ = 0;
  uint64_t lag_threshold_ = 0;
  uint32_t max_wait_us_ = 100000;
  uint64_t batch_ps_ = 0;
  // Kernel stamps: on for AF_XDP host ports under HostStamp::kKernel with
  // the TSC clock (a test's clock is not the kernel's). The engine's clock
  // less CLOCK_MONOTONIC's, in ps, as of the pass's last reading of both.
  bool kernel_stamps_ = false;
  int64_t mono_to_wall_ps_ = 0;
  uint64_t last_pass_wall_ = 0;
  EngineLag lag_;
  IdleWait wait_;
  struct PoolFree {
    void operator()(rte_mempool* p) const;
  };
  std::unique_ptr<rte_mempool, PoolFree> pool_;  // host frames
  std::vector<std::unique_ptr<Switch>> switches_;
  std::vector<std::vector<InPort>> in_;        // [switch][port]
  std::vector<std::vector<int32_t>> host_of_;  // [switch][port] -> hosts_ index, -1
  std::vector<std::unique_ptr<LinkCtx>> links_;
  std::vector<HostPort> hosts_;
  std::unique_ptr<std::atomic<uint64_t>[]> storm_until_;  // per hosts_ index
  std::vector<uint64_t> next_;  // per switch: when it next has something to do
  bool has_host_nics_ = false;  // some host's wire is a PFC NIC (HostPort::nic)
  // The wait's count of control-thread notes when the switches' inboxes
  // were last looked at (none pending then).
  uint64_t notes_seen_ = UINT64_MAX;
  // The hosts whose sockets woke the last wait: the next pass polls only
  // them (a cold pass over every socket cost ~12 us). Empty: poll all.
  std::vector<int32_t> host_by_fd_;  // fd -> hosts_ index, -1
  std::vector<uint32_t> woken_;
  bool woken_known_ = false;
  std::unique_ptr<RxVector> vec_;
  std::thread thread_;
};

}  // namespace ofan::dp
