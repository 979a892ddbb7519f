// ofan-sim's engine: a discrete-event, packet-level simulator of a fat tree
// whose switches run the policies of dataplane/lb.
//
// Model (paper §2.2, §6): output-queued switches with one FIFO per port,
// store-and-forward, link rate and per-link propagation delay, infinite
// buffers unless --buffer is set, CE marking above --ecn. Hosts pace data at
// rho of line rate, round-robin over their flows; a receiver returns one ACK
// per data packet, and a host's NIC alternates between pending ACKs and data
// (App. A). ACKs are load-balanced in their own size class. With --cca none
// there is no congestion control (§2.2): a host sends what was lost again
// after its timeout (--rto-us), the holes one by one (an ooo receiver, as
// uroce --ooo) or go-back-N (--receiver gbn, as rxe); with a CCA
// (sim/transport/) each flow also has a window, and a packet is resent when
// 3 + the flow's number of paths packets sent after it were acknowledged
// (htsim's default) or at its retransmission timeout.
//
// A port's FIFO is kept as its departure schedule: a frame's start time is
// max(now, busy_until) when it is enqueued, so only arrivals are events and a
// queue's size at any instant is the bytes not yet fully serialised.
//
// With --pfc a frame's start is no longer known at enqueue (a pause may
// come first): every port is then the shared engine's EmuPort
// (dataplane/fabric/emu_port.h), a strict-priority queue (ACKs, PFC frames)
// before the data queue, each transmission start an event; switches hold
// data per ingress port and pause their peers as the engine's do
// (dataplane/fabric/pfc.h), and a paused host sends only ACKs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "dataplane/lb/fat_tree.h"
#include "sim/config.h"
#include "sim/workload.h"

namespace ofan::sim {

// The stages and their names are the fat tree's (dataplane/lb/fat_tree.h).
using lb::kNumStages;
using lb::Stage;

struct StageStats {
  const char* name = "";
  uint32_t queues = 0;
  double max_pkts = 0;  // largest backlog seen on any queue of the stage
  double avg_pkts = 0;  // mean over the stage's queues of their time-average backlog
  // --pfc: the PFC frames the stage's ports received (each pausing or
  // resuming the port's data) and the time they were paused, summed over
  // the stage's ports, as ofan-emu's run rows count them per stage.
  uint64_t pause_frames = 0;
  double paused_us = 0;
};

// --pfc's account of the run (sim.h's model, dataplane/fabric/pfc.h).
struct PfcStats {
  bool on = false;
  uint64_t pause_frames = 0;        // PFC frames the switches sent (XOFF, refreshes, XON)
  uint64_t xoff_events = 0;         // ingress ports crossing xoff
  double paused_us = 0;             // switch ports' paused time, summed
  uint64_t lossless_drops = 0;      // data a full headroom refused: must stay 0
  uint64_t headroom_max_bytes = 0;  // the most any ingress port held above xoff
  uint64_t host_pause_frames = 0;   // received by the hosts' NICs
  double host_paused_us = 0;        // the hosts' data paused, summed
  uint64_t xoff_bytes = 0, xon_bytes = 0, headroom_bytes = 0;  // every port's thresholds
  uint64_t watchdog_fired = 0, watchdog_restored = 0, watchdog_dropped = 0;
  uint64_t frames_lost = 0;  // PFC frames a full port could not queue
};

// --reorder's account of the run: the edges' host-facing ports
// (dataplane/fabric/reorder.h's counters, summed; maxima over the ports),
// under the names ofan-emu's status and run rows give them.
struct ReorderStats {
  bool on = false;
  uint64_t held = 0, in_order = 0, timeouts = 0, overflow = 0, table_full = 0, old = 0;
  uint64_t max_bytes = 0, max_frames = 0;  // the most any port held
  double max_hold_us = 0;                  // the longest any frame waited
  double mean_max_bytes = 0;               // per port its most held, averaged over the ports
  uint32_t ports = 0;
};

struct SimResult {
  double cct_us = 0;
  double cct_lower_bound_us = 0;
  std::string lower_bound_kind;
  double cct_inflation = 0;  // cct / bound - 1
  double queue_max_pkts = 0;
  double queue_avg_pkts = 0;
  StageStats stages[kNumStages];
  double utilization = 0;  // data frames' share of the senders' link time over the CCT
  double rho = 1.0;        // pacing actually used (rho_max under failures)
  uint64_t events = 0;
  double wall_s = 0;
  uint64_t data_packets = 0;   // sent by hosts
  uint64_t ack_packets = 0;    // sent by hosts
  uint64_t data_received = 0;  // delivered to their destination host
  uint64_t acks_received = 0;
  uint64_t misdelivered = 0;  // reached a host that is not theirs (a routing bug)
  uint64_t ecn_marks = 0;
  uint64_t drops_no_route = 0;
  uint64_t drops_link_down = 0;
  uint64_t drops_buffer = 0;
  PfcStats pfc;
  uint64_t flows = 0;
  uint64_t flows_incomplete = 0;
  uint64_t failed_links = 0;
  uint64_t peak_packets_in_flight = 0;
  // Transport (--cca): data packets sent again, retransmission timeouts,
  // data packets that reached their destination a second time.
  uint64_t retransmits = 0;
  uint64_t timeouts = 0;
  uint64_t duplicates = 0;
  // --receiver gbn: data packets the receivers dropped as out of sequence,
  // and the NAKs they sent (one per gap).
  bool gbn = false;
  uint64_t out_of_seq = 0;
  uint64_t naks = 0;
  ReorderStats reorder;
  // SimConfig::trace_flow's window (packets) at each of its ACKs: (us, cwnd).
  std::vector<std::pair<double, double>> cwnd_trace;
  // Congestion information heard from the fabric: CONGA's feedback entries
  // filed (conga.h), SGLB's dissemination rounds (glb.h); 0 for the others.
  uint64_t remote_updates = 0;
  uint32_t hosts = 0;
  WorkloadInfo workload;  // where the traffic came from (moe, fsdp)
};

// Runs one scenario. Errors: invalid configuration, unreadable matrix,
// infeasible failure set.
Result<SimResult> RunSim(const SimConfig& c);

}  // namespace ofan::sim
