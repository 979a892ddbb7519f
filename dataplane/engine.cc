#include "dataplane/engine.h"

#include <fmt/format.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include "common/netns.h"
#include "common/rng.h"
#include "common/steady_ms.h"
#include "dataplane/egress/emu_pfc.h"
#include "dataplane/egress/pfc.h"
#include "dataplane/fabric/frame_time.h"
#include "dataplane/hostio/shm_io.h"
#include "dataplane/packet/frame_budget.h"
#include "dataplane/port_device.h"

namespace ofan::dp {
namespace {

constexpr uint16_t kHostRxDesc = 512, kHostTxDesc = 512;
// A PFC storm (Switch::SetPortPfcStorm): the broken NIC's XOFFs, one every
// millisecond of emulated time (each asks the longest pause). The host NICs
// the engine emulates send their PFC frames (storms, HostRxPause) from a
// MAC of their own (locally administered).
constexpr fabric::TimePs kStormEveryPs = 1'000'000'000;
constexpr pkt::MacAddr kStormMac{{0x02, 0x5C, 0x00, 0x00, 0x00, 0x01}};
// The shortest frame a port carries (Ethernet's minimum without FCS): the
// lookahead is a preamble and this long on the fastest link, plus its latency.
constexpr uint32_t kMinFrame = 60;
// The largest data frame of the fabric: the lag threshold is its time on
// the fastest link.
constexpr uint32_t kLagFrame = pkt::kMaxDataFrame;
// A pass of this many windows or more is a busy fabric's: the next pass
// waits for the batch (Loop).
constexpr uint32_t kBusyWindows = 4;
// An event due sooner than this is waited for by spinning: a sleep and its
// wakeup cost more.
constexpr uint64_t kSpinPs = 2'000'000;
// Two clock readings further apart than this (an interrupt between them)
// do not renew the kernel clock's offset (Engine::AnchorMonotonic).
constexpr uint64_t kAnchorMaxNs = 2'000;
// The engine thread's nice value where it cannot run real-time.
constexpr int kEngineNice = -10;

void AtomicMax(std::atomic<uint64_t>& a, uint64_t v) {  // one writer: the engine thread
  if (v > a.load(std::memory_order_relaxed)) a.store(v, std::memory_order_relaxed);
}

uint64_t TscPs(void* ctx) {
  const auto* e = static_cast<const std::pair<uint64_t, uint64_t>*>(ctx);  // tsc0, hz
  const uint64_t dt = rte_rdtsc() - e->first;
  // Whole seconds, then the rest: no overflow for centuries of uptime.
  const uint64_t sec = dt / e->second, rem = dt % e->second;
  return sec * 1'000'000'000'000ull +
         static_cast<uint64_t>(static_cast<double>(rem) * 1e12 / static_cast<double>(e->second));
}

std::string HostStampNames() {
  std::string names;
  for (const std::string_view n : fabric::kHostStampNames) {
    if (!names.empty()) names += ", ";
    names += n;
  }
  return names;
}

struct MemPeer {
  std::string sw;
  uint32_t port;
};

std::optional<MemPeer> ParseMem(const PortConfig& pc) {
  if (!pc.in_memory()) return std::nullopt;
  const std::string& dev = pc.dev;
  const auto colon = dev.rfind(':');
  if (colon <= 4) return MemPeer{"", UINT32_MAX};
  MemPeer p{dev.substr(4, colon - 4), UINT32_MAX};
  try {
    size_t used = 0;
    const unsigned long v = std::stoul(dev.substr(colon + 1), &used);
    if (used == dev.size() - colon - 1 && v < kMaxPorts) p.port = static_cast<uint32_t>(v);
  } catch (...) {
  }
  return p;
}

}  // namespace

// A port's TX hook context.
struct Engine::LinkCtx {
  Engine* engine = nullptr;
  Switch* from = nullptr;
  uint32_t from_port = 0;
  fabric::TimePs latency = 0;
  uint32_t to_sw = 0, to_port = 0;  // ToPeer
  int32_t host = -1;                // ToHost: hosts_ index
  // netem's loss and reorder (PortConfig), as probabilities; the link's own
  // generator, seeded from the switch and port, so a run repeats.
  double loss = 0, reorder = 0;
  Rng rng;
};

void Engine::PoolFree::operator()(rte_mempool* p) const { rte_mempool_free(p); }

Result<EngineConfig> LoadFabricFile(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    return InvalidArgument(fmt::format("fabric file {}: {}", path, e.what()));
  }
  if (!root.IsMap())
    return InvalidArgument(fmt::format("fabric file {}: expected a mapping", path));
  EngineConfig c;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>("");
    if (key != "switches" && key != "engine") {
      return InvalidArgument(
          fmt::format("fabric file {}: unknown key '{}' (switches, engine)", path, key));
    }
  }
  const YAML::Node sws = root["switches"];
  if (!sws || !sws.IsSequence() || sws.size() == 0) {
    return InvalidArgument(
        fmt::format("fabric file {}: 'switches' must list the switches' config files", path));
  }
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  for (size_t i = 0; i < sws.size(); ++i) {
    if (!sws[i].IsScalar())
      return InvalidArgument(fmt::format("fabric file {}: switches[{}]: a path", path, i));
    std::filesystem::path p = sws[i].as<std::string>();
    if (p.is_relative()) p = base / p;
    auto sc = LoadConfigFile(p.string());
    if (!sc) return InvalidArgument(fmt::format("{}: {}", p.string(), sc.error().message));
    c.switches.push_back(std::move(*sc));
  }
  if (const YAML::Node e = root["engine"]) {
    if (!e.IsMap())
      return InvalidArgument(fmt::format("fabric file {}: 'engine' must be a mapping", path));
    for (const auto& kv : e) {
      const std::string key = kv.first.as<std::string>("");
      try {
        if (key == "lag_us") {
          c.lag_us = kv.second.as<double>();
        } else if (key == "batch_us") {
          c.batch_us = kv.second.as<double>();
        } else if (key == "max_wait_us") {
          c.max_wait_us = kv.second.as<uint32_t>();
        } else if (key == "host_stamp") {
          const std::string v = kv.second.as<std::string>();
          const auto hs = fabric::ParseHostStamp(v);
          if (!hs) {
            return InvalidArgument(
                fmt::format("fabric file {}: engine.host_stamp '{}': not one of {}", path, v,
                            HostStampNames()));
          }
          c.host_stamp = *hs;
        } else {
          return InvalidArgument(fmt::format(
              "fabric file {}: engine.{}: unknown (lag_us, batch_us, max_wait_us, host_stamp)",
              path, key));
        }
      } catch (const YAML::Exception&) {
        return InvalidArgument(fmt::format("fabric file {}: engine.{}: not a {}", path, key,
                                           key == "host_stamp" ? "name" : "number"));
      }
    }
    if (!(c.batch_us >= 0 && c.batch_us <= 1e5)) {
      return InvalidArgument(
          fmt::format("fabric file {}: engine.batch_us must be in [0, 1e5]", path));
    }
    if (!(c.lag_us >= 0 && c.lag_us <= 1e6)) {
      return InvalidArgument(
          fmt::format("fabric file {}: engine.lag_us must be in [0, 1e6]", path));
    }
    if (c.max_wait_us < 1 || c.max_wait_us > 1'000'000) {
      return InvalidArgument(
          fmt::format("fabric file {}: engine.max_wait_us must be in 1..1000000", path));
    }
  }
  return c;
}

Engine::Engine(EngineClock clock) : clock_(clock) {}

Engine::~Engine() {
  Stop();
  // Switches first (their queues hold engine frames), then what is in flight.
  for (auto& per : in_) {
    for (InPort& ip : per) {
      while (!ip.fifo.empty()) {
        rte_pktmbuf_free(ip.fifo.front());
        ip.fifo.pop();
      }
    }
  }
  for (HostPort& h : hosts_) {
    while (!h.out.empty()) {
      rte_pktmbuf_free(h.out.front());
      h.out.pop();
    }
    if (h.nic) h.nic->Flush([](rte_mbuf* m) { rte_pktmbuf_free(m); });
  }
  switches_.clear();
  for (HostPort& h : hosts_) {
    if (h.io) {
      h.io.reset();  // detaches its XDP program, in the namespace
    } else {
      rte_eth_dev_stop(h.dev);
      rte_eth_dev_close(h.dev);
    }
  }
}

uint64_t Engine::WallPs() const { return clock_.now_ps(clock_.ctx); }

Result<std::unique_ptr<Engine>> Engine::Create(const EngineConfig& c, EngineClock clock) {
  if (Status s = RegisterFrameTime(); !s) return s.error();
  std::unique_ptr<Engine> e(new Engine(clock));
  e->tsc0_ = rte_rdtsc();
  e->tsc_hz_ = rte_get_tsc_hz();
  if (!e->clock_.now_ps) {
    // The TSC: its origin and rate, kept in the engine (ctx points at them).
    static_assert(sizeof(std::pair<uint64_t, uint64_t>) == 2 * sizeof(uint64_t));
    e->clock_.now_ps = &TscPs;
    e->clock_.ctx = &e->tsc_pair_;
    e->tsc_pair_ = {e->tsc0_, e->tsc_hz_};
  }
  if (Status s = e->Build(c); !s) return s.error();
  return e;
}

namespace {

// Every switch valid and named once (by_name: its index), every mem: port
// naming a port of another switch that names it back. The number of host
// ports (those that are not mem:).
Result<size_t> CheckCabling(const EngineConfig& c, std::map<std::string, uint32_t>& by_name) {
  const size_t n = c.switches.size();
  for (uint32_t s = 0; s < n; ++s) {
    if (Status v = c.switches[s].Validate(); !v)
      return InvalidArgument(fmt::format("switch {}: {}", c.switches[s].name, v.error().message));
    if (!by_name.emplace(c.switches[s].name, s).second)
      return InvalidArgument(fmt::format("two switches are named {}", c.switches[s].name));
  }
  size_t host_ports = 0;
  for (uint32_t s = 0; s < n; ++s) {
    const DpConfig& sc = c.switches[s];
    for (const PortConfig& pc : sc.ports) {
      const auto m = ParseMem(pc);
      if (!m) {
        ++host_ports;
        continue;
      }
      const std::string where = fmt::format("switch {} port {} ({})", sc.name, pc.port, pc.dev);
      if (m->sw.empty() || m->port == UINT32_MAX)
        return InvalidArgument(where + ": expected mem:SWITCH:PORT");
      const auto it = by_name.find(m->sw);
      if (it == by_name.end())
        return InvalidArgument(where + ": no switch " + m->sw + " in the fabric");
      const DpConfig& peer = c.switches[it->second];
      const PortConfig* back = nullptr;
      for (const PortConfig& q : peer.ports) {
        if (q.port == m->port) back = &q;
      }
      const std::string want = fmt::format("mem:{}:{}", sc.name, pc.port);
      if (!back || back->dev != want) {
        return InvalidArgument(
            fmt::format("{}: port {} of {} must be '{}'", where, m->port, m->sw, want));
      }
    }
  }
  return host_ports;
}

}  // namespace

Status Engine::Build(const EngineConfig& c) {
  max_wait_us_ = c.max_wait_us;
  // The kernel's times mean something only against the real clock.
  kernel_stamps_ = c.host_stamp == fabric::HostStamp::kKernel && clock_.now_ps == &TscPs;
  lag_.host_stamp.store(c.host_stamp);
  if (kernel_stamps_) AnchorMonotonic();
  const size_t n = c.switches.size();
  if (n == 0) return InvalidArgument("the fabric has no switch");
  std::map<std::string, uint32_t> by_name;
  auto cabled = CheckCabling(c, by_name);
  if (!cabled) return cabled.error();
  const size_t host_ports = *cabled;
  // Host frames: what the host ports' rings hold, and room for those in
  // flight through the fabric's queues.
  const uint32_t nmbufs = static_cast<uint32_t>(
      std::max<size_t>(8191, host_ports * (kHostRxDesc + kHostTxDesc + 1024) + 16384));
  pool_.reset(rte_pktmbuf_pool_create("ofan_engine", nmbufs, 256, 0, pkt::kMbufDataRoom,
                                      static_cast<int>(rte_socket_id())));
  if (!pool_) {
    return MakeError(
        ErrorCode::kIo,
        fmt::format("cannot create the engine's pool of {} mbufs ({} MiB): {}. Are "
                    "there enough hugepages (scripts/hugepages.sh)?",
                    nmbufs, static_cast<uint64_t>(nmbufs) * (pkt::kMbufDataRoom + 192) >> 20,
                    rte_strerror(rte_errno)));
  }
  in_.resize(n);
  host_of_.resize(n);
  next_.assign(n, fabric::kNever);
  hosts_.reserve(host_ports);
  storm_until_ = std::make_unique<std::atomic<uint64_t>[]>(std::max<size_t>(1, host_ports));
  vec_ = std::make_unique<RxVector>();
  uint64_t fastest_ps_per_kb = UINT64_MAX;
  lookahead_ = fabric::kNever;
  for (uint32_t s = 0; s < n; ++s) {
    const DpConfig& sc = c.switches[s];
    in_[s] = std::vector<InPort>(static_cast<size_t>(sc.k));
    host_of_[s].assign(static_cast<size_t>(sc.k), -1);
    EngineAttach a;
    a.now = &now_;
    a.running = &running_;
    a.waker = &wait_;
    a.lag = &lag_;
    a.wall_origin_ns =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count() -
                              static_cast<int64_t>(WallPs() / 1000));
    a.tx.assign(static_cast<size_t>(sc.k), TxHook{});
    a.storm_until.assign(static_cast<size_t>(sc.k), nullptr);
    for (const PortConfig& pc : sc.ports) {
      const std::optional<LinkRate> rate = sc.PortRate(pc);
      if (!rate) {
        return InvalidArgument(
            fmt::format("switch {} port {}: the shared engine needs a rate "
                        "(egress.rate_gbps > 0)",
                        sc.name, pc.port));
      }
      const fabric::EmuWire w =
          fabric::EmuWire::At(*rate, pc.latency_us.value_or(sc.egress.latency_us));
      // A reordered frame skips the latency: the least transit is then the
      // serialisation alone.
      lookahead_ = std::min(lookahead_, w.MinTransit(kMinFrame) -
                                            (pc.reorder_pct > 0 ? w.latency : fabric::TimePs{0}));
      fastest_ps_per_kb =
          std::min<uint64_t>(fastest_ps_per_kb, static_cast<uint64_t>(w.ps_per_byte * 1000));
      auto ctx = std::make_unique<LinkCtx>();
      ctx->engine = this;
      ctx->from_port = pc.port;
      ctx->latency = w.latency;
      ctx->loss = pc.loss_pct / 100;
      ctx->reorder = pc.reorder_pct / 100;
      ctx->rng.Seed(SplitMix64((uint64_t{sc.switch_id} << 8) ^ pc.port ^ 0x10557ull));
      if ((ctx->loss > 0 || ctx->reorder > 0) && !ParseMem(pc)) {
        return InvalidArgument(
            fmt::format("switch {} port {}: loss_pct and reorder_pct are for links between "
                        "switches (a host link has its wire's netem)",
                        sc.name, pc.port));
      }
      if (const auto m = ParseMem(pc)) {
        ctx->to_sw = by_name.at(m->sw);
        ctx->to_port = m->port;
        a.tx[pc.port] = TxHook{&Engine::ToPeer, ctx.get()};
      } else {
        HostPort h;
        h.sw = s;
        h.port = pc.port;
        h.wire = w;
        h.pfc = sc.pfc.enabled;
        h.pfc_priority = sc.pfc.priority;
        h.pfc_dscp = sc.pfc.dscp;
        if (h.pfc) {
          h.nic = std::make_unique<fabric::EmuPort<rte_mbuf*>>();
          h.nic->Configure(w, fabric::QueueLimits{});  // the host's memory: no tail drop
          has_host_nics_ = true;
        }
        if (Status st = OpenHostPort(sc, pc, h); !st) return st;
        ctx->host = static_cast<int32_t>(hosts_.size());
        host_of_[s][pc.port] = ctx->host;
        if (h.nic) a.storm_until[pc.port] = &storm_until_[hosts_.size()];
        hosts_.push_back(std::move(h));
        a.tx[pc.port] = TxHook{&Engine::ToHost, ctx.get()};
      }
      links_.push_back(std::move(ctx));
    }
    auto sw = Switch::Create(sc, 0, &a);
    if (!sw) return InvalidArgument(fmt::format("switch {}: {}", sc.name, sw.error().message));
    for (auto& l : links_) {
      if (!l->from) l->from = sw->get();
    }
    switches_.push_back(std::move(*sw));
  }
  lag_threshold_ =
      c.lag_us > 0 ? static_cast<uint64_t>(c.lag_us * 1e6) : fastest_ps_per_kb * kLagFrame / 1000;
  lag_.threshold_ps.store(lag_threshold_);
  // A quarter of the threshold, at most 100 us: batching leaves room under
  // it for a late wakeup.
  batch_ps_ = c.batch_us > 0 ? static_cast<uint64_t>(c.batch_us * 1e6)
                             : std::min<uint64_t>(lag_threshold_ / 4, 100'000'000);
  std::vector<int> fds;
  for (uint32_t i = 0; i < hosts_.size(); ++i) {
    const int fd = hosts_[i].fd;
    fds.push_back(fd);
    if (fd < 0) continue;
    if (static_cast<size_t>(fd) >= host_by_fd_.size()) host_by_fd_.resize(fd + 1, -1);
    host_by_fd_[fd] = static_cast<int32_t>(i);
  }
  woken_.reserve(hosts_.size());
  if (!wait_.InitAlways(fds)) return MakeError(ErrorCode::kIo, "epoll for the engine's wait");
  return {};
}

Status Engine::OpenHostPort(const DpConfig& sc, const PortConfig& pc, HostPort& h) {
  const std::string where = fmt::format("switch {} port {} ({})", sc.name, pc.port, pc.dev);
  if (pc.dev.rfind(kShmPrefix, 0) == 0) {
    // Shared-memory rings with the host's process (hostio/shm_io.h): made
    // here, attached by the host. Its frames carry their send time.
    const std::string path = pc.dev.substr(kShmPrefix.size());
    if (path.empty() || path[0] != '/')
      return InvalidArgument(where + ": expected shm:/ABSOLUTE/PATH");
    auto io = hostio::CreateShmLink(path);
    if (!io) return MakeError(io.error().code, where + ": " + io.error().message);
    h.io = std::move(*io);
    h.fd = h.io->fd();
    return {};
  }
  if (pc.dev.rfind("net_af_xdp", 0) == 0) {
    // The interface from the devargs ("net_af_xdp0,iface=p0,..."); the other
    // arguments are DPDK's and mean nothing to a socket of our own.
    std::string iface;
    for (size_t at = pc.dev.find(','); at != std::string::npos;) {
      const size_t next = pc.dev.find(',', at + 1);
      const std::string kv =
          pc.dev.substr(at + 1, next == std::string::npos ? next : next - at - 1);
      if (kv.rfind("iface=", 0) == 0) iface = kv.substr(6);
      at = next;
    }
    if (iface.empty()) return InvalidArgument(where + ": no iface= in the AF_XDP devargs");
    auto info = hostio::ReadIface(sc.netns, iface);
    if (!info) return MakeError(ErrorCode::kNotFound, where + ": " + info.error().message);
    hostio::IoOptions opts;
    opts.native_first = true;  // a host link may come through a netem wire
    opts.stamp = kernel_stamps_;
    auto io = hostio::OpenAfXdp(*info, opts);
    if (!io) return MakeError(ErrorCode::kIo, where + ": " + io.error().message);
    h.io = std::move(*io);
    h.fd = h.io->fd();
    return {};
  }
  // Inside the switch's namespace: the interface is found, and the AF_XDP
  // socket bound, there.
  return InNetns(sc.netns, [&]() -> Status {
    std::string name;
    if (pc.ring()) {
      name = pc.ring_device();
    } else {
      // Device names are per process: each switch's config names its own
      // (net_af_xdp0, ...), so the engine makes them unique, keeping the
      // driver's prefix the vdev bus matches on.
      const size_t comma = pc.dev.find(',');
      name = fmt::format("{}_h{}", pc.dev.substr(0, comma), hosts_.size());
      const std::string devargs = comma == std::string::npos ? name : name + pc.dev.substr(comma);
      if (int rc = rte_dev_probe(devargs.c_str()); rc != 0) {
        return MakeError(ErrorCode::kIo, fmt::format("{}: cannot open: {}", where,
                                                     rte_strerror(rc < 0 ? -rc : rc)));
      }
    }
    uint16_t id = 0;
    if (rte_eth_dev_get_port_by_name(name.c_str(), &id) != 0)
      return MakeError(ErrorCode::kNotFound, fmt::format("{}: no DPDK device {}", where, name));
    h.dev = id;
    auto fd = StartPortDevice(id, pool_.get(), kHostRxDesc, kHostTxDesc,
                              static_cast<int>(rte_socket_id()), where);
    if (!fd) return fd.error();
    h.fd = *fd;
    return {};
  });
}

// -- the hooks -------------------------------------------------------------

// Copies of what a port sends, for its capture, each at the time it is on
// the wire (its last bit: its arrival less the link's latency).
void Engine::CaptureSent(const LinkCtx& l, rte_mbuf** pkts, uint16_t n) {
  PortCapture& cap = l.from->capture();
  if (!cap.captures(l.from_port)) [[likely]]
    return;
  for (uint16_t i = 0; i < n; ++i) {
    const uint32_t k = cap.CopyTx(l.from_port, pkts + i, 1, FrameTime(pkts[i]) - l.latency);
    cap.CommitTx(l.from_port, k);
  }
}

uint16_t Engine::ToPeer(void* ctx, rte_mbuf** pkts, uint16_t n) {
  auto* l = static_cast<LinkCtx*>(ctx);
  Engine& e = *l->engine;
  CaptureSent(*l, pkts, n);
  InPort& in = e.in_[l->to_sw][l->to_port];
  uint64_t first = fabric::kNever;
  if (l->loss > 0 || l->reorder > 0) [[unlikely]] {
    uint32_t lost = 0;
    for (uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = pkts[i];
      if (l->loss > 0 && l->rng.Uniform() < l->loss) {
        rte_pktmbuf_free(m);
        ++lost;
        continue;
      }
      m->port = static_cast<uint16_t>(l->to_port);
      // Reordered: sent with no latency, it arrives ahead of frames sent
      // before it; the input stays in time order (insertion from the back).
      if (l->reorder > 0 && l->rng.Uniform() < l->reorder) FrameTime(m) -= l->latency;
      in.fifo.push(m);
      for (size_t j = in.fifo.size() - 1; j > 0 && FrameTime(in.fifo[j - 1]) > FrameTime(m); --j)
        std::swap(in.fifo[j - 1], in.fifo[j]);
      first = std::min<uint64_t>(first, FrameTime(m));
    }
    if (lost) l->from->EngineCount(Counter::kDropLinkLoss, lost);
  } else {
    for (uint16_t i = 0; i < n; ++i) {
      pkts[i]->port = static_cast<uint16_t>(l->to_port);
      in.fifo.push(pkts[i]);
    }
    first = FrameTime(pkts[0]);
  }
  e.next_[l->to_sw] = std::min<uint64_t>(e.next_[l->to_sw], first);
  return n;
}

uint16_t Engine::ToHost(void* ctx, rte_mbuf** pkts, uint16_t n) {
  auto* l = static_cast<LinkCtx*>(ctx);
  Engine& e = *l->engine;
  CaptureSent(*l, pkts, n);
  HostPort& h = e.hosts_[static_cast<size_t>(l->host)];
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    h.out.push(m);
    // A pause frame for the host's NIC: its MAC obeys it from the frame's
    // arrival (the frame goes on to the host too, for its counters and
    // captures).
    if (h.pfc && rte_pktmbuf_data_len(m) >= 14 &&
        pkt::Rd16(rte_pktmbuf_mtod(m, const uint8_t*) + 12) == pkt::ethertype::kMacControl)
        [[unlikely]] {
      const ReceivedPause rp = ReadPause(
          {rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m)}, h.pfc_priority, false);
      if (rp.kind == PauseRx::kOurs) {
        const fabric::TimePs at = FrameTime(m);
        h.pause_changes.push({at, at + fabric::PauseQuantaPs(rp.quanta, h.wire.ps_per_byte)});
      }
    }
  }
  return n;
}

// -- PFC at the hosts' wires -----------------------------------------------

namespace {
// A host NIC's emit: the frame reaches the edge a serialisation and a
// latency after its start, into the edge port's input in time order.
struct ToEdge {
  fabric::Fifo<rte_mbuf*>& in;
  uint64_t& next;
  uint16_t port;
  fabric::TimePs latency;
  void operator()(rte_mbuf* m, fabric::TimePs /*start*/, fabric::TimePs last_bit) {
    FrameTime(m) = last_bit + latency;
    m->port = port;
    in.push(m);
    next = std::min<uint64_t>(next, FrameTime(m));
  }
};
}  // namespace

void Engine::ApplyHostPauses(HostPort& h, fabric::TimePs t) {
  ToEdge emit{in_[h.sw][h.port].fifo, next_[h.sw], static_cast<uint16_t>(h.port), h.wire.latency};
  while (!h.pause_changes.empty() && h.pause_changes.front().at <= t) {
    const HostPort::PauseChange c = h.pause_changes.front();
    h.pause_changes.pop();
    h.nic->StartBefore(c.at, emit);  // what began before it goes
    h.nic->PauseUntil(c.until);
  }
}

void Engine::StormFrames(uint32_t host, fabric::TimePs end) {
  HostPort& h = hosts_[host];
  const uint64_t until = storm_until_[host].load(std::memory_order_relaxed);
  if (until == 0) {
    h.storm_next = 0;
    return;
  }
  const fabric::TimePs done = now_.load(std::memory_order_relaxed);
  if (h.storm_next == 0) h.storm_next = done;  // a new storm: from now
  while (h.storm_next < end && h.storm_next < until) {
    if (!SendHostPause(h, h.storm_next, fabric::kPfcMaxQuanta)) break;  // no mbuf: next window
    h.storm_next += kStormEveryPs;
  }
  if (h.storm_next >= until) storm_until_[host].store(0, std::memory_order_relaxed);  // over
}

bool Engine::SendHostPause(HostPort& h, fabric::TimePs t, uint16_t quanta) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_.get());
  if (!m) return false;  // the pool is the fabric's: try again later
  const auto f = BuildPfcFrame(kStormMac, h.pfc_priority, quanta);
  std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
  t = std::max(t, h.nic_offered);
  h.nic_offered = t;
  ApplyHostPauses(h, t);
  ToEdge emit{in_[h.sw][h.port].fifo, next_[h.sw], static_cast<uint16_t>(h.port), h.wire.latency};
  h.nic->Offer(t, 0, static_cast<uint32_t>(f.size()), false, m, emit);
  return true;
}

void Engine::HostRxPause(HostPort& h, fabric::TimePs t) {
  // The frames due by t that the host's device has not taken (they wait at
  // the front of `out`, in time order).
  uint64_t behind = 0;
  for (size_t i = 0; i < h.out.size() && FrameTime(h.out[i]) <= t; ++i) {
    behind += rte_pktmbuf_pkt_len(h.out[i]);
    if (behind > fabric::kHostRxBufferBytes) break;  // enough to decide
  }
  const fabric::TimePs refresh =
      fabric::PauseQuantaPs(fabric::kPfcMaxQuanta, h.wire.ps_per_byte) / 2;
  if (!h.rx_xoff) {
    if (behind <= fabric::kHostRxBufferBytes) return;
    h.rx_xoff = true;
  } else if (behind <= fabric::kHostRxBufferBytes / 2) {
    h.rx_xoff = false;
    h.rx_pause_frames += SendHostPause(h, t, 0);  // XON
    return;
  } else if (t < h.rx_refresh_at) {
    return;
  }
  h.rx_refresh_at = t + refresh;
  h.rx_pause_frames += SendHostPause(h, t, fabric::kPfcMaxQuanta);
}

void Engine::AdvanceHostNics(uint64_t end) {
  for (uint32_t i = 0; i < hosts_.size(); ++i) {
    HostPort& h = hosts_[i];
    if (!h.nic) continue;
    StormFrames(i, end);
    // Every pause that reaches the host before `end` is known by now: the
    // edge sent it a transit (at least the lookahead) earlier.
    ApplyHostPauses(h, end);
    ToEdge emit{in_[h.sw][h.port].fifo, next_[h.sw], static_cast<uint16_t>(h.port), h.wire.latency};
    h.nic->StartBefore(end, emit);
    h.nic->Integrate(end);  // retires what has left (no statistics are kept)
  }
}

uint64_t Engine::NextHostStart() const {
  uint64_t next = fabric::kNever;
  for (uint32_t i = 0; i < hosts_.size(); ++i) {
    const HostPort& h = hosts_[i];
    if (!h.nic) continue;
    next = std::min<uint64_t>(next, h.nic->NextStart());
    if (storm_until_[i].load(std::memory_order_relaxed) != 0) {
      // A storm's next XOFF (a new one: at once).
      next = std::min<uint64_t>(next,
                                h.storm_next ? h.storm_next : now_.load(std::memory_order_relaxed));
    }
  }
  return next;
}

// -- the loop --------------------------------------------------------------

uint32_t Engine::PollHosts(fabric::TimePs floor, fabric::TimePs seen) {
  uint32_t got = 0;
  if (woken_known_) {
    woken_known_ = false;
    for (const uint32_t i : woken_) got += PollHost(hosts_[i], floor, seen);
  } else {
    for (HostPort& h : hosts_) got += PollHost(h, floor, seen);
  }
  if (got) lag_.host_frames.fetch_add(got, std::memory_order_relaxed);
  return got;
}

// The engine's clock less CLOCK_MONOTONIC's, from readings of both close
// together (a reading interrupted between them is not taken: the last
// offset stays). Both run from the TSC; their rates differ by the TSC
// calibration's error, so the offset is renewed every pass that stamps.
void Engine::AnchorMonotonic() {
  const uint64_t a = MonotonicNs();
  const uint64_t wall = WallPs();
  const uint64_t b = MonotonicNs();
  if (b - a > kAnchorMaxNs && mono_to_wall_ps_ != 0) return;
  mono_to_wall_ps_ = static_cast<int64_t>(wall) - static_cast<int64_t>((a + (b - a) / 2) * 1000);
}

fabric::TimePs Engine::HostFrameStart(uint64_t rx_ns, fabric::TimePs floor,
                                      HostStampCount& count) const {
  ++count.stamped;
  const int64_t t = static_cast<int64_t>(rx_ns * 1000) + mono_to_wall_ps_;
  if (t >= static_cast<int64_t>(floor)) return static_cast<fabric::TimePs>(t);
  // Seen after the fabric ran past its time: it starts as early as it can.
  ++count.late;
  count.late_max_ps =
      std::max(count.late_max_ps, floor - static_cast<uint64_t>(std::max<int64_t>(t, 0)));
  return floor;
}

// One host's socket (or device): its frames into the edge port's input,
// stamped with the time the host's wire delivers them. Returns how many.
uint32_t Engine::PollHost(HostPort& h, fabric::TimePs floor, fabric::TimePs seen) {
  rte_mbuf* b[kMaxBurst];
  uint64_t rx_ns[kMaxBurst];
  uint16_t n = 0;
  if (h.io) {
    // The socket's frames, copied into the engine's mbufs (the views are
    // the socket's until its next Recv).
    hostio::FrameView v[kMaxBurst];
    const uint32_t got_io = h.io->Recv(v);
    for (uint32_t i = 0; i < got_io; ++i) {
      rte_mbuf* m = rte_pktmbuf_alloc(pool_.get());
      if (!m) {
        ++h.rx_nombuf;
        continue;
      }
      std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(v[i].len)), v[i].data, v[i].len);
      rx_ns[n] = v[i].rx_ns;
      b[n++] = m;
    }
  } else {
    n = rte_eth_rx_burst(h.dev, 0, b, kMaxBurst);
    std::fill_n(rx_ns, n, 0);
  }
  if (!n) return 0;
  // A frame without the kernel's time entered the wire when seen. Counted
  // here, published once per burst (the counters are the control thread's
  // to read).
  HostStampCount count;
  auto start = [&](uint16_t i) {
    return rx_ns[i] && kernel_stamps_ ? HostFrameStart(rx_ns[i], floor, count) : seen;
  };

  if (h.nic) [[unlikely]] {
    // PFC: into the NIC's queues as of the time the frame was sent; the
    // engine sends each when it reaches its start (AdvanceHostNics).
    ToEdge emit{in_[h.sw][h.port].fifo, next_[h.sw], static_cast<uint16_t>(h.port), h.wire.latency};
    for (uint16_t i = 0; i < n; ++i) {
      const fabric::TimePs t = std::max(start(i), h.nic_offered);  // offers never go back
      h.nic_offered = t;
      ApplyHostPauses(h, t);
      // By traffic class alone: a QP's ACKs leave in order with its data
      // (egress/lossless.h, HasDscp).
      const bool lossless =
          HasDscp(rte_pktmbuf_mtod(b[i], const uint8_t*), rte_pktmbuf_data_len(b[i]), h.pfc_dscp);
      h.nic->Offer(t, lossless ? 1 : 0, rte_pktmbuf_pkt_len(b[i]), false, b[i], emit);
    }
    PublishStamps(count);
    return n;
  }
  InPort& in = in_[h.sw][h.port];
  for (uint16_t i = 0; i < n; ++i) {
    // The host put it on its wire when it sent it (never before the time
    // the fabric has run to), or when the wire was free.
    const fabric::TimePs begin = std::max(start(i), h.busy_until);
    const fabric::TimePs ser = h.wire.Ser(rte_pktmbuf_pkt_len(b[i]));
    h.busy_until = begin + ser + h.wire.gap;
    FrameTime(b[i]) = begin + h.wire.pre + ser + h.wire.latency;
    b[i]->port = static_cast<uint16_t>(h.port);
    in.fifo.push(b[i]);
  }
  next_[h.sw] = std::min<uint64_t>(next_[h.sw], FrameTime(in.fifo.front()));
  PublishStamps(count);
  return n;
}

void Engine::PublishStamps(const HostStampCount& c) {
  if (!c.stamped) return;
  lag_.host_stamped.fetch_add(c.stamped, std::memory_order_relaxed);
  if (!c.late) return;
  lag_.stamp_late.fetch_add(c.late, std::memory_order_relaxed);
  AtomicMax(lag_.stamp_late_max_ps, c.late_max_ps);
}

uint64_t Engine::ReleaseToHosts(uint64_t wall) {
  uint64_t worst = 0;
  for (HostPort& h : hosts_) {
    while (!h.out.empty() && FrameTime(h.out.front()) <= wall) {
      rte_mbuf* b[kMaxBurst];
      uint16_t n = 0;
      uint64_t late = 0;
      while (n < kMaxBurst && n < h.out.size() && FrameTime(h.out[n]) <= wall) {
        late = std::max<uint64_t>(late, wall - FrameTime(h.out[n]));
        b[n] = h.out[n];
        ++n;
      }
      uint16_t sent = 0;
      if (h.io) {
        hostio::FrameView v[kMaxBurst];
        for (uint16_t i = 0; i < n; ++i) {
          v[i] =
              hostio::FrameView{rte_pktmbuf_mtod(b[i], const uint8_t*), rte_pktmbuf_data_len(b[i])};
        }
        sent = static_cast<uint16_t>(h.io->Send(std::span(v, n)));
        rte_pktmbuf_free_bulk(b, sent);  // the socket copied them
      } else {
        sent = rte_eth_tx_burst(h.dev, 0, b, n);
      }
      for (uint16_t i = 0; i < sent; ++i) h.out.pop();
      if (late > lag_threshold_ && sent) lag_.late_tx.fetch_add(1, std::memory_order_relaxed);
      if (sent) worst = std::max(worst, late);
      if (sent < n) break;  // the device is full: later
    }
  }
  return worst;
}

// Every host's descriptor will wake the wait when a frame comes (a
// shared-memory ring arms its doorbell now), and none has one waiting.
bool Engine::HostsMaySleep() {
  for (HostPort& h : hosts_) {
    if (h.io && !h.io->PrepareSleep()) return false;
  }
  return true;
}

uint64_t Engine::NextSwitchEvent() const {
  uint64_t next = fabric::kNever;
  for (const uint64_t t : next_) next = std::min(next, t);
  return next;
}

uint64_t Engine::NextEvent() const {
  uint64_t next = std::min(NextSwitchEvent(), NextHostStart());
  for (const HostPort& h : hosts_) {
    if (!h.out.empty()) next = std::min<uint64_t>(next, FrameTime(h.out.front()));
  }
  return next;
}

void Engine::RunSwitch(uint32_t s, fabric::TimePs end) {
  Switch& sw = *switches_[s];
  std::vector<InPort>& ins = in_[s];
  if (sw.stopped()) [[unlikely]] {
    uint32_t dropped = 0;
    for (InPort& ip : ins) {
      while (!ip.fifo.empty() && FrameTime(ip.fifo.front()) < end) {
        rte_pktmbuf_free(ip.fifo.front());
        ip.fifo.pop();
        ++dropped;
      }
    }
    if (dropped) sw.EngineDropped(dropped);
  } else {
    // The inputs merged in time order, a run of one port's frames at a time.
    RxVector& v = *vec_;
    v.n = v.nseg = 0;
    const uint32_t np = static_cast<uint32_t>(ins.size());
    for (;;) {
      uint32_t best = UINT32_MAX;
      uint64_t t_best = end, t_second = end;
      for (uint32_t p = 0; p < np; ++p) {
        if (ins[p].fifo.empty()) continue;
        const uint64_t t = FrameTime(ins[p].fifo.front());
        if (t < t_best) {
          t_second = t_best;
          t_best = t;
          best = p;
        } else if (t < t_second) {
          t_second = t;
        }
      }
      if (best == UINT32_MAX) break;
      fabric::Fifo<rte_mbuf*>& f = ins[best].fifo;
      const uint32_t start = v.n;
      // Up to the next port's head (ties go to the lower port).
      while (!f.empty() && v.n < kMaxVector && FrameTime(f.front()) < end &&
             FrameTime(f.front()) <= t_second) {
        v.pkts[v.n++] = f.front();
        f.pop();
      }
      v.seg[v.nseg++] =
          RxSegment{best, static_cast<uint16_t>(start), static_cast<uint16_t>(v.n - start)};
      if (v.n == kMaxVector || v.nseg == std::size(v.seg)) {
        sw.EngineRun(v);
        v.n = v.nseg = 0;
      }
    }
    if (v.n) sw.EngineRun(v);
  }
  sw.EngineDrain(end);
  uint64_t next = sw.EngineNextEvent();
  for (const InPort& ip : ins) {
    if (!ip.fifo.empty()) next = std::min<uint64_t>(next, FrameTime(ip.fifo.front()));
  }
  next_[s] = next;
}

uint32_t Engine::RunDue() {
  const uint64_t wall = WallPs();
  // The time the fabric has run to: every event before it ran, so a host's
  // frame sent earlier can only start then.
  const uint64_t floor = now_.load(std::memory_order_relaxed);
  // Nothing due before the wall clock: the fabric was idle up to it. (A
  // frame with the kernel's time may still start before the wall clock,
  // from `floor`: nothing happened in between.)
  if (std::min(NextSwitchEvent(), NextHostStart()) > wall) {
    now_.store(std::max<uint64_t>(floor, wall), std::memory_order_relaxed);
  }
  // Frames the control thread queued (replies, PFC) go out as of the time
  // the fabric has run to. Its queueing notes the wait: the inboxes are
  // looked at only when there is a new note (read first: one that comes
  // after is seen next pass).
  const uint64_t notes = wait_.notes();
  if (notes != notes_seen_) {
    notes_seen_ = notes;
    const uint64_t done = now_.load(std::memory_order_relaxed);
    for (uint32_t s = 0; s < switches_.size(); ++s) {
      if (switches_[s]->EngineNextEvent() == 0) next_[s] = std::min(next_[s], done);
    }
  }
  if (kernel_stamps_) AnchorMonotonic();
  PollHosts(floor, now_.load(std::memory_order_relaxed));
  uint32_t windows = 0;
  uint64_t worst = 0;  // how far behind the wall clock this pass found the fabric
  const bool nics = has_host_nics_;
  for (;;) {
    const uint64_t next = nics ? std::min(NextSwitchEvent(), NextHostStart()) : NextSwitchEvent();
    if (next > wall) break;
    worst = std::max(worst, wall - next);
    // The window: from the earliest event, a lookahead long, never past
    // the wall clock.
    const uint64_t end = std::min<uint64_t>(next + lookahead_, wall + 1);
    // PFC hosts' frames that start before the window ends: they arrive
    // after it, or, started before it began, in it (so, sent first).
    if (nics) [[unlikely]]
      AdvanceHostNics(end);
    for (uint32_t s = 0; s < switches_.size(); ++s) {
      if (next_[s] < end) RunSwitch(s, end);
    }
    now_.store(std::max<uint64_t>(now_.load(std::memory_order_relaxed), end),
               std::memory_order_relaxed);
    ++windows;
  }
  now_.store(std::max<uint64_t>(now_.load(std::memory_order_relaxed), wall),
             std::memory_order_relaxed);
  // Frames to hosts once per pass, after every window: one Send (and its
  // kicks) per host per pass, not per window. Their times are all past.
  worst = std::max(worst, ReleaseToHosts(wall));
  if (nics) [[unlikely]] {
    for (HostPort& h : hosts_) {
      if (h.nic) HostRxPause(h, wall);
    }
  }
  // Lag: a pass that found the fabric behind by more than the threshold.
  // The time spent behind is at most the wall time since the last pass
  // (a fabric behind on every pass is counted once per stretch of time).
  if (worst > lag_threshold_) {
    lag_.events.fetch_add(1, std::memory_order_relaxed);
    lag_.late_ps.fetch_add(std::min(worst, wall - std::min(wall, last_pass_wall_)),
                           std::memory_order_relaxed);
    if (worst > lag_.max_ps.load(std::memory_order_relaxed))
      lag_.max_ps.store(worst, std::memory_order_relaxed);
  }
  last_pass_wall_ = wall;
  lag_.windows.fetch_add(windows, std::memory_order_relaxed);
  return windows;
}

void Engine::Loop() {
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);  // waits are microseconds
  uint64_t intended = 0;                      // when the last wait meant to end
  while (!stop_.load(std::memory_order_relaxed)) {
    const uint64_t pass = WallPs();
    if (intended && pass > intended) AtomicMax(lag_.wake_late_max_ps, pass - intended);
    intended = 0;
    for (auto& sw : switches_) sw->EngineQuiescent();
    const uint32_t windows = RunDue();
    const uint64_t next = NextEvent();
    const uint64_t wall = WallPs();
    AtomicMax(lag_.pass_max_ps, wall - pass);
    // Busy (a pass of several windows): come back one batch after this
    // pass began, whatever is due sooner, and take everything due then at
    // once. Emulated times are exact either way; what a batch delays is
    // only when hosts see their frames, by less than the lag threshold.
    // Waking for each event instead costs a wakeup per frame-hop, which is
    // what the per-switch engine pays (bench/RESULTS.md). A quiet fabric
    // (a ping crossing it) wakes for each event: a batch per hop would add
    // up over a path's dozen hops.
    if (windows >= kBusyWindows && next < pass + batch_ps_) {
      const uint64_t until = pass + batch_ps_;
      if (until > wall) {
        intended = until;
        rte_delay_us_sleep(static_cast<unsigned>((until - wall) / 1'000'000) + 1);
      }
      continue;
    }
    if (next <= wall + kSpinPs) continue;  // due within a wakeup's cost: spin
    // Sleep until the next event, a host's frame or a kick. A note the
    // pass did not see (the control thread queued a reply since) is not
    // slept through.
    wait_.Begin();
    if (wait_.notes() != notes_seen_ || !HostsMaySleep()) {
      wait_.End();
      continue;
    }
    const uint64_t wait_ps = next - wall;
    intended = std::min(next, wall + uint64_t{max_wait_us_} * 1'000'000);
    int ready[16];
    const uint32_t nready =
        wait_.Wait(static_cast<uint32_t>(std::min<uint64_t>(wait_ps / 1'000'000, max_wait_us_)),
                   ready, static_cast<uint32_t>(std::size(ready)));
    wait_.End();
    // Woken by sockets it can name: the next pass polls only those hosts.
    // Frames that reach the others later wake the next wait at once (the
    // epoll is level-triggered) or are taken by the pass after.
    if (nready != IdleWait::kReadyUnknown) {
      woken_.clear();
      for (uint32_t i = 0; i < nready; ++i) {
        const int fd = ready[i];
        if (fd >= 0 && static_cast<size_t>(fd) < host_by_fd_.size() && host_by_fd_[fd] >= 0)
          woken_.push_back(static_cast<uint32_t>(host_by_fd_[fd]));
      }
      woken_known_ = true;
    }
  }
}

Status Engine::Launch() {
  if (running_.load()) return {};
  stop_.store(false);
  running_.store(true);
  thread_ = std::thread([this] {
    // Off the control thread's core when EAL has a worker lcore.
    const unsigned lcore = rte_get_next_lcore(-1, 1, 0);
    if (lcore < RTE_MAX_LCORE) {
      rte_cpuset_t set = rte_lcore_cpuset(lcore);
      if (CPU_COUNT(&set) > 0) pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    }
    pthread_setname_np(pthread_self(), "ofan-engine");
    // Ahead of the hosts' processes when both are runnable: a pass that
    // waits behind a host's time slice is lag. Under the fair scheduler a
    // woken thread, even at nice -10, waits for the running one's slice
    // (measured: wakeups 1.1-1.4 ms late, a few times a run, each flagging
    // the run CPU-bound); a real-time one runs at once. The engine sleeps
    // between passes, so the lowest real-time priority takes the CPU from
    // nobody for long; the kernel's RT throttling bounds it if it ever
    // overran. Best effort: without the right to it, nice -10.
    sched_param sp{};
    sp.sched_priority = 1;
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) != 0)
      setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kEngineNice);
    Loop();
  });
  return {};
}

void Engine::Stop() {
  stop_.store(true);
  wait_.Kick();
  if (thread_.joinable()) thread_.join();
  running_.store(false);
}

}  // namespace ofan::dp
