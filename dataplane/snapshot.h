// Snapshot: what the control side reads of a switch, as plain values taken
// at one moment (racy reads of counters the workers write; each value is one
// relaxed load). The control socket's JSON views are built from it outside
// the switch (dataplane/control_views.h), so the switch knows no JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/counters.h"
#include "dataplane/egress/port_queue.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb_choice.h"
#include "dataplane/packet/headers.h"
#include "dataplane/xdp/trap_stats.h"

namespace ofan::dp {

struct WorkerSnapshot {
  uint32_t worker = 0;
  unsigned lcore = 0;
  std::vector<uint32_t> ports;
  uint64_t busy_loops = 0, idle_loops = 0, sleeps = 0;
  uint32_t sleep_us = 0;
  bool blocking = false;         // waits on its ports' sockets, not a timer
  uint64_t traffic_wakeups = 0;  // waits a frame ended
  uint64_t shaper_waits = 0;     // waits for the token bucket
  Counters counters;
};

struct PortSnapshot {
  uint32_t port = 0;
  std::string dev;
  uint16_t dpdk_port = 0;
  bool up_direction = false;  // an uplink
  pkt::MacAddr mac;
  std::optional<pkt::MacAddr> neighbor;
  bool admin_up = true, link_up = false;
  bool wire_cut = false;  // set_port wire cut (an emulated silent failure)
  uint64_t rx_packets = 0, rx_bytes = 0;
  // Frames the device dropped before the switch polled them (DPDK imissed:
  // for AF_XDP the socket's rx_dropped + rx_ring_full): the switch did not
  // keep up.
  uint64_t rx_missed = 0;
  QueueStats queue;  // tx_* and the queue's own
  uint64_t limit_bytes = 0, ecn_bytes = 0;
  // PFC on: the port's lossless thresholds as an ingress port.
  std::optional<fabric::PfcThresholds> pfc_thresholds;
  std::string pfc_wd_action;  // the watchdog's action ("drop", "forward", "alert")
  // The last PFC storm asked of the port's host (fault --pfc-storm), in the
  // engine's ps: [started, until).
  struct Storm {
    uint64_t started_ps = 0, until_ps = 0;
  };
  std::optional<Storm> pfc_storm;
  // The port's kernel interface, if it has one: its name and the frames
  // each way. via "tap": the shared engine's TAP (exception/kernel_ports.h);
  // via "xdp": the per-switch engine's veth, split by its XDP trap
  // (xdp/trap_stats.h: what it passed to the kernel by class, what it sent
  // to ofan-dp; what the kernel sends goes out on the veth directly, unseen
  // by the switch), or why it could not be read.
  struct Kernel {
    std::string name;
    std::string via = "tap";
    uint64_t to_kernel = 0, to_kernel_lost = 0, from_kernel = 0, from_kernel_lost = 0;
    std::optional<TrapStats> trap;
    std::string error;
  };
  std::optional<Kernel> kernel;
};

struct KeySnapshot {
  uint32_t key = 0, dest = 0;
  bool ack = false;
  std::vector<int> order;           // the key's valid uplinks, in port order
  std::optional<uint64_t> counter;  // shared Ofan's counter
};

// Which of the costlier parts to take.
struct SnapshotParts {
  bool ports = true;
  bool keys = false;
};

// The engine that runs the switch (status's "engine").
struct EngineSnapshot {
  bool shared = false;
  double now_s = 0;  // emulated time
  uint64_t windows = 0, lag_events = 0, late_tx = 0;
  double lag_max_us = 0, lag_threshold_us = 0;
  double lag_share = 0;  // of the time since the last reset, spent behind
  double pass_max_us = 0, wake_late_max_us = 0;
  // Host frames (fabric/host_stamp.h): how they were stamped, how many, how
  // many with the kernel's time, how many of those started after it.
  std::string host_stamp;
  uint64_t host_frames = 0, host_stamped = 0, stamp_late = 0;
  double stamp_late_max_us = 0;
  bool stopped = false;  // this switch (switch_admin down)
};

// The switch's buffer (fabric/buffer_alarm.h): every port's backlog against
// the sum of their buffers, and the 80 % alarm.
struct BufferSnapshot {
  uint64_t capacity_bytes = 0, bytes = 0, max_bytes = 0;
  uint32_t alarm_pct = 0;
  uint64_t alarms = 0;  // times raised
  bool alarm_active = false;
  double alarm_us = 0;  // time up, in all
};

struct Snapshot {
  std::string name;
  int k = 0, levels = 0;
  uint32_t switch_id = 0;
  lb::SwitchInfo info;
  LbChoice lb;
  uint32_t pipe_size = 0;
  uint64_t generation = 0;
  uint32_t uplinks = 0;
  bool running = false;
  double uptime_s = 0;
  EngineSnapshot engine;
  BufferSnapshot buffer;
  std::vector<WorkerSnapshot> workers;
  Counters total;  // workers and the control thread
  std::vector<PortSnapshot> ports;
  std::vector<KeySnapshot> keys;
};

}  // namespace ofan::dp
