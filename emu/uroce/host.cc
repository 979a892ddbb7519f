#include "emu/uroce/host.h"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cstring>

#include "dataplane/packet/frame_budget.h"
#include "dataplane/packet/pfc_frame.h"

namespace ofan::uroce {
namespace {

constexpr uint32_t kWireExtra = pkt::kWireOverheadBytes;  // preamble, FCS, gap
constexpr pkt::MacAddr kBroadcast{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}};

}  // namespace

Ns SteadyClock::Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Ns>(ts.tv_sec) * 1'000'000'000ull + static_cast<Ns>(ts.tv_nsec);
}

Host::Host(const HostConfig& cfg, std::unique_ptr<PacketIo> io, Clock* clock)
    : cfg_(cfg),
      io_(std::move(io)),
      clock_(clock),
      stash_(cfg.stash_slots),
      tx_buf_(static_cast<size_t>(kBatch) * kMaxFrame),
      tx_views_(kBatch) {
  if (cfg_.pace_fraction > 0) {
    bytes_per_ns_ = cfg_.engine.line_rate_gbps * cfg_.pace_fraction / 8.0;
  }
  tokens_ = cfg_.burst_bytes;
  last_refill_ = clock_->Now();
}

void Host::StartPacing() {
  tokens_ = 0;
  last_refill_ = clock_->Now();
}

Qp* Host::AddQp(uint32_t qpn, uint32_t sq_depth, uint32_t rq_depth) {
  if (qp_by_num_.count(qpn)) return nullptr;
  qp_list_.push_back(std::make_unique<Qp>(cfg_.engine, &mr_, &stash_, sq_depth, rq_depth));
  qp_by_num_[qpn] = qp_list_.back().get();
  return qp_list_.back().get();
}

Qp* Host::qp(uint32_t qpn) {
  auto it = qp_by_num_.find(qpn);
  return it == qp_by_num_.end() ? nullptr : it->second;
}

uint8_t* Host::TxSlot() {
  if (tx_n_ == kBatch) FlushTx();
  if (tx_n_ == kBatch) return nullptr;
  return tx_buf_.data() + static_cast<size_t>(tx_n_) * kMaxFrame;
}

void Host::FlushTx() {
  if (tx_head_ == tx_n_) return;
  const Ns t = cfg_.send_log ? clock_->Now() : 0;
  const uint32_t sent = io_->Send({tx_views_.data() + tx_head_, tx_n_ - tx_head_});
  if (cfg_.send_log) LogSent(t, tx_head_, sent);
  c_.tx_frames += sent;
  tx_head_ += sent;
  if (tx_head_ == tx_n_) {
    tx_head_ = tx_n_ = 0;
  } else {
    ++c_.tx_refused;  // the rest waits in place for the next Step
  }
}

void Host::LogSent(Ns t, uint32_t from, uint32_t n) {
  for (uint32_t i = from; i < from + n; ++i) {
    const FrameView& v = tx_views_[i];
    if (v.len < kL2L4 + kBth) continue;
    const uint8_t* udp = v.data + sizeof(pkt::EtherHdr) + sizeof(pkt::Ipv4Hdr);
    if (pkt::Rd16(udp + offsetof(pkt::UdpHdr, dst_port)) != pkt::kRoceV2Port) continue;
    const uint8_t* bth = udp + sizeof(pkt::UdpHdr);
    sent_.push_back(SentFrame{.t = t,
                              .dqpn = pkt::BthDqpnAt(bth),
                              .psn = pkt::Rd32(bth + offsetof(pkt::BthHdr, psn)) & pkt::kPsnMask,
                              .len = static_cast<uint16_t>(v.len),
                              .opcode = pkt::BthOpcodeAt(bth)});
  }
}

void Host::HandleFrame(const uint8_t* f, uint32_t len, Ns now, std::vector<QpEvent>* events) {
  ++c_.rx_frames;
  if (len < sizeof(pkt::EtherHdr)) {
    ++c_.malformed;
    return;
  }
  const auto eth = pkt::Load<pkt::EtherHdr>(f);
  if (eth.dst == pkt::kPfcDstMac && eth.type.host() == pkt::ethertype::kMacControl) {
    HandlePause(f, len, now);
    return;
  }
  if (!(eth.dst == cfg_.mac) && !(eth.dst == kBroadcast)) {
    ++c_.not_for_us;
    return;
  }
  const uint16_t type = eth.type.host();
  if (type == pkt::ethertype::kArp) {
    if (len < sizeof(pkt::EtherHdr) + sizeof(pkt::ArpHdr)) {
      ++c_.malformed;
      return;
    }
    const auto a = pkt::Load<pkt::ArpHdr>(f + sizeof(pkt::EtherHdr));
    if (a.oper.host() != pkt::arp::kRequest || a.tpa.host() != cfg_.ip || cfg_.ip == 0) {
      ++c_.not_for_us;
      return;
    }
    uint8_t* out = TxSlot();
    if (!out) return;  // the requester asks again
    pkt::EtherHdr re{};
    re.dst = a.sha;
    re.src = cfg_.mac;
    re.type = pkt::Be16::FromHost(pkt::ethertype::kArp);
    pkt::ArpHdr ra = a;
    ra.oper = pkt::Be16::FromHost(pkt::arp::kReply);
    ra.sha = cfg_.mac;
    ra.spa = pkt::Be32::FromHost(cfg_.ip);
    ra.tha = a.sha;
    ra.tpa = a.spa;
    std::memset(out, 0, 60);
    std::memcpy(out, &re, sizeof re);
    std::memcpy(out + sizeof re, &ra, sizeof ra);
    tx_views_[tx_n_++] = FrameView{out, 60};
    ++c_.arp_replies;
    return;
  }
  constexpr uint32_t kMin = sizeof(pkt::EtherHdr) + sizeof(pkt::Ipv4Hdr) + sizeof(pkt::UdpHdr) +
                            sizeof(pkt::BthHdr) + pkt::kIcrcBytes;
  if (type != pkt::ethertype::kIpv4 || len < kMin) {
    ++c_.not_for_us;
    return;
  }
  const uint8_t* ip = f + sizeof(pkt::EtherHdr);
  const uint32_t ihl = (ip[0] & 0xF) * 4u;
  if (ip[offsetof(pkt::Ipv4Hdr, proto)] != pkt::ipproto::kUdp || ihl < 20 ||
      len < sizeof(pkt::EtherHdr) + ihl + sizeof(pkt::UdpHdr) + sizeof(pkt::BthHdr) + 4 ||
      pkt::Rd16(ip + ihl + offsetof(pkt::UdpHdr, dst_port)) != pkt::kRoceV2Port ||
      (cfg_.ip != 0 && pkt::Rd32(ip + offsetof(pkt::Ipv4Hdr, dst)) != cfg_.ip)) {
    ++c_.not_for_us;
    return;
  }
  if (!pkt::RoceIcrcOk(f, len)) {
    ++c_.bad_icrc;
    return;
  }
  const uint32_t total = pkt::Rd16(ip + offsetof(pkt::Ipv4Hdr, total_length));
  const uint8_t* bth = ip + ihl + sizeof(pkt::UdpHdr);
  Qp* q = qp(pkt::BthDqpnAt(bth));
  if (!q) {
    ++c_.unknown_qp;
    return;
  }
  const uint32_t bth_len = total - ihl - sizeof(pkt::UdpHdr) - pkt::kIcrcBytes;
  const uint16_t sport = pkt::Rd16(ip + ihl + offsetof(pkt::UdpHdr, src_port));
  const bool ce = (ip[offsetof(pkt::Ipv4Hdr, tos)] & 3) == pkt::ecn::kCe;
  q->OnPacket(bth, bth_len, sport, ce, now, events);
}

void Host::HandlePause(const uint8_t* f, uint32_t len, Ns now) {
  if (!cfg_.pfc_priority) {  // not a lossless host: the MAC ignores it
    ++c_.not_for_us;
    return;
  }
  const pkt::ReceivedPause rp = pkt::ReadPause({f, len}, *cfg_.pfc_priority, false);
  if (rp.kind != pkt::PauseRx::kOurs) {
    ++(rp.kind == pkt::PauseRx::kMalformed ? c_.malformed : c_.not_for_us);
    return;
  }
  ++c_.pfc_rx;
  // The pause asked, in this link's time: quanta of 512 bit times.
  const double bits = static_cast<double>(rp.quanta) * pkt::kPfcQuantumBytes * 8;
  pause_.Received(now, now + static_cast<Ns>(bits / cfg_.engine.line_rate_gbps));
  c_.pfc_paused_ns = pause_.paused_ps(now);  // the clock's unit is ours: ns
}

bool Host::Step(std::vector<QpEvent>* events) {
  Ns now = clock_->Now();
  bool moved = false;
  FlushTx();  // what the PacketIo refused last time goes first
  const bool backlog = tx_n_ != 0;
  // What has arrived is read before the timers run (up to kRxBatches
  // batches): after a pause (the process not scheduled for longer than the
  // timeout, as in a TCG VM), the ACK that stops a retransmission timer may
  // sit behind a burst of the peer's data; read one batch only, and the
  // timer fires, everything in flight goes again, and the peer answers each
  // duplicate with an ACK of its own (rxe does), which deepens the queue.
  for (uint32_t b = 0; b < kRxBatches; ++b) {
    const uint32_t n = io_->Recv(rx_);
    for (uint32_t i = 0; i < n; ++i) HandleFrame(rx_[i].data, rx_[i].len, now, events);
    moved |= n > 0;
    if (n < rx_.size()) break;
  }
  for (auto& q : qp_list_) q->OnTimer(now, events);
  for (auto& q : qp_list_) {
    for (;;) {
      uint8_t* out = TxSlot();
      if (!out) break;
      const uint32_t len = q->BuildControl(out, now);
      if (!len) break;
      tx_views_[tx_n_++] = FrameView{out, len};
    }
  }
  // Data, paced.
  if (bytes_per_ns_ > 0) {
    tokens_ = std::min<double>(cfg_.burst_bytes,
                               tokens_ + static_cast<double>(now - last_refill_) * bytes_per_ns_);
  }
  last_refill_ = now;
  const uint32_t nq = static_cast<uint32_t>(qp_list_.size());
  uint32_t idle = 0;
  const bool paused = pause_.paused_at(now);  // PFC: data waits, control went above
  if (cfg_.pfc_priority) c_.pfc_paused_ns = pause_.paused_ps(now);
  while (!backlog && !paused && nq && idle < nq && (bytes_per_ns_ <= 0 || tokens_ > 0)) {
    uint8_t* out = TxSlot();
    if (!out) break;
    Qp& q = *qp_list_[rr_++ % nq];
    const uint32_t len = q.BuildData(out, now);
    if (!len) {
      ++idle;
      continue;
    }
    idle = 0;
    tx_views_[tx_n_++] = FrameView{out, len};
    if (bytes_per_ns_ > 0) tokens_ -= len + kWireExtra;
    if (tx_n_ == kBatch) break;  // one batch per Step keeps receive timely
  }
  if (bytes_per_ns_ > 0 && tokens_ <= 0) ++c_.pace_waits;
  moved |= tx_n_ > 0;
  FlushTx();
  return moved;
}

Ns Host::IdleFor(Ns max_ns) {
  const Ns now = clock_->Now();
  Ns until = now + max_ns;
  if (tx_n_ != tx_head_) until = std::min(until, now + 20'000);  // the ring drains
  bool data = false;
  for (auto& q : qp_list_) {
    until = std::min(until, std::max(q->NextDeadline(), now));
    data |= q->HasData(now);
  }
  if (data && pause_.paused_at(now)) {
    until = std::min<Ns>(until, pause_.until());  // the pause's end
  } else if (data) {
    if (bytes_per_ns_ <= 0 || tokens_ > 0) return 0;
    until = std::min(until, now + static_cast<Ns>(-tokens_ / bytes_per_ns_) + 1);
  }
  return until > now ? until - now : 0;
}

void Host::Wait(Ns max_ns) {
  Host* self = this;
  WaitAny({&self, 1}, max_ns);
}

void WaitAny(std::span<Host* const> hosts, Ns max_ns) {
  Ns wait = max_ns;
  std::array<pollfd, 64> fds{};
  uint32_t nfd = 0;
  for (Host* h : hosts) {
    wait = std::min(wait, h->IdleFor(max_ns));
    if (h->fd() >= 0 && nfd < fds.size()) fds[nfd++] = pollfd{h->fd(), POLLIN, 0};
  }
  if (wait == 0) return;
  for (Host* h : hosts) {
    if (!h->PrepareSleep()) return;  // frames wait (shared-memory rings)
  }
  timespec ts{static_cast<time_t>(wait / 1'000'000'000ull),
              static_cast<long>(wait % 1'000'000'000ull)};
  ppoll(fds.data(), nfd, &ts, nullptr);
}

nlohmann::json QpCountersJson(const QpCounters& c) {
  return {{"tx_pkts", c.tx_pkts},
          {"tx_bytes", c.tx_bytes},
          {"rx_pkts", c.rx_pkts},
          {"rx_bytes", c.rx_bytes},
          {"retransmits", c.retransmits},
          {"naks_tx", c.naks_tx},
          {"naks_rx", c.naks_rx},
          {"other_naks_rx", c.other_naks_rx},
          {"other_naks_tx", c.other_naks_tx},
          {"acks_tx", c.acks_tx},
          {"acks_rx", c.acks_rx},
          {"out_of_sequence", c.out_of_sequence},
          {"duplicates", c.duplicates},
          {"timeouts", c.timeouts},
          {"cnps_tx", c.cnps_tx},
          {"cnps_rx", c.cnps_rx},
          {"ce_rx", c.ce_rx},
          {"drops", c.drops},
          {"completions", c.completions},
          {"deliveries", c.deliveries}};
}

nlohmann::json Host::CountersJson() {
  io_->ReadKernelDrops();
  const IoCounters& k = io_->io_counters();
  nlohmann::json qps = nlohmann::json::array();
  for (const auto& q : qp_list_) {
    nlohmann::json j = QpCountersJson(q->counters());
    j["qpn"] = q->qpn();
    j["remote_qpn"] = q->peer().remote_qpn;
    j["udp_sport"] = q->base_sport();
    j["failed"] = q->failed();
    qps.push_back(j);
  }
  return {{"io", io_->kind()},
          {"rx_frames", c_.rx_frames},
          {"tx_frames", c_.tx_frames},
          {"bad_icrc", c_.bad_icrc},
          {"not_for_us", c_.not_for_us},
          {"unknown_qp", c_.unknown_qp},
          {"malformed", c_.malformed},
          {"arp_replies", c_.arp_replies},
          {"tx_refused", c_.tx_refused},
          {"pace_waits", c_.pace_waits},
          {"pfc_rx", c_.pfc_rx},
          {"pfc_paused_us", static_cast<double>(c_.pfc_paused_ns) / 1e3},
          {"kernel_rx_ring_full", k.kernel_rx_ring_full},
          {"kernel_fill_empty", k.kernel_fill_empty},
          {"kernel_rx_dropped", k.kernel_rx_dropped},
          {"qps", qps}};
}

}  // namespace ofan::uroce
