// uroce: the userspace RoCEv2 host stack's command line.
//   uroce pair --a-netns X --b-netns Y [--io afxdp|afpacket|auto] -m 100 -s 1MiB
// drives two hosts from one process: host A writes M messages of S bytes to
// host B (RDMA WRITE WITH IMMEDIATE through the collective Transport, or
// SEND), B checks every byte, and both hosts' counters are printed.
// Subcommands are modes: `uroce collective --spec FILE.json` runs many hosts,
// one Transport each, through ofan_collective (collective_mode.h), as
// ofan-emu's `run` asks; `uroce peer` is one side of ofan-rc-1's pair check
// against another stack (peer_mode.h); `uroce loopback` needs no root.
// Exit codes: 0 ok, 1 the run failed (data, timeout, QP error, I/O), 2 bad
// command line.
#include <arpa/inet.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>

#include "common/cli.h"
#include "common/json_text.h"
#include "common/main_guard.h"
#include "common/units.h"
#include "dataplane/hostio/loopback_wire.h"
#include "emu/uroce/collective_mode.h"
#include "emu/uroce/host.h"
#include "emu/uroce/peer_mode.h"
#include "emu/uroce/pfc_storm.h"
#include "emu/uroce/uroce_transport.h"

namespace {

using namespace ofan;
using namespace ofan::uroce;

struct PairOptions {
  std::string a_netns, b_netns, a_if = "eth0", b_if = "eth0", a_ip, b_ip;
  std::string io = "auto";
  std::string op = "write-imm";
  std::string entropy = "per-qp";
  uint64_t messages = 100;
  std::string size = "64KiB";
  uint32_t qps = 1;
  uint32_t window = 8;  // messages in flight in all
  uint32_t mtu = 2048;
  bool ooo = false;
  bool dcqcn = false;
  uint32_t dscp = 26;
  double rate_gbps = 10;
  double pace = 0;  // 0: unpaced
  double timeout_s = 60;
  uint32_t rto_us = 20000;
  uint32_t retry = 7;
  uint64_t seed = 1;
  bool json = false;
};

uint8_t Pattern(uint64_t msg, uint64_t i) {
  return static_cast<uint8_t>(SplitMix64(msg * 0x10001 + (i >> 3)) >> (8 * (i & 7)));
}
// Pattern(msg, 0 .. n-1), one SplitMix64 per 8 bytes (the driver runs it
// between Steps: a slow fill would starve the hosts' timers).
void FillPattern(uint8_t* p, uint64_t msg, uint64_t n) {
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t w = SplitMix64(msg * 0x10001 + (i >> 3));
    for (int k = 0; k < 8; ++k) p[i + k] = static_cast<uint8_t>(w >> (8 * k));
  }
  for (; i < n; ++i) p[i] = Pattern(msg, i);
}

Result<uint32_t> ParseIp(const std::string& s) {
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) return InvalidArgument("not an IPv4 address: " + s);
  return ntohl(a.s_addr);
}

struct Side {
  IfaceInfo iface;
  std::unique_ptr<Host> host;
  std::unique_ptr<UroceTransport> t;
  std::vector<uint8_t> send, recv;
};

// The hosts' engine configuration from the command line.
EngineConfig PairEngine(const PairOptions& o) {
  EngineConfig ec;
  ec.mtu = o.mtu;
  ec.ooo = o.ooo;
  ec.dcqcn = o.dcqcn;
  ec.dscp = static_cast<uint8_t>(o.dscp);
  ec.line_rate_gbps = o.rate_gbps;
  ec.rto_ns = static_cast<Ns>(o.rto_us) * 1000;
  ec.retry_count = o.retry;
  ec.seed = o.seed;
  ec.entropy = o.entropy == "spray"  ? EntropyMode::kSpray
               : o.entropy == "reps" ? EntropyMode::kReps
                                     : EntropyMode::kPerQp;
  return ec;
}

// The two hosts, A (side[0]) and B (side[1]), each on its interface with a
// transport of `slots` message buffers of S bytes; for --op send, B's
// receive buffers posted. why[i]: why AF_XDP was not used, if it was not.
Status OpenSides(const PairOptions& o, uint64_t S, uint32_t slots, SteadyClock& clock,
                 Side (&side)[2], std::string (&why)[2]) {
  const IoKind kind = o.io == "afxdp"      ? IoKind::kAfXdp
                      : o.io == "afpacket" ? IoKind::kAfPacket
                                           : IoKind::kAuto;
  const EngineConfig ec = PairEngine(o);
  const std::string* ns[2] = {&o.a_netns, &o.b_netns};
  const std::string* ifn[2] = {&o.a_if, &o.b_if};
  const std::string* ips[2] = {&o.a_ip, &o.b_ip};
  std::vector<uint32_t> rank_ips(2);
  for (int i = 0; i < 2; ++i) {
    auto info = ReadIface(*ns[i], *ifn[i]);
    if (!info.ok()) return info.error();
    side[i].iface = *info;
    if (!ips[i]->empty()) {
      auto ip = ParseIp(*ips[i]);
      if (!ip.ok()) return ip.error();
      side[i].iface.ipv4 = *ip;
    }
    if (side[i].iface.ipv4 == 0) {
      return InvalidArgument(fmt::format("{} in '{}' has no IPv4 address: give --{}-ip", *ifn[i],
                                         *ns[i], i ? 'b' : 'a'));
    }
    rank_ips[i] = side[i].iface.ipv4;
  }
  for (int i = 0; i < 2; ++i) {
    auto io = OpenIo(kind, side[i].iface, &why[i]);
    if (!io.ok()) return io.error();
    HostConfig hc;
    hc.engine = ec;
    hc.mac = side[i].iface.mac;
    hc.ip = side[i].iface.ipv4;
    hc.pace_fraction = o.pace;
    side[i].host = std::make_unique<Host>(hc, std::move(*io), &clock);
    side[i].send.assign(static_cast<size_t>(slots) * S, 0);
    side[i].recv.assign(static_cast<size_t>(slots) * S, 0);
    PlanConfig pc;
    pc.rank = static_cast<emu::Rank>(i);
    pc.num_ranks = 2;
    pc.qps_per_peer = o.qps;
    pc.max_outstanding = slots;
    pc.rank_ips = rank_ips;
    pc.next_hop_mac = side[1 - i].iface.mac;  // one link (or a bridge) between them
    pc.peer_recv_bytes = side[i].recv.size();
    auto tc = ComputedPlan(pc);
    if (!tc.ok()) return tc.error();
    auto t = UroceTransport::Create(*tc, side[i].host.get(), side[i].send, side[i].recv);
    if (!t.ok()) return t.error();
    side[i].t = std::move(*t);
  }
  if (o.op == "send") {
    // SENDs land in receive buffers posted on B's QPs (one per slot).
    for (uint32_t s = 0; s < slots; ++s) {
      Qp* q = side[1].host->qp(TransportQpn(0, s % o.qps, o.qps));
      if (!q->PostRecv(side[1].recv.data() + static_cast<size_t>(s) * S, static_cast<uint32_t>(S),
                       s))
        return MakeError(ErrorCode::kInternal, "receive queue full");
    }
  }
  return {};
}

// A writes o.messages messages of S bytes to B through `slots` buffers, a
// slot reused once A has its acknowledgement and B has checked its bytes.
class PairDriver {
 public:
  PairDriver(const PairOptions& o, uint64_t S, uint32_t slots, Side (&side)[2])
      : o_(o),
        S_(S),
        slots_(slots),
        side_(side),
        send_op_(o.op == "send"),
        slot_msg_(slots, 0),
        slot_state_(slots, 0),
        expect_(S) {}

  // Posts the first message of every slot.
  Status Start() {
    t0_ = std::chrono::steady_clock::now();
    for (uint32_t s = 0; s < slots_; ++s) {
      if (Status st = Post(s); !st.ok()) return st;
    }
    return {};
  }

  // After Start: runs to the last message or the first error; the error
  // ("" if none).
  std::string Run() {
    const auto t0 = t0_;
    Host* hosts[2] = {side_[0].host.get(), side_[1].host.get()};
    while (error_.empty() && (done < o_.messages || arrived < o_.messages)) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >
          o_.timeout_s) {
        error_ = fmt::format("timed out after {} s: {} of {} acknowledged, {} arrived",
                             o_.timeout_s, done, o_.messages, arrived);
        break;
      }
      Step();
      WaitAny(hosts, 1'000'000);
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (error_.empty() && bad) error_ = fmt::format("{} messages with wrong data", bad);
    return error_;
  }

  uint64_t done = 0, arrived = 0, bad = 0;
  double seconds = 0;

 private:
  Status Post(uint32_t slot) {
    const uint64_t m = posted_++;
    slot_msg_[slot] = m;
    uint8_t* p = side_[0].send.data() + static_cast<size_t>(slot) * S_;
    FillPattern(p, m, S_);
    const uint32_t qp = static_cast<uint32_t>(m % o_.qps);
    if (send_op_) {
      SendWr wr;
      wr.op = WrOp::kSendImm;
      wr.local = p;
      wr.len = static_cast<uint32_t>(S_);
      wr.imm = slot;
      wr.wr_id = slot;
      if (!side_[0].host->qp(TransportQpn(1, qp, o_.qps))->Post(wr))
        return MakeError(ErrorCode::kInternal, "send queue full");
      return {};
    }
    emu::WriteRequest w;
    w.peer = 1;
    w.qp = qp;
    w.src_off = w.dst_off = static_cast<uint64_t>(slot) * S_;
    w.len = S_;
    w.imm = slot;
    w.wr_id = slot;
    return side_[0].t->Post(w);
  }

  // `buf`: where B has the message (a WRITE's slot, a SEND's receive
  // buffer, which the QP's receive queue picked); `slot`: which it is.
  void Check(uint32_t buf, uint32_t slot, uint64_t len) {
    if (buf >= slots_ || slot >= slots_) {
      ++bad;
      return;
    }
    const uint8_t* p = side_[1].recv.data() + static_cast<size_t>(buf) * S_;
    FillPattern(expect_.data(), slot_msg_[slot], S_);
    if (len != S_ || std::memcmp(p, expect_.data(), S_) != 0) ++bad;
    std::memset(side_[1].recv.data() + static_cast<size_t>(buf) * S_, 0, S_);
  }

  // bit 1: acknowledged at A, bit 2: checked at B; both: the slot is free.
  Status SlotFinished(uint32_t slot, uint8_t bit) {
    if (slot >= slots_) return MakeError(ErrorCode::kInternal, "a completion names no slot");
    slot_state_[slot] |= bit;
    if (slot_state_[slot] != 3) return {};
    slot_state_[slot] = 0;
    if (posted_ < o_.messages) return Post(slot);
    return {};
  }

  // One round of both hosts' completions (a SEND completes at A through
  // the QP, not the transport: its kWriteDone carries the slot all the same).
  void Step() {
    comps_.clear();
    side_[0].t->Progress(&comps_);
    if (send_op_) {
      events_.clear();
      side_[1].host->Step(&events_);
      for (const QpEvent& e : events_) {
        if (e.kind == QpEventKind::kError) error_ = e.error;
        if (e.kind != QpEventKind::kRecvDone) continue;
        ++arrived;
        Check(static_cast<uint32_t>(e.wr_id), e.imm, e.len);
        if (!side_[1].host->qp(e.qpn)->PostRecv(side_[1].recv.data() + e.wr_id * S_,
                                                static_cast<uint32_t>(S_), e.wr_id))
          error_ = "receive queue full";
        if (Status st = SlotFinished(e.imm, 2); !st.ok()) error_ = st.error().message;
      }
    } else {
      side_[1].t->Progress(&comps_);
    }
    for (const auto& c : comps_) {
      Status st;
      if (c.kind == emu::CompletionKind::kError) {
        error_ = c.error;
      } else if (c.kind == emu::CompletionKind::kWriteDone) {
        ++done;
        st = SlotFinished(static_cast<uint32_t>(c.wr_id), 1);
      } else {
        ++arrived;
        Check(c.imm, c.imm, c.len);
        st = SlotFinished(c.imm, 2);
      }
      if (!st.ok()) error_ = st.error().message;
    }
  }

  const PairOptions& o_;
  const uint64_t S_;
  const uint32_t slots_;
  Side (&side_)[2];
  const bool send_op_;
  uint64_t posted_ = 0;
  std::vector<uint64_t> slot_msg_;
  std::vector<uint8_t> slot_state_;
  std::vector<uint8_t> expect_;
  std::vector<emu::Completion> comps_;
  std::vector<QpEvent> events_;
  std::string error_;
  std::chrono::steady_clock::time_point t0_;
};

int RunPair(const PairOptions& o) {
  auto size = ParseSize(o.size);
  if (!size.ok() || *size == 0 || *size > (1ull << 31)) {
    std::cerr << "uroce pair: --size: "
              << (size.ok() ? std::string("must be 1 B .. 2 GiB") : size.error().message) << "\n";
    return 2;  // a bad command line
  }
  const uint64_t S = *size;
  const uint32_t slots = static_cast<uint32_t>(std::min<uint64_t>(o.messages, o.window));
  SteadyClock clock;
  Side side[2];
  std::string why[2];
  if (Status st = OpenSides(o, S, slots, clock, side, why); !st.ok()) {
    std::cerr << "uroce pair: " << st.error().message << "\n";
    return 1;
  }
  PairDriver d(o, S, slots, side);
  if (Status st = d.Start(); !st.ok()) {
    std::cerr << "uroce pair: " << st.error().message << "\n";
    return 1;
  }
  const std::string error = d.Run();
  const double secs = d.seconds;
  nlohmann::json j = {{"ok", error.empty()},
                      {"error", error},
                      {"messages", o.messages},
                      {"size", S},
                      {"acknowledged", d.done},
                      {"arrived", d.arrived},
                      {"bad", d.bad},
                      {"seconds", secs},
                      {"goodput_gbps", secs > 0 ? d.done * S * 8.0 / secs / 1e9 : 0.0},
                      {"a", side[0].host->CountersJson()},
                      {"b", side[1].host->CountersJson()}};
  if (!why[0].empty()) j["afxdp_unavailable"] = why[0];
  if (o.json) {
    std::cout << JsonText(j) << "\n";
  } else {
    uint64_t rtx = 0, naks = 0, tmo = 0;
    for (const auto& h : {side[0].host.get(), side[1].host.get()}) {
      for (const auto& q : h->qps()) {
        rtx += q->counters().retransmits;
        naks += q->counters().naks_tx;
        tmo += q->counters().timeouts;
      }
    }
    std::cout << fmt::format(
        "uroce pair ({}): {} x {} B, {} acknowledged, {} arrived, {} bad, {:.3f} s, "
        "retransmits {}, NAKs {}, timeouts {}\n",
        side[0].host->io().kind(), o.messages, S, d.done, d.arrived, d.bad, secs, rtx, naks, tmo);
    if (!error.empty()) std::cout << "error: " << error << "\n";
  }
  return error.empty() ? 0 : 1;
}

// ---------------------------------------------------------------- loopback
// Two hosts in this process on the seeded in-process wire: every RC opcode
// uroce sends (WRITE and SEND FIRST / MIDDLE / LAST / ONLY, with and without
// immediate, every pad count), an ACK, a NAK for a dropped packet and a CNP
// for CE-marked ones; all frames of both directions optionally in a pcap
// (what tests/emu/uroce/uroce_wire_test.py hands to scapy and tshark).
struct LoopbackOptions {
  std::string pcap;
  bool json = false;
};

class PcapWriter {
 public:
  explicit PcapWriter(const std::string& path) {
    if (path.empty()) return;
    f_ = std::fopen(path.c_str(), "wb");
    if (!f_) return;
    const uint32_t hdr[6] = {0xA1B2C3D4, 0x00040002, 0, 0, 65535, 1};  // v2.4, Ethernet
    std::fwrite(hdr, sizeof hdr, 1, f_);
  }
  ~PcapWriter() {
    if (f_) std::fclose(f_);
  }
  bool ok(const std::string& path) const { return path.empty() || f_ != nullptr; }
  void Write(Ns t, const std::vector<uint8_t>& frame) {
    if (!f_) return;
    const uint32_t rec[4] = {
        static_cast<uint32_t>(t / 1'000'000'000), static_cast<uint32_t>(t % 1'000'000'000 / 1000),
        static_cast<uint32_t>(frame.size()), static_cast<uint32_t>(frame.size())};
    std::fwrite(rec, sizeof rec, 1, f_);
    std::fwrite(frame.data(), frame.size(), 1, f_);
  }

 private:
  std::FILE* f_ = nullptr;
};

int RunLoopback(const LoopbackOptions& o) {
  ManualClock clock;
  PcapWriter pcap(o.pcap);
  if (!pcap.ok(o.pcap)) {
    std::cerr << "uroce loopback: cannot write " << o.pcap << "\n";
    return 1;
  }
  // A -> B: data frame 30 is lost (a NAK follows), frames 40..45 are CE-marked
  // (a CNP follows); every frame of both directions goes to the pcap.
  uint64_t data_seen = 0;
  auto is_data = [](const std::vector<uint8_t>& f) {
    return f.size() > 42 && f[23] == pkt::ipproto::kUdp && f[42] <= 0x0B;
  };
  Impairment ab, ba;
  ab.mutate = [&](uint64_t, std::vector<uint8_t>& f) {
    if (is_data(f) && ++data_seen >= 40 && data_seen < 46) {
      f[15] |= pkt::ecn::kCe;
      f[24] = f[25] = 0;
      const uint16_t c = pkt::Ipv4Checksum20(f.data() + 14);
      f[24] = static_cast<uint8_t>(c >> 8);
      f[25] = static_cast<uint8_t>(c);
    }
    pcap.Write(clock.Now(), f);
  };
  uint64_t dropped_at = 0;
  ab.drop_if = [&](uint64_t, std::span<const uint8_t>) {
    if (data_seen == 30 && !dropped_at) {
      dropped_at = data_seen;
      return true;
    }
    return false;
  };
  ba.mutate = [&](uint64_t, std::vector<uint8_t>& f) { pcap.Write(clock.Now(), f); };
  auto lp = MakeLoopbackPair(ab, ba);
  const pkt::MacAddr mac_a{{0x02, 0, 0, 0, 0, 0x0A}}, mac_b{{0x02, 0, 0, 0, 0, 0x0B}};
  const uint32_t ip_a = 0x0A000002, ip_b = 0x0A000102;  // 10.0.0.2, 10.0.1.2
  HostConfig ha, hb;
  ha.engine.ack_every = 16;
  hb.engine = ha.engine;
  ha.mac = mac_a;
  ha.ip = ip_a;
  hb.mac = mac_b;
  hb.ip = ip_b;
  ha.pace_fraction = hb.pace_fraction = 0;
  Host a(ha, std::move(lp.a), &clock), b(hb, std::move(lp.b), &clock);
  std::vector<uint8_t> src(1 << 16), mem(1 << 16), rbuf(1 << 14);
  FillPattern(src.data(), 1, src.size());
  const uint32_t kRkey = 0x1234;
  const uint64_t kVa = 0x7F0000001000;
  b.SetMemory({mem.data(), mem.size(), kVa, kRkey});
  Qp* qa = a.AddQp(0x11, 64, 8);
  Qp* qb = b.AddQp(0x22, 64, 8);
  qa->Connect({mac_a, mac_b, ip_a, ip_b, 0x11, 0x22, 0xFFFFF8, 0x100});  // PSNs wrap
  qb->Connect({mac_b, mac_a, ip_b, ip_a, 0x22, 0x11, 0x100, 0xFFFFF8});
  struct Msg {
    WrOp op;
    uint32_t len;
  };
  const Msg msgs[] = {{WrOp::kWriteImm, 5001}, {WrOp::kWrite, 4097},   {WrOp::kWriteImm, 10},
                      {WrOp::kWrite, 3},       {WrOp::kSend, 6000},    {WrOp::kSendImm, 100},
                      {WrOp::kSend, 7},        {WrOp::kSendImm, 3000}, {WrOp::kWrite, 40 * 1024}};
  std::vector<QpEvent> ea, eb;
  uint64_t off = 0, bad = 0, n = 0, recvs = 0;
  for (const Msg& m : msgs) {
    ++n;
    const bool send = m.op == WrOp::kSend || m.op == WrOp::kSendImm;
    if (send) {
      qb->PostRecv(rbuf.data(), static_cast<uint32_t>(rbuf.size()), n);
      ++recvs;
    }
    SendWr wr;
    wr.op = m.op;
    wr.local = src.data() + off;
    wr.len = m.len;
    wr.remote_va = kVa + off;
    wr.rkey = kRkey;
    wr.imm = static_cast<uint32_t>(0xC0DE0000 + n);
    wr.wr_id = n;
    qa->Post(wr);
    size_t done = 0;
    for (int r = 0; r < 100000 && done < n; ++r) {
      a.Step(&ea);
      b.Step(&eb);
      clock.Advance(1000);
      done = 0;
      for (const auto& e : ea) done += e.kind == QpEventKind::kSendDone;
    }
    if (done < n) ++bad;
    const uint8_t* got = send ? rbuf.data() : mem.data() + off;
    if (std::memcmp(got, src.data() + off, m.len) != 0) ++bad;
    off += m.len;
  }
  nlohmann::json j = {{"ok", bad == 0},
                      {"messages", n},
                      {"bad", bad},
                      {"a", a.CountersJson()},
                      {"b", b.CountersJson()}};
  if (o.json) {
    std::cout << JsonText(j) << "\n";
  } else {
    std::cout << fmt::format("uroce loopback: {} messages, {} bad; B sent {} NAKs, {} CNPs\n", n,
                             bad, qb->counters().naks_tx, qb->counters().cnps_tx);
  }
  (void)recvs;
  return bad == 0 ? 0 : 1;
}

int Main(int argc, char** argv) {
  CLI::App app{"uroce: a userspace RoCEv2 RC engine for ofan-emu's hosts"};
  app.require_subcommand(1);
  PairOptions o;
  auto* pair =
      app.add_subcommand("pair", "host A (netns X) writes M messages of S bytes to host B");
  pair->add_option("--a-netns", o.a_netns, "host A's network namespace ('' = this one)");
  pair->add_option("--b-netns", o.b_netns, "host B's network namespace");
  pair->add_option("--a-if", o.a_if, "host A's interface")->capture_default_str();
  pair->add_option("--b-if", o.b_if, "host B's interface")->capture_default_str();
  pair->add_option("--a-ip", o.a_ip, "host A's IPv4 address (default: the interface's)");
  pair->add_option("--b-ip", o.b_ip, "host B's IPv4 address (default: the interface's)");
  pair->add_option("--io", o.io, "packet I/O")
      ->check(CLI::IsMember({"afxdp", "afpacket", "auto"}))
      ->capture_default_str();
  pair->add_option("--op", o.op, "operation")
      ->check(CLI::IsMember({"write-imm", "send"}))
      ->capture_default_str();
  pair->add_option("-m,--messages", o.messages, "messages")
      ->check(CLI::Range(1ull, 1ull << 40))
      ->capture_default_str();
  pair->add_option("-s,--size", o.size, "bytes per message (KiB, MiB suffixes)")
      ->capture_default_str();
  pair->add_option("--qps", o.qps, "QPs between A and B")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  pair->add_option("--window", o.window, "messages in flight")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  pair->add_option("--mtu", o.mtu, "RoCE path MTU")
      ->check(CLI::IsMember({256u, 512u, 1024u, 2048u, 4096u}))
      ->capture_default_str();
  pair->add_flag("--ooo", o.ooo, "out-of-order placement at the responder");
  pair->add_option("--entropy", o.entropy, "UDP source port choice")
      ->check(CLI::IsMember({"per-qp", "spray", "reps"}))
      ->capture_default_str();
  pair->add_option("--rate-gbps", o.rate_gbps, "line rate the pacer and DCQCN refer to")
      ->check(GbpsRate())
      ->capture_default_str();
  pair->add_option("--pace", o.pace, "pace at this fraction of the line rate (0: unpaced)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  pair->add_flag("--dcqcn", o.dcqcn, "cut the QP rate on CNPs (DCQCN-like)");
  pair->add_option("--dscp", o.dscp, "DSCP of every frame (ECN is ECT(0))")
      ->check(CLI::Range(0u, 63u))
      ->capture_default_str();
  pair->add_option("--rto-us", o.rto_us, "retransmission timeout")
      ->check(CLI::Range(10u, 10'000'000u))
      ->capture_default_str();
  pair->add_option("--retry", o.retry, "timeouts in a row before the QP fails")
      ->check(CLI::Range(0u, 7u))
      ->capture_default_str();
  pair->add_option("--timeout-s", o.timeout_s, "give up after this long")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  pair->add_option("--seed", o.seed, "seed (spray entropy)")->capture_default_str();
  pair->add_flag("--json", o.json, "one JSON object on stdout");
  LoopbackOptions lo;
  auto* loop = app.add_subcommand(
      "loopback", "two hosts in this process: every opcode, a NAK, a CNP (no root needed)");
  loop->add_option("--pcap", lo.pcap, "write every frame of both directions to this pcap");
  loop->add_flag("--json", lo.json, "one JSON object on stdout");
  std::string spec;
  bool coll_json = false;
  auto* coll = app.add_subcommand("collective",
                                  "many hosts in this process run one collective (ofan-emu's run)");
  coll->add_option("--spec", spec, "the run as JSON (emu/uroce/collective_mode.h)")->required();
  coll->add_flag("--json", coll_json, "one JSON object on stdout");
  PeerOptions po;
  auto* peer = AddPeerCommand(app, &po);
  PfcStormOptions so;
  auto* storm = AddPfcStormCommand(app, &so);
  if (auto rc = ParseCommandLine(app, argc, argv)) return *rc;
  if (pair->parsed()) return RunPair(o);
  if (peer->parsed()) return RunPeer(po);
  if (storm->parsed()) return RunPfcStorm(so);
  if (loop->parsed()) return RunLoopback(lo);
  if (coll->parsed()) return RunCollectiveSpec(spec, coll_json);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  return ofan::GuardMain("uroce", 1, [&] { return Main(argc, argv); });
}
