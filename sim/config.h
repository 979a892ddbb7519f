// SimConfig: one simulated scenario. Defaults are the paper's §6 setup:
// k=12 three-level fat tree (432 hosts), 800 Gb/s links, 0.5 us per link,
// 4096 B payload + 62 B header, 64 B ACKs, 20 B inter-frame gap, 1 MiB
// messages, hosts at 100% of line rate with no congestion control (§2.2).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "dataplane/fabric/pfc.h"
#include "dataplane/fabric/reorder.h"
#include "dataplane/lb/policy.h"
#include "dataplane/packet/frame_budget.h"
#include "sim/placement.h"
#include "sim/transport/cca.h"

namespace ofan::sim {

// How a host sets the entropy / path of its packets (paper §3.1, §3.4).
enum class HostScheme : uint8_t {
  kFixed,  // one entropy per flow (ECMP-style flows): the switch policy decides
  kSpray,  // a fresh random entropy per packet (host RPS [26]) over switch ECMP
  kDrb,    // per-destination rotation at the host over the lowest common layer (DRB [16])
  kReps,   // recycled entropies (REPS [8]): reuse entropies whose ACK carried no ECN
  // Ethereal [1] (§3.4): a flow split into one equal subflow (QP) per path,
  // served round-robin by the NIC; ACKs take their data packet's path back.
  kEthereal,
};
std::string_view HostSchemeName(HostScheme s);
Result<HostScheme> ParseHostScheme(std::string_view s);

// perm: random derangement; a2a: all-to-all, --msg per flow (Fig. 5b);
// a2a-host: all-to-all, --msg per host split over its n-1 flows (Fig. 5c);
// pair: App. A; matrix: flows from a file; moe: §6.6's dispatch
// (workload/moe.h); fsdp: §6.7's FSDP2 backward pass (workload/fsdp.h);
// incast: --incast-senders hosts send --msg each to host 0
// (workload::IncastSenders, as ofan-coll's incast picks them).
// What a receiving NIC does with a data packet that comes before the one it
// expects. ooo: places it (out-of-order placement: uroce --ooo, ConnectX-5
// and later; the paper's hosts). gbn: Linux soft-RoCE's responder (rxe,
// docs/verbs.md): drops it, NAKs the first one of a gap (PSN sequence
// error, carrying the PSN it expects) and re-ACKs duplicates; the sender
// goes back to the NAK's PSN, or to its first unacknowledged one at its
// retransmission timeout.
enum class Receiver : uint8_t { kOoo, kGbn };
std::string_view ReceiverName(Receiver r);
Result<Receiver> ParseReceiver(std::string_view s);

enum class WorkloadKind : uint8_t { kPerm, kA2a, kPair, kMatrix, kA2aHost, kMoe, kFsdp, kIncast };
std::string_view WorkloadName(WorkloadKind w);
Result<WorkloadKind> ParseWorkload(std::string_view s);

struct SimConfig {
  int k = 12;
  int levels = 3;
  lb::PolicyConfig policy;  // policy.kind, pipe size, AR quanta, ...
  // Incremental deployment (sim/placement.h): which switches run `policy`
  // and which another; placement kAll: every switch runs `policy`.
  LbMix mix;
  HostScheme host = HostScheme::kFixed;
  WorkloadKind workload = WorkloadKind::kPerm;
  std::string matrix_file;  // "src dst bytes" lines, for kMatrix
  uint64_t msg_bytes = 1ULL << 20;
  // --workload moe: the token matrix (a file, else generated from the seed),
  // EPLB's replicated placement or one expert per GPU, and a factor on every
  // flow's bytes (1: the paper's 492 MB mean; smaller for quick runs).
  std::string moe_matrix_file;
  bool moe_eplb = false;
  double moe_scale = 1.0;
  // --workload fsdp: Llama-3 model (8b, 70b, 405b), layers of the backward
  // pass, phases (1: ReduceScatter only; 2: + AllGather).
  std::string fsdp_model = "8b";
  uint32_t fsdp_layers = 1;
  uint32_t fsdp_phases = 2;
  uint32_t server_gpus = 8;     // GPUs per server (moe, fsdp)
  uint32_t incast_senders = 0;  // incast: hosts that send to host 0 (0: every other one)
  bool incast_victim = false;   // incast: and the victim flow (workload::VictimSrc)

  double link_gbps = 800.0;
  double latency_us = 0.5;  // per link
  uint32_t payload = 4096;
  uint32_t header = 62;
  uint32_t ack_bytes = 64;
  uint32_t gap_bytes = pkt::kWireGapBytes;  // preamble + SFD, IFG (header counts the FCS)
  double load = 1.0;                        // rho: hosts pace data at this fraction of line rate
  // The host pacer's bucket, in data frames: a host that fell behind (its
  // NIC busy with ACKs, or paused) sends up to this many at line rate to
  // catch up; it starts with one frame's credit, at the pace. 1: strictly
  // periodic (the paper's model); uroce's hosts in ofan-emu run with 8, and
  // --with-sim passes it.
  uint32_t host_burst = 1;

  uint64_t buffer_bytes = 0;    // per output port; 0 = infinite (§6 default)
  uint64_t ecn_bytes = 80'000;  // CE-mark above this backlog
  // The hosts' congestion control and loss recovery (sim/transport/cca.h);
  // none: today's fixed-rate senders (§2.2). ofan-sim's --cca also sets
  // 800 KB buffers unless --buffer is given.
  Cca cca = Cca::kNone;
  // PFC on every link (dataplane/fabric/pfc.h, as ofan-emu up --pfc has
  // it): data in the lossless class, held per ingress port against
  // thresholds that are shares of buffer_bytes (headroom from the link's
  // rate and latency), XOFF/XON as frames of kPfcFrameBytes on each port's
  // strict-priority queue, which the ACKs share; the PFC watchdog. Needs a
  // buffer.
  bool pfc = false;
  uint16_t pfc_quanta = fabric::kPfcMaxQuanta;                // what XOFF asks
  uint32_t pfc_response_quanta = fabric::kPfcResponseQuanta;  // the peer's, in the headroom
  uint32_t pfcwd_detect_ms = fabric::kPfcWdDetectMs;
  uint32_t pfcwd_restore_ms = fabric::kPfcWdRestoreMs;
  fabric::PfcWdAction pfcwd_action = fabric::PfcWdAction::kDrop;
  // Resequencing at the destination edge (dataplane/fabric/reorder.h, as
  // ofan-emu up --reorder has it): each edge's host-facing ports hold a
  // flow's early data frames until the gap before them fills or they waited
  // reorder_timeout_us (0: the buffer's drain time at the link's rate,
  // ReorderTimeoutUs), in a buffer of reorder_bytes per port.
  bool reorder = false;
  uint64_t reorder_bytes = fabric::kReorderDefaultBytes;
  uint32_t reorder_timeout_us = 0;
  Receiver receiver = Receiver::kOoo;
  // --cca none: the hosts' retransmission timeout, as uroce's --rto-us
  // (ofan-emu passes its hosts'); 0: ten base RTTs and a full buffer's
  // drain at each hop (Simulator::FirstRto). A go-back-N sender doubles it
  // at each timeout in a row; an ooo sender (uroce --ooo) keeps it.
  uint32_t rto_us = 0;
  double init_window_bdps = 1.0;  // a CCA's first window, in BDPs of the flow's path
  // Record this flow's window at each of its ACKs (SimResult::cwnd_trace);
  // -1: none.
  int64_t trace_flow = -1;
  double fail_prob = 0.0;  // each edge-agg / agg-core link fails with this probability
  uint64_t seed = 1;
  bool progress = false;  // progress bar on stderr

  uint32_t frame_bytes() const { return payload + header; }
  // The reorder stage's wait (us): reorder_timeout_us, or by default its
  // buffer's drain time.
  uint32_t ReorderTimeoutUs() const {
    return reorder_timeout_us ? reorder_timeout_us
                              : fabric::ReorderDrainTimeoutUs(reorder_bytes, link_gbps);
  }
  // With pfc: every port's thresholds (the links are alike), or the error
  // that says why they do not fit its buffer.
  Result<fabric::PfcThresholds> PfcPortThresholds() const;
  Status Validate() const;
};

// What --lb NAME sets: a switch policy of dataplane/lb (its name or another
// name, e.g. rsq for rps); "<N>ofan" (4ofan, the paper's NxOfan): POfan with
// pipe size N; or a host scheme with the switch side it needs: drb (host
// rotation + source routing), ethereal (subflows, each source-routed on its
// path), reps and spray (over ECMP).
Status ApplyLbName(std::string_view name, SimConfig& c);

}  // namespace ofan::sim
