#include "sim/sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "common/huge_alloc.h"
#include "common/rng.h"
#include "dataplane/fabric/egress_timeline.h"
#include "dataplane/fabric/emu_port.h"
#include "dataplane/fabric/pfc.h"
#include "dataplane/fabric/reorder.h"
#include "dataplane/lb/any_policy.h"
#include "dataplane/lb/congestion.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/uplink_table.h"
#include "sim/event_queue.h"
#include "sim/failures.h"
#include "sim/lower_bound.h"
#include "sim/placement.h"
#include "sim/transport/cca.h"
#include "sim/workload.h"

namespace ofan::sim {
namespace {

using lb::HostId;
using lb::SizeClass;
using lb::SwitchId;

constexpr TimePs kNever = std::numeric_limits<TimePs>::max();

// The arrays an event reads at random: on huge pages (common/huge_alloc.h).
template <class T>
using HugeVector = std::vector<T, HugeAllocator<T>>;

// One output port in five whole cache lines (aligned), its first 16 frames
// inside (fifo.h SmallFifo): a hop touches this and nothing else of the
// port's, and the prefetch (PrefetchLines) brings all of it.
struct alignas(64) OutPort {
  uint32_t peer_node = 0;
  uint16_t peer_port = 0;
  Stage stage = Stage::kEdgeUp;
  bool failed = false;
  // The queue in emulated time: the model the shared fabric engine uses too.
  fabric::EgressTimeline q;
};
static_assert(sizeof(OutPort) == 320);

// A flow's sender side under a CCA (unused with --cca none).
struct TxState {
  CcState cc;
  CcParams p;
  uint64_t base = 0;       // this flow's first entry in Simulator::seq_
  uint32_t dupthresh = 0;  // 3 + the flow's number of paths
  int64_t inflight = 0;    // transmissions presumed in the network
  uint32_t cum = 0;        // lowest unacknowledged sequence number
  uint32_t scan = 0;       // loss detection has looked at every seq below
  uint32_t acked_below_scan = 0;
  // Sequence numbers to send again: a FIFO ring of the flow's size in
  // Simulator::rtx_ring_ (a seq is queued at most once at a time, kQueued).
  uint32_t cap = 0, rtx_head = 0, rtx_len = 0;
  bool in_active = true;  // listed in its host's active flows
  bool timer_armed = false;
  uint16_t epoch = 0;  // timeouts so far (mod 2^16: packet.h)
  TimePs rto = 0, rto_deadline = 0;
  double srtt = 0, rttvar = 0;
};

// Simulator::seq_: one byte per (flow, sequence number).
constexpr uint8_t kAcked = 1;   // the sender heard its ACK
constexpr uint8_t kLost = 2;    // declared lost (dup threshold or timeout)
constexpr uint8_t kQueued = 4;  // waiting in the flow's retransmission FIFO
constexpr uint8_t kRecv = 8;    // the receiver has it

struct FlowState {
  uint32_t src, dst;
  uint32_t total, sent = 0, received = 0, acked = 0;
  uint32_t entropy, ack_entropy, qp;
  uint32_t drb_ptr[2] = {0, 0};  // DRB: data pointer at src, ACK pointer at dst
  // REPS: entropies whose ACK came back unmarked, oldest first.
  std::vector<uint32_t> reps;
  uint32_t reps_head = 0;
  // --receiver gbn: the receiver's expected PSN and whether it NAKed the
  // gap before it; the sender's highest sequence number sent + 1 (below
  // it, a packet is sent again). acked is then the cumulative ACK.
  uint32_t epsn = 0, hi = 0;
  bool nak_sent = false;
};

// --receiver gbn: a flow's retransmission timer (its sender goes back to
// the first unacknowledged packet when nothing was acknowledged for rto).
struct GbnTimer {
  TimePs base = 0, rto = 0, deadline = 0;
  bool armed = false;
};

// --receiver ooo, --cca none (uroce --ooo's recovery): what a flow lost and
// has to send again. Made for every flow at the first loss of the run, so a
// run without loss keeps its schedule bit for bit. The receiver places
// early packets and acknowledges each; the sender, rto after a loss with
// no progress, sends the oldest hole again and, as each hole's ACK comes
// back, the next one below where it had sent at the timeout (NewReno's
// partial ACKs, emu/uroce/completer.cc); an ACK lost is made good by the
// flow's next ACK (uroce's are cumulative), or at a timeout by a probe.
struct OooLoss {
  std::vector<uint32_t> lost;  // data sequence numbers dropped, not yet sent again (ascending)
  std::vector<uint32_t> send;  // to send now, oldest first (kProbeSeq: a probe)
  uint32_t owed = 0;           // ACKs lost whose packets the receiver has
  uint32_t recover = 0;        // the first sequence number not sent at the timeout
  uint32_t retries = 0;        // timeouts in a row without progress
  bool recovering = false;
  bool armed = false;
  TimePs deadline = 0;
};
constexpr uint32_t kProbeSeq = std::numeric_limits<uint32_t>::max();
// Timeouts in a row before a sender gives its flow up (uroce's and IBA's
// retry_count, 7): a destination no route reaches ends incomplete.
constexpr uint32_t kOooRetries = 7;

struct HostState {
  std::vector<uint32_t> active;  // flows with data left to send
  uint32_t rr = 0;
  TimePs next_data = 0;  // when the pacer's bucket next holds a frame
  double tokens = 0;     // frames in the bucket as of tok_time (at most host_burst)
  TimePs tok_time = 0;
  std::vector<Packet> acks;  // ACK packets waiting for the NIC (FIFO)
  uint32_t acks_head = 0;
  bool last_was_ack = false;
  TimePs nic_free = 0;
  TimePs wake_at = kNever;
  uint32_t wake_gen = 0;
};

// --pfc: a frame waiting in a port's EmuPort (its handle is the frame's
// slot), with the ingress port whose lossless share holds it (kNoPort: ACKs
// and PFC frames, which no share holds).
constexpr uint32_t kNoPort = std::numeric_limits<uint32_t>::max();
struct SimFrame {
  Packet pk;
  uint32_t in_port;
};

// --pfc: one output port's queues and what PFC keeps of it. A port's data
// queue pauses for what its peer asks, unless its watchdog fired (drop,
// forward: it ignores pause until restored): fabric::PfcPauseState, as the
// engine's ports.
struct PfcPort {
  fabric::EmuPort<uint32_t> q;
  fabric::PfcPauseState pause;
  TimePs tx_at = kNever;     // the pending kPortTx's time
  TimePs check_at = kNever;  // the pending kPortCheck's time
  uint64_t pause_rx = 0;     // PFC frames received
};

struct SwitchState {
  SwitchId id;
  lb::Role role;
  int pod;
  int index;
  uint32_t num_dests;
  uint32_t pipe_size;                      // its policy's ports per pipe (POfan), at least 1
  const lb::UplinkTable* table = nullptr;  // Simulator::tables_ (shared)
  // LbView::remote: per (dest, uplink), the level of the path beyond, for
  // policies that hear from the fabric (CONGA's feedback, SGLB's sync).
  std::vector<uint8_t> remote;
};

// A switch of a mixed run (sim/placement.h): its own policy, chosen once at
// construction. Pick dispatches on the variant's index (std::visit: a jump
// table, no virtual call, no allocation). The mix holds no policy that hears
// from the fabric (ValidateMix), so kFeed is kNone as RemoteFeedOf says.
class MixedPolicy {
 public:
  MixedPolicy(const lb::PolicyConfig& c, const lb::SwitchLbSetup& s)
      : p_(c, s), queue_aware_(lb::IsQueueAware(c.kind)) {}
  uint8_t Pick(const lb::PacketKey& key, lb::LbView& view) {
    return std::visit([&](auto& p) { return p.Pick(key, view); }, p_.variant());
  }
  bool queue_aware() const { return queue_aware_; }

 private:
  lb::AnyPolicy p_;
  bool queue_aware_;
};

template <class Policy>
class Simulator {
  static constexpr lb::RemoteFeed kFeed = lb::RemoteFeedOf<Policy>();
  static constexpr bool kMixed = std::is_same_v<Policy, MixedPolicy>;

 public:
  // mix: each switch's policy (SwitchPolicies) for a MixedPolicy run, else
  // empty and every switch runs c.policy.
  Simulator(const SimConfig& c, const lb::FatTree& tree, std::vector<Flow> flows,
            const lb::LinkSet& failed, double rho, const std::vector<lb::PolicyConfig>& mix = {})
      : c_(c),
        t_(tree),
        failed_(failed),
        rho_(rho),
        rng_(SplitMix64(c.seed) ^ 0x51Aull),
        meter_(c.policy) {
    const double ps_per_byte = 8000.0 / c.link_gbps;
    ser_data_ = static_cast<TimePs>(std::llround(c.frame_bytes() * ps_per_byte));
    ser_ack_ = static_cast<TimePs>(std::llround(c.ack_bytes * ps_per_byte));
    gap_ = static_cast<TimePs>(std::llround(c.gap_bytes * ps_per_byte));
    // Of the 20 B gap, the 8 B preamble + SFD precede the frame on the wire
    // (even on an idle link) and the 12 B inter-frame gap follows it.
    pre_ = static_cast<TimePs>(std::llround(std::min(8u, c.gap_bytes) * ps_per_byte));
    prop_ = static_cast<TimePs>(std::llround(c.latency_us * 1e6));
    data_interval_ =
        static_cast<TimePs>(std::llround(static_cast<double>(ser_data_ + gap_) / rho_));
    n_ = static_cast<uint32_t>(t_.num_hosts());
    k_ = static_cast<uint32_t>(t_.k());
    w_ = static_cast<uint32_t>(t_.w());
    BuildSwitches(mix);
    BuildPorts();
    BuildFlows(flows);
    if (c_.cca != Cca::kNone) BuildTransport();
    if (c_.pfc) BuildPfc();
    if (c_.reorder) BuildReorder();
    if (gbn()) BuildGbn();
  }

  SimResult Run() {
    const auto wall0 = std::chrono::steady_clock::now();
    for (uint32_t h = 0; h < n_; ++h) {
      // One frame's credit: the first frame leaves at once and the rest at
      // the pace, as uroce's hosts start (emu/uroce/host.h StartPacing: the
      // NIC-bound assumes a host at its pace from its first byte). A full
      // bucket here sent every host's first host_burst frames at line rate
      // together: deeper first-hop queues than the emulator's (RPS's mean
      // max queue 14.05 against 9.36 packets in tests/emu/fabric/
      // fidelity_test.py's scenario) and a CCT under the bound.
      hosts_[h].tokens = 1;
      if (!hosts_[h].active.empty()) ScheduleWake(h, 0);
    }
    uint64_t next_progress = 1u << 20;
    while (!events_.empty()) {
      if (const Event* far = events_.Ahead(kPrefetchFar)) PrefetchFar(*far);
      if (const Event* near = events_.Ahead(kPrefetchNear)) PrefetchNear(*near);
      Event e = events_.Pop();
      now_ = e.t;
      ++processed_;
      if (e.type == EventType::kArrive) {
        if (e.pk.pfc) [[unlikely]] {
          OnPause(e.node, e.port, static_cast<uint16_t>(e.pk.seq));
        } else if (e.node < n_) {
          HostReceive(e.node, e.pk);
        } else {
          SwitchReceive(e.node - n_, e.port, e.pk);
        }
      } else if (e.type == EventType::kRto) {
        if (gbn()) {
          OnGbnRto(e.node);
        } else if (transport()) {
          OnRto(e.node);
        } else {
          OnOooRto(e.node);
        }
      } else if (e.type == EventType::kPortTx) {
        OnPortTx(e.node);
      } else if (e.type == EventType::kPortCheck) {
        OnPortCheck(e.node);
      } else if (e.type == EventType::kPfcRefresh) {
        OnRefresh(e.node);
      } else if (e.type == EventType::kReorderExpire) {
        OnReorderExpire(e.node);
      } else if (e.gen() == hosts_[e.node].wake_gen && hosts_[e.node].wake_at == e.t) {
        hosts_[e.node].wake_at = kNever;
        HostTry(e.node);
      }
      if (c_.progress && processed_ >= next_progress) {
        next_progress += 1u << 20;
        Progress(false);
      }
    }
    if (c_.progress) Progress(true);
    SimResult r = Collect();
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return r;
  }

 private:
  // ---- construction -------------------------------------------------------
  // mix: as the constructor's (only construction reads it).
  void BuildSwitches(const std::vector<lb::PolicyConfig>& mix) {
    const uint32_t ns = static_cast<uint32_t>(t_.num_switches());
    no_failures_ = failed_.count() == 0;
    switches_.resize(ns);
    policies_.reserve(ns);
    for (uint32_t s = 0; s < ns; ++s) {
      SwitchState& st = switches_[s];
      st.id = SwitchId(s);
      const lb::SwitchInfo in = t_.info(st.id);
      st.role = in.role;
      st.pod = in.pod;
      st.index = in.index;
      st.num_dests = static_cast<uint32_t>(t_.num_dests(st.id));
      if (t_.num_uplinks(st.id) > 0) st.table = SharedTable(st.id, in);
      if (kFeed != lb::RemoteFeed::kNone && st.table) {
        st.remote.assign(static_cast<size_t>(st.num_dests) * w_, 0);
      }
      lb::SwitchLbSetup setup{st.table, k_,
                              static_cast<uint32_t>(SplitMix64(c_.seed * 1315423911ull + s))};
      const lb::PolicyConfig& pc = mix.empty() ? c_.policy : mix[s];
      st.pipe_size = std::max(1u, pc.pipe_size);
      policies_.emplace_back(pc, setup);
    }
  }

  // Switches whose uplink tables agree share one: at k=64 the 2,048 edge
  // tables (one row per destination edge) took 277 MB and each lookup was a
  // DRAM miss. A switch's own row (its own edge, or its own pod at an agg:
  // empty in FatTree::valid_uplinks) is never looked up, the destination
  // being below; it is set to all uplinks so that the rows that are decide.
  // Without failures every switch of a role has the same table, so only
  // the first one's masks are computed.
  const lb::UplinkTable* SharedTable(SwitchId s, const lb::SwitchInfo& in) {
    const size_t role = static_cast<size_t>(in.role);
    if (no_failures_ && role_table_[role] != nullptr) return role_table_[role];
    std::vector<lb::PortMask> masks = t_.valid_uplink_table(s, failed_);
    const size_t own = in.role == lb::Role::kEdge ? s.value() : static_cast<size_t>(in.pod);
    if (own < masks.size()) masks[own] = lb::PortMask{(uint64_t{1} << t_.num_uplinks(s)) - 1};
    uint64_t h = 14695981039346656037ull ^ masks.size();
    for (const lb::PortMask m : masks) h = (h ^ m) * 1099511628211ull;
    std::vector<uint32_t>& same = tables_by_hash_[h];
    for (const uint32_t i : same) {
      if (table_masks_[i] == masks) return tables_[i].get();
    }
    same.push_back(static_cast<uint32_t>(tables_.size()));
    tables_.push_back(
        std::make_unique<lb::UplinkTable>(static_cast<uint32_t>(t_.num_uplinks(s)), masks));
    table_masks_.push_back(std::move(masks));
    role_table_[role] = tables_.back().get();
    return tables_.back().get();
  }

  uint32_t PortIndex(uint32_t node, uint32_t port) const {
    return node < n_ ? node : n_ + (node - n_) * k_ + port;
  }

  void BuildPorts() {
    ports_.resize(n_ + static_cast<size_t>(switches_.size()) * k_);
    if (kFeed != lb::RemoteFeed::kNone) port_dre_.resize(ports_.size());
    if (kFeed == lb::RemoteFeed::kPathQuality) {
      port_level_.resize(ports_.size());
      agg_best_.resize(static_cast<size_t>(t_.num_aggs()) * t_.num_pods());
    }
    for (uint32_t h = 0; h < n_; ++h) {
      OutPort& p = ports_[h];
      p.peer_node = n_ + static_cast<uint32_t>(t_.edge_of(HostId(h)));
      p.peer_port = static_cast<uint16_t>(t_.slot_of(HostId(h)));
    }
    for (uint32_t s = 0; s < switches_.size(); ++s) {
      const SwitchState& st = switches_[s];
      for (uint32_t port = 0; port < k_; ++port) {
        OutPort& p = ports_[PortIndex(n_ + s, port)];
        const lb::Peer peer = t_.peer(st.id, static_cast<int>(port));
        p.peer_node = peer.is_host ? peer.id : n_ + peer.id;
        p.peer_port = static_cast<uint16_t>(peer.port);
        const bool up = t_.is_uplink_port(st.id, static_cast<int>(port));
        p.stage = t_.stage_of(st.id, static_cast<int>(port));
        switch (st.role) {
          case lb::Role::kEdge:
            if (up) p.failed = failed_.failed(t_.uplink_id(st.id, static_cast<int>(port - w_)));
            break;
          case lb::Role::kAgg:
            if (up) {
              p.failed = failed_.failed(t_.uplink_id(st.id, static_cast<int>(port - w_)));
            } else {
              // The agg->edge direction of the edge's uplink.
              p.failed =
                  failed_.failed(t_.uplink_id(SwitchId(peer.id), peer.port - static_cast<int>(w_)));
            }
            break;
          case lb::Role::kCore:
            p.failed =
                failed_.failed(t_.uplink_id(SwitchId(peer.id), peer.port - static_cast<int>(w_)));
            break;
        }
      }
    }
  }

  void BuildFlows(const std::vector<Flow>& flows) {
    hosts_.resize(n_);
    flows_.reserve(flows.size());
    Rng rng(SplitMix64(c_.seed) ^ 0xF10Eull);
    for (const Flow& f : flows) {
      FlowState fs;
      fs.src = f.src;
      fs.dst = f.dst;
      fs.total = static_cast<uint32_t>((f.bytes + c_.payload - 1) / c_.payload);
      fs.entropy = rng.Next32();
      fs.ack_entropy = rng.Next32();
      fs.qp = rng.Next32() & 0xFFFFFF;
      fs.drb_ptr[0] = rng.Next32();
      fs.drb_ptr[1] = rng.Next32();
      hosts_[f.src].active.push_back(static_cast<uint32_t>(flows_.size()));
      total_data_ += fs.total;
      flows_.push_back(std::move(fs));
    }
  }

  // The senders' windows and recovery state (sim/transport/cca.h). A flow's
  // base RTT is its path's: data over its links, its ACK back; its BDP the
  // data frames the line carries in that time.
  void BuildTransport() {
    tx_.resize(flows_.size());
    uint64_t base = 0;
    const TimePs frame_time = ser_data_ + gap_;
    for (size_t i = 0; i < flows_.size(); ++i) {
      const FlowState& f = flows_[i];
      TxState& tx = tx_[i];
      const HostId src(f.src), dst(f.dst);
      const auto links = static_cast<uint32_t>(t_.hops(src, dst));
      const auto paths = static_cast<uint32_t>(t_.paths(src, dst));
      tx.p.base_rtt = BaseRtt(links);
      tx.p.bdp = static_cast<double>(tx.p.base_rtt) / static_cast<double>(frame_time);
      tx.p.init_window = std::max(1.0, c_.init_window_bdps * tx.p.bdp);
      tx.dupthresh = 3 + paths;
      tx.base = base;
      tx.cap = f.total;
      base += f.total;
      // Before any sample: ten base RTTs and the time to drain a full buffer
      // at each hop; then srtt + 4 rttvar (RFC 6298), at least 2 base RTTs.
      tx.rto = FirstRto(links);
      CcInit(c_.cca, tx.cc, tx.p);
    }
    seq_.assign(base, 0);
    rtx_ring_.assign(base, 0);
    if (c_.trace_flow >= 0 && static_cast<size_t>(c_.trace_flow) < flows_.size()) {
      trace_.reserve(2 * size_t{flows_[static_cast<size_t>(c_.trace_flow)].total} + 16);
    }
  }

  // Every switch port an EmuPort on the sim's wire (its preamble and gap:
  // with one queue and no pause, EgressTimeline's schedule), every switch's
  // ingress accounting with the thresholds SimConfig::PfcPortThresholds
  // validated.
  void BuildPfc() {
    wire_.ps_per_byte = 8000.0 / c_.link_gbps;
    wire_.pre = pre_;
    wire_.gap = gap_;
    wire_.latency = prop_;
    pfc_th_ = *c_.PfcPortThresholds();
    pfc_ports_.resize(ports_.size());
    for (size_t i = n_; i < ports_.size(); ++i) {
      pfc_ports_[i].q.Configure(wire_, {c_.buffer_bytes, c_.ecn_bytes});
      pfc_ports_[i].pause =
          fabric::PfcPauseState(TimePs{c_.pfcwd_detect_ms} * 1'000'000'000,
                                TimePs{c_.pfcwd_restore_ms} * 1'000'000'000, c_.pfcwd_action);
    }
    host_pause_.resize(n_);
    host_pause_rx_.assign(n_, 0);
    const TimePs refresh = fabric::PauseQuantaPs(c_.pfc_quanta, wire_.ps_per_byte) / 2;
    pfc_in_.reserve(switches_.size());
    for (size_t s = 0; s < switches_.size(); ++s) {
      pfc_in_.emplace_back(std::vector<fabric::PfcThresholds>(k_, pfc_th_),
                           std::vector<TimePs>(k_, refresh), c_.pfc_quanta);
    }
    refresh_at_.assign(switches_.size(), kNever);
  }

  // A path of `links` links: data over them, its ACK back.
  TimePs BaseRtt(uint32_t links) const {
    return links * (pre_ + ser_data_ + prop_) + links * (pre_ + ser_ack_ + prop_);
  }
  // A sender's first timeout: ten base RTTs and a full buffer's drain at
  // each hop (a CCA's and a go-back-N sender's alike).
  TimePs FirstRto(uint32_t links) const {
    TimePs rto = 10 * BaseRtt(links);
    if (c_.buffer_bytes) {
      rto += links * static_cast<TimePs>(std::llround(static_cast<double>(c_.buffer_bytes) *
                                                      8000.0 / c_.link_gbps));
    }
    return rto;
  }
  // A fixed-rate host's timeout (--cca none): --rto-us, else FirstRto.
  TimePs HostRto(uint32_t links) const {
    return c_.rto_us ? TimePs{c_.rto_us} * 1'000'000 : FirstRto(links);
  }
  TimePs HostRtoOf(uint32_t fi) const {
    const FlowState& f = flows_[fi];
    return HostRto(static_cast<uint32_t>(t_.hops(HostId{f.src}, HostId{f.dst})));
  }
  // A flow's last packet acknowledged now.
  void FlowDone() {
    ++flows_done_;
    cct_ = std::max(cct_, now_);
  }

  // --reorder: a reorder buffer for each host's port at its edge, sized for
  // the flows that come to the host (at most the stage's default table) and
  // counting its data frames, all of one size, as its frames.
  void BuildReorder() {
    std::vector<uint32_t> incoming(n_, 0);
    for (const FlowState& f : flows_) ++incoming[f.dst];
    fabric::ReorderLimits lim;
    lim.buffer_bytes = c_.reorder_bytes;
    lim.timeout = TimePs{c_.ReorderTimeoutUs()} * 1'000'000;
    lim.min_frame = c_.frame_bytes();
    reorder_.resize(n_);
    reorder_at_.assign(n_, kNever);
    for (uint32_t h = 0; h < n_; ++h) {
      lim.max_flows = std::clamp<uint32_t>(incoming[h], 1, fabric::kReorderDefaultFlows);
      reorder_[h].Configure(lim);
    }
  }

  // --receiver gbn: each flow's timeout, as a CCA's first one (ten base
  // RTTs and a full buffer's drain at each hop).
  void BuildGbn() {
    gbn_.resize(flows_.size());
    for (size_t i = 0; i < flows_.size(); ++i) {
      const FlowState& f = flows_[i];
      const auto links = static_cast<uint32_t>(t_.hops(HostId{f.src}, HostId{f.dst}));
      gbn_[i].base = gbn_[i].rto = HostRto(links);
    }
  }

  // ---- ooo receivers' loss recovery (--receiver ooo, --cca none) ----------
  bool ooo_recovery() const { return !transport() && !gbn(); }

  // A packet lost anywhere in the fabric (tail drop, a down link, no
  // route, a lossless or a watchdog drop): its flow's sender finds out by
  // its timeout.
  void Lose(const Packet& pk) {
    if (!ooo_recovery() || pk.pfc) return;
    if (loss_.empty()) loss_.resize(flows_.size());
    OooLoss& l = loss_[pk.flow];
    if (pk.cls == SizeClass::kData) {
      if (pk.probe) return;  // still owed: the next timeout probes again
      l.lost.insert(std::lower_bound(l.lost.begin(), l.lost.end(), pk.seq), pk.seq);
    } else if (!pk.probe) {
      ++l.owed;
    }
    if (!l.armed) {
      l.deadline = std::max(l.deadline, now_ + HostRtoOf(pk.flow));
      OooArm(pk.flow);
    }
  }

  void OooArm(uint32_t fi) {
    OooLoss& l = loss_[fi];
    if (l.armed) return;
    l.armed = true;
    Push(l.deadline, EventType::kRto, fi, 0);
  }

  // Sequence number seq (or a probe) to be sent again, first in line.
  void OooSend(uint32_t fi, uint32_t seq) {
    FlowState& f = flows_[fi];
    OooLoss& l = loss_[fi];
    const bool idle = f.sent >= f.total && l.send.empty();  // out of its host's round-robin
    l.send.push_back(seq);
    if (idle) {
      hosts_[f.src].active.push_back(fi);
      HostTry(f.src);
    }
  }

  // Nothing acknowledged for rto since a loss: the oldest hole again (or,
  // with only ACKs lost, a probe), recovery up to what was sent by now.
  void OnOooRto(uint32_t fi) {
    OooLoss& l = loss_[fi];
    const FlowState& f = flows_[fi];
    l.armed = false;
    if (f.acked == f.total || (l.lost.empty() && l.owed == 0)) return;
    if (now_ < l.deadline) {
      OooArm(fi);
      return;
    }
    ++timeouts_;
    if (++l.retries > kOooRetries) {  // given up: the flow stays incomplete
      l.lost.clear();
      l.owed = 0;
      return;
    }
    if (!l.lost.empty()) {
      l.recovering = true;
      l.recover = f.sent;
      OooSend(fi, l.lost.front());
      l.lost.erase(l.lost.begin());
    } else {
      OooSend(fi, kProbeSeq);
    }
    l.deadline = now_ + HostRtoOf(fi);
    OooArm(fi);
  }

  // An ACK at the sender of a flow that lost something: it acknowledges its
  // own packet (a probe's nothing) and every ACK lost before it; a hole
  // filled moves recovery to the next one.
  void OooAck(uint32_t fi, FlowState& f, const Packet& pk) {
    OooLoss& l = loss_[fi];
    const uint32_t credit = (pk.probe ? 0 : 1) + l.owed;
    l.owed = 0;
    if (credit == 0) return;
    f.acked += credit;
    if (f.acked == f.total) {
      FlowDone();
      return;
    }
    if (!pk.rtx) return;
    l.retries = 0;
    l.deadline = now_ + HostRtoOf(fi);  // progress: the hole is filled
    if (l.recovering && !l.lost.empty() && l.lost.front() < l.recover) {
      OooSend(fi, l.lost.front());
      l.lost.erase(l.lost.begin());
    } else {
      l.recovering = false;
    }
  }

  // ---- go-back-N receivers (--receiver gbn) ---------------------------------
  bool gbn() const { return c_.receiver == Receiver::kGbn; }

  // A data packet at its receiver: taken if it is the PSN expected, else
  // dropped. Returns whether the receiver answers, pk then turned into
  // what it answers: the cumulative ACK (for the packet taken, or again for
  // a duplicate) or the gap's one NAK, carrying the PSN expected.
  bool GbnReceive(FlowState& f, Packet& pk) {
    if (pk.seq == f.epsn) {
      ++f.epsn;
      ++f.received;
      f.nak_sent = false;
      pk.seq = f.epsn - 1;
      return true;
    }
    if (pk.seq < f.epsn) {
      ++duplicates_;
      pk.seq = f.epsn - 1;
      return true;
    }
    ++out_of_seq_;
    if (f.nak_sent) return false;
    f.nak_sent = true;
    ++naks_;
    pk.nak = 1;
    pk.seq = f.epsn;
    return true;
  }

  // The sender sends again from PSN `to` (never below what was acked).
  void GbnGoBack(uint32_t fi, uint32_t to) {
    FlowState& f = flows_[fi];
    to = std::max(to, f.acked);
    if (to >= f.sent) return;
    const bool idle = f.sent >= f.total;  // out of its host's round-robin
    f.sent = to;
    if (idle) {
      hosts_[f.src].active.push_back(fi);
      HostTry(f.src);
    }
  }

  void GbnOnAck(uint32_t fi, FlowState& f, const Packet& pk) {
    if (pk.nak) {
      GbnGoBack(fi, pk.seq);
      return;
    }
    if (pk.seq + 1 <= f.acked) return;
    f.acked = pk.seq + 1;
    GbnTimer& g = gbn_[fi];
    g.rto = g.base;
    g.deadline = now_ + g.rto;
    if (f.acked == f.total) FlowDone();
  }

  void GbnArm(uint32_t fi) {
    GbnTimer& g = gbn_[fi];
    if (g.armed) return;
    g.armed = true;
    if (g.deadline <= now_) g.deadline = now_ + g.rto;
    Push(g.deadline, EventType::kRto, fi, 0);
  }

  // Nothing acknowledged for rto with packets out: back to the first
  // unacknowledged one, the next timeout twice as long (64x at most).
  void OnGbnRto(uint32_t fi) {
    GbnTimer& g = gbn_[fi];
    FlowState& f = flows_[fi];
    g.armed = false;
    if (f.acked == f.total || f.sent <= f.acked) return;  // done, or nothing out
    if (now_ < g.deadline) {
      GbnArm(fi);
      return;
    }
    ++timeouts_;
    g.rto = std::min(2 * g.rto, 64 * g.base);
    g.deadline = now_ + g.rto;
    GbnGoBack(fi, f.acked);
    GbnArm(fi);
  }

  // ---- resequencing at the destination edge (--reorder) ----------------------
  // Host h's port at its edge.
  uint32_t HostPortIndex(uint32_t h) const {
    return PortIndex(ports_[h].peer_node, ports_[h].peer_port);
  }
  // A frame the reorder buffer lets go (its handle is the frame's slot)
  // goes on to the port's queue.
  struct ReorderEmit {
    Simulator* sim;
    uint32_t pi;
    void operator()(uint32_t slot, TimePs) const {
      const SimFrame f = sim->slots_[slot];
      sim->free_slots_.push_back(slot);
      Packet pk = f.pk;
      sim->Enqueue(pi, pk, f.in_port);
    }
  };
  // A data frame for host h's port pi, from the edge's ingress in_port.
  void OfferReorder(uint32_t h, uint32_t pi, const Packet& pk, uint32_t in_port) {
    const uint32_t slot = AllocSlot(pk, in_port);
    reorder_[h].Offer(now_, fabric::ReorderKey{pk.src, pk.flow}, pk.seq, pk.frame, slot,
                      ReorderEmit{this, pi}, /*continues=*/pk.seq != 0);
    ScheduleReorder(h);
  }
  void ScheduleReorder(uint32_t h) {
    PushEarlier(reorder_[h].NextDeadline(), reorder_at_[h], EventType::kReorderExpire, h);
  }
  void OnReorderExpire(uint32_t h) {
    if (now_ != reorder_at_[h]) return;  // superseded
    reorder_at_[h] = kNever;
    reorder_[h].Expire(now_, ReorderEmit{this, HostPortIndex(h)});
    ScheduleReorder(h);
  }

  // ---- transport ----------------------------------------------------------
  bool transport() const { return c_.cca != Cca::kNone; }
  uint32_t RtxFront(const TxState& tx) const { return rtx_ring_[tx.base + tx.rtx_head]; }
  uint32_t RtxPop(TxState& tx) {
    const uint32_t seq = RtxFront(tx);
    tx.rtx_head = tx.rtx_head + 1 == tx.cap ? 0 : tx.rtx_head + 1;
    --tx.rtx_len;
    return seq;
  }

  // May the flow send now: something to send (a retransmission still
  // unacknowledged, or new data) and room in its window?
  bool TxEligible(uint32_t fi) {
    TxState& tx = tx_[fi];
    const FlowState& f = flows_[fi];
    while (tx.rtx_len && (seq_[tx.base + RtxFront(tx)] & kAcked)) {
      seq_[tx.base + RtxPop(tx)] &= static_cast<uint8_t>(~kQueued);
    }
    const bool has = tx.rtx_len > 0 || f.sent < f.total;
    return has && static_cast<double>(tx.inflight) < tx.cc.cwnd;
  }

  // The sequence number to send (TxEligible said there is one).
  uint32_t TxNextSeq(uint32_t fi, Packet& pk) {
    TxState& tx = tx_[fi];
    FlowState& f = flows_[fi];
    pk.rtx = 0;
    if (tx.rtx_len) {
      const uint32_t seq = RtxPop(tx);
      seq_[tx.base + seq] &= static_cast<uint8_t>(~kQueued);
      pk.rtx = 1;
      ++retransmits_;
      return seq;
    }
    return f.sent++;
  }

  void ArmTimer(uint32_t fi, TimePs at) {
    TxState& tx = tx_[fi];
    tx.timer_armed = true;
    Push(at, EventType::kRto, fi, 0);
  }
  // A full timeout from now.
  void RestartTimer(uint32_t fi) {
    TxState& tx = tx_[fi];
    tx.rto_deadline = now_ + tx.rto;
    ArmTimer(fi, tx.rto_deadline);
  }
  void TraceCwnd(uint32_t fi) {
    if (static_cast<int64_t>(fi) == c_.trace_flow) {
      trace_.emplace_back(static_cast<double>(now_) * 1e-6, tx_[fi].cc.cwnd);
    }
  }

  // Back in its host's round-robin if it may send again.
  void TxWake(uint32_t fi) {
    TxState& tx = tx_[fi];
    if (tx.in_active || !TxEligible(fi)) return;
    const uint32_t h = flows_[fi].src;
    tx.in_active = true;
    hosts_[h].active.push_back(fi);
    HostTry(h);
  }

  void QueueLost(TxState& tx, uint32_t seq) {
    uint8_t& st = seq_[tx.base + seq];
    st |= kLost;
    if (!(st & kQueued)) {
      st |= kQueued;
      rtx_ring_[tx.base + (tx.rtx_head + tx.rtx_len) % tx.cap] = seq;
      ++tx.rtx_len;
    }
  }

  // An ACK at its flow's source: per-packet and cumulative state, the RTT
  // estimate, the CCA, loss by the duplicate threshold.
  void TxOnAck(uint32_t fi, FlowState& f, const Packet& pk) {
    TxState& tx = tx_[fi];
    uint8_t& st = seq_[tx.base + pk.seq];
    // This transmission leaves the network, unless a timeout or the loss
    // detector already took it out of the count.
    if (pk.epoch == tx.epoch && (pk.rtx || !(st & kLost)) && tx.inflight > 0) --tx.inflight;
    const TimePs rtt = now_ - pk.sent;
    const double r = static_cast<double>(rtt);
    if (tx.srtt == 0) {
      tx.srtt = r;
      tx.rttvar = r / 2;
    } else {
      tx.rttvar = 0.75 * tx.rttvar + 0.25 * std::abs(tx.srtt - r);
      tx.srtt = 0.875 * tx.srtt + 0.125 * r;
    }
    if (st & kAcked) return;  // a duplicate: the CCA saw this packet already
    st |= kAcked;
    ++f.acked;
    if (pk.seq < tx.scan) ++tx.acked_below_scan;
    while (tx.cum < f.total && (seq_[tx.base + tx.cum] & kAcked)) ++tx.cum;
    tx.rto = std::max<TimePs>(2 * tx.p.base_rtt, static_cast<TimePs>(tx.srtt + 4 * tx.rttvar));
    tx.rto_deadline = now_ + tx.rto;
    CcOnAck(c_.cca, tx.cc, tx.p, AckSignal{now_, rtt, pk.ecn != 0});
    // A packet is lost once dupthresh packets above it were acknowledged.
    bool lost = false;
    while (tx.scan < f.sent) {
      const uint8_t s = seq_[tx.base + tx.scan];
      if (s & kAcked) {
        ++tx.acked_below_scan;
      } else if (!(s & kLost)) {
        if (f.acked - tx.acked_below_scan < tx.dupthresh) break;
        QueueLost(tx, tx.scan);
        if (tx.inflight > 0) --tx.inflight;
        lost = true;
      }
      ++tx.scan;
    }
    if (lost) CcOnLoss(c_.cca, tx.cc, tx.p, now_);
    TraceCwnd(fi);
  }

  // The retransmission timer: lazily re-armed on progress; on expiry every
  // unacknowledged packet sent is presumed lost.
  void OnRto(uint32_t fi) {
    TxState& tx = tx_[fi];
    FlowState& f = flows_[fi];
    tx.timer_armed = false;
    if (f.acked == f.total) return;
    if (now_ < tx.rto_deadline) {
      ArmTimer(fi, tx.rto_deadline);
      return;
    }
    if (tx.inflight == 0 && tx.cum >= f.sent) {  // nothing out: waiting for its NIC
      RestartTimer(fi);
      return;
    }
    ++timeouts_;
    ++tx.epoch;
    tx.inflight = 0;
    for (uint32_t s = tx.cum; s < f.sent; ++s) {
      if (!(seq_[tx.base + s] & kAcked)) QueueLost(tx, s);
    }
    CcOnTimeout(c_.cca, tx.cc, tx.p, now_);
    tx.rto = std::min<TimePs>(tx.rto * 2, TimePs{64} * 10 * tx.p.base_rtt);
    RestartTimer(fi);
    TraceCwnd(fi);
    TxWake(fi);
  }

  // ---- events -------------------------------------------------------------
  // At k=64 the state an event touches (its out port, its switch's
  // pointer, host, flow) is a DRAM miss each: the pending events (640 MB)
  // stream through the caches between two visits. The events a few pops
  // ahead are known (the bucket is sorted), so their state is fetched while
  // this one is handled, in two stages: far ahead what the event's own
  // fields locate, near what that state then locates (the port a policy
  // would pick: Peek, where the policy offers it).
  static constexpr size_t kPrefetchFar = 8, kPrefetchNear = 4;
  static constexpr bool kHasState = requires(const Policy& p, const lb::PacketKey& k) {
    p.StateOf(k);
  };
  static constexpr bool kHasPeek =
      requires(const Policy& p, const lb::PacketKey& k, const lb::UplinkTable& t) {
    p.Peek(k, t);
  };
  // Always inline: GCC deems a function that only prefetches pure and drops
  // calls to it as having no effect.
  template <class T>
  [[gnu::always_inline]] static void PrefetchLines(const T* p) {
    const char* c = reinterpret_cast<const char*>(p);
    for (size_t off = 0; off < sizeof(T); off += 64) __builtin_prefetch(c + off);
  }
  [[gnu::always_inline]] void PrefetchFar(const Event& e) const {
    if (e.node < n_) {
      PrefetchLines(&hosts_[e.node]);
      if (e.type == EventType::kArrive) __builtin_prefetch(&flows_[e.pk.flow]);
      return;
    }
    if (e.type != EventType::kArrive) return;
    const uint32_t s = e.node - n_;
    if (t_.is_below(SwitchId{s}, HostId{e.pk.dst})) return;
    __builtin_prefetch(&flows_[e.pk.flow]);
    if constexpr (kHasState) {
      lb::PacketKey key;
      RouteKey(switches_[s], e.port, e.pk, key);
      __builtin_prefetch(policies_[s].StateOf(key));
    }
  }
  [[gnu::always_inline]] void PrefetchNear(const Event& e) const {
    if (e.node < n_) {
      const HostState& hs = hosts_[e.node];
      if (e.type == EventType::kArrive && e.pk.cls == SizeClass::kData) {
        __builtin_prefetch(hs.acks.data() + hs.acks.size());
      } else if (e.type == EventType::kHostWake && hs.rr < hs.active.size()) {
        __builtin_prefetch(hs.active.data() + hs.rr);
      }
      return;
    }
    if (e.type != EventType::kArrive) return;
    const uint32_t s = e.node - n_;
    const HostId dst(e.pk.dst);
    if (t_.is_below(SwitchId{s}, dst)) {
      PrefetchLines(
          &ports_[PortIndex(e.node, static_cast<uint32_t>(t_.down_port(SwitchId{s}, dst)))]);
      return;
    }
    if constexpr (kHasPeek) {
      const SwitchState& st = switches_[s];
      lb::PacketKey key;
      RouteKey(st, e.port, e.pk, key);
      const uint8_t u = policies_[s].Peek(key, *st.table);
      if (u != lb::kNoUplink) PrefetchLines(&ports_[PortIndex(e.node, w_ + u)]);
    }
  }

  void Push(TimePs t, EventType type, uint32_t node, uint32_t port, uint32_t gen = 0) {
    Event e{};
    e.t = t;
    e.type = type;
    e.node = node;
    e.port = static_cast<uint16_t>(port);
    e.set_gen(gen);
    events_.Push(e);
  }
  void PushArrival(TimePs t, uint32_t node, uint32_t port, const Packet& pk) {
    events_.Push(t, node, static_cast<uint16_t>(port), EventType::kArrive, pk);
  }

  // Packets live in their events (packet.h); only their number is kept.
  void NewPacket() {
    ++in_flight_;
    peak_in_flight_ = std::max(peak_in_flight_, in_flight_);
  }
  void FreePacket() { --in_flight_; }

  // Enqueue on an output port: the FIFO start time is known now (with
  // --pfc: EnqueuePfc). in_port: where the packet came into the switch.
  void Enqueue(uint32_t pi, Packet& pk, uint32_t in_port) {
    OutPort& p = ports_[pi];
    if (p.failed) {
      ++drops_link_down_;
      Lose(pk);
      FreePacket();
      return;
    }
    if (c_.pfc) [[unlikely]] {
      EnqueuePfc(pi, pk, in_port);
      return;
    }
    const bool data = pk.cls == SizeClass::kData;
    const fabric::OfferResult r = p.q.Offer(now_, pk.frame, data ? ser_data_ : ser_ack_, pre_, gap_,
                                            {c_.buffer_bytes, c_.ecn_bytes}, data);
    if (!r.queued) {
      ++drops_buffer_;
      Lose(pk);
      FreePacket();
      return;
    }
    if (r.ce) {
      pk.ecn = 1;
      ++ecn_marks_;
    }
    Meter(pi, p, pk, data);
    PushArrival(r.last_bit + prop_, p.peer_node, p.peer_port, pk);
  }

  // The rate meters of the policies that hear from the fabric: a queued
  // packet charges its port's.
  void Meter(uint32_t pi, const OutPort& p, Packet& pk, bool data) {
    if constexpr (kFeed != lb::RemoteFeed::kNone) {
      lb::Dre& d = port_dre_[pi];
      meter_.Charge(d, pk.frame, now_);
      // CONGA: each fabric link a data packet crosses raises its CE fields.
      if (kFeed == lb::RemoteFeed::kLeafFeedback && data && p.peer_node >= n_) {
        const uint8_t level = meter_.CongaLevel(d.x);
        for (int i = 0; i < 2; ++i) {
          if (pk.tag[i] != lb::kNoUplink) pk.ce[i] = std::max(pk.ce[i], level);
        }
      }
    } else {
      (void)pi, (void)p, (void)pk, (void)data;
    }
  }

  // A port's backlog now (bytes not yet fully sent).
  uint64_t PortBytes(OutPort& p, uint32_t pi) {
    if (c_.pfc) {
      fabric::EmuPort<uint32_t>& q = pfc_ports_[pi].q;
      q.Integrate(std::max(now_, q.integrated_to()));
      return q.bytes();
    }
    p.q.Advance(now_);
    return p.q.bytes();
  }

  // ---- PFC (--pfc) ---------------------------------------------------------
  // A switch's PFC decisions, kept to be sent once the port calls that made
  // them have returned (FlushActions).
  struct PfcSink {
    Simulator* sim;
    uint32_t sw;
    void push_back(const fabric::PfcAction& a) { sim->actions_.emplace_back(sw, a); }
  };
  // A port's transmission starts, handed out by its EmuPort: the frame leaves
  // its ingress port's share and is on its way.
  struct PortEmit {
    Simulator* sim;
    uint32_t pi;
    void operator()(uint32_t slot, TimePs start, TimePs last_bit) const {
      sim->OnStart(pi, slot, start, last_bit);
    }
  };

  uint32_t SwitchOf(uint32_t pi) const { return (pi - n_) / k_; }
  uint32_t AllocSlot(const Packet& pk, uint32_t in_port) {
    if (free_slots_.empty()) {
      slots_.push_back({pk, in_port});
      return static_cast<uint32_t>(slots_.size() - 1);
    }
    const uint32_t i = free_slots_.back();
    free_slots_.pop_back();
    slots_[i] = {pk, in_port};
    return i;
  }

  // A packet for switch port pi, from its ingress port in_port. Data is
  // lossless: its ingress port's share admits it (or, its headroom full, a
  // lossless drop: never expected) and the egress never tail-drops it; ACKs
  // take the strict-priority queue and the port's buffer.
  void EnqueuePfc(uint32_t pi, Packet& pk, uint32_t in_port) {
    PfcPort& pp = pfc_ports_[pi];
    const bool data = pk.cls == SizeClass::kData;
    const uint32_t sw = SwitchOf(pi);
    if (data) {
      if (pp.pause.dropping()) {
        ++wd_dropped_;  // a stormed queue discards what comes for it
        Lose(pk);
        FreePacket();
        return;
      }
      PfcSink sink{this, sw};
      if (!pfc_in_[sw].Admit(in_port, pk.frame, now_, sink)) {
        ++drops_lossless_;
        Lose(pk);
        FreePacket();
        FlushActions();
        return;
      }
    }
    Meter(pi, ports_[pi], pk, data);
    const uint32_t slot = AllocSlot(pk, data ? in_port : kNoPort);
    const fabric::EmuVerdict v =
        pp.q.Offer(now_, data ? 1 : 0, pk.frame, data, slot, PortEmit{this, pi}, data);
    if (!v.queued) {
      free_slots_.push_back(slot);
      ++drops_buffer_;
      Lose(pk);
      FreePacket();
      FlushActions();
      return;
    }
    if (v.ce) {
      slots_[slot].pk.ecn = 1;
      ++ecn_marks_;
    }
    if (data && pp.q.paused_until() > now_) {
      WatchdogCheck(pi);  // frames wait behind a pause: the watchdog looks
      ScheduleCheck(pi);
    }
    ScheduleTx(pi);
    FlushActions();
  }

  void OnStart(uint32_t pi, uint32_t slot, TimePs start, TimePs last_bit) {
    const SimFrame f = slots_[slot];
    free_slots_.push_back(slot);
    if (f.in_port != kNoPort) {
      PfcSink sink{this, SwitchOf(pi)};
      pfc_in_[sink.sw].Release(f.in_port, f.pk.frame, start, sink);
    }
    const OutPort& p = ports_[pi];
    PushArrival(last_bit + prop_, p.peer_node, p.peer_port, f.pk);
  }

  // A switch's PFC frame (fabric::PfcAction) on its port's strict-priority
  // queue at the time the decision was made.
  void SendPfc(uint32_t sw, const fabric::PfcAction& a) {
    const uint32_t pi = PortIndex(n_ + sw, a.port);
    if (ports_[pi].failed) return;  // a down link carries nothing
    Packet pk{};
    pk.pfc = 1;
    pk.cls = SizeClass::kAck;
    pk.frame = fabric::kPfcFrameBytes;
    pk.seq = a.quanta;
    const uint32_t slot = AllocSlot(pk, kNoPort);
    PfcPort& pp = pfc_ports_[pi];
    if (!pp.q.Offer(std::max(a.t, pp.q.integrated_to()), 0, pk.frame, false, slot,
                    PortEmit{this, pi})
             .queued) {
      free_slots_.push_back(slot);
      ++pfc_lost_;
      return;
    }
    ++pfc_sent_;
    ScheduleTx(pi);
  }

  // The decisions made so far, sent; sending starts transmissions, whose
  // releases may decide more (an XON), sent in turn.
  void FlushActions() {
    for (size_t i = 0; i < actions_.size(); ++i) {
      const auto [sw, a] = actions_[i];
      SendPfc(sw, a);
      ScheduleRefresh(sw);
    }
    actions_.clear();
  }

  // One pending event of a kind per port (switch): pushed when it would
  // come earlier than the one pending; a later one finds it superseded.
  void PushEarlier(TimePs t, TimePs& pending, EventType type, uint32_t node) {
    if (t < pending) {
      pending = t;
      Push(t, type, node, 0);
    }
  }
  void ScheduleTx(uint32_t pi) {
    PfcPort& pp = pfc_ports_[pi];
    PushEarlier(pp.q.NextStart(), pp.tx_at, EventType::kPortTx, pi);
  }
  void OnPortTx(uint32_t pi) {
    PfcPort& pp = pfc_ports_[pi];
    if (now_ != pp.tx_at) return;  // superseded
    pp.tx_at = kNever;
    pp.q.StartBefore(now_ + 1, PortEmit{this, pi});
    ScheduleTx(pi);
    FlushActions();
  }

  void ScheduleRefresh(uint32_t sw) {
    PushEarlier(pfc_in_[sw].NextRefresh(), refresh_at_[sw], EventType::kPfcRefresh, sw);
  }
  void OnRefresh(uint32_t sw) {
    if (now_ != refresh_at_[sw]) return;
    refresh_at_[sw] = kNever;
    PfcSink sink{this, sw};
    pfc_in_[sw].Due(now_ + 1, sink);
    ScheduleRefresh(sw);
    FlushActions();
  }

  // A PFC frame's last bit reaches node/port at now_: that port's data (a
  // host's NIC's data) pauses for its quanta at the link's rate, or resumes
  // (0). What began before now goes on.
  void OnPause(uint32_t node, uint32_t port, uint16_t quanta) {
    const TimePs until = now_ + fabric::PauseQuantaPs(quanta, wire_.ps_per_byte);
    if (node < n_) {
      host_pause_[node].Received(now_, until);
      ++host_pause_rx_[node];
      if (until <= now_) HostTry(node);  // XON: its data may go now
      return;
    }
    const uint32_t pi = PortIndex(node, port);
    PfcPort& pp = pfc_ports_[pi];
    pp.q.StartBefore(now_, PortEmit{this, pi});
    ++pp.pause_rx;
    WatchdogCheck(pi);  // what it decided before this pause
    if (const auto to = pp.pause.Paused(now_, until, pp.q.waiting(1) != 0)) pp.q.PauseUntil(*to);
    ScheduleTx(pi);
    ScheduleCheck(pi);
    FlushActions();
  }

  // The watchdog (fabric::PfcWatchdog, as the engine's ports run it): a
  // data queue paused with frames waiting for the detection time fires.
  void WatchdogCheck(uint32_t pi) {
    PfcPort& pp = pfc_ports_[pi];
    const fabric::PfcPauseState::Verdict v = pp.pause.Check(now_, pp.q.waiting(1) != 0);
    if (!v.stop_pausing) return;  // nothing, a restore, or alert only
    const TimePs at = v.at;
    pp.q.PauseUntil(at);
    if (v.drop) {
      PfcSink sink{this, SwitchOf(pi)};
      pp.q.FlushQueue(1, [&](uint32_t slot) {
        const SimFrame f = slots_[slot];
        free_slots_.push_back(slot);
        if (f.in_port != kNoPort) pfc_in_[sink.sw].Release(f.in_port, f.pk.frame, at, sink);
        ++wd_dropped_;
        Lose(f.pk);
        FreePacket();
      });
    }
  }
  void ScheduleCheck(uint32_t pi) {
    PfcPort& pp = pfc_ports_[pi];
    PushEarlier(pp.pause.Deadline(), pp.check_at, EventType::kPortCheck, pi);
  }
  void OnPortCheck(uint32_t pi) {
    PfcPort& pp = pfc_ports_[pi];
    if (now_ != pp.check_at) return;
    pp.check_at = kNever;
    WatchdogCheck(pi);
    ScheduleTx(pi);
    ScheduleCheck(pi);
    FlushActions();
  }

  // The fields of a packet's key that the packet itself gives: the
  // destination edge (at an edge) or pod (at an agg), its size class, the
  // pipe it came in on, its entropy and source route.
  void RouteKey(const SwitchState& st, uint32_t in_port, const Packet& pk,
                lb::PacketKey& key) const {
    const HostId dst(pk.dst);
    key.dest = static_cast<uint16_t>(st.role == lb::Role::kEdge ? t_.edge_of(dst) : t_.pod_of(dst));
    key.cls = pk.cls;
    key.key = static_cast<uint16_t>(key.dest + st.num_dests * static_cast<uint32_t>(pk.cls));
    key.pipe = static_cast<uint8_t>(in_port / st.pipe_size);
    key.flow_hash = pk.entropy;
    key.source_uplink = pk.route[st.role == lb::Role::kEdge ? 0 : 1];
  }

  void SwitchReceive(uint32_t s, uint32_t in_port, Packet& pk) {
    SwitchState& st = switches_[s];
    const HostId dst(pk.dst);
    uint32_t out;
    if (t_.is_below(st.id, dst)) {
      if constexpr (kFeed == lb::RemoteFeed::kLeafFeedback) {
        if (pk.cls == SizeClass::kAck && pk.fb_tag[0] != lb::kNoUplink) TakeFeedback(st, pk);
      }
      out = static_cast<uint32_t>(t_.down_port(st.id, dst));
      if (c_.reorder && st.role == lb::Role::kEdge && pk.cls == SizeClass::kData) [[unlikely]] {
        const uint32_t pi = PortIndex(n_ + s, out);
        if (!ports_[pi].failed) {
          OfferReorder(pk.dst, pi, pk, in_port);
          return;
        }
      }
    } else {
      lb::PacketKey key;
      RouteKey(st, in_port, pk, key);
      key.dst_qp = flows_[pk.flow].qp;
      key.frame_bytes = pk.frame;
      key.slice = static_cast<uint8_t>(t_.slot_of(dst));
      uint32_t qbytes[lb::kMaxUplinks];
      lb::LbView view{st.table, nullptr, now_, nullptr};
      if constexpr (kFeed != lb::RemoteFeed::kNone) {
        if (kFeed == lb::RemoteFeed::kPathQuality && now_ >= next_sync_) SyncPathQuality();
        view.remote = st.remote.data();
      }
      if (QueueAware(s)) {
        for (uint32_t u = 0; u < w_; ++u) {
          OutPort& p = ports_[PortIndex(n_ + s, w_ + u)];
          qbytes[u] = static_cast<uint32_t>(
              std::min<uint64_t>(PortBytes(p, PortIndex(n_ + s, w_ + u)), UINT32_MAX));
        }
        view.queue_bytes = qbytes;
      }
      const uint8_t u = policies_[s].Pick(key, view);
      if (u == lb::kNoUplink) {
        ++drops_no_route_;
        Lose(pk);
        FreePacket();
        return;
      }
      if constexpr (kFeed == lb::RemoteFeed::kLeafFeedback) {
        if (pk.cls == SizeClass::kData) pk.tag[st.role == lb::Role::kEdge ? 0 : 1] = u;
      }
      out = w_ + u;
    }
    Enqueue(PortIndex(n_ + s, out), pk, in_port);
  }

  // Does switch s's policy read its uplinks' queues? Known at compile time
  // unless the run is mixed.
  bool QueueAware(uint32_t s) const {
    if constexpr (kMixed) {
      return policies_[s].queue_aware();
    } else {
      return lb::IsQueueAware(lb::kKindOf<Policy>);
    }
  }

  void HostReceive(uint32_t h, Packet& pk) {
    FlowState& f = flows_[pk.flow];
    if (pk.dst != h) {
      ++misdelivered_;
      FreePacket();
      return;
    }
    if (pk.cls == SizeClass::kData) {
      ++data_received_;
      if (gbn()) {
        if (!GbnReceive(f, pk)) {  // a gap's later packet: dropped, its NAK sent already
          FreePacket();
          return;
        }
      } else if (transport()) {
        uint8_t& st = seq_[tx_[pk.flow].base + pk.seq];
        if (st & kRecv) {
          ++duplicates_;
        } else {
          st |= kRecv;
          ++f.received;
        }
      } else if (pk.probe) [[unlikely]] {
        ++duplicates_;  // its receiver had it: the probe only asks for an ACK
      } else {
        ++f.received;
      }
      // Turn the data packet into its ACK (one per data packet, §2.2).
      const uint32_t data_entropy = pk.entropy;
      pk.src = h;
      pk.dst = f.src;
      pk.cls = SizeClass::kAck;
      pk.frame = static_cast<uint16_t>(c_.ack_bytes);
      pk.echo = data_entropy;
      pk.entropy = c_.host == HostScheme::kSpray ? rng_.Next32() : f.ack_entropy;
      // The destination edge's CONGA feedback rides on the ACK (conga.h).
      for (int i = 0; i < 2; ++i) {
        pk.fb_tag[i] = pk.tag[i];
        pk.fb_ce[i] = pk.ce[i];
        pk.tag[i] = lb::kNoUplink;
        pk.ce[i] = 0;
      }
      // DRB's ACKs rotate on their own; Ethereal's keep the data packet's
      // route, which read from the destination's side is the reverse path.
      if (c_.host == HostScheme::kDrb) DrbRoute(f, /*ack=*/true, pk);
      HostState& hs = hosts_[h];
      hs.acks.push_back(pk);
      HostTry(h);
      return;
    }
    ++acks_received_;
    if (c_.host == HostScheme::kReps && !pk.ecn && f.reps.size() - f.reps_head < 4096) {
      f.reps.push_back(pk.echo);
    }
    if (gbn()) {
      GbnOnAck(pk.flow, f, pk);
      FreePacket();
      return;
    }
    if (transport()) {
      const uint32_t before = f.acked;
      TxOnAck(pk.flow, f, pk);
      const uint32_t fi = pk.flow;
      FreePacket();
      if (f.acked != before && f.acked == f.total) FlowDone();
      TxWake(fi);
      return;
    }
    if (!loss_.empty()) [[unlikely]] {
      OooAck(pk.flow, f, pk);
      FreePacket();
      return;
    }
    ++f.acked;
    if (f.acked == f.total) FlowDone();
    FreePacket();
  }

  // CONGA (conga.h): an ACK on its way down carries the CE its data packet
  // collected. The data's source edge files it under (destination edge, its
  // uplink); the source pod's agg that chose the core, if the ACK passes it,
  // under (destination pod, its uplink).
  void TakeFeedback(SwitchState& st, const Packet& ack) {
    if (st.remote.empty()) return;
    const HostId data_dst(ack.src);
    if (st.role == lb::Role::kEdge) {
      st.remote[static_cast<size_t>(t_.edge_of(data_dst)) * w_ + ack.fb_tag[0]] = ack.fb_ce[0];
      ++remote_updates_;
    } else if (st.role == lb::Role::kAgg && ack.fb_tag[1] != lb::kNoUplink &&
               static_cast<uint32_t>(st.index) == ack.fb_tag[0]) {
      st.remote[static_cast<size_t>(t_.pod_of(data_dst)) * w_ + ack.fb_tag[1]] = ack.fb_ce[1];
      ++remote_updates_;
    }
  }

  // SGLB (glb.h): every glb_period_ps the switches learn the levels of the
  // links beyond their uplinks, as of that moment (the first packet after
  // each period boundary triggers it; nothing else reads the levels).
  uint8_t PortLevel(uint32_t sw, uint32_t port) const {
    return port_level_[PortIndex(n_ + sw, port)];
  }
  void SyncPathQuality() {
    const TimePs period = std::max<TimePs>(c_.policy.glb_period_ps, 1);
    next_sync_ = (now_ / period + 1) * period;
    ++remote_updates_;
    const uint32_t ns = static_cast<uint32_t>(switches_.size());
    for (uint32_t s = 0; s < ns; ++s) {
      for (uint32_t port = 0; port < k_; ++port) {
        const uint32_t pi = PortIndex(n_ + s, port);
        OutPort& p = ports_[pi];
        const uint64_t bytes = PortBytes(p, pi);
        port_level_[pi] = p.failed ? lb::kMaxCongestionLevel
                                   : meter_.DlbLevel(meter_.Read(port_dre_[pi], now_), bytes);
      }
    }
    const uint32_t pods = static_cast<uint32_t>(t_.num_pods());
    const uint32_t epp = static_cast<uint32_t>(t_.edges_per_pod());
    if (t_.levels() == 3) {
      // Aggs: the core's down link into each pod (NNH), and the best onward
      // (agg uplink, core down link) pair per pod for the edges below.
      for (uint32_t a = 0; a < static_cast<uint32_t>(t_.num_aggs()); ++a) {
        const uint32_t sw = static_cast<uint32_t>(t_.num_edges()) + a;
        SwitchState& st = switches_[sw];
        const uint32_t j = a % w_;
        for (uint32_t pod = 0; pod < pods; ++pod) {
          const lb::PortMask m = st.table->mask(pod);
          uint8_t best = lb::kMaxCongestionLevel;
          for (uint32_t c = 0; c < w_; ++c) {
            const uint8_t down = PortLevel(t_.core(static_cast<int>(j * w_ + c)).value(), pod);
            st.remote[pod * w_ + c] = down;
            if (m & (lb::PortMask{1} << c)) {
              best = std::min(best, std::max(PortLevel(sw, w_ + c), down));
            }
          }
          agg_best_[static_cast<size_t>(a) * pods + pod] = best;
        }
      }
    }
    // Edges: per destination edge and uplink j, the rest of the path.
    for (uint32_t e = 0; e < static_cast<uint32_t>(t_.num_edges()); ++e) {
      SwitchState& st = switches_[e];
      const uint32_t pod = e / epp;
      for (uint32_t d = 0; d < st.num_dests; ++d) {
        const uint32_t dpod = d / epp, di = d % epp;
        for (uint32_t j = 0; j < w_; ++j) {
          uint8_t level;
          if (t_.levels() == 2) {
            level = PortLevel(t_.agg(0, static_cast<int>(j)).value(), d);  // spine j -> leaf d
          } else {
            const uint8_t down =
                PortLevel(t_.agg(static_cast<int>(dpod), static_cast<int>(j)).value(), di);
            level =
                dpod == pod
                    ? down
                    : std::max(agg_best_[static_cast<size_t>(pod * w_ + j) * pods + dpod], down);
          }
          st.remote[static_cast<size_t>(d) * w_ + j] = level;
        }
      }
    }
  }

  // DRB (§3.4): rotate per destination over the switches of the lowest
  // common layer (cores between pods, aggs within a pod), skipping those with
  // no valid path; the choice rides in the packet as a source route. Between
  // pods the rotation takes the aggregation switch fastest (path p: agg p % w,
  // its core p / w), so every link on the way sees a flow's packets evenly
  // spaced, the periodic flows of §3.4's N D/D/1 model: the edge uplinks
  // every w packets, each core every w^2. Taking the cores of one agg in a
  // row sent w consecutive packets up one edge uplink, and DRB's max queue
  // grew with w (40 packets at k=16 against 7 now, bench/RESULTS.md
  // "Paper-scale reproduction of Fig. 4(b)").
  // Ethereal's data takes the same route: one equal-size subflow per valid
  // path, served round-robin by the NIC from a random first subflow, visits
  // the paths in this same cyclic order (equal sizes: the subflows with one
  // packet more are the first ones served, so no round is ever skipped). Its
  // subflows are source-routed as DRB's packets are: Ethereal picks each
  // subflow's entropy so that ECMP lands it on its path (§3.4), which we
  // take as done.
  void DrbRoute(FlowState& f, bool ack, Packet& pk) {
    const HostId src(pk.src), dst(pk.dst);
    pk.route[0] = pk.route[1] = lb::kNoUplink;
    const SwitchId e = t_.edge_switch_of(src);
    if (t_.is_below(e, dst)) return;
    const SwitchState& es = switches_[e.value()];
    const lb::PortMask em = es.table->mask(static_cast<uint32_t>(t_.edge_of(dst)));
    const bool inter_pod = t_.levels() == 3 && t_.pod_of(src) != t_.pod_of(dst);
    const uint32_t paths = inter_pod ? w_ * w_ : w_;
    uint32_t& ptr = f.drb_ptr[ack ? 1 : 0];
    for (uint32_t tries = 0; tries < paths; ++tries) {
      const uint32_t p = ptr++ % paths;
      const uint32_t j = inter_pod ? p % w_ : p, c = inter_pod ? p / w_ : 0;
      if (!(em & (lb::PortMask{1} << j))) continue;
      if (inter_pod) {
        const SwitchState& as = switches_[t_.agg(t_.pod_of(src), static_cast<int>(j)).value()];
        if (!(as.table->mask(static_cast<uint32_t>(t_.pod_of(dst))) & (lb::PortMask{1} << c)))
          continue;
      }
      pk.route[0] = static_cast<uint8_t>(j);
      pk.route[1] = static_cast<uint8_t>(c);
      return;
    }
  }

  uint32_t DataEntropy(FlowState& f) {
    switch (c_.host) {
      case HostScheme::kFixed:
      case HostScheme::kDrb:
      case HostScheme::kEthereal:
        return f.entropy;
      case HostScheme::kSpray:
        return rng_.Next32();
      case HostScheme::kReps:
        if (f.reps_head < f.reps.size()) {
          const uint32_t e = f.reps[f.reps_head++];
          if (f.reps_head > 1024 && size_t{f.reps_head} * 2 > f.reps.size()) {
            f.reps.erase(f.reps.begin(), f.reps.begin() + f.reps_head);
            f.reps_head = 0;
          }
          return e;
        }
        return rng_.Next32();
    }
    return f.entropy;
  }

  void ScheduleWake(uint32_t h, TimePs t) {
    HostState& hs = hosts_[h];
    if (hs.wake_at <= t) return;
    hs.wake_at = t;
    Push(t, EventType::kHostWake, h, 0, ++hs.wake_gen);
  }

  // The host's pacer: a bucket of host_burst frames filling at one frame
  // per data interval (one frame at the start). With one frame it is
  // strictly periodic pacing that never catches up.
  void Refill(HostState& hs) {
    if (now_ > hs.tok_time) {
      hs.tokens =
          std::min<double>(c_.host_burst, hs.tokens + static_cast<double>(now_ - hs.tok_time) /
                                                          static_cast<double>(data_interval_));
      hs.tok_time = now_;
    }
  }

  // The host NIC: when free, alternate between pending ACKs and paced data.
  void HostTry(uint32_t h) {
    HostState& hs = hosts_[h];
    if (hs.nic_free > now_) {
      ScheduleWake(h, hs.nic_free);
      return;
    }
    if (c_.host_burst > 1) Refill(hs);
    if (transport()) {
      // Flows whose window closed (or with nothing left) leave the
      // round-robin; an ACK or a timeout brings them back (TxWake).
      while (!hs.active.empty()) {
        if (hs.rr >= hs.active.size()) hs.rr = 0;
        const uint32_t fi = hs.active[hs.rr];
        if (TxEligible(fi)) break;
        tx_[fi].in_active = false;
        hs.active[hs.rr] = hs.active.back();
        hs.active.pop_back();
      }
    }
    bool data_ready = !hs.active.empty() && hs.next_data <= now_;
    // --pfc: a paused NIC sends its ACKs (the strict-priority class) only.
    const TimePs paused_until = c_.pfc ? host_pause_[h].until() : 0;
    if (paused_until > now_) data_ready = false;
    const bool ack_ready = hs.acks_head < hs.acks.size();
    if (!data_ready && !ack_ready) {
      if (!hs.active.empty()) ScheduleWake(h, std::max(hs.next_data, paused_until));
      return;
    }
    const bool send_ack = ack_ready && (!data_ready || !hs.last_was_ack);
    Packet pk{};
    TimePs ser;
    if (send_ack) {
      pk = hs.acks[hs.acks_head++];
      if (hs.acks_head == hs.acks.size()) {
        hs.acks.clear();
        hs.acks_head = 0;
      }
      ser = ser_ack_;
      ++ack_sent_;
    } else {
      if (hs.rr >= hs.active.size()) hs.rr = 0;
      const uint32_t fi = hs.active[hs.rr];
      FlowState& f = flows_[fi];
      NewPacket();
      pk.src = f.src;
      pk.dst = f.dst;
      pk.flow = fi;
      pk.cls = SizeClass::kData;
      pk.frame = static_cast<uint16_t>(std::min<uint32_t>(c_.frame_bytes(), 65535));
      pk.ecn = 0;
      pk.echo = 0;
      for (int i = 0; i < 2; ++i) {
        pk.tag[i] = pk.fb_tag[i] = lb::kNoUplink;
        pk.ce[i] = pk.fb_ce[i] = 0;
      }
      pk.entropy = DataEntropy(f);
      if (c_.host == HostScheme::kDrb || c_.host == HostScheme::kEthereal) {
        DrbRoute(f, /*ack=*/false, pk);
      } else {
        pk.route[0] = pk.route[1] = lb::kNoUplink;
      }
      bool more;
      if (transport()) {
        TxState& tx = tx_[fi];
        pk.seq = TxNextSeq(fi, pk);
        pk.epoch = tx.epoch;
        pk.sent = now_;
        ++tx.inflight;
        if (!tx.timer_armed) RestartTimer(fi);
        more = TxEligible(fi);
        if (!more) tx.in_active = false;
      } else if (!loss_.empty() && !loss_[fi].send.empty()) [[unlikely]] {
        OooLoss& l = loss_[fi];
        const uint32_t seq = l.send.front();
        l.send.erase(l.send.begin());
        pk.probe = seq == kProbeSeq;
        pk.seq = pk.probe ? f.total - 1 : seq;
        pk.rtx = 1;
        ++retransmits_;
        more = f.sent < f.total || !l.send.empty();
      } else {
        pk.seq = f.sent;
        if (gbn()) {
          if (pk.seq < f.hi) {
            pk.rtx = 1;
            ++retransmits_;
          } else {
            f.hi = pk.seq + 1;
          }
          GbnArm(fi);
        }
        more = ++f.sent < f.total || (!loss_.empty() && !loss_[fi].send.empty());
      }
      if (!more) {
        hs.active[hs.rr] = hs.active.back();
        hs.active.pop_back();
      } else {
        ++hs.rr;
      }
      if (c_.host_burst > 1) {
        // One frame from the pacer's bucket; the next is there when the
        // bucket holds one again.
        hs.tokens -= 1;
        hs.next_data = hs.tokens >= 1
                           ? now_
                           : now_ + static_cast<TimePs>(std::ceil(
                                        (1 - hs.tokens) * static_cast<double>(data_interval_)));
      } else {
        hs.next_data = now_ + data_interval_;  // strictly periodic
      }
      ser = ser_data_;
      ++data_sent_;
    }
    hs.last_was_ack = send_ack;
    hs.nic_free = now_ + ser + gap_;
    const OutPort& up = ports_[h];
    PushArrival(now_ + pre_ + ser + prop_, up.peer_node, up.peer_port, pk);
    if (!hs.active.empty() || hs.acks_head < hs.acks.size()) ScheduleWake(h, hs.nic_free);
  }

  // The host ports that took a flow (hosts nobody sends to are left out of
  // the mean).
  void CollectReorder(SimResult& r) const {
    ReorderStats& ro = r.reorder;
    ro.on = true;
    double sum_max = 0;
    for (const fabric::ReorderBuffer<uint32_t>& b : reorder_) {
      const fabric::ReorderCounters& c = b.counters();
      if (c.flows == 0) continue;
      ++ro.ports;
      ro.held += c.held;
      ro.in_order += c.in_order;
      ro.timeouts += c.timeouts;
      ro.overflow += c.overflow;
      ro.table_full += c.table_full;
      ro.old += c.old;
      ro.max_bytes = std::max(ro.max_bytes, c.max_bytes);
      ro.max_frames = std::max(ro.max_frames, c.max_frames);
      ro.max_hold_us = std::max(ro.max_hold_us, static_cast<double>(c.max_hold) * 1e-6);
      sum_max += static_cast<double>(c.max_bytes);
    }
    ro.mean_max_bytes = ro.ports ? sum_max / ro.ports : 0.0;
  }

  void CollectPfc(SimResult& r, TimePs end) const {
    PfcStats& p = r.pfc;
    p.on = true;
    p.pause_frames = pfc_sent_;
    p.lossless_drops = drops_lossless_;
    p.watchdog_dropped = wd_dropped_;
    p.frames_lost = pfc_lost_;
    for (const StageStats& st : r.stages) p.paused_us += st.paused_us;
    for (const fabric::PfcIngress& in : pfc_in_) {
      for (uint32_t port = 0; port < in.ports(); ++port) {
        p.xoff_events += in.counters(port).xoff_events;
        p.headroom_max_bytes = std::max(p.headroom_max_bytes, in.counters(port).headroom_max_bytes);
      }
    }
    for (uint32_t h = 0; h < n_; ++h) {
      p.host_pause_frames += host_pause_rx_[h];
      p.host_paused_us += static_cast<double>(host_pause_[h].paused_ps(end)) * 1e-6;
    }
    p.xoff_bytes = pfc_th_.xoff;
    p.xon_bytes = pfc_th_.xon;
    p.headroom_bytes = pfc_th_.headroom;
  }

  void Progress(bool done) {
    const double frac =
        total_data_
            ? std::min(1.0, static_cast<double>(acks_received_) / static_cast<double>(total_data_))
            : 1.0;
    const int width = 30;
    const int fill = static_cast<int>(frac * width);
    std::fprintf(stderr, "\r  [%.*s%*s] %5.1f%%  %.1f us simulated, %llu events%s", fill,
                 "##############################", width - fill, "", 100.0 * frac,
                 static_cast<double>(now_) * 1e-6, static_cast<unsigned long long>(processed_),
                 done ? "\n" : "");
    std::fflush(stderr);
  }

  SimResult Collect() {
    SimResult r;
    const TimePs end = cct_ ? cct_ : now_;
    const double frame = c_.frame_bytes();
    double sum_avg = 0;
    uint32_t nq = 0;
    for (uint32_t s = 0; s < switches_.size(); ++s) {
      for (uint32_t port = 0; port < k_; ++port) {
        const uint32_t pi = PortIndex(n_ + s, port);
        OutPort& p = ports_[pi];
        double area, max_bytes;
        StageStats& st = r.stages[static_cast<int>(p.stage)];
        if (c_.pfc) {
          PfcPort& pp = pfc_ports_[pi];
          pp.q.Integrate(std::max(end, pp.q.integrated_to()));
          area = pp.q.area_bytes();
          max_bytes = static_cast<double>(pp.q.max_bytes());
          st.pause_frames += pp.pause_rx;
          st.paused_us += static_cast<double>(pp.pause.clock().paused_ps(end)) * 1e-6;
          r.pfc.watchdog_fired += pp.pause.watchdog().fired_count();
          r.pfc.watchdog_restored += pp.pause.watchdog().restored_count();
        } else {
          p.q.Advance(end);
          area = p.q.area();
          max_bytes = static_cast<double>(p.q.max_bytes());
        }
        const double avg = end ? area / static_cast<double>(end) / frame : 0.0;
        const double mx = max_bytes / frame;
        st.queues++;
        st.max_pkts = std::max(st.max_pkts, mx);
        st.avg_pkts += avg;
        sum_avg += avg;
        ++nq;
        r.queue_max_pkts = std::max(r.queue_max_pkts, mx);
      }
    }
    for (int i = 0; i < kNumStages; ++i) {
      r.stages[i].name = lb::kStageNames[static_cast<size_t>(i)].data();  // literals: NUL-ended
      if (r.stages[i].queues) r.stages[i].avg_pkts /= r.stages[i].queues;
    }
    r.queue_avg_pkts = nq ? sum_avg / nq : 0;
    r.cct_us = static_cast<double>(cct_) * 1e-6;
    r.events = processed_;
    r.data_packets = data_sent_;
    r.ack_packets = ack_sent_;
    r.data_received = data_received_;
    r.acks_received = acks_received_;
    r.misdelivered = misdelivered_;
    r.ecn_marks = ecn_marks_;
    r.drops_no_route = drops_no_route_;
    r.drops_link_down = drops_link_down_;
    r.drops_buffer = drops_buffer_;
    if (c_.pfc) CollectPfc(r, end);
    if (c_.reorder) CollectReorder(r);
    r.gbn = gbn();
    r.out_of_seq = out_of_seq_;
    r.naks = naks_;
    r.flows = flows_.size();
    r.flows_incomplete = flows_.size() - flows_done_;
    r.rho = rho_;
    r.failed_links = failed_.count();
    r.peak_packets_in_flight = peak_in_flight_;
    r.retransmits = retransmits_;
    r.timeouts = timeouts_;
    r.duplicates = duplicates_;
    r.cwnd_trace = std::move(trace_);
    r.remote_updates = remote_updates_;
    r.hosts = n_;
    uint32_t senders = 0;
    std::vector<bool> sends(n_, false);
    for (const FlowState& f : flows_) sends[f.src] = true;
    for (bool b : sends) senders += b;
    if (cct_ && senders) {
      r.utilization = static_cast<double>(data_sent_) * static_cast<double>(ser_data_ + gap_) /
                      (static_cast<double>(senders) * static_cast<double>(cct_));
    }
    return r;
  }

  const SimConfig& c_;
  const lb::FatTree& t_;
  const lb::LinkSet& failed_;
  double rho_;
  Rng rng_;
  // CONGA and SGLB: every port's rate (DRE), measured as the policies
  // measure their own uplinks; SGLB's levels of every port and each agg's
  // best onward level per pod, as of the last sync.
  lb::LinkMeter meter_;
  std::vector<lb::Dre> port_dre_;
  std::vector<uint8_t> port_level_;
  std::vector<uint8_t> agg_best_;
  TimePs next_sync_ = 0;
  uint64_t remote_updates_ = 0;
  TimePs ser_data_ = 0, ser_ack_ = 0, gap_ = 0, pre_ = 0, prop_ = 0, data_interval_ = 0;
  uint32_t n_ = 0, k_ = 0, w_ = 0;
  std::vector<std::unique_ptr<lb::UplinkTable>> tables_;  // SharedTable's
  std::vector<std::vector<lb::PortMask>> table_masks_;    // each table's masks
  std::unordered_map<uint64_t, std::vector<uint32_t>> tables_by_hash_;
  const lb::UplinkTable* role_table_[3] = {};  // without failures: per role
  bool no_failures_ = false;                   // failed_.count() == 0 (counts every link)
  HugeVector<SwitchState> switches_;
  HugeVector<Policy> policies_;
  HugeVector<OutPort> ports_;
  HugeVector<HostState> hosts_;
  HugeVector<FlowState> flows_;
  EventQueue events_;
  TimePs now_ = 0;
  TimePs cct_ = 0;
  uint64_t processed_ = 0, total_data_ = 0, acks_received_ = 0, flows_done_ = 0;
  uint64_t data_sent_ = 0, ack_sent_ = 0, ecn_marks_ = 0;
  uint64_t drops_no_route_ = 0, drops_link_down_ = 0, drops_buffer_ = 0;
  uint64_t in_flight_ = 0, peak_in_flight_ = 0;
  uint64_t data_received_ = 0, misdelivered_ = 0;
  // Transport (--cca): per flow, and per (flow, sequence number).
  HugeVector<TxState> tx_;
  std::vector<uint8_t> seq_;
  std::vector<uint32_t> rtx_ring_;  // every flow's retransmission FIFO, at TxState::base
  std::vector<std::pair<double, double>> trace_;
  uint64_t retransmits_ = 0, timeouts_ = 0, duplicates_ = 0;
  // --receiver gbn: per flow its timer; the receivers' drops and NAKs.
  std::vector<GbnTimer> gbn_;
  // --receiver ooo, --cca none: per flow what it lost (empty until a loss).
  std::vector<OooLoss> loss_;
  uint64_t out_of_seq_ = 0, naks_ = 0;
  // --reorder: per host its port's reorder buffer (handles: slots_) and
  // the pending kReorderExpire's time.
  std::vector<fabric::ReorderBuffer<uint32_t>> reorder_;
  std::vector<TimePs> reorder_at_;
  // --pfc: per port (indexed as ports_; the hosts' entries unused), per
  // switch, the frames waiting in ports or (--reorder) reorder buffers
  // (slots, reused), the decisions not yet sent, per host its NIC's pause.
  fabric::EmuWire wire_;
  fabric::PfcThresholds pfc_th_;
  std::vector<PfcPort> pfc_ports_;
  std::vector<fabric::PfcIngress> pfc_in_;
  std::vector<TimePs> refresh_at_;
  std::vector<SimFrame> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<std::pair<uint32_t, fabric::PfcAction>> actions_;
  std::vector<fabric::PauseClock> host_pause_;
  std::vector<uint64_t> host_pause_rx_;
  uint64_t pfc_sent_ = 0, pfc_lost_ = 0, drops_lossless_ = 0, wd_dropped_ = 0;
};

}  // namespace

Result<SimResult> RunSim(const SimConfig& c) {
  if (Status s = c.Validate(); !s) return s.error();
  auto tree = lb::FatTree::Make(c.k, c.levels);
  if (!tree) return tree.error();
  WorkloadInfo info;
  auto flows = MakeWorkload(c, *tree, &info);
  if (!flows) return flows.error();
  auto failed = DrawFailures(*tree, c.fail_prob, c.seed, *flows);
  if (!failed) return failed.error();
  double rho = c.load;
  if (failed->count() > 0) rho = std::min(rho, RhoMax(*tree, *failed, *flows));
  const LowerBound bound = CctLowerBound(c, *tree, *flows);
  // The rate estimators of CONGA, DLB and SGLB measure against the links'
  // rate.
  SimConfig run = c;
  run.policy.link_gbps = c.link_gbps;
  SimResult r;
  if (c.mix.mixed()) {
    std::vector<lb::PolicyConfig> mix = SwitchPolicies(run, *tree);
    Simulator<MixedPolicy> sim(run, *tree, std::move(*flows), *failed, rho, mix);
    r = sim.Run();
  } else {
    r = lb::WithPolicyType(c.policy.kind, [&](auto type) {
      using P = typename decltype(type)::type;
      Simulator<P> sim(run, *tree, std::move(*flows), *failed, rho);
      return sim.Run();
    });
  }
  r.workload = std::move(info);
  r.cct_lower_bound_us = bound.seconds * 1e6;
  r.lower_bound_kind = bound.kind;
  r.cct_inflation = r.cct_lower_bound_us > 0 ? r.cct_us / r.cct_lower_bound_us - 1.0 : 0.0;
  return r;
}

}  // namespace ofan::sim
