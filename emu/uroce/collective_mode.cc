#include "emu/uroce/collective_mode.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "common/json_text.h"
#include "common/units.h"
#include "dataplane/lb/fat_tree.h"
#include "emu/collective/driver.h"
#include "emu/uroce/host.h"
#include "emu/uroce/neighbour.h"
#include "emu/uroce/rank_exchange.h"
#include "emu/uroce/uroce_transport.h"

namespace ofan::uroce {
namespace {

using nlohmann::json;

struct SpecHost {
  uint32_t rank = 0, host = 0;
  std::string name, netns, ifname = "eth0";
  // Frames through shared-memory rings with the shared engine (its host
  // port "shm:PATH", hostio/shm_io.h) instead of the interface, which
  // still gives the host its MAC, address and MTU; "" = the interface.
  std::string shm;
  pkt::MacAddr mac, gateway_mac;
  uint32_t ip = 0;
  double line_rate_gbps = 10;
  bool external = false;  // run by another process (exchange mode): only its ip is used
};

struct Spec {
  emu::ScheduleParams sp;
  EntropyMode entropy = EntropyMode::kPerQp;
  bool ooo = false;
  bool dcqcn = false;
  std::optional<uint8_t> pfc_priority;  // obey the edge's PFC for it (per-switch fabrics)
  uint32_t dscp = 26;
  double pace = 0.8;
  uint32_t mtu = 2048;
  double deadline_s = 60;
  IoKind io = IoKind::kAuto;
  uint32_t max_outstanding = 16;
  uint32_t rto_us = 20000;
  uint32_t burst_bytes = 32 * 1024;  // the host pacer's bucket depth
  int k = 0, levels = 3;
  bool exchange = false;  // connect by ofan-rc-1, not the computed plan
  uint16_t rc_port = rcx::kDefaultPort;
  std::string send_log_dir;  // test mode: each host's sent frames, NAME.tsv here
  std::vector<SpecHost> hosts;
};

Result<uint32_t> ParseIp(std::string s) {
  if (auto slash = s.find('/'); slash != std::string::npos) s.resize(slash);
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return InvalidArgument("not an IPv4 address: " + s);
  return ntohl(a.s_addr);
}

Result<Spec> ParseSpec(const json& j) {
  Spec s;
  try {
    std::string w = j.at("workload").get<std::string>();
    if (w == "perm") w = "permutation";
    if (w == "a2a") w = "alltoall";
    auto wl = emu::ParseWorkload(w);
    if (!wl) return wl.error();
    s.sp.workload = *wl;
    s.sp.msg_bytes = j.at("msg_bytes").get<uint64_t>();
    s.sp.seed = j.value("seed", uint64_t{1});
    s.sp.qps_per_peer = j.value("qps_per_peer", 1u);
    s.sp.incast_senders = j.value("incast_senders", 0u);
    s.sp.victim = j.value("victim", false);
    s.sp.chunk_bytes = j.value("chunk_bytes", uint64_t{64} * 1024);
    // Receiver-driven admission (rank_engine.h): {channels, channel_bytes,
    // priority}; a chunk is a slot.
    if (j.contains("cts") && !j["cts"].is_null()) {
      const json& c = j.at("cts");
      s.sp.cts_channels = c.at("channels").get<uint32_t>();
      s.sp.cts_channel_bytes = c.at("channel_bytes").get<uint64_t>();
      s.sp.cts_priority = c.value("priority", true);
      s.sp.chunk_bytes = s.sp.cts_channel_bytes;
    }
    const std::string e = j.value("entropy", std::string("qp"));
    if (e == "qp" || e == "per-qp") {
      s.entropy = EntropyMode::kPerQp;
    } else if (e == "spray") {
      s.entropy = EntropyMode::kSpray;
    } else if (e == "reps") {
      s.entropy = EntropyMode::kReps;
    } else {
      return InvalidArgument("entropy: qp, spray or reps, not " + e);
    }
    s.ooo = j.value("ooo", false);
    s.dcqcn = j.value("dcqcn", false);
    if (j.contains("pfc_priority") && !j["pfc_priority"].is_null()) {
      const json& p = j["pfc_priority"];
      if (!p.is_number_unsigned() || p.get<uint64_t>() > 7)
        return InvalidArgument("pfc_priority: a priority from 0 to 7");
      s.pfc_priority = static_cast<uint8_t>(p.get<uint64_t>());
    }
    s.dscp = j.value("dscp", 26u);
    s.pace = j.value("pace_fraction", 0.8);
    s.mtu = j.value("mtu", 2048u);
    s.deadline_s = j.value("deadline_s", 60.0);
    const std::string io = j.value("io", std::string("auto"));
    if (io == "afxdp") {
      s.io = IoKind::kAfXdp;
    } else if (io == "afpacket") {
      s.io = IoKind::kAfPacket;
    } else if (io != "auto") {
      return InvalidArgument("io: auto, afxdp or afpacket, not " + io);
    }
    s.max_outstanding = j.value("max_outstanding", 16u);
    s.rto_us = j.value("rto_us", 20000u);
    s.burst_bytes = j.value("burst_bytes", 32u * 1024u);
    s.k = j.value("k", 0);
    s.levels = j.value("levels", 3);
    s.exchange = j.value("exchange", false);
    s.rc_port = j.value("rc_port", rcx::kDefaultPort);
    s.send_log_dir = j.value("send_log_dir", std::string());
    for (const auto& h : j.at("hosts")) {
      SpecHost x;
      x.rank = h.at("rank").get<uint32_t>();
      x.host = h.value("host", x.rank);
      x.name = h.value("name", fmt::format("rank{}", x.rank));
      auto ip = ParseIp(h.at("ip").get<std::string>());
      if (!ip) return ip.error();
      x.ip = *ip;
      x.external = h.value("external", false);
      if (x.external && !s.exchange) {
        return InvalidArgument(
            fmt::format("{} is external: that needs \"exchange\": true", x.name));
      }
      if (x.external) {
        s.hosts.push_back(x);
        continue;
      }
      x.netns = h.at("netns").get<std::string>();
      x.ifname = h.value("ifname", std::string("eth0"));
      x.shm = h.value("shm", std::string());
      if (!x.shm.empty() && (x.shm[0] != '/' || s.exchange)) {
        return InvalidArgument(fmt::format(
            "{}: shm: an absolute path, and not with an exchange (its TCP needs the interface)",
            x.name));
      }
      // Exchange mode may leave it out: each peer's next hop then comes
      // from the namespace's tables once its TCP connection is up.
      if (h.contains("gateway_mac") || !s.exchange) {
        auto gw = ParseMac(h.at("gateway_mac").get<std::string>());
        if (!gw) return gw.error();
        x.gateway_mac = *gw;
      }
      if (h.contains("mac")) {
        auto mac = ParseMac(h.at("mac").get<std::string>());
        if (!mac) return mac.error();
        x.mac = *mac;
      }
      x.line_rate_gbps = h.value("line_rate_gbps", 10.0);
      if (auto r = LinkRate::FromGbps(x.line_rate_gbps,
                                      fmt::format("hosts[{}].line_rate_gbps", s.hosts.size()));
          !r) {
        return r.error();
      }
      s.hosts.push_back(x);
    }
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("spec: ") + e.what());
  }
  s.sp.num_ranks = static_cast<uint32_t>(s.hosts.size());
  for (uint32_t i = 0; i < s.hosts.size(); ++i) {
    if (s.hosts[i].rank != i) {
      return InvalidArgument(
          fmt::format("hosts[{}] has rank {}: ranks must be 0..n-1 in order", i, s.hosts[i].rank));
    }
  }
  if (s.mtu != 256 && s.mtu != 512 && s.mtu != 1024 && s.mtu != 2048 && s.mtu != 4096)
    return InvalidArgument(fmt::format("mtu {}: 256 .. 4096", s.mtu));
  if (!(s.pace >= 0 && s.pace <= 1) || !(s.deadline_s > 0) || s.max_outstanding == 0 ||
      s.dscp > 63 || s.burst_bytes < s.mtu + 100) {
    return InvalidArgument(
        "pace_fraction in [0, 1], deadline_s > 0, max_outstanding > 0, dscp 0..63, "
        "burst_bytes >= one frame (mtu + 100)");
  }
  return s;
}

struct Rank {
  std::unique_ptr<Host> host;  // null: an external rank
  std::unique_ptr<UroceTransport> t;
  std::vector<uint8_t> send, recv;
  std::string why_not_xdp;
  uint32_t mtu_offer = 0;
};

// The ranks this process runs: each host on its interface and, without an
// exchange, its transport (with one, the peers' hellos give the QPs' far
// ends). An error names the host.
Status OpenRanks(const Spec& spec, uint64_t send_bytes, uint64_t recv_bytes, SteadyClock& clock,
                 std::vector<Rank>& ranks) {
  auto bad = [](const SpecHost& h, const std::string& m) {
    return InvalidArgument(fmt::format("{}: {}", h.name, m));
  };
  std::vector<uint32_t> ips;
  for (const auto& h : spec.hosts) ips.push_back(h.ip);
  for (size_t i = 0; i < ranks.size(); ++i) {
    const SpecHost& h = spec.hosts[i];
    if (h.external) continue;  // another process runs it
    auto iface = ReadIface(h.netns, h.ifname);
    if (!iface) return bad(h, iface.error().message);
    if (!h.mac.is_zero() && !(h.mac == iface->mac))
      return bad(h, fmt::format("the spec's MAC is not {}'s in '{}'", h.ifname, h.netns));
    // An exchange's TCP shares the interface: the kernel must keep its
    // frames (and ARP), AF_XDP takes only RoCEv2 then.
    IoOptions io_opts;
    io_opts.roce_only = spec.exchange;
    auto io = h.shm.empty() ? OpenIo(spec.io, *iface, &ranks[i].why_not_xdp, io_opts)
                            : OpenShmLink(h.shm);
    if (!io) return bad(h, io.error().message);
    HostConfig hc;
    hc.engine.mtu = spec.mtu;
    hc.engine.ooo = spec.ooo;
    hc.engine.dcqcn = spec.dcqcn;
    hc.engine.dscp = static_cast<uint8_t>(spec.dscp);
    hc.engine.entropy = spec.entropy;
    hc.engine.line_rate_gbps = h.line_rate_gbps;
    hc.engine.rto_ns = static_cast<Ns>(spec.rto_us) * 1000;
    hc.engine.seed = spec.sp.seed * 1000003 + i;
    hc.mac = iface->mac;
    hc.ip = h.ip;
    hc.pace_fraction = spec.pace;
    hc.burst_bytes = spec.burst_bytes;
    hc.pfc_priority = spec.pfc_priority;
    hc.send_log = !spec.send_log_dir.empty();
    ranks[i].mtu_offer = RoceMtuOffer(spec.mtu, iface->mtu, (*io)->max_frame());
    ranks[i].host = std::make_unique<Host>(hc, std::move(*io), &clock);
    ranks[i].send.assign(send_bytes, 0);
    ranks[i].recv.assign(recv_bytes, 0);
    if (spec.exchange) continue;
    PlanConfig pc;
    pc.rank = static_cast<emu::Rank>(i);
    pc.num_ranks = static_cast<uint32_t>(ranks.size());
    pc.qps_per_peer = spec.sp.qps_per_peer;
    pc.max_outstanding = spec.max_outstanding;
    pc.rank_ips = ips;
    pc.next_hop_mac = h.gateway_mac;
    pc.peer_recv_bytes = recv_bytes;
    auto tc = ComputedPlan(pc);
    if (!tc) return bad(h, tc.error().message);
    auto t = UroceTransport::Create(*tc, ranks[i].host.get(), ranks[i].send, ranks[i].recv);
    if (!t) return bad(h, t.error().message);
    ranks[i].t = std::move(*t);
  }
  return {};
}

// The driver's options: deadline, progress lines, the ranks' hosts and the
// NIC-bound over the tree's paths (tree must outlive them).
Result<emu::RunOptions> MakeRunOptions(const Spec& spec, std::optional<lb::FatTree>& tree) {
  emu::RunOptions o;
  o.deadline = std::chrono::milliseconds(static_cast<int64_t>(spec.deadline_s * 1000));
  // One line per half second on stderr, which ofan-emu shows as it comes.
  o.progress_every = std::chrono::milliseconds(500);
  o.progress = [](uint64_t done, uint64_t total) {
    std::cerr << fmt::format("progress {} {}\n", done, total) << std::flush;
  };
  for (const auto& h : spec.hosts) o.hosts.push_back(h.host);
  emu::NicBoundParams bound;
  bound.link_gbps = spec.hosts.empty() ? 0 : spec.hosts[0].line_rate_gbps;
  for (const auto& h : spec.hosts) bound.link_gbps = std::min(bound.link_gbps, h.line_rate_gbps);
  bound.rho = spec.pace > 0 ? spec.pace : 1.0;
  bound.mtu = spec.mtu;
  if (spec.k != 0) {
    auto t = lb::FatTree::Make(spec.k, spec.levels);
    if (!t) return InvalidArgument("k / levels: " + t.error().message);
    tree = *t;
    bound.hops = [&tree](uint32_t a, uint32_t b) {
      return tree->hops(lb::HostId(a), lb::HostId(b));
    };
  }
  if (bound.link_gbps > 0) o.bound = bound;
  return o;
}

// The collective over the ranks' transports, or through an exchange with
// the other processes' ranks.
emu::CollectiveResult RunRanks(const Spec& spec, const emu::Schedule& sched,
                               std::vector<Rank>& ranks, const emu::RunOptions& o) {
  std::vector<emu::Transport*> ts;
  std::unique_ptr<RankExchange> xchg;
  emu::CollectiveResult res;
  if (spec.exchange) {
    ExchangeOptions xo;
    xo.num_ranks = static_cast<uint32_t>(ranks.size());
    for (const auto& h : spec.hosts) xo.ips.push_back(h.ip);
    xo.qps_per_peer = spec.sp.qps_per_peer;
    xo.max_outstanding = spec.max_outstanding;
    xo.port = spec.rc_port;
    xo.timeout = o.deadline;
    std::vector<LocalRank> local;
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (!ranks[i].host) continue;
      local.push_back({static_cast<emu::Rank>(i), spec.hosts[i].netns, spec.hosts[i].ifname,
                       ranks[i].host.get(), spec.hosts[i].gateway_mac, ranks[i].mtu_offer,
                       ranks[i].send, ranks[i].recv});
    }
    auto x = RankExchange::Connect(xo, local);
    if (!x.ok()) {
      res.error = "exchange: " + x.error().message;
      return res;
    }
    xchg = std::move(*x);
    ts = xchg->transports();
    if (Status st = xchg->Start(); !st.ok()) {
      res.error = "exchange: " + st.error().message;
      return res;
    }
  } else {
    for (auto& r : ranks) ts.push_back(r.t.get());
  }
  for (auto& r : ranks) {
    if (r.host) r.host->StartPacing();
  }
  res = emu::RunCollective(sched, ts, o);
  if (xchg) {
    // Done only now: the peers may still need this process's ACKs.
    std::vector<uint64_t> received;
    received.reserve(ts.size());
    for (const emu::Transport* t : ts) received.push_back(sched.ranks[t->rank()].arrivals.size());
    if (Status st = xchg->Finish(received, res.ok() ? 0 : 1); !st.ok() && res.ok()) {
      res.error = "exchange: " + st.error().message;
    }
  }
  return res;
}

// The result, every local host's counters and their totals, printed.
void PrintCollective(const Spec& spec, const std::vector<Rank>& ranks,
                     const emu::CollectiveResult& res, bool as_json) {
  json hosts = json::array();
  uint64_t rtx = 0, nak_rx = 0, nak_tx = 0, oos = 0, dup = 0, tmo = 0, cnp = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!ranks[i].host) continue;
    json h = ranks[i].host->CountersJson();
    h["name"] = spec.hosts[i].name;
    h["rank"] = i;
    if (!ranks[i].why_not_xdp.empty()) h["afxdp_unavailable"] = ranks[i].why_not_xdp;
    for (const auto& q : ranks[i].host->qps()) {
      const QpCounters& c = q->counters();
      rtx += c.retransmits;
      nak_rx += c.naks_rx;
      nak_tx += c.naks_tx;
      oos += c.out_of_sequence;
      dup += c.duplicates;
      tmo += c.timeouts;
      cnp += c.cnps_rx;
    }
    hosts.push_back(h);
  }
  json out = {{"result", emu::ResultJson(res)},
              {"hosts", hosts},
              {"totals",
               {{"retransmissions", rtx},
                {"naks_received", nak_rx},
                {"naks_sent", nak_tx},
                {"out_of_sequence", oos},
                {"duplicates", dup},
                {"timeouts", tmo},
                {"cnps_received", cnp}}}};
  if (as_json) {
    std::cout << JsonText(out) << "\n";
  } else {
    std::cout << fmt::format(
        "uroce collective: {} of {} B on {} hosts: {}, cct {:.1f} us, algbw {:.3f} Gb/s, "
        "retransmissions {}, NAKs {}, timeouts {}\n",
        emu::WorkloadName(res.workload), res.msg_bytes, res.num_ranks,
        res.ok() ? "verified" : "FAILED: " + res.error, res.cct_us, res.algbw_gbps, rtx, nak_rx,
        tmo);
  }
}

// Test mode (spec send_log_dir): each local host's sent RoCEv2 frames as
// DIR/NAME.tsv, one line each: CLOCK_MONOTONIC ns, destination QP, PSN,
// BTH opcode, frame bytes.
Status WriteSendLogs(const Spec& spec, const std::vector<Rank>& ranks) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!ranks[i].host) continue;
    const std::string path = spec.send_log_dir + "/" + spec.hosts[i].name + ".tsv";
    std::ofstream out(path);
    out << "t_ns\tdqpn\tpsn\topcode\tlen\n";
    for (const SentFrame& f : ranks[i].host->sent_frames()) {
      out << f.t << '\t' << f.dqpn << '\t' << f.psn << '\t' << unsigned{f.opcode} << '\t' << f.len
          << '\n';
    }
    if (!out) return MakeError(ErrorCode::kIo, "send_log_dir: cannot write " + path);
  }
  return {};
}

}  // namespace

int RunCollectiveSpec(const std::string& path, bool as_json) {
  auto usage = [](const std::string& m) {
    std::cerr << "uroce collective: " << m << "\n";
    return 2;
  };
  std::ifstream in(path);
  if (!in) return usage("cannot read " + path);
  json j;
  try {
    in >> j;
  } catch (const json::exception& e) {
    return usage(path + ": " + e.what());
  }
  auto spec = ParseSpec(j);
  if (!spec) return usage(spec.error().message);
  auto sched = emu::MakeSchedule(spec->sp);
  if (!sched) return usage(sched.error().message);
  SteadyClock clock;
  std::vector<Rank> ranks(spec->hosts.size());
  if (Status st = OpenRanks(*spec, sched->MaxSendBytes(), sched->MaxRecvBytes(), clock, ranks); !st)
    return usage(st.error().message);
  std::optional<lb::FatTree> tree;
  auto o = MakeRunOptions(*spec, tree);
  if (!o) return usage(o.error().message);
  const emu::CollectiveResult res = RunRanks(*spec, *sched, ranks, *o);
  PrintCollective(*spec, ranks, res, as_json);
  if (!spec->send_log_dir.empty()) {
    if (Status st = WriteSendLogs(*spec, ranks); !st) {
      std::cerr << "uroce collective: " << st.error().message << "\n";
      return 1;
    }
  }
  if (!res.ok()) std::cerr << "uroce collective: " << res.error << "\n";
  return res.ok() ? 0 : 1;
}

}  // namespace ofan::uroce
