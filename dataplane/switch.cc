#include "dataplane/switch.h"

#include <fmt/format.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "dataplane/packet/builder.h"
#include "dataplane/packet/headers.h"
#include "dataplane/stages/rewrite.h"

namespace ofan::dp {
namespace {

using nlohmann::json;

constexpr uint16_t kRxDesc = 512;
constexpr uint16_t kTxDesc = 512;
// 3840 B: the largest data room the AF_XDP PMD accepts on veth (larger fails
// to create the UMEM); frames up to ~3450 B, so RoCE MTU 2048 fits.
constexpr uint32_t kMbufDataRoom = 3840;

Error DpdkError(const std::string& what, int rc) {
  return MakeError(ErrorCode::kIo, fmt::format("{}: {}", what, rte_strerror(rc < 0 ? -rc : rc)));
}

}  // namespace

Switch::Switch(const DpConfig& c)
    : cfg_(c), tree_(c.tree()), router_(tree_, c.self()), neighbor_(static_cast<size_t>(c.k)) {
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
  for (size_t p = 0; p < egress_.size(); ++p) {
    EgressPort& e = egress_[p];
    for (rte_ring* r : e.ring) {
      if (!r) continue;
      rte_mbuf* m;
      while (rte_ring_dequeue(r, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
      rte_ring_free(r);
    }
    for (uint32_t i = 0; i < e.staged_n; ++i) rte_pktmbuf_free(e.staged[i]);
    if (e.present) {
      rte_eth_dev_stop(e.dpdk_port);
    }
  }
  if (exception_ring_) {
    rte_mbuf* m;
    while (rte_ring_dequeue(exception_ring_, reinterpret_cast<void**>(&m)) == 0)
      rte_pktmbuf_free(m);
    rte_ring_free(exception_ring_);
  }
  delete state_.load();
  retired_.clear();
  // Ports are closed by the owner of the EAL (main / test) after all
  // switches are gone; the mempool goes last.
  for (size_t p = 0; p < egress_.size(); ++p) {
    if (egress_[p].present) rte_eth_dev_close(egress_[p].dpdk_port);
  }
  if (pool_) rte_mempool_free(pool_);
}

Result<std::unique_ptr<Switch>> Switch::Create(const DpConfig& c, uint32_t workers) {
  if (Status s = c.Validate(); !s) return s.error();
  std::unique_ptr<Switch> sw(new Switch(c));
  sw->w_ = static_cast<uint32_t>(sw->tree_.num_uplinks(c.self()));
  sw->tsc_hz_ = rte_get_tsc_hz();
  sw->start_tsc_ = rte_rdtsc();
  if (c.egress.rate_gbps > 0)
    sw->bytes_per_tsc_ = c.egress.rate_gbps * 1e9 / 8.0 / static_cast<double>(sw->tsc_hz_);
  // A PFC quantum is 512 bit times at the port's rate (10 Gb/s if unshaped).
  const double rate_bps = c.egress.rate_gbps > 0 ? c.egress.rate_gbps * 1e9 : 10e9;
  sw->pfc_tsc_per_quantum_ = 512.0 / rate_bps * static_cast<double>(sw->tsc_hz_);
  if (Status s = sw->SetupPorts(); !s) return s.error();
  if (Status s = sw->SetupWorkers(workers); !s) return s.error();
  std::vector<lb::PortMask> base;
  if (sw->w_ > 0) base = sw->tree_.valid_uplink_table(c.self(), lb::LinkSet(sw->tree_.num_links()));
  auto st = sw->BuildState(c.policy.kind, c.ofan_mode, std::move(base));
  if (!st) return st.error();
  sw->Publish(std::move(*st));
  return sw;
}

Result<uint16_t> Switch::DpdkPort(uint32_t port) const {
  if (port >= egress_.size() || !egress_[port].present) {
    return MakeError(ErrorCode::kNotFound, fmt::format("port {} is not configured", port));
  }
  return egress_[port].dpdk_port;
}

Status Switch::SetupPorts() {
  const size_t k = static_cast<size_t>(cfg_.k);
  egress_ = std::vector<EgressPort>(k);
  port_mac_.assign(k, pkt::MacAddr{});
  port_of_dpdk_.assign(RTE_MAX_ETHPORTS, -1);
  const uint32_t slots = cfg_.egress.ring_slots;
  const uint32_t nports = static_cast<uint32_t>(cfg_.ports.size());
  const uint32_t nmbufs =
      std::max<uint32_t>(4095, nports * (kRxDesc + kTxDesc + 2 * slots + 2 * kMaxBurst) + 2048);
  const std::string pool_name =
      fmt::format("ofan_{}", cfg_.name).substr(0, RTE_MEMPOOL_NAMESIZE - 1);
  pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), nmbufs, 256, 0, kMbufDataRoom,
                                  static_cast<int>(rte_socket_id()));
  if (!pool_) {
    return MakeError(
        ErrorCode::kIo,
        fmt::format("cannot create a pool of {} mbufs ({} MiB): {}. Are there enough hugepages "
                    "(scripts/hugepages.sh), or lower egress.ring_slots?",
                    nmbufs, static_cast<uint64_t>(nmbufs) * (kMbufDataRoom + 192) >> 20,
                    rte_strerror(rte_errno)));
  }
  const std::string xname = fmt::format("ofx_{}", cfg_.name).substr(0, RTE_RING_NAMESIZE - 1);
  exception_ring_ =
      rte_ring_create(xname.c_str(), 1024, static_cast<int>(rte_socket_id()), RING_F_SC_DEQ);
  if (!exception_ring_) return DpdkError("exception ring", rte_errno);
  for (const PortConfig& pc : cfg_.ports) {
    // "ring:NAME": a port a test made with rte_eth_from_rings(NAME), which
    // names it net_ring_NAME. Otherwise the vdev's name (before its args).
    std::string name = pc.dev.rfind("ring:", 0) == 0 ? "net_ring_" + pc.dev.substr(5)
                                                     : pc.dev.substr(0, pc.dev.find(','));
    uint16_t id = 0;
    if (rte_eth_dev_get_port_by_name(name.c_str(), &id) != 0) {
      return MakeError(ErrorCode::kNotFound,
                       fmt::format("port {}: no DPDK device '{}' (pass it to EAL as --vdev '{}')",
                                   pc.port, name, pc.dev));
    }
    EgressPort& e = egress_[pc.port];
    e.present = true;
    e.dpdk_port = id;
    e.limit_bytes = cfg_.egress.buffer_bytes;
    e.ecn_bytes = cfg_.egress.ecn_bytes;
    e.admin_up.store(pc.admin_up);
    port_of_dpdk_[id] = static_cast<int32_t>(pc.port);
    rte_eth_dev_info info;
    if (int rc = rte_eth_dev_info_get(id, &info); rc != 0)
      return DpdkError(fmt::format("port {} info", pc.port), rc);
    rte_eth_conf conf;
    std::memset(&conf, 0, sizeof(conf));
    if (int rc = rte_eth_dev_configure(id, 1, 1, &conf); rc != 0)
      return DpdkError(fmt::format("port {} configure", pc.port), rc);
    // Room for RoCE MTU 2048 frames, but no more than an mbuf holds: AF_XDP
    // keeps XDP_PACKET_HEADROOM (256 B) ahead of the frame on top of the mbuf
    // headroom, so the largest frame is 3840 - 128 - 256 = 3456 B (measured on
    // veth; docs/dev/dpdk-notes.md §4). A larger netdev MTU (it was 3500) lets
    // the kernel hand over frames the UMEM silently drops, counted nowhere
    // here. Leave room for a VLAN tag too: MTU 3438.
    constexpr uint32_t kMaxFrame = kMbufDataRoom - RTE_PKTMBUF_HEADROOM - 256;
    const uint16_t mtu = static_cast<uint16_t>(
        std::min<uint32_t>(info.max_mtu, kMaxFrame - RTE_ETHER_HDR_LEN - RTE_VLAN_HLEN));
    rte_eth_dev_set_mtu(id, mtu);  // best effort: ring/null ports ignore it
    uint16_t rxd = kRxDesc, txd = kTxDesc;
    rte_eth_dev_adjust_nb_rx_tx_desc(id, &rxd, &txd);
    const int socket = rte_eth_dev_socket_id(id) < 0 ? static_cast<int>(rte_socket_id())
                                                     : rte_eth_dev_socket_id(id);
    if (int rc = rte_eth_rx_queue_setup(id, 0, rxd, static_cast<unsigned>(socket), nullptr, pool_);
        rc != 0) {
      return DpdkError(fmt::format("port {} rx queue", pc.port), rc);
    }
    if (int rc = rte_eth_tx_queue_setup(id, 0, txd, static_cast<unsigned>(socket), nullptr);
        rc != 0) {
      return DpdkError(fmt::format("port {} tx queue", pc.port), rc);
    }
    rte_ether_addr mac;
    if (pc.mac) {
      std::memcpy(mac.addr_bytes, pc.mac->b.data(), 6);
      rte_eth_dev_default_mac_addr_set(id, &mac);
    }
    rte_eth_macaddr_get(id, &mac);
    std::memcpy(port_mac_[pc.port].b.data(), mac.addr_bytes, 6);
    if (pc.peer_mac) {
      neighbor_[pc.port].store(PackMac(*pc.peer_mac) | kNeighborKnown);
      neighbor_gen_.fetch_add(1, std::memory_order_release);
    }
    rte_eth_promiscuous_enable(id);  // a switch port takes every frame
    if (int rc = rte_eth_dev_start(id); rc != 0)
      return DpdkError(fmt::format("port {} start", pc.port), rc);
    for (int q = 0; q < 2; ++q) {
      const std::string rn =
          fmt::format("oq{}_{}_{}", q, pc.port, cfg_.name).substr(0, RTE_RING_NAMESIZE - 1);
      e.ring[q] = rte_ring_create(rn.c_str(), slots, socket, RING_F_SC_DEQ);
      if (!e.ring[q]) return DpdkError(fmt::format("port {} egress ring", pc.port), rte_errno);
    }
    e.stat_last_tsc = e.stat_start_tsc = e.tb_last_tsc = rte_rdtsc();
  }
  return {};
}

Status Switch::SetupWorkers(uint32_t n) {
  const uint32_t planned = std::max<uint32_t>(1, n);
  for (uint32_t i = 0; i < planned; ++i) {
    auto w = std::make_unique<Worker>();
    w->index = i;
    w->slots.assign(2 * static_cast<size_t>(cfg_.k) * kMaxVector, nullptr);
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

Result<std::unique_ptr<FwdState>> Switch::BuildState(lb::PolicyKind kind, OfanMode mode,
                                                     std::vector<lb::PortMask> base) const {
  auto st = std::make_unique<FwdState>();
  st->kind = kind;
  st->mode = kind == lb::PolicyKind::kPofan ? OfanMode::kPofan : mode;
  st->base_masks = std::move(base);
  std::vector<lb::PortMask> masks = st->base_masks;
  lb::PortMask admin = 0;
  for (uint32_t u = 0; u < w_; ++u) {
    const EgressPort& e = egress_[w_ + u];
    if (e.up()) admin |= lb::PortMask{1} << u;
  }
  for (auto& m : masks) m &= admin;
  st->table = std::make_unique<lb::UplinkTable>(w_, std::move(masks));
  lb::PolicyConfig pc = cfg_.policy;
  pc.kind = kind;
  pc.pipe_size = cfg_.pipe_size;
  const bool shared = kind == lb::PolicyKind::kOfan && st->mode != OfanMode::kPofan;
  if (kind == lb::PolicyKind::kOfan && st->mode == OfanMode::kPofan)
    pc.kind = lb::PolicyKind::kPofan;
  if (shared)
    st->shared = std::make_unique<lb::SharedOfanTable>(*st->table, pc.seed ^ cfg_.switch_id);
  for (size_t i = 0; i < workers_.size(); ++i) {
    LcoreLb l;
    if (shared && st->mode == OfanMode::kAtomic) {
      l.atomic = std::make_unique<lb::OfanAtomic>(st->shared.get());
    } else if (shared) {
      l.combined = std::make_unique<lb::OfanCombined>(st->shared.get());
    } else {
      // Every worker gets the same seed per switch: a pipe belongs to one
      // worker, so its POfan row is only ever used by that worker.
      lb::SwitchLbSetup setup{st->table.get(), static_cast<uint32_t>(cfg_.k),
                              static_cast<uint32_t>(SplitMix64(cfg_.switch_id * 7919ull + i))};
      l.any = std::make_unique<lb::AnyPolicy>(pc, setup);
    }
    st->lcore.push_back(std::move(l));
  }
  // The lane: the policy inside the vector pass (stages/balance.h).
  if (shared) {
    st->lane = st->mode == OfanMode::kAtomic ? LaneKind::kAtomic : LaneKind::kCombined;
  } else if (pc.kind == lb::PolicyKind::kEcmp) {
    st->lane = LaneKind::kEcmp;
  } else if (pc.kind == lb::PolicyKind::kPofan) {
    st->lane = LaneKind::kPofan;
  } else {
    st->lane = LaneKind::kAny;
  }
  st->run = VectorFnFor(router_.role(), st->lane);
  return st;
}

void Switch::Publish(std::unique_ptr<FwdState> next) {
  next->generation = next_generation_++;
  FwdState* old = state_.exchange(next.release(), std::memory_order_acq_rel);
  if (!old) return;
  retired_.emplace_back(old);
  if (!running_.load()) {
    retired_.clear();  // no worker thread can hold it
    return;
  }
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

void Switch::HandlePfc(Worker& wk, uint32_t in_port, const uint8_t* frame, uint32_t len,
                       uint64_t now) {
  wk.counters.Add(Counter::kPfcRx);
  uint32_t off = sizeof(pkt::EtherHdr);
  if (pkt::Load<pkt::EtherHdr>(frame).type.host() == pkt::ethertype::kVlan)
    off += sizeof(pkt::VlanTag);
  if (len < off + sizeof(pkt::PfcFrame)) return;
  const pkt::PfcFrame f = pkt::Load<pkt::PfcFrame>(frame + off);
  uint32_t quanta = 0;
  if (f.opcode.host() == pkt::kPauseOpcode) {
    quanta = f.class_enable.host();  // 802.3x: the first field is the pause time
  } else {
    const uint16_t ce = f.class_enable.host();
    if (!(ce & (1u << cfg_.pfc.priority))) return;
    quanta = f.quanta[cfg_.pfc.priority].host();
  }
  // Received on in_port: pause our transmission on that same port.
  EgressPort& e = egress_[in_port];
  e.paused_until_tsc = quanta == 0 ? 0 : now + static_cast<uint64_t>(quanta * pfc_tsc_per_quantum_);
}

void Switch::ReleaseIngress(rte_mbuf* m) {
  const int32_t in = m->port < port_of_dpdk_.size() ? port_of_dpdk_[m->port] : -1;
  if (in >= 0) {
    egress_[static_cast<size_t>(in)].ingress_bytes.fetch_sub(rte_pktmbuf_pkt_len(m),
                                                             std::memory_order_relaxed);
  }
}

bool Switch::SendControlFrame(uint32_t port, const uint8_t* frame, uint32_t len) {
  if (port >= egress_.size() || !egress_[port].present) return false;
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (!m) return false;
  uint8_t* d = reinterpret_cast<uint8_t*>(
      rte_pktmbuf_append(m, static_cast<uint16_t>(std::max<uint32_t>(len, 60))));
  if (!d) {
    rte_pktmbuf_free(m);
    return false;
  }
  std::memset(d, 0, std::max<uint32_t>(len, 60));
  std::memcpy(d, frame, len);
  m->port = RTE_MBUF_PORT_INVALID;  // not from any ingress: no PFC accounting
  EgressPort& e = egress_[port];
  e.bytes.fetch_add(rte_pktmbuf_pkt_len(m), std::memory_order_relaxed);
  if (rte_ring_mp_enqueue(e.ring[kPrioQueue], m) != 0) {
    e.bytes.fetch_sub(rte_pktmbuf_pkt_len(m), std::memory_order_relaxed);
    rte_pktmbuf_free(m);
    return false;
  }
  return true;
}

void Switch::SendPfc(uint32_t port, bool pause) {
  uint8_t f[sizeof(pkt::EtherHdr) + sizeof(pkt::PfcFrame)] = {};
  pkt::EtherHdr eth{pkt::kPfcDstMac, port_mac_[port],
                    pkt::Be16::FromHost(pkt::ethertype::kMacControl)};
  pkt::PfcFrame pfc{};
  pfc.opcode = pkt::Be16::FromHost(pkt::kPfcOpcode);
  pfc.class_enable = pkt::Be16::FromHost(static_cast<uint16_t>(1u << cfg_.pfc.priority));
  pfc.quanta[cfg_.pfc.priority] = pkt::Be16::FromHost(pause ? cfg_.pfc.quanta : 0);
  std::memcpy(f, &eth, sizeof(eth));
  std::memcpy(f + sizeof(eth), &pfc, sizeof(pfc));
  if (SendControlFrame(port, f, sizeof(f))) control_counters_.Add(Counter::kPfcTx);
}

void Switch::HandleException(rte_mbuf* m) {
  const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
  const uint32_t len = rte_pktmbuf_data_len(m);
  const int32_t port = m->port < port_of_dpdk_.size() ? port_of_dpdk_[m->port] : -1;
  if (port < 0 || len < sizeof(pkt::EtherHdr)) return;
  const uint32_t p = static_cast<uint32_t>(port);
  const pkt::EtherHdr eth = pkt::Load<pkt::EtherHdr>(d);
  if (eth.type.host() == pkt::ethertype::kArp &&
      len >= sizeof(pkt::EtherHdr) + sizeof(pkt::ArpHdr)) {
    const pkt::ArpHdr a = pkt::Load<pkt::ArpHdr>(d + sizeof(pkt::EtherHdr));
    // Learn the neighbour on this port from any ARP it sends.
    if (!a.sha.is_multicast() && !a.sha.is_zero()) {
      const uint64_t nb = PackMac(a.sha) | kNeighborKnown;
      if (neighbor_[p].exchange(nb) != nb) neighbor_gen_.fetch_add(1, std::memory_order_release);
    }
    // Answer requests for our own address on host ports (the hosts' gateway).
    const uint32_t gw = router_.gateway_ip();
    if (a.oper.host() == 1 && gw != 0 && a.tpa.host() == gw) {
      uint8_t reply[sizeof(pkt::EtherHdr) + sizeof(pkt::ArpHdr)];
      pkt::EtherHdr re{a.sha, port_mac_[p], pkt::Be16::FromHost(pkt::ethertype::kArp)};
      pkt::ArpHdr ra = a;
      ra.oper = pkt::Be16::FromHost(2);
      ra.sha = port_mac_[p];
      ra.spa = pkt::Be32::FromHost(gw);
      ra.tha = a.sha;
      ra.tpa = a.spa;
      std::memcpy(reply, &re, sizeof(re));
      std::memcpy(reply + sizeof(re), &ra, sizeof(ra));
      SendControlFrame(p, reply, sizeof(reply));
    }
    return;
  }
  if (eth.type.host() == pkt::ethertype::kIpv4) {
    // ICMP echo to the switch's own address: answer, so hosts can ping their gateway.
    const ParsedPacket pp = ParseFrame(d, len);
    if (pp.verdict != Verdict::kForward || pp.dst_ip != router_.gateway_ip()) return;
    const uint32_t ihl = (d[pp.l3_offset] & 0xF) * 4u;
    const uint32_t icmp = pp.l3_offset + ihl;
    if (d[pp.l3_offset + 9] != pkt::ipproto::kIcmp || len < icmp + 8 || d[icmp] != 8) return;
    std::vector<uint8_t> r(d, d + len);
    std::memcpy(&r[0], eth.src.b.data(), 6);
    std::memcpy(&r[6], port_mac_[p].b.data(), 6);
    uint8_t* ip = &r[pp.l3_offset];
    std::swap_ranges(ip + 12, ip + 16, ip + 16);
    ip[8] = 64;
    ip[10] = ip[11] = 0;
    const uint16_t c = pkt::Ipv4Checksum(ip, ihl);
    ip[10] = static_cast<uint8_t>(c >> 8);
    ip[11] = static_cast<uint8_t>(c);
    const uint32_t icmp_len = pp.l3_offset + static_cast<uint32_t>(ip[2] << 8 | ip[3]) - icmp;
    r[icmp] = 0;  // echo reply
    r[icmp + 2] = r[icmp + 3] = 0;
    const uint16_t ic = pkt::Ipv4Checksum(&r[icmp], std::min<uint32_t>(icmp_len, len - icmp));
    r[icmp + 2] = static_cast<uint8_t>(ic >> 8);
    r[icmp + 3] = static_cast<uint8_t>(ic);
    SendControlFrame(p, r.data(), static_cast<uint32_t>(r.size()));
  }
  // LLDP is counted (exception counter) and left to ofan-agent (issue 5).
}

void Switch::ServiceControl() {
  rte_mbuf* ms[kMaxBurst];
  unsigned n;
  while ((n = rte_ring_sc_dequeue_burst(exception_ring_, reinterpret_cast<void**>(ms), kMaxBurst,
                                        nullptr)) > 0) {
    for (unsigned i = 0; i < n; ++i) {
      HandleException(ms[i]);
      rte_pktmbuf_free(ms[i]);
    }
  }
  if (bench_frame_) {
    // Replace what the switch dropped since the last look.
    const uint64_t drops = TotalCounters().Drops();
    if (drops > bench_drops_seen_) {
      bench_drops_seen_ += InjectBench(
          static_cast<uint32_t>(std::min<uint64_t>(drops - bench_drops_seen_, 1u << 16)));
    }
  }
  if (cfg_.pfc.enabled) {
    // PFC generation from the bytes queued behind each ingress port is done
    // here, off the fast path, at the control thread's polling rate.
    for (uint32_t p = 0; p < egress_.size(); ++p) {
      EgressPort& e = egress_[p];
      if (!e.present) continue;
      const uint64_t b = e.ingress_bytes.load(std::memory_order_relaxed);
      if (b > cfg_.pfc.xoff_bytes && !e.pfc_sent_xoff.exchange(true)) SendPfc(p, true);
      if (b < cfg_.pfc.xon_bytes && e.pfc_sent_xoff.exchange(false)) SendPfc(p, false);
    }
  }
}

Status Switch::StartBenchTraffic(uint32_t population, uint32_t frame_bytes) {
  if (frame_bytes < 64 || frame_bytes > kMbufDataRoom - RTE_PKTMBUF_HEADROOM) {
    return MakeError(
        ErrorCode::kInvalidArgument,
        fmt::format("bench frame size must be in [64, {}]", kMbufDataRoom - RTE_PKTMBUF_HEADROOM));
  }
  bench_frame_ = frame_bytes;
  BuildBenchFrames();
  bench_drops_seen_ = TotalCounters().Drops();
  const uint32_t got = InjectBench(population);
  if (got < population) {
    return MakeError(
        ErrorCode::kIo,
        fmt::format("bench: only {} of {} frames injected (pool or rings full)", got, population));
  }
  return {};
}

void Switch::BuildBenchFrames() {
  // Frames to destinations above this switch, spread over many keys and
  // flows, TTL 255: on loopback ports they circulate until the TTL expires.
  // Built once: the control thread replaces expired frames at the
  // forwarding rate / 254 (over 100 k/s), and building each (the ICRC
  // especially) would take a good part of a core that, with two workers,
  // one of them shares.
  bench_frames_.clear();
  bench_down_.clear();
  for (uint32_t p = 0; p < egress_.size(); ++p) {
    if (egress_[p].present && (p < w_ || w_ == 0)) bench_down_.push_back(p);
  }
  if (bench_down_.empty()) {
    for (uint32_t p = 0; p < egress_.size(); ++p) {
      if (egress_[p].present) bench_down_.push_back(p);
    }
  }
  const uint32_t hosts = static_cast<uint32_t>(tree_.num_hosts());
  // 16 K flows, as ECMP sees them, in at most 4 MiB of templates.
  const uint32_t frames = std::clamp<uint32_t>((4u << 20) / bench_frame_, 1024, kBenchFlows);
  for (uint64_t seq = 0; seq < frames; ++seq) {
    // A destination that is not below this switch (a core has none: any will do).
    uint32_t h = static_cast<uint32_t>(SplitMix64(seq) % hosts);
    for (uint32_t t = 0;
         t < hosts && router_.Route(tree_.host_addr(lb::HostId(h))).kind == RouteKind::kDown &&
         router_.role() != lb::Role::kCore;
         ++t) {
      h = (h + 1) % hosts;
    }
    const uint32_t dst = tree_.host_addr(lb::HostId(h));
    const uint32_t payload = bench_frame_ > 62 ? bench_frame_ - 62 : 0;
    bench_frames_.push_back(
        pkt::PacketBuilder()
            .Eth(pkt::MacAddr{{0x02, 0, 0, 0, 0, 1}}, pkt::MacAddr{{0x02, 0, 0, 0, 0, 2}})
            .Ipv4((10u << 24) | 0xFE02u, dst, 255, pkt::ecn::kEct0)
            .Udp(static_cast<uint16_t>(0xC000 | (seq & 0x3FFF)), pkt::kRoceV2Port)
            .Bth(0x0A, static_cast<uint32_t>(seq & 0xFFFF), static_cast<uint32_t>(seq))
            .Payload(payload)
            .PadTo(bench_frame_)
            .Build());
  }
}

uint32_t Switch::InjectBench(uint32_t n) {
  if (bench_frames_.empty() || bench_down_.empty()) return 0;
  uint32_t done = 0;
  for (uint32_t i = 0; i < n; ++i, ++bench_seq_) {
    const std::vector<uint8_t>& f = bench_frames_[bench_seq_ % bench_frames_.size()];
    const uint32_t port = bench_down_[bench_seq_ % bench_down_.size()];
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    if (!m) break;
    uint8_t* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())));
    if (!d) {
      rte_pktmbuf_free(m);
      break;
    }
    std::memcpy(d, f.data(), f.size());
    m->port = RTE_MBUF_PORT_INVALID;
    EgressPort& e = egress_[port];
    e.bytes.fetch_add(f.size(), std::memory_order_relaxed);
    if (rte_ring_mp_enqueue(e.ring[kNormalQueue], m) != 0) {
      e.bytes.fetch_sub(f.size(), std::memory_order_relaxed);
      rte_pktmbuf_free(m);
      break;
    }
    ++done;
  }
  return done;
}

Status Switch::RunWorkerLoop(Switch* sw, uint32_t wi) {
  Worker& wk = *sw->workers_[wi];
  while (!sw->stop_.load(std::memory_order_relaxed)) {
    const uint32_t work = sw->PollWorker(wi);
    if (work) {
      wk.idle_streak = 0;
      if (wk.sleep_us) {
        wk.sleep_us = 0;
        wk.sleep_us_now.store(0, std::memory_order_relaxed);
      }
      wk.busy_loops.store(wk.busy_loops.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
      continue;
    }
    wk.idle_loops.store(wk.idle_loops.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    // Idle backoff: spin a little, then sleep, doubling up to max_sleep_us, so
    // that twenty idle switches share two cores.
    if (++wk.idle_streak < 256 || sw->cfg_.max_sleep_us == 0) continue;
    wk.sleep_us = wk.sleep_us ? std::min(wk.sleep_us * 2, sw->cfg_.max_sleep_us) : 1;
    wk.sleep_us_now.store(wk.sleep_us, std::memory_order_relaxed);
    wk.sleeps.store(wk.sleeps.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    rte_delay_us_sleep(wk.sleep_us);
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
    return MakeError(
        ErrorCode::kInvalidArgument,
        fmt::format("{} worker lcores planned but EAL has {} (give EAL -l with more cores)",
                    workers_.size(), lcores.size()));
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

Status Switch::SetPolicy(lb::PolicyKind kind, OfanMode mode) {
  const FwdState* cur = state_.load();
  auto st = BuildState(kind, mode, cur->base_masks);
  if (!st) return st.error();
  Publish(std::move(*st));
  return {};
}

Status Switch::SetPortAdmin(uint32_t port, bool up) {
  if (port >= egress_.size() || !egress_[port].present) {
    return MakeError(ErrorCode::kNotFound, fmt::format("port {} is not configured", port));
  }
  egress_[port].admin_up.store(up);
  const FwdState* cur = state_.load();
  auto st = BuildState(cur->kind, cur->mode, cur->base_masks);  // recompute the uplink lists
  if (!st) return st.error();
  Publish(std::move(*st));
  return {};
}

Status Switch::LoadMasks(const std::vector<lb::PortMask>& masks) {
  const uint32_t nd = router_.num_dests();
  if (masks.size() != nd) {
    return MakeError(ErrorCode::kInvalidArgument,
                     fmt::format("expected {} masks (one per destination {} of this {}), got {}",
                                 nd, router_.role() == lb::Role::kEdge ? "edge switch" : "pod",
                                 lb::RoleName(router_.role()), masks.size()));
  }
  const lb::PortMask all = w_ >= 64 ? ~lb::PortMask{0} : (lb::PortMask{1} << w_) - 1;
  for (size_t d = 0; d < masks.size(); ++d) {
    if (masks[d] & ~all) {
      return MakeError(
          ErrorCode::kInvalidArgument,
          fmt::format("mask {} of destination {} names uplinks beyond w={}", masks[d], d, w_));
    }
  }
  const FwdState* cur = state_.load();
  auto st = BuildState(cur->kind, cur->mode, masks);
  if (!st) return st.error();
  Publish(std::move(*st));
  return {};
}

void Switch::ResetQueueStats() {
  const uint64_t now = rte_rdtsc();
  for (EgressPort& e : egress_) {
    e.area_bytes.store(0);
    e.area_pkts.store(0);
    e.max_bytes.store(0);
    e.max_pkts.store(0);
    e.stat_start_tsc = now;
  }
}

json Switch::StatusJson() const {
  const FwdState* st = state_.load();
  const lb::SwitchInfo in = tree_.info(cfg_.self());
  json workers = json::array();
  for (const auto& w : workers_) {
    workers.push_back({{"worker", w->index},
                       {"lcore", w->lcore_id},
                       {"ports", w->ports},
                       {"busy_loops", w->busy_loops.load()},
                       {"idle_loops", w->idle_loops.load()},
                       {"sleeps", w->sleeps.load()},
                       {"sleep_us", w->sleep_us_now.load()}});
  }
  return {
      {"name", cfg_.name},
      {"fabric",
       {{"k", cfg_.k},
        {"levels", cfg_.levels},
        {"switch", cfg_.switch_id},
        {"role", lb::RoleName(in.role)},
        {"pod", in.pod},
        {"index", in.index}}},
      {"policy", lb::PolicyName(st->kind)},
      {"ofan_mode", OfanModeName(st->mode)},
      {"pipe_size", cfg_.pipe_size},
      {"generation", st->generation},
      {"uplinks", w_},
      {"running", running_.load()},
      {"uptime_s", static_cast<double>(rte_rdtsc() - start_tsc_) / static_cast<double>(tsc_hz_)},
      {"workers", workers}};
}

json Switch::CountersJson() const {
  const Counters c = TotalCounters();
  json total = json::object(), drops = json::object();
  uint64_t drop_sum = 0;
  for (size_t i = 0; i < kNumCounters; ++i) {
    const auto ctr = static_cast<Counter>(i);
    total[std::string(CounterName(ctr))] = c.v[i];
    if (IsDrop(ctr)) {
      drops[std::string(CounterName(ctr).substr(5))] = c.v[i];
      drop_sum += c.v[i];
    }
  }
  json per = json::array();
  for (const auto& w : workers_) {
    json one = json::object();
    for (size_t i = 0; i < kNumCounters; ++i) {
      if (const uint64_t v = w->counters.v[i].load(); v) one[std::string(kCounterNames[i])] = v;
    }
    per.push_back(one);
  }
  return {{"total", total}, {"drops", drops}, {"drops_total", drop_sum}, {"per_worker", per}};
}

json Switch::PortsJson() const {
  json out = json::array();
  for (uint32_t p = 0; p < egress_.size(); ++p) {
    const EgressPort& e = egress_[p];
    if (!e.present) continue;
    const uint64_t nb = neighbor_[p].load();
    rte_eth_link link;
    std::memset(&link, 0, sizeof(link));
    rte_eth_link_get_nowait(e.dpdk_port, &link);
    std::string dev;
    for (const auto& pc : cfg_.ports) {
      if (pc.port == p) dev = pc.dev;
    }
    out.push_back(
        {{"port", p},
         {"dev", dev},
         {"dpdk_port", e.dpdk_port},
         {"direction", p >= w_ && w_ > 0 ? "up" : "down"},
         {"mac", FormatMac(port_mac_[p])},
         {"neighbor", nb & kNeighborKnown ? json(FormatMac(UnpackMac(nb))) : json(nullptr)},
         {"admin", e.admin_up.load() ? "up" : "down"},
         {"link", link.link_status ? "up" : "down"},
         {"rx_packets", e.rx_packets.load()},
         {"rx_bytes", e.rx_bytes.load()},
         {"tx_packets", e.tx_packets.load()},
         {"tx_bytes", e.tx_bytes.load()}});
  }
  return out;
}

json Switch::QueuesJson() const {
  json out = json::array();
  const uint64_t now = rte_rdtsc();
  for (uint32_t p = 0; p < egress_.size(); ++p) {
    const EgressPort& e = egress_[p];
    if (!e.present) continue;
    const double span =
        static_cast<double>(std::max<uint64_t>(1, e.stat_last_tsc - e.stat_start_tsc));
    out.push_back({{"port", p},
                   {"bytes", e.bytes.load()},
                   {"packets", rte_ring_count(e.ring[0]) + rte_ring_count(e.ring[1]) + e.staged_n},
                   {"priority_packets", rte_ring_count(e.ring[0])},
                   {"max_bytes", e.max_bytes.load()},
                   {"max_packets", e.max_pkts.load()},
                   {"avg_bytes", e.area_bytes.load() / span},
                   {"avg_packets", e.area_pkts.load() / span},
                   {"drops_buffer", e.drops_buffer.load()},
                   {"ecn_marked", e.ecn_marked.load()},
                   {"paused", now < e.paused_until_tsc},
                   {"limit_bytes", e.limit_bytes},
                   {"ecn_bytes", e.ecn_bytes}});
  }
  return out;
}

json Switch::PointersJson() const {
  const FwdState* st = state_.load();
  json keys = json::array();
  const lb::UplinkTable& t = *st->table;
  for (uint32_t key = 0; key < t.num_keys(); ++key) {
    const lb::UplinkList l = t.list(key);
    std::vector<int> order(l.ports, l.ports + l.n);
    json k{{"key", key},
           {"dest", key % std::max(1u, t.num_dests())},
           {"class", key < t.num_dests() ? "data" : "ack"},
           {"order", order}};
    if (st->shared) k["counter"] = st->shared->Load(key);
    keys.push_back(k);
  }
  return {{"policy", lb::PolicyName(st->kind)},
          {"ofan_mode", OfanModeName(st->mode)},
          {"uplinks", w_},
          {"keys", keys}};
}

}  // namespace ofan::dp
