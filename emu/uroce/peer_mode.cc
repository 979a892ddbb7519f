#include "emu/uroce/peer_mode.h"

#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "common/cli.h"
#include "common/json_text.h"
#include "common/units.h"
#include "emu/rcx/pair_check.h"
#include "emu/rcx/rc_exchange.h"
#include "emu/uroce/host.h"
#include "emu/uroce/neighbour.h"
#include "emu/uroce/uroce_transport.h"

namespace ofan::uroce {
namespace {

using nlohmann::json;
using SteadyTime = std::chrono::steady_clock;

constexpr uint32_t kFirstQpn = 0x100;
constexpr uint32_t kRecvDepth = 64;  // SEND receive WRs posted per QP at a time
constexpr char kName[] = "uroce peer";

// Everything a run holds: the host, its buffers, what it sent and checked.
class PeerRun {
 public:
  explicit PeerRun(const PeerOptions& o) : o_(o) {}
  int Run();

 private:
  int Usage(const std::string& m) const {
    std::cerr << kName << ": " << m << " (see uroce peer --help)\n";
    return 2;
  }
  Status Setup();
  Status Connect();
  Status PostReceives();
  bool PostReceive(uint32_t q);  // the next receive WR of QP q
  // One round of the host; events handled; waits at most wait_ns.
  void Pump(Ns wait_ns);
  void OnEvent(const QpEvent& e);
  void OnWriteArrived(const QpEvent& e);
  void OnSendArrived(const QpEvent& e, uint32_t q);
  void PostMore();
  bool LocalDone() const { return acked_ == to_send_ && received_ == to_receive_; }
  json Report(const std::vector<rcx::PeerDone>& peer_done, double secs) const;

  const PeerOptions& o_;
  uint64_t size_ = 0;
  bool send_op_ = false;
  uint64_t to_send_ = 0, to_receive_ = 0;
  uint32_t rank_ = 0;
  IfaceInfo iface_;
  uint32_t mtu_offer_ = 0, path_mtu_ = 0;
  SteadyClock clock_;
  std::unique_ptr<Host> host_;
  std::string why_not_xdp_;
  std::vector<QpEnd> local_;
  uint32_t rkey_ = 0;
  std::vector<uint8_t> recv_;  // count x size, message m at m * size; empty: none expected
  std::vector<uint8_t> send_;  // window x size
  rcx::Hello peer_;
  pkt::MacAddr next_hop_;
  std::unique_ptr<rcx::Rendezvous> rv_;
  // Requester.
  std::vector<uint32_t> free_slots_;
  uint64_t next_msg_ = 0, acked_ = 0;
  bool sending_ = false;
  // Responder.
  std::vector<bool> seen_;                   // WRITE: message m arrived
  std::vector<uint64_t> arrivals_, posted_;  // SEND, per QP: arrived, receive WRs posted
  uint64_t received_ = 0, bad_ = 0;
  std::vector<std::string> bad_notes_;  // the first few mismatches, for the report
  std::string error_;
  std::vector<QpEvent> events_;
};

Status PeerRun::Setup() {
  auto info = ReadIface(o_.netns, o_.iface);
  if (!info.ok()) return info.error();
  iface_ = *info;
  if (!o_.ip.empty()) {
    auto ip = rcx::ParseIpv4(o_.ip);
    if (!ip.ok()) return ip.error();
    iface_.ipv4 = *ip;
  }
  if (iface_.ipv4 == 0) {
    return InvalidArgument(
        fmt::format("{} in '{}' has no IPv4 address: give --ip", o_.iface, o_.netns));
  }
  const IoKind kind = o_.io == "afxdp"      ? IoKind::kAfXdp
                      : o_.io == "afpacket" ? IoKind::kAfPacket
                                            : IoKind::kAuto;
  IoOptions io_opts;
  io_opts.roce_only = true;
  auto io = OpenIo(kind, iface_, &why_not_xdp_, io_opts);
  if (!io.ok()) return io.error();
  mtu_offer_ = RoceMtuOffer(o_.mtu, iface_.mtu, (*io)->max_frame());

  std::random_device rd;
  HostConfig hc;
  hc.engine.mtu = mtu_offer_;
  hc.engine.rto_ns = static_cast<Ns>(o_.rto_us) * 1000;
  hc.engine.retry_count = o_.retry;
  hc.engine.max_inflight_pkts = o_.max_inflight;
  hc.engine.line_rate_gbps = o_.rate_gbps;
  hc.engine.seed = (uint64_t{rd()} << 32) | rd();
  hc.mac = iface_.mac;
  hc.ip = iface_.ipv4;
  hc.pace_fraction = o_.pace;
  host_ = std::make_unique<Host>(hc, std::move(*io), &clock_);

  for (uint32_t q = 0; q < o_.qps; ++q) {
    const uint32_t psn = o_.psn >= 0 ? static_cast<uint32_t>(o_.psn) : rd() & pkt::kPsnMask;
    local_.push_back({kFirstQpn + q, psn});
  }
  do {
    rkey_ = rd();
  } while (rkey_ == 0);
  // Message m lands at m * size for both operations (a SEND in the
  // receive WR posted for it), as the verbs side places them too.
  recv_.assign(to_receive_ * size_, 0);
  send_.assign(static_cast<size_t>(to_send_ ? std::min<uint64_t>(o_.window, to_send_) : 0) * size_,
               0);
  for (uint32_t s = 0; s * size_ < send_.size(); ++s) free_slots_.push_back(s);
  seen_.assign(send_op_ ? 0 : to_receive_, false);
  arrivals_.assign(o_.qps, 0);
  posted_.assign(o_.qps, 0);
  // WRITEs land at addr + offset of the buffer as peers address it: its
  // address in this process, as a verbs memory region's is.
  host_->SetMemory(
      MemoryRegion{recv_.data(), recv_.size(), reinterpret_cast<uint64_t>(recv_.data()), rkey_});
  return {};
}

Status PeerRun::Connect() {
  rcx::RendezvousOptions ro;
  rank_ = o_.connect.empty() ? 0 : 1;
  ro.rank = rank_;
  ro.num_ranks = 2;
  ro.port = o_.rc_port;
  ro.timeout = std::chrono::milliseconds(static_cast<int64_t>(o_.timeout_s * 1000));
  if (rank_ == 0) {
    uint32_t at = iface_.ipv4;
    if (!o_.listen.empty()) {
      auto ip = rcx::ParseIpv4(o_.listen);
      if (!ip.ok()) return ip.error();
      at = *ip;
    }
    ro.ips = {at, 0};
  } else {
    auto ip = rcx::ParseIpv4(o_.connect);
    if (!ip.ok()) return ip.error();
    ro.ips = {*ip, iface_.ipv4};
  }
  // The exchange's TCP lives in the host's namespace, beside its RoCE.
  ro.make_socket = [netns = o_.netns]() { return TcpSocketIn(netns); };
  ro.progress = [this]() { Pump(1'000'000); };
  rcx::Hello mine;
  mine.rank = rank_;
  mine.ip = iface_.ipv4;
  mine.mac = MacText(iface_.mac);
  mine.mtu = mtu_offer_;
  mine.rkey = rkey_;
  mine.addr = reinterpret_cast<uint64_t>(recv_.data());
  mine.len = recv_.size();  // 0: this side expects nothing
  mine.qps = local_;
  std::vector<rcx::Hello> peers;
  auto rv = rcx::Rendezvous::Connect(
      ro, [&](uint32_t) { return mine; }, &peers);
  if (!rv.ok()) return rv.error();
  rv_ = std::move(*rv);
  peer_ = peers[1 - rank_];
  const std::string who =
      fmt::format("the peer (rank {}, {})", peer_.rank, rcx::Ipv4Text(peer_.ip));
  // The hellos' lengths say what each side expects: count x size, or 0.
  if (to_send_ && peer_.len < to_send_ * size_) {
    return InvalidArgument(
        fmt::format("{} offers a {} B buffer; {} messages of {} B need {} (give both "
                    "sides the same --count and --size; a peer with --direction tx "
                    "receives nothing)",
                    who, peer_.len, to_send_, size_, to_send_ * size_));
  }
  if (!to_send_ && peer_.len) {
    return InvalidArgument(
        fmt::format("{} expects {} B of messages, but this side sends none "
                    "(--direction rx): give it --direction tx",
                    who, peer_.len));
  }
  if (!o_.next_hop_mac.empty()) {
    auto m = ParseMac(o_.next_hop_mac);
    if (!m.ok()) return m.error();
    next_hop_ = *m;
  } else {
    auto m = NextHopMac(o_.netns, o_.iface, peer_.ip);
    if (!m.ok()) return m.error();
    next_hop_ = *m;
  }
  PeerInfo pi;
  pi.ip = peer_.ip;
  pi.next_hop_mac = next_hop_;
  pi.rkey = peer_.rkey;
  pi.addr = peer_.addr;
  pi.len = peer_.len;
  pi.mtu = peer_.mtu;
  pi.qps = peer_.qps;
  path_mtu_ = std::min(mtu_offer_, peer_.mtu);
  const uint32_t sq = std::max<uint32_t>(o_.window, 1);
  if (Status s = ConnectPeerQps(host_.get(), iface_.ipv4, mtu_offer_, local_, pi, sq, kRecvDepth);
      !s.ok())
    return s;
  return PostReceives();
}

Status PeerRun::PostReceives() {
  if (!send_op_ || !to_receive_) return {};
  for (uint32_t q = 0; q < o_.qps; ++q) {
    const uint64_t n = std::min<uint64_t>(kRecvDepth, rcx::PairMessagesOn(q, to_receive_, o_.qps));
    for (uint64_t i = 0; i < n; ++i) {
      if (!PostReceive(q)) return MakeError(ErrorCode::kInternal, "receive queue full");
    }
  }
  return {};
}

bool PeerRun::PostReceive(uint32_t q) {
  // The k-th receive WR of QP q is for message q + k * qps, at its offset.
  const uint64_t m = rcx::PairSendMessage(q, posted_[q], o_.qps);
  if (!host_->qp(local_[q].qpn)
           ->PostRecv(recv_.data() + m * size_, static_cast<uint32_t>(size_), m))
    return false;
  ++posted_[q];
  return true;
}

void PeerRun::Pump(Ns wait_ns) {
  events_.clear();
  host_->Step(&events_);
  for (const QpEvent& e : events_) OnEvent(e);
  if (wait_ns) host_->Wait(wait_ns);
}

void PeerRun::OnEvent(const QpEvent& e) {
  const uint32_t q = e.qpn - kFirstQpn;
  switch (e.kind) {
    case QpEventKind::kError:
      if (error_.empty()) error_ = fmt::format("QP {} (0x{:x}): {}", q, e.qpn, e.error);
      return;
    case QpEventKind::kSendDone:
      ++acked_;
      free_slots_.push_back(static_cast<uint32_t>(e.wr_id));
      return;
    case QpEventKind::kRecvDone:
      if (send_op_) {
        OnSendArrived(e, q);
      } else {
        OnWriteArrived(e);
      }
      return;
  }
}

void PeerRun::OnWriteArrived(const QpEvent& e) {
  ++received_;
  const uint64_t m = e.imm;
  auto bad = [&](const std::string& why) {
    ++bad_;
    if (bad_notes_.size() < 8) bad_notes_.push_back(fmt::format("message {}: {}", m, why));
  };
  if (!e.has_imm || m >= to_receive_ || seen_[m]) {
    return bad(!e.has_imm         ? "a WRITE without immediate"
               : m >= to_receive_ ? "not expected"
                                  : "arrived twice");
  }
  seen_[m] = true;
  const uint64_t want_va = reinterpret_cast<uint64_t>(recv_.data()) + m * size_;
  if (e.va != want_va || e.len != size_)
    return bad(fmt::format("{} B at 0x{:x}, expected {} B at 0x{:x}", e.len, e.va, size_, want_va));
  if (!rcx::PairMessageMatches(recv_.data() + m * size_, m, size_)) bad("data differ");
}

void PeerRun::OnSendArrived(const QpEvent& e, uint32_t q) {
  ++received_;
  const uint64_t m = q < o_.qps ? rcx::PairSendMessage(q, arrivals_[q]++, o_.qps) : e.wr_id;
  auto bad = [&](const std::string& why) {
    ++bad_;
    if (bad_notes_.size() < 8) bad_notes_.push_back(fmt::format("message {}: {}", m, why));
  };
  if (q >= o_.qps || m >= to_receive_) return bad("not expected");
  if (e.wr_id != m) {
    bad(fmt::format("arrived in the receive WR of message {}", e.wr_id));
  } else if (e.len != size_) {
    bad(fmt::format("{} B, expected {}", e.len, size_));
  } else if (!rcx::PairMessageMatches(recv_.data() + m * size_, m, size_)) {
    bad("data differ");
  }
  if (posted_[q] < rcx::PairMessagesOn(q, to_receive_, o_.qps) && !PostReceive(q))
    error_ = "receive queue full";
}

void PeerRun::PostMore() {
  while (sending_ && next_msg_ < to_send_ && !free_slots_.empty()) {
    const uint64_t m = next_msg_;
    const uint32_t slot = free_slots_.back();
    uint8_t* p = send_.data() + static_cast<size_t>(slot) * size_;
    rcx::FillPairMessage(p, m, size_);
    const uint32_t q = rcx::PairQp(m, o_.qps);
    SendWr wr;
    wr.op = send_op_ ? WrOp::kSend : WrOp::kWriteImm;
    wr.local = p;
    wr.len = static_cast<uint32_t>(size_);
    wr.remote_va = peer_.addr + m * size_;
    wr.rkey = peer_.rkey;
    wr.imm = static_cast<uint32_t>(m);
    wr.wr_id = slot;
    if (!host_->qp(local_[q].qpn)->Post(wr)) return;  // that QP's queue is full: later
    free_slots_.pop_back();
    ++next_msg_;
  }
}

json PeerRun::Report(const std::vector<rcx::PeerDone>& peer_done, double secs) const {
  json totals = {{"retransmits", 0}, {"naks_tx", 0},    {"naks_rx", 0},
                 {"timeouts", 0},    {"duplicates", 0}, {"out_of_sequence", 0}};
  for (const auto& q : host_->qps()) {
    const QpCounters& c = q->counters();
    totals["retransmits"] = totals["retransmits"].get<uint64_t>() + c.retransmits;
    totals["naks_tx"] = totals["naks_tx"].get<uint64_t>() + c.naks_tx;
    totals["naks_rx"] = totals["naks_rx"].get<uint64_t>() + c.naks_rx;
    totals["timeouts"] = totals["timeouts"].get<uint64_t>() + c.timeouts;
    totals["duplicates"] = totals["duplicates"].get<uint64_t>() + c.duplicates;
    totals["out_of_sequence"] = totals["out_of_sequence"].get<uint64_t>() + c.out_of_sequence;
  }
  json j = {{"ok", error_.empty()},
            {"error", error_},
            {"stack", "uroce"},
            {"rank", rank_},
            {"op", o_.op},
            {"direction", o_.direction},
            {"messages", o_.count},
            {"size", size_},
            {"qps", o_.qps},
            {"sent", acked_},
            {"received", received_},
            {"bad", bad_},
            {"bad_notes", bad_notes_},
            {"seconds", secs},
            {"gbps", secs > 0 ? (acked_ + received_) * size_ * 8.0 / secs / 1e9 : 0.0},
            {"mtu", path_mtu_},
            {"next_hop_mac", MacText(next_hop_)},
            {"totals", totals},
            {"counters", host_->CountersJson()}};
  if (!peer_done.empty())
    j["peer_done"] = {{"received", peer_done[0].received}, {"bad", peer_done[0].bad}};
  if (!why_not_xdp_.empty()) j["afxdp_unavailable"] = why_not_xdp_;
  return j;
}

int PeerRun::Run() {
  const bool listen = o_.listen_opt && o_.listen_opt->count() > 0;
  if (listen == !o_.connect.empty()) return Usage("give exactly one of --listen and --connect");
  auto size = ParseSize(o_.size);
  if (!size.ok()) return Usage("--size: " + size.error().message);
  if (*size == 0 || *size > (1ull << 31)) return Usage("--size must be 1 B .. 2 GiB");
  size_ = *size;
  send_op_ = o_.op == "send";
  to_send_ = o_.direction == "rx" ? 0 : o_.count;
  to_receive_ = o_.direction == "tx" ? 0 : o_.count;
  // Addresses are checked before anything is opened: a bad one is a bad
  // command line, not a failed run.
  for (const auto* a : {&o_.ip, &o_.listen, &o_.connect}) {
    if (a->empty()) continue;
    if (auto ip = rcx::ParseIpv4(*a); !ip.ok()) return Usage(ip.error().message);
  }
  if (!o_.next_hop_mac.empty()) {
    auto m = ParseMac(o_.next_hop_mac);
    if (!m.ok()) return Usage("--next-hop-mac: " + m.error().message);
  }
  if (to_receive_ * size_ > (16ull << 30)) {
    return Usage(
        fmt::format("--count x --size = {} B: the receive buffer holds every message; at "
                    "most 16 GiB",
                    to_receive_ * size_));
  }

  const auto fail = [&](const std::string& m) {
    if (error_.empty()) error_ = m;
  };
  auto t0 = SteadyTime::now();
  double secs = 0;
  std::vector<rcx::PeerDone> peer_done;
  if (Status s = Setup(); !s.ok()) {
    std::cerr << kName << ": " << s.error().message << "\n";
    return 1;
  }
  if (Status s = Connect(); !s.ok()) fail(s.error().message);
  if (error_.empty()) {
    if (Status s = rv_->Ready(); !s.ok()) fail(s.error().message);
  }
  if (error_.empty()) {
    // The peer's ready is in: this side may send.
    t0 = SteadyTime::now();
    sending_ = true;
    const auto deadline = t0 + std::chrono::milliseconds(static_cast<int64_t>(o_.timeout_s * 1000));
    while (error_.empty() && !LocalDone()) {
      PostMore();
      Pump(0);
      if (LocalDone()) break;
      if (SteadyTime::now() > deadline) {
        fail(
            fmt::format("timed out after {} s: {} of {} sent messages acknowledged, {} of {} "
                        "arrived",
                        o_.timeout_s, acked_, to_send_, received_, to_receive_));
        break;
      }
      host_->Wait(1'000'000);
    }
    secs = std::chrono::duration<double>(SteadyTime::now() - t0).count();
  }
  if (error_.empty()) {
    auto d = rv_->Done(received_, bad_);
    if (!d.ok()) {
      fail(d.error().message);
    } else {
      peer_done = *d;
      if (peer_done.size() == 1 && (peer_done[0].received != to_send_ || peer_done[0].bad)) {
        fail(fmt::format("the peer received {} of the {} messages sent to it, {} bad",
                         peer_done[0].received, to_send_, peer_done[0].bad));
      }
    }
  }
  if (error_.empty() && bad_) fail(fmt::format("{} of {} messages arrived wrong", bad_, received_));
  const json j = Report(peer_done, secs);
  if (o_.json) {
    std::cout << JsonText(j) << "\n";
  } else {
    std::cout << fmt::format(
        "uroce peer ({}, rank {}): {} {} x {} B on {} QPs, sent {}, received {}, bad {}, "
        "{:.3f} s, {:.3f} Gb/s, retransmits {}, NAKs sent {} received {}, timeouts {}\n",
        host_->io().kind(), rank_, o_.op, o_.count, size_, o_.qps, acked_, received_, bad_, secs,
        j["gbps"].get<double>(), j["totals"]["retransmits"].get<uint64_t>(),
        j["totals"]["naks_tx"].get<uint64_t>(), j["totals"]["naks_rx"].get<uint64_t>(),
        j["totals"]["timeouts"].get<uint64_t>());
  }
  if (!error_.empty()) std::cerr << kName << ": " << error_ << "\n";
  return error_.empty() ? 0 : 1;
}

}  // namespace

CLI::App* AddPeerCommand(CLI::App& app, PeerOptions* o) {
  auto* p = app.add_subcommand(
      "peer", "one side of ofan-rc-1's pair check (docs/rc-exchange.md) against uroce or rxe");
  o->listen_opt = p->add_option("--listen", o->listen,
                                "be rank 0: listen on ADDR (default: the host's address)")
                      ->expected(0, 1);
  p->add_option("--connect", o->connect, "be rank 1: connect to the listener at ADDR");
  p->add_option("--rc-port", o->rc_port, "the exchange's TCP port")->capture_default_str();
  p->add_option("--op", o->op, "what carries the messages")
      ->check(CLI::IsMember({"write", "send"}))
      ->capture_default_str();
  p->add_option("--count", o->count, "messages (M)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 31))
      ->capture_default_str();
  p->add_option("--size", o->size, "bytes per message (S; KiB, MiB suffixes)")
      ->capture_default_str();
  p->add_option("--qps", o->qps, "RC QPs between the two")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  p->add_option("--direction", o->direction, "what this side sends: both, tx (only), rx (nothing)")
      ->check(CLI::IsMember({"both", "tx", "rx"}))
      ->capture_default_str();
  p->add_flag("--json", o->json, "one JSON object on stdout");
  p->add_option("--netns", o->netns, "the host's network namespace ('' = this one)");
  p->add_option("--iface", o->iface, "the host's interface")->capture_default_str();
  p->add_option("--io", o->io, "packet I/O")
      ->check(CLI::IsMember({"afxdp", "afpacket", "auto"}))
      ->capture_default_str();
  p->add_option("--ip", o->ip, "the host's IPv4 address (default: the interface's)");
  p->add_option("--next-hop-mac", o->next_hop_mac,
                "where frames to the peer go (default: the namespace's neighbour entry)");
  p->add_option("--mtu", o->mtu, "the largest path MTU offered (the interface may cap it)")
      ->check(CLI::IsMember({256u, 512u, 1024u, 2048u, 4096u}))
      ->capture_default_str();
  p->add_option("--window", o->window, "messages this side has in flight")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  p->add_option("--max-inflight", o->max_inflight, "unacknowledged packets per QP (rxe: 128)")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  p->add_option("--pace", o->pace, "pace at this fraction of --rate-gbps (0: unpaced)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  p->add_option("--rate-gbps", o->rate_gbps, "the line rate --pace refers to")
      ->check(GbpsRate())
      ->capture_default_str();
  p->add_option("--rto-us", o->rto_us, "retransmission timeout")
      ->check(CLI::Range(10u, 10'000'000u))
      ->capture_default_str();
  p->add_option("--retry", o->retry, "timeouts in a row before a QP fails")
      ->check(CLI::Range(0u, 7u))
      ->capture_default_str();
  p->add_option("--timeout-s", o->timeout_s, "the setup, the transfer and each wait end by then")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  p->add_option("--psn", o->psn, "the first PSN of every QP (default: random)")
      ->check(CLI::Range(int64_t{0}, int64_t{pkt::kPsnMask}));
  return p;
}

int RunPeer(const PeerOptions& o) { return PeerRun(o).Run(); }

}  // namespace ofan::uroce
