#include "dataplane/switch.h"

#include <fmt/format.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <thread>

#include "common/rng.h"
#include "dataplane/fabric/frame_time.h"
#include "dataplane/lb/names.h"
#include "dataplane/packet/frame_budget.h"
#include "dataplane/port_device.h"
#include "dataplane/stages/tx.h"
#include "dataplane/xdp/trap_stats.h"

namespace ofan::dp {
namespace {

constexpr uint16_t kRxDesc = 512;
constexpr uint16_t kTxDesc = 512;

Error DpdkError(const std::string& what, int rc) {
  return MakeError(ErrorCode::kIo, fmt::format("{}: {}", what, rte_strerror(rc < 0 ? -rc : rc)));
}

// The interface of an af_xdp port that loads ofan's trap (devargs
// "net_af_xdp0,iface=p2,...,xdp_prog=.../trap.bpf.o"), or "".
std::string TrappedInterface(std::string_view dev) {
  if (dev.find("xdp_prog=") == std::string_view::npos) return "";
  const size_t at = dev.find("iface=");
  if (at == std::string_view::npos) return "";
  const std::string_view rest = dev.substr(at + 6);
  return std::string(rest.substr(0, rest.find(',')));
}

}  // namespace

void Switch::PoolFree::operator()(rte_mempool* p) const { rte_mempool_free(p); }

Switch::Switch(const DpConfig& c)
    : cfg_(c),
      tree_(c.tree()),
      router_(tree_, c.self()),
      // A salt of its own (no worker has this index): fragments' uplinks do
      // not follow any policy's hashing.
      frag_salt_(lb::SwitchSalt(c.switch_id, 0xF4A6)),
      neighbors_(static_cast<uint32_t>(c.k)) {
  for (int roce = 0; roce < 2; ++roce) {
    for (lb::SizeClass cls : {lb::SizeClass::kData, lb::SizeClass::kAck}) {
      const bool prio = (c.egress.priority_ack && cls == lb::SizeClass::kAck) ||
                        (c.egress.priority_control && !roce);
      queue_of_[roce][static_cast<int>(cls)] =
          static_cast<uint8_t>(prio ? kPrioQueue : kNormalQueue);
    }
  }
}

Switch::~Switch() {
  Stop();
  services_.clear();
  for (uint32_t p = 0; p < rx_.size(); ++p) {
    queues_[p].Flush();
    if (rx_[p].device) rte_eth_dev_stop(rx_[p].dpdk_port);
  }
  delete state_.load();
  retired_.clear();
  // Ports are closed once the queues' frames are back in the pool.
  for (uint32_t p = 0; p < rx_.size(); ++p) {
    if (rx_[p].device) rte_eth_dev_close(rx_[p].dpdk_port);
  }
  // The exception ring's frames go back to the pool with exception_; the pool
  // itself is the last member to go.
}

Result<std::unique_ptr<Switch>> Switch::Create(const DpConfig& c, uint32_t workers,
                                               const EngineAttach* engine) {
  if (Status s = c.Validate(); !s) return s.error();
  std::unique_ptr<Switch> sw(new Switch(c));
  sw->w_ = static_cast<uint32_t>(sw->tree_.num_uplinks(c.self()));
  if (engine) {
    if (!engine->now || engine->tx.size() != static_cast<size_t>(c.k) || g_frame_time_offset < 0) {
      return InvalidArgument("switch " + c.name + ": incomplete engine");
    }
    sw->engine_ = *engine;
    sw->engine_now_ = engine->now;
    sw->tsc_hz_ = 1'000'000'000'000ull;  // the engine's ps
    workers = 0;                         // the engine's thread runs worker 0
  } else {
    sw->tsc_hz_ = rte_get_tsc_hz();
  }
  sw->start_tsc_ = sw->Now();
  sw->capture_ = std::make_unique<PortCapture>(static_cast<uint32_t>(c.k), c.name, sw->tsc_hz_);
  if (engine) sw->capture_->SetClock(sw->tsc_hz_, 0, engine->wall_origin_ns);
  if (Status s = sw->SetupPfcThresholds(); !s) return s.error();
  if (Status s = sw->SetupPorts(); !s) return s.error();
  if (Status s = sw->SetupException(); !s) return s.error();
  if (Status s = sw->SetupWorkers(workers); !s) return s.error();
  std::vector<lb::PortMask> base;
  if (sw->w_ > 0) base = sw->tree_.valid_uplink_table(c.self(), lb::LinkSet(sw->tree_.num_links()));
  auto st = sw->BuildState(c.lb(), std::move(base));
  if (!st) return st.error();
  sw->Publish(std::move(*st));
  return sw;
}

Result<uint16_t> Switch::DpdkPort(uint32_t port) const {
  if (!port_present(port)) {
    return MakeError(ErrorCode::kNotFound, fmt::format("port {} is not configured", port));
  }
  return rx_[port].dpdk_port;
}

Status Switch::SetupPfcThresholds() {
  if (!cfg_.pfc.enabled) return {};
  pfc_th_.assign(static_cast<size_t>(cfg_.k), fabric::PfcThresholds{});
  storms_ = std::make_unique<StormWindow[]>(static_cast<size_t>(cfg_.k));
  pfc_in_.assign(static_cast<size_t>(cfg_.k), QueueStats::Pfc{});
  std::vector<fabric::TimePs> refresh(static_cast<size_t>(cfg_.k), 0);
  for (const PortConfig& pc : cfg_.ports) {
    // The link as the port's egress emulates it (kUnshapedPortRate if
    // unshaped: a per-switch engine's veth with no rate).
    const fabric::EmuWire w = fabric::EmuWire::At(cfg_.PortRate(pc).value_or(kUnshapedPortRate),
                                                  pc.latency_us.value_or(cfg_.egress.latency_us));
    auto th = fabric::PortPfcThresholds(
        pc.buffer_bytes.value_or(cfg_.egress.buffer_bytes), w.ps_per_byte, w.latency,
        pkt::kMaxDataFrame, cfg_.pfc.response_quanta, cfg_.pfc.xoff_bytes, cfg_.pfc.xon_bytes);
    if (!th) {
      return InvalidArgument(
          fmt::format("switch {} port {}: {}", cfg_.name, pc.port, th.error().message));
    }
    pfc_th_[pc.port] = *th;
    refresh[pc.port] = fabric::PauseQuantaPs(cfg_.pfc.quanta, w.ps_per_byte) / 2;
  }
  pfc_gen_ = PfcGenerator(pfc_th_, refresh);
  if (engine_now_) {
    // RC ACKs queued with data (no ack priority) are of data's class.
    emu_pfc_ = std::make_unique<EmuPfc>(fabric::PfcIngress(pfc_th_, refresh, cfg_.pfc.quanta),
                                        cfg_.pfc.dscp, !cfg_.egress.priority_ack);
    emu_pfc_->wd_detect_ps = fabric::TimePs{cfg_.pfc.wd_detect_ms} * 1'000'000'000;
    emu_pfc_->wd_restore_ps = fabric::TimePs{cfg_.pfc.wd_restore_ms} * 1'000'000'000;
    emu_pfc_->wd_action = cfg_.pfc.wd_action;
    // Room for every port's XOFF and XON several times over: FlushPfc
    // swaps the two, and neither grows on the engine's thread.
    emu_pfc_->pending.reserve(64 * static_cast<size_t>(cfg_.k));
    pfc_flushing_.reserve(64 * static_cast<size_t>(cfg_.k));
  }
  return {};
}

Status Switch::SetupPorts() {
  const size_t k = static_cast<size_t>(cfg_.k);
  rx_ = std::vector<PortRx>(k);
  queues_ = std::vector<PortQueue>(k);
  tx_ctx_.assign(k, DeviceTxCtx{});
  dpdk_port_.assign(k, 0);
  port_mac_.assign(k, pkt::MacAddr{});
  // Hosted by the engine, a frame's mbuf port is its fat-tree port.
  port_of_dpdk_.assign(std::max<size_t>(RTE_MAX_ETHPORTS, k), -1);
  // The per-switch engine's PFC counts every queued frame by ingress port
  // (a tally its workers check as they queue, and the control thread polls);
  // the shared engine's, the lossless ones, exactly (EmuPfc).
  if (cfg_.pfc.enabled && !engine_now_) {
    tally_ = std::make_unique<IngressTally>(port_of_dpdk_.data(),
                                            static_cast<uint32_t>(port_of_dpdk_.size()),
                                            static_cast<uint32_t>(k));
    std::vector<uint64_t> caps(k, UINT64_MAX);
    for (size_t p = 0; p < k && p < pfc_th_.size(); ++p)
      if (pfc_th_[p].xoff > 0) caps[p] = pfc_th_[p].xoff + pfc_th_[p].headroom;
    tally_->SetCaps(std::move(caps));
  }
  // The switch's egress, with a port's own rate, buffer and ECN threshold
  // where its config gives them.
  auto queue_config = [&](const PortConfig& pc) {
    PortQueueConfig qc;
    const std::optional<LinkRate> rate = cfg_.PortRate(pc);
    qc.limit_bytes = pc.buffer_bytes.value_or(cfg_.egress.buffer_bytes);
    qc.ecn_bytes = pc.ecn_bytes.value_or(cfg_.egress.ecn_bytes);
    qc.tsc_hz = tsc_hz_;
    qc.burst = cfg_.burst;
    qc.ring_slots = cfg_.egress.ring_slots;
    if (rate) qc.bytes_per_tsc = rate->bytes_per_second() / static_cast<double>(tsc_hz_);
    if (engine_now_ && rate) {
      qc.emulated = true;
      qc.wire = fabric::EmuWire::At(*rate, pc.latency_us.value_or(cfg_.egress.latency_us));
    }
    // A PFC quantum is 512 bit times at the port's rate (kUnshapedPortRate
    // if unshaped).
    qc.pfc_tsc_per_quantum =
        512.0 / rate.value_or(kUnshapedPortRate).bits_per_second() * static_cast<double>(tsc_hz_);
    if (cfg_.pfc.enabled && !engine_now_) {  // the shared engine's comes with EmuPfc
      qc.wd_detect_ps = fabric::TimePs{cfg_.pfc.wd_detect_ms} * 1'000'000'000;
      qc.wd_restore_ps = fabric::TimePs{cfg_.pfc.wd_restore_ms} * 1'000'000'000;
      qc.wd_action = cfg_.pfc.wd_action;
      qc.lossless_dscp = cfg_.pfc.dscp;
      qc.lossless_acks = !cfg_.egress.priority_ack;
    }
    return qc;
  };

  // The switch's buffer: its ports' (0 where a port's is unlimited: no alarm).
  uint64_t capacity = 0;
  bool unlimited = false;
  for (const PortConfig& pc : cfg_.ports) {
    const uint64_t b = pc.buffer_bytes.value_or(cfg_.egress.buffer_bytes);
    unlimited |= b == 0;
    capacity += b;
  }
  buffer_alarm_ = fabric::BufferAlarm(unlimited ? 0 : capacity);
  const uint32_t slots = cfg_.egress.ring_slots;
  const uint32_t nports = static_cast<uint32_t>(cfg_.ports.size());
  // Hosted by the engine, the pool holds only the control thread's frames
  // (replies, PFC): forwarded frames stay in the engine's pool.
  const uint32_t nmbufs =
      engine_now_ ? 2047
                  : std::max<uint32_t>(
                        4095, nports * (kRxDesc + kTxDesc + 2 * slots + 2 * kMaxBurst) + 2048);
  const std::string pool_name =
      fmt::format("ofan_{}", cfg_.name).substr(0, RTE_MEMPOOL_NAMESIZE - 1);
  pool_.reset(rte_pktmbuf_pool_create(pool_name.c_str(), nmbufs, 256, 0, kMbufDataRoom,
                                      static_cast<int>(rte_socket_id())));
  if (!pool_) {
    return MakeError(
        ErrorCode::kIo,
        fmt::format("cannot create a pool of {} mbufs ({} MiB): {}. Are there enough hugepages "
                    "(scripts/hugepages.sh), or lower egress.ring_slots?",
                    nmbufs, static_cast<uint64_t>(nmbufs) * (kMbufDataRoom + 192) >> 20,
                    rte_strerror(rte_errno)));
  }
  if (engine_now_) return SetupEnginePorts(queue_config);
  for (const PortConfig& pc : cfg_.ports) {
    // A test's ring port, or the vdev's name (before its args).
    std::string name = pc.ring() ? pc.ring_device() : pc.dev.substr(0, pc.dev.find(','));
    uint16_t id = 0;
    if (rte_eth_dev_get_port_by_name(name.c_str(), &id) != 0) {
      return MakeError(ErrorCode::kNotFound,
                       fmt::format("port {}: no DPDK device '{}' (pass it to EAL as --vdev '{}')",
                                   pc.port, name, pc.dev));
    }
    rx_[pc.port].present = true;
    rx_[pc.port].device = true;
    rx_[pc.port].dpdk_port = id;
    dpdk_port_[pc.port] = id;
    port_of_dpdk_[id] = static_cast<int32_t>(pc.port);
    const int socket = rte_eth_dev_socket_id(id) < 0 ? static_cast<int>(rte_socket_id())
                                                     : rte_eth_dev_socket_id(id);
    auto fd =
        StartPortDevice(id, pool_.get(), kRxDesc, kTxDesc, socket, fmt::format("port {}", pc.port));
    if (!fd) return fd.error();
    rx_[pc.port].wait_fd = *fd;
    // A configured MAC is the port's, whether or not the device takes it
    // (ring ports do not): it is what frames leave with and ARP answers.
    rte_ether_addr mac;
    if (pc.mac) {
      std::memcpy(mac.addr_bytes, pc.mac->b.data(), 6);
      rte_eth_dev_default_mac_addr_set(id, &mac);  // best effort
      port_mac_[pc.port] = *pc.mac;
    } else {
      rte_eth_macaddr_get(id, &mac);
      std::memcpy(port_mac_[pc.port].b.data(), mac.addr_bytes, 6);
    }
    if (pc.peer_mac) neighbors_.Set(pc.port, *pc.peer_mac);
    PortQueue& q = queues_[pc.port];
    tx_ctx_[pc.port] = DeviceTxCtx{id, pc.port, capture_.get()};
    if (Status s = q.Init(fmt::format("{}_{}", pc.port, cfg_.name), socket, queue_config(pc),
                          DeviceTx(&tx_ctx_[pc.port]), tally_.get(), rte_rdtsc());
        !s) {
      return MakeError(ErrorCode::kIo, fmt::format("port {}: {}", pc.port, s.error().message));
    }
    q.set_admin(pc.admin_up);
    // An edge's host ports resequence (egress/reorder.h), on the TSC.
    if (cfg_.reorder.enabled && router_.role() == lb::Role::kEdge && pc.port < w_)
      q.set_reorder(cfg_.reorder.Limits(cfg_.PortGbps(pc)));
  }
  return {};
}

template <class QueueConfig>
Status Switch::SetupEnginePorts(const QueueConfig& queue_config) {
  for (const PortConfig& pc : cfg_.ports) {
    const uint32_t p = pc.port;
    if (!pc.mac) {
      return InvalidArgument(
          fmt::format("switch {} port {}: the shared engine needs the port's mac", cfg_.name, p));
    }
    const PortQueueConfig qc = queue_config(pc);
    if (!qc.emulated) {
      return InvalidArgument(
          fmt::format("switch {} port {}: the shared engine needs a rate "
                      "(egress.rate_gbps > 0)",
                      cfg_.name, p));
    }
    rx_[p].present = true;
    port_of_dpdk_[p] = static_cast<int32_t>(p);
    port_mac_[p] = *pc.mac;
    if (pc.peer_mac) neighbors_.Set(p, *pc.peer_mac);
    PortQueue& q = queues_[p];
    if (Status s = q.Init(fmt::format("{}_{}", p, cfg_.name), static_cast<int>(rte_socket_id()), qc,
                          engine_.tx[p], tally_.get(), Now());
        !s) {
      return MakeError(ErrorCode::kIo, fmt::format("port {}: {}", p, s.error().message));
    }
    q.set_admin(pc.admin_up);
    q.set_waker(engine_.waker);
    q.set_emu_pfc(emu_pfc_.get());
    // An edge's host ports resequence (egress/reorder.h).
    if (cfg_.reorder.enabled && router_.role() == lb::Role::kEdge && p < w_)
      q.set_reorder(cfg_.reorder.Limits(cfg_.PortGbps(pc)));
  }
  return {};
}

Status Switch::SetupException() {
  ExceptionPath::Setup s;
  s.name = cfg_.name;
  s.socket = static_cast<int>(rte_socket_id());
  s.gateway_ip = router_.gateway_ip();
  s.switch_ip = router_.switch_ip();
  s.port_mac = port_mac_;
  s.port_of_dpdk = &port_of_dpdk_;
  s.neighbors = &neighbors_;
  control_tx_ = ControlSender(pool_.get(), &queues_);
  s.sender = control_tx_;
  if (cfg_.kernel_ports) {
    // A TAP for each port without an interface of its own: the shared
    // engine's in-memory links (a host port's veth is in the namespace).
    std::vector<KernelPorts::PortSpec> specs;
    for (const PortConfig& pc : cfg_.ports) {
      if (!engine_.now || !pc.in_memory()) continue;
      specs.push_back({pc.port, lb::PortIfName(static_cast<int>(pc.port)), port_mac_[pc.port],
                       pkt::kNetdevMtu});
    }
    auto k = KernelPorts::Create(cfg_.netns, specs, static_cast<uint32_t>(cfg_.k));
    if (!k)
      return MakeError(k.error().code, fmt::format("switch {}: {}", cfg_.name, k.error().message));
    kernel_ = std::move(*k);
    s.kernel = kernel_.get();
    exception_.Subscribe(
        [this](uint32_t port, std::span<const uint8_t> f) { kernel_->Deliver(port, f); });
  }
  return exception_.Init(std::move(s));
}

Status Switch::SetupWorkers(uint32_t n) {
  const uint32_t planned = std::max<uint32_t>(1, n);
  for (uint32_t i = 0; i < planned; ++i) {
    auto w = std::make_unique<Worker>();
    w->index = i;
    w->slots.assign(kQueuesPerPort * static_cast<size_t>(cfg_.k) * kMaxVector, nullptr);
    w->ResetBuckets();
    workers_.push_back(std::move(w));
  }
  // Pipes go round-robin to workers; a worker owns RX and TX of its ports.
  for (const PortConfig& pc : cfg_.ports) {
    workers_[cfg_.pipe_of(pc.port) % planned]->ports.push_back(pc.port);
  }
  owner_.assign(static_cast<size_t>(cfg_.k), UINT32_MAX);
  for (auto& w : workers_) {
    std::sort(w->ports.begin(), w->ports.end());
    for (uint32_t p : w->ports) owner_[p] = w->index;
    // Each port's fair share of a vector, in whole bursts (at least one).
    const uint32_t np = std::max<uint32_t>(1, static_cast<uint32_t>(w->ports.size()));
    w->port_share = std::max(cfg_.burst, kMaxVector / np / cfg_.burst * cfg_.burst);
  }
  return {};
}

Result<std::unique_ptr<FwdState>> Switch::BuildState(const LbChoice& lb,
                                                     std::vector<lb::PortMask> base) const {
  auto st = std::make_unique<FwdState>();
  st->lb = lb;
  st->base_masks = std::move(base);
  std::vector<lb::PortMask> masks = st->base_masks;
  lb::PortMask admin = 0;
  for (uint32_t u = 0; u < w_; ++u) {
    if (queues_[w_ + u].up()) admin |= lb::PortMask{1} << u;
  }
  for (auto& m : masks) m &= admin;
  st->table = std::make_unique<lb::UplinkTable>(w_, std::move(masks));
  LaneBuild b;
  b.table = st->table.get();
  b.policy = cfg_.policy;
  b.policy.kind = lb.kind;
  b.policy.pipe_size = cfg_.pipe_size;
  b.num_ports = static_cast<uint32_t>(cfg_.k);
  b.switch_id = cfg_.switch_id;
  b.workers = static_cast<uint32_t>(workers_.size());
  // The lane that serves this choice builds its LB objects (balance.h).
  st->lanes = WithLane(
      Lanes{}, lb, [&]<class L>() -> std::unique_ptr<LaneState> { return L::Build(b); }, &st->lane);
  st->run = VectorFnFor(router_.role(), st->lane);
  return st;
}

void Switch::Publish(std::unique_ptr<FwdState> next) {
  next->generation = next_generation_++;
  FwdState* old = state_.exchange(next.release(), std::memory_order_acq_rel);
  if (!old) return;
  retired_.emplace_back(old);
  const bool engine_runs = engine_.running && engine_.running->load();
  if (!running_.load() && !engine_runs) {
    retired_.clear();  // no worker thread can hold it
    return;
  }
  // The engine's thread marks every switch quiescent each time it wakes.
  if (engine_runs && engine_.waker) engine_.waker->Kick();
  // Grace period: every worker finishes the iteration that may use `old`.
  const uint64_t gen = state_.load()->generation;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (auto& w : workers_) {
    while (w->seen_generation.load(std::memory_order_acquire) < gen &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  bool all = true;
  for (auto& w : workers_) all &= w->seen_generation.load(std::memory_order_acquire) >= gen;
  if (all) retired_.clear();  // otherwise kept until the next publish or exit
}

bool Switch::InjectFrame(uint32_t port, std::span<const uint8_t> frame) {
  if (!port_present(port)) return false;
  rte_mbuf* m = rte_pktmbuf_alloc(pool_.get());
  if (!m) return false;
  auto* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size())));
  if (!d) {
    rte_pktmbuf_free(m);
    return false;
  }
  std::memcpy(d, frame.data(), frame.size());
  m->port = RTE_MBUF_PORT_INVALID;  // from no ingress port: no PFC accounting
  if (!queues_[port].EnqueueOne(kNormalQueue, m)) {
    rte_pktmbuf_free(m);
    return false;
  }
  return true;
}

void Switch::GeneratePfc(fabric::TimePs now) {
  // Off the fast path, at the control thread's polling rate (egress/pfc.h).
  // The shared engine's PFC runs on its own thread, in emulated time.
  if (!tally_) return;
  for (uint32_t p = 0; p < rx_.size(); ++p) {
    if (!rx_[p].present) continue;
    const uint64_t held = tally_->Bytes(p);
    const PfcGenerator::Action a = pfc_gen_.Step(p, held, now);
    // The port as an ingress, as the shared engine's EmuPfc reports it
    // (at this thread's polls: what it held between them is not seen).
    QueueStats::Pfc& in = pfc_in_[p];
    in.held_bytes = held;
    in.max_bytes = std::max(in.max_bytes, held);
    if (held > pfc_th_[p].xoff)
      in.headroom_max_bytes = std::max(in.headroom_max_bytes, held - pfc_th_[p].xoff);
    in.xoff_events = pfc_gen_.xoff_events(p);
    queues_[p].PublishPfcIngress(in);
    if (a == PfcGenerator::Action::kNone) continue;
    const auto f = BuildPfcFrame(port_mac_[p], cfg_.pfc.priority,
                                 a == PfcGenerator::Action::kXoff ? cfg_.pfc.quanta : 0);
    if (control_tx_.Send(p, f, control_counters_)) {
      control_counters_.Add(Counter::kPfcTx);
      queues_[p].CountPfcSent();
    }
  }
}

void Switch::XoffOnCrossing(Worker& wk, const RxSegment* seg, uint32_t nseg) {
  for (uint32_t s = 0; s < nseg; ++s) {
    const uint32_t p = seg[s].port;
    if (!pfc_gen_.Crossed(p, tally_->Bytes(p))) continue;
    const auto f = BuildPfcFrame(port_mac_[p], cfg_.pfc.priority, cfg_.pfc.quanta);
    if (!control_tx_.Send(p, f, wk.counters)) {
      pfc_gen_.XoffFailed(p);
      continue;
    }
    wk.counters.Add(Counter::kPfcTx);
    queues_[p].CountPfcSent();
    pfc_gen_.XoffSent(p);
  }
}

Result<CaptureStatus> Switch::StartCapture(const CaptureRequest& r) {
  std::vector<bool> present(rx_.size());
  for (uint32_t p = 0; p < rx_.size(); ++p) present[p] = rx_[p].present;
  return capture_->Start(r, present);
}

void Switch::ServiceControl() {
  exception_.Service(control_counters_);
  if (kernel_) {
    kernel_->Service([this](uint32_t port, std::span<const uint8_t> f) {
      return control_tx_.Send(port, f, control_counters_);
    });
  }
  capture_->Service();
  for (auto& f : services_) {
    if (f) f();
  }
  if (!engine_now_) {  // the shared engine does both in emulated time (EngineDrain)
    const double ps_per_tick = 1e12 / static_cast<double>(tsc_hz_);
    const auto now_ps =
        static_cast<uint64_t>(static_cast<double>(rte_rdtsc() - start_tsc_) * ps_per_tick);
    if (cfg_.pfc.enabled) GeneratePfc(now_ps);
    SampleBuffer(now_ps);
  }
}

size_t Switch::AddControlService(std::function<void()> f) {
  services_.push_back(std::move(f));
  return services_.size() - 1;
}

void Switch::RemoveControlService(size_t id) {
  if (id < services_.size()) services_[id] = nullptr;
}

// Below this a wait costs more than it saves: spin.
constexpr uint64_t kMinShaperWaitUs = 5;
constexpr uint64_t kDeviceRetryUs = 10;
// Idle polls before an idle wait: a worker that can block on its sockets
// waits almost at once (a frame ends the wait); one that can only sleep
// spins longer first, since a sleep cannot be cut short.
constexpr uint32_t kIdleSpinsBlocking = 8, kIdleSpinsSleeping = 256;

Status Switch::RunWorkerLoop(Switch* sw, uint32_t wi) {
  Worker& wk = *sw->workers_[wi];
  // Waits for the shaper are tens of microseconds: the default 50 us of
  // timer slack would stretch every one of them (and the emulated rate).
  if (wk.idle.can_block()) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  while (!sw->stop_.load(std::memory_order_relaxed)) {
    const uint32_t work = sw->PollWorker(wi);
    if (work) {
      wk.idle_streak = 0;
      if (wk.sleep_us.load(std::memory_order_relaxed))
        wk.sleep_us.store(0, std::memory_order_relaxed);
      wk.busy_loops.store(wk.busy_loops.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
      // Nothing moved, frames wait for the bucket (or a pause): an emulated
      // link at a few hundred Mb/s sends a frame every tens of microseconds,
      // and spinning in between would starve the other switches sharing the
      // cores. Wait on the sockets (a frame or a kick ends it) until the
      // first can leave.
      // A frame the device refused (ready now, yet nothing moved) is retried
      // after a short wait, not in a spin that would keep the device's other
      // users (the kernel's TX, the peer) off the CPU.
      if (work == wk.held && wk.idle.can_block()) {
        const uint64_t now = rte_rdtsc();
        const uint64_t us =
            wk.ready_tsc > now ? (wk.ready_tsc - now) * 1'000'000 / sw->tsc_hz_ : kDeviceRetryUs;
        if (us >= kMinShaperWaitUs) {
          wk.idle.Begin();
          wk.idle.Wait(static_cast<uint32_t>(std::min<uint64_t>(us, sw->cfg_.max_wait_us)));
          wk.idle.End();
          wk.shaper_waits.store(wk.shaper_waits.load(std::memory_order_relaxed) + 1,
                                std::memory_order_relaxed);
        }
      }
      continue;
    }
    wk.idle_loops.store(wk.idle_loops.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    // Idle backoff: spin a little, then sleep, doubling up to max_sleep_us (up
    // to max_wait_us when the worker can block on its ports' sockets), so
    // that twenty idle switches share two cores.
    const uint32_t spins = wk.idle.can_block() ? kIdleSpinsBlocking : kIdleSpinsSleeping;
    if (++wk.idle_streak < spins || sw->cfg_.max_sleep_us == 0) continue;
    const uint32_t last = wk.sleep_us.load(std::memory_order_relaxed);
    const uint32_t cap = wk.idle.can_block() ? sw->cfg_.max_wait_us : sw->cfg_.max_sleep_us;
    const uint32_t sleep = last ? std::min(last * 2, cap) : 1;
    wk.sleep_us.store(sleep, std::memory_order_relaxed);
    wk.sleeps.store(wk.sleeps.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (wk.idle.can_block()) {
      wk.idle.Begin();
      bool queued = false;
      for (const uint32_t p : wk.ports) queued |= sw->queues_[p].has_frames();
      if (!queued) wk.idle.Wait(sleep);
      wk.idle.End();
    } else {
      rte_delay_us_sleep(sleep);
    }
  }
  return {};
}

Status Switch::Launch() {
  if (running_.load()) return {};
  stop_.store(false);
  std::vector<unsigned> lcores;
  unsigned id;
  RTE_LCORE_FOREACH_WORKER(id) lcores.push_back(id);
  if (lcores.size() < workers_.size()) {
    return InvalidArgument(
        fmt::format("{} worker lcores planned but EAL has {} (give EAL -l with more cores)",
                    workers_.size(), lcores.size()));
  }
  // Workers whose ports all have sockets block on them when idle; their
  // queues then tell them when another thread queues frames.
  for (auto& w : workers_) {
    if (w->idle.can_block()) continue;  // a relaunch: already set up
    std::vector<int> fds;
    for (const uint32_t p : w->ports) fds.push_back(rx_[p].wait_fd);
    if (!w->idle.Init(fds)) return MakeError(ErrorCode::kIo, "eventfd for an idle worker");
    if (w->idle.can_block()) {
      for (const uint32_t p : w->ports) queues_[p].set_waker(&w->idle);
    }
  }
  running_.store(true);
  for (size_t i = 0; i < workers_.size(); ++i) {
    workers_[i]->lcore_id = lcores[i];
    struct Arg {
      Switch* sw;
      uint32_t wi;
    };
    auto* arg = new Arg{this, static_cast<uint32_t>(i)};
    const int rc = rte_eal_remote_launch(
        [](void* a) -> int {
          std::unique_ptr<Arg> owned(static_cast<Arg*>(a));
          return RunWorkerLoop(owned->sw, owned->wi).ok() ? 0 : -1;
        },
        arg, lcores[i]);
    if (rc != 0) {
      delete arg;
      Stop();
      return DpdkError(fmt::format("launch worker on lcore {}", lcores[i]), rc);
    }
    launched_lcores_.push_back(lcores[i]);
  }
  return {};
}

void Switch::Stop() {
  stop_.store(true);
  for (auto& w : workers_) w->idle.Kick();
  for (unsigned l : launched_lcores_) rte_eal_wait_lcore(l);
  launched_lcores_.clear();
  running_.store(false);
}

Counters Switch::TotalCounters() const {
  Counters c;
  for (const auto& w : workers_) c += w->counters;
  c += control_counters_;
  return c;
}

Status Switch::SetPolicy(const LbChoice& lb) {
  const FwdState* cur = state_.load();
  auto st = BuildState(lb, cur->base_masks);
  if (!st) return st.error();
  Publish(std::move(*st));
  return {};
}

Status Switch::SetPortAdmin(uint32_t port, bool up) {
  if (!port_present(port)) {
    return MakeError(ErrorCode::kNotFound, fmt::format("port {} is not configured", port));
  }
  queues_[port].set_admin(up);
  const FwdState* cur = state_.load();
  auto st = BuildState(cur->lb, cur->base_masks);  // recompute the uplink lists
  if (!st) return st.error();
  Publish(std::move(*st));
  return {};
}

Status Switch::SetPortPfcStorm(uint32_t port, uint32_t for_ms) {
  if (!port_present(port)) {
    return MakeError(ErrorCode::kNotFound, fmt::format("port {} is not configured", port));
  }
  if (!cfg_.pfc.enabled) {
    return InvalidArgument("pfc_storm: a switch with pfc.enabled only");
  }
  if (!engine_now_) {
    // The per-switch engine's hosts are their own processes: the storm's
    // frames come from the host (`uroce pfc-storm`, which ofan-emu fault
    // starts); the switch keeps the window it was told of, on its ports'
    // clock, for status beside its watchdog's times.
    if (router_.role() != lb::Role::kEdge || port >= w_) {
      return InvalidArgument(
          fmt::format("pfc_storm: port {} is not a host's (a storm is a host NIC's)", port));
    }
    const uint64_t now = queues_[port].TscPs(rte_rdtsc());
    if (for_ms) storms_[port].started.store(now, std::memory_order_relaxed);
    storms_[port].until.store(now + uint64_t{for_ms} * 1'000'000'000, std::memory_order_relaxed);
    return {};
  }
  std::atomic<uint64_t>* until =
      port < engine_.storm_until.size() ? engine_.storm_until[port] : nullptr;
  if (!until) {
    return InvalidArgument(
        fmt::format("pfc_storm: port {} is not a host's (a storm is a host NIC's)", port));
  }
  // From the engine's time now; 0 ends a storm.
  const uint64_t now = Now(), end = now + uint64_t{for_ms} * 1'000'000'000;
  until->store(for_ms ? end : 0, std::memory_order_relaxed);
  if (for_ms) storms_[port].started.store(now, std::memory_order_relaxed);
  storms_[port].until.store(end, std::memory_order_relaxed);  // now: ended
  if (engine_.waker) engine_.waker->Kick();
  return {};
}

Status Switch::SetPortWire(uint32_t port, bool cut) {
  if (!port_present(port)) {
    return MakeError(ErrorCode::kNotFound, fmt::format("port {} is not configured", port));
  }
  queues_[port].set_wire_cut(cut);
  return {};
}

Status Switch::LoadMasks(const std::vector<lb::PortMask>& masks) {
  const uint32_t nd = router_.num_dests();
  if (masks.size() != nd) {
    return InvalidArgument(
        fmt::format("expected {} masks (one per destination {} of this {}), got {}", nd,
                    router_.role() == lb::Role::kEdge ? "edge switch" : "pod",
                    lb::RoleName(router_.role()), masks.size()));
  }
  const lb::PortMask all = w_ >= 64 ? ~lb::PortMask{0} : (lb::PortMask{1} << w_) - 1;
  for (size_t d = 0; d < masks.size(); ++d) {
    if (masks[d] & ~all) {
      return InvalidArgument(
          fmt::format("mask {} of destination {} names uplinks beyond w={}", masks[d], d, w_));
    }
  }
  const FwdState* cur = state_.load();
  auto st = BuildState(cur->lb, masks);
  if (!st) return st.error();
  Publish(std::move(*st));
  return {};
}

void Switch::FlushPfc(LcoreCounters& ctr) {
  EmuPfc& pfc = *emu_pfc_;
  // Queueing one may start frames, whose releases decide more: until none.
  while (!pfc.pending.empty()) {
    pfc_flushing_.swap(pfc.pending);
    // In time order (a port takes its frames in time order); few at once,
    // and an insertion sort allocates nothing.
    for (size_t i = 1; i < pfc_flushing_.size(); ++i) {
      for (size_t j = i; j > 0 && pfc_flushing_[j - 1].t > pfc_flushing_[j].t; --j)
        std::swap(pfc_flushing_[j - 1], pfc_flushing_[j]);
    }
    for (const fabric::PfcAction& a : pfc_flushing_) {
      rte_mbuf* m = rte_pktmbuf_alloc(pool_.get());
      if (!m) {
        ctr.Add(Counter::kDropControlFull);
        continue;
      }
      const auto f = BuildPfcFrame(port_mac_[a.port], cfg_.pfc.priority, a.quanta);
      std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
      FrameTime(m) = a.t;
      m->port = RTE_MBUF_PORT_INVALID;  // from no ingress port
      queues_[a.port].EnqueueEmuFrame(kPrioQueue, m, ctr);
      ctr.Add(Counter::kPfcTx);
    }
    pfc_flushing_.clear();
  }
  for (const uint32_t p : workers_[0]->ports) {
    const fabric::PfcPortCounters& c = pfc.model.counters(p);
    QueueStats::Pfc in;
    in.xoff_events = c.xoff_events;
    in.headroom_max_bytes = c.headroom_max_bytes;
    in.max_bytes = c.max_bytes;
    in.held_bytes = pfc.model.held(p);
    in.lossless_drops = c.lossless_drops;
    queues_[p].PublishPfcIngress(in);
  }
}

void Switch::SampleBuffer(uint64_t now_ps) {
  if (buffer_pub_.reset.load(std::memory_order_relaxed)) {
    buffer_alarm_.ResetMax();
    buffer_pub_.reset.store(false, std::memory_order_relaxed);
  }
  uint64_t held = 0;
  for (const PortQueue& q : queues_) {
    if (q.present()) held += q.backlog_bytes();
  }
  buffer_alarm_.Sample(now_ps, held);
  buffer_pub_.bytes.store(held, std::memory_order_relaxed);
  buffer_pub_.max_bytes.store(buffer_alarm_.max_bytes(), std::memory_order_relaxed);
  buffer_pub_.raised.store(buffer_alarm_.raised(), std::memory_order_relaxed);
  buffer_pub_.up_ps.store(buffer_alarm_.up_ps(now_ps), std::memory_order_relaxed);
  buffer_pub_.active.store(buffer_alarm_.active(), std::memory_order_relaxed);
}

void Switch::ResetQueueStats() {
  const uint64_t now = Now();
  buffer_pub_.reset.store(true);             // the sampler's thread does it
  if (emu_pfc_) pfc_reset_.store(true);      // the engine's thread does it
  if (engine_.lag) engine_.lag->Reset(now);  // a new measurement starts: lag too
  for (PortQueue& q : queues_) q.ResetStats(now);
}

Snapshot Switch::TakeSnapshot(SnapshotParts parts) const {
  const FwdState* st = state_.load();
  Snapshot s;
  s.name = cfg_.name;
  s.k = cfg_.k;
  s.levels = cfg_.levels;
  s.switch_id = cfg_.switch_id;
  s.info = tree_.info(cfg_.self());
  s.lb = st->lb;
  s.pipe_size = cfg_.pipe_size;
  s.generation = st->generation;
  s.uplinks = w_;
  s.running = running_.load();
  s.uptime_s = static_cast<double>(Now() - start_tsc_) / static_cast<double>(tsc_hz_);
  s.buffer.capacity_bytes = buffer_alarm_.capacity();  // set once, before the threads
  s.buffer.bytes = buffer_pub_.bytes.load();
  s.buffer.max_bytes = buffer_pub_.max_bytes.load();
  s.buffer.alarm_pct = fabric::kBufferAlarmPct;
  s.buffer.alarms = buffer_pub_.raised.load();
  s.buffer.alarm_active = buffer_pub_.active.load();
  s.buffer.alarm_us = static_cast<double>(buffer_pub_.up_ps.load()) / 1e6;
  if (engine_now_) {
    s.engine.shared = true;
    s.engine.now_s = static_cast<double>(Now()) / 1e12;
    s.engine.stopped = stopped();
    if (const EngineLag* l = engine_.lag) {
      s.engine.windows = l->windows.load();
      s.engine.lag_events = l->events.load();
      s.engine.late_tx = l->late_tx.load();
      s.engine.pass_max_us = static_cast<double>(l->pass_max_ps.load()) / 1e6;
      s.engine.wake_late_max_us = static_cast<double>(l->wake_late_max_ps.load()) / 1e6;
      s.engine.host_stamp = fabric::HostStampName(l->host_stamp.load());
      s.engine.host_frames = l->host_frames.load();
      s.engine.host_stamped = l->host_stamped.load();
      s.engine.stamp_late = l->stamp_late.load();
      s.engine.stamp_late_max_us = static_cast<double>(l->stamp_late_max_ps.load()) / 1e6;
      const uint64_t span = Now() - std::min(Now(), l->since_ps.load());
      s.engine.lag_share =
          span ? static_cast<double>(l->late_ps.load()) / static_cast<double>(span) : 0;
      s.engine.lag_max_us = static_cast<double>(l->max_ps.load()) / 1e6;
      s.engine.lag_threshold_us = static_cast<double>(l->threshold_ps.load()) / 1e6;
    }
  }
  for (const auto& w : workers_) {
    WorkerSnapshot ws;
    ws.worker = w->index;
    ws.lcore = w->lcore_id;
    ws.ports = w->ports;
    ws.busy_loops = w->busy_loops.load();
    ws.idle_loops = w->idle_loops.load();
    ws.sleeps = w->sleeps.load();
    ws.sleep_us = w->sleep_us.load();
    ws.blocking = w->idle.can_block();
    ws.traffic_wakeups = w->idle.wakeups_by_traffic();
    ws.shaper_waits = w->shaper_waits.load();
    ws.counters += w->counters;
    s.total += ws.counters;
    s.workers.push_back(std::move(ws));
  }
  s.total += control_counters_;
  if (parts.ports) {
    const uint64_t now = Now();
    for (uint32_t p = 0; p < rx_.size(); ++p) {
      if (!rx_[p].present) continue;
      PortSnapshot ps;
      ps.port = p;
      for (const auto& pc : cfg_.ports) {
        if (pc.port == p) ps.dev = pc.dev;
      }
      ps.dpdk_port = rx_[p].dpdk_port;
      ps.up_direction = p >= w_ && w_ > 0;
      ps.mac = port_mac_[p];
      ps.neighbor = neighbors_.Get(p);
      ps.admin_up = queues_[p].admin_up();
      ps.wire_cut = queues_[p].wire_cut();
      if (rx_[p].device) {
        rte_eth_link link;
        std::memset(&link, 0, sizeof(link));
        rte_eth_link_get_nowait(rx_[p].dpdk_port, &link);
        ps.link_up = link.link_status != 0;
        rte_eth_stats es;
        if (rte_eth_stats_get(rx_[p].dpdk_port, &es) == 0) ps.rx_missed = es.imissed + es.rx_nombuf;
      } else {
        ps.link_up = !stopped();  // an in-memory link (or the engine's host port)
      }
      ps.rx_packets = rx_[p].packets.load();
      ps.rx_bytes = rx_[p].bytes.load();
      ps.queue = queues_[p].Stats(now);
      ps.limit_bytes = queues_[p].config().limit_bytes;
      ps.ecn_bytes = queues_[p].config().ecn_bytes;
      if (cfg_.pfc.enabled) {
        ps.pfc_thresholds = pfc_th_[p];
        ps.pfc_wd_action = std::string(fabric::PfcWdActionName(cfg_.pfc.wd_action));
        if (const uint64_t from = storms_[p].started.load(); from != fabric::kNever)
          ps.pfc_storm = {from, storms_[p].until.load()};
      }
      if (kernel_ && kernel_->has(p)) {
        const KernelPorts::PortCounters& kc = kernel_->counters(p);
        PortSnapshot::Kernel k;
        k.name = kernel_->name(p);
        k.to_kernel = kc.to_kernel;
        k.to_kernel_lost = kc.to_kernel_lost;
        k.from_kernel = kc.from_kernel;
        k.from_kernel_lost = kc.from_kernel_lost;
        ps.kernel = std::move(k);
      } else if (const std::string ifname = TrappedInterface(ps.dev); !ifname.empty()) {
        PortSnapshot::Kernel k;
        k.name = ifname;
        k.via = "xdp";
        if (auto t = ReadTrapStats(ifname)) {
          k.to_kernel = t->to_kernel();
          k.trap = *t;
        } else {
          k.error = t.error().message;
        }
        ps.kernel = std::move(k);
      }
      s.ports.push_back(std::move(ps));
    }
  }
  if (parts.keys) {
    const lb::UplinkTable& t = *st->table;
    const lb::SharedOfanTable* shared = st->lanes->shared();
    for (uint32_t key = 0; key < t.num_keys(); ++key) {
      const lb::UplinkList l = t.list(key);
      KeySnapshot ks;
      ks.key = key;
      ks.dest = key % std::max(1u, t.num_dests());
      ks.ack = key >= t.num_dests();
      ks.order.assign(l.ports, l.ports + l.n);
      if (shared) ks.counter = shared->Load(key);
      s.keys.push_back(std::move(ks));
    }
  }
  return s;
}

uint64_t Switch::Now() const {
  return engine_now_ ? engine_now_->load(std::memory_order_relaxed) : rte_rdtsc();
}

Status Switch::SetSwitchAdmin(bool up) {
  if (!engine_now_) {
    return InvalidArgument(
        "switch_admin: only a switch of the shared engine stops alone (stop a "
        "per-switch ofan-dp by its process)");
  }
  stopped_.store(!up, std::memory_order_relaxed);
  if (engine_.waker) engine_.waker->Kick();  // the engine drops the queues now
  return {};
}

void Switch::EngineQuiescent() {
  workers_[0]->seen_generation.store(state_.load(std::memory_order_acquire)->generation,
                                     std::memory_order_release);
}

uint32_t Switch::EngineDrain(uint64_t now) {
  Worker& wk = *workers_[0];
  uint32_t sent = 0;
  if (stopped()) [[unlikely]] {
    if (!dropped_when_stopped_) {
      for (PortQueue& q : queues_) {
        if (q.present()) q.DropWaiting(wk.counters);
      }
      dropped_when_stopped_ = true;
    }
  } else {
    dropped_when_stopped_ = false;
  }
  if (emu_pfc_) [[unlikely]] {
    if (pfc_reset_.load(std::memory_order_relaxed)) {
      emu_pfc_->model.ResetMaxima();
      pfc_reset_.store(false, std::memory_order_relaxed);
    }
    emu_pfc_->model.Due(now, emu_pfc_->pending);  // XOFF refreshes
    FlushPfc(wk.counters);
  }
  for (const uint32_t p : wk.ports) sent += queues_[p].Drain(now, wk.counters);
  if (emu_pfc_) [[unlikely]]
    FlushPfc(wk.counters);  // XONs of what started
  SampleBuffer(now);
  return sent;
}

uint64_t Switch::EngineNextEvent() const {
  uint64_t next = emu_pfc_ ? emu_pfc_->model.NextRefresh() : fabric::kNever;
  for (const uint32_t p : workers_[0]->ports) {
    const PortQueue& q = queues_[p];
    if (q.inbox_pending()) return 0;
    next = std::min<uint64_t>(next, q.NextStart());
    if (emu_pfc_) [[unlikely]]
      next = std::min<uint64_t>(next, q.WatchdogDeadline());
  }
  return next;
}

}  // namespace ofan::dp
