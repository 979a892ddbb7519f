#include "emu/uroce/uroce_transport.h"

#include <fmt/format.h>

#include <algorithm>

namespace ofan::uroce {

uint32_t TransportStartPsn(uint32_t from, uint32_t to, uint32_t q) {
  return static_cast<uint32_t>(SplitMix64((uint64_t{from} << 40) ^ (uint64_t{to} << 16) ^ q)) &
         pkt::kPsnMask;
}

Result<TransportConfig> ComputedPlan(const PlanConfig& p) {
  if (p.num_ranks < 2 || p.rank >= p.num_ranks) {
    return InvalidArgument(fmt::format("rank {} of {} ranks", p.rank, p.num_ranks));
  }
  if (p.rank_ips.size() != p.num_ranks) {
    return InvalidArgument(
        fmt::format("{} rank addresses for {} ranks", p.rank_ips.size(), p.num_ranks));
  }
  TransportConfig c;
  c.rank = p.rank;
  c.num_ranks = p.num_ranks;
  c.qps_per_peer = p.qps_per_peer;
  c.max_outstanding = p.max_outstanding;
  c.local_ip = p.rank_ips[p.rank];
  c.rkey = p.rkey;
  c.addr = 0;
  c.local_qps.resize(p.num_ranks);
  c.peers.resize(p.num_ranks);
  for (uint32_t r = 0; r < p.num_ranks; ++r) {
    if (r == p.rank) continue;
    PeerInfo& peer = c.peers[r];
    peer.ip = p.rank_ips[r];
    peer.next_hop_mac = p.next_hop_mac;
    peer.rkey = p.rkey;
    peer.addr = 0;
    peer.len = p.peer_recv_bytes;
    for (uint32_t q = 0; q < p.qps_per_peer; ++q) {
      c.local_qps[r].push_back(
          {TransportQpn(r, q, p.qps_per_peer), TransportStartPsn(p.rank, r, q)});
      peer.qps.push_back(
          {TransportQpn(p.rank, q, p.qps_per_peer), TransportStartPsn(r, p.rank, q)});
    }
  }
  return c;
}

Status ConnectPeerQps(Host* host, uint32_t local_ip, uint32_t local_mtu,
                      std::span<const QpEnd> local, const PeerInfo& peer, uint32_t sq_depth,
                      uint32_t rq_depth) {
  if (local.size() != peer.qps.size()) {
    return InvalidArgument(
        fmt::format("{} local QPs for {} of the peer's", local.size(), peer.qps.size()));
  }
  const uint32_t mine = local_mtu ? local_mtu : host->config().engine.mtu;
  const uint32_t mtu = peer.mtu ? std::min(mine, peer.mtu) : mine;
  for (size_t q = 0; q < local.size(); ++q) {
    Qp* qp = host->AddQp(local[q].qpn, sq_depth, rq_depth);
    if (!qp) return InvalidArgument(fmt::format("QP {} exists", local[q].qpn));
    QpPeer p;
    p.local_mac = host->config().mac;
    p.next_hop_mac = peer.next_hop_mac;
    p.local_ip = local_ip;
    p.remote_ip = peer.ip;
    p.local_qpn = local[q].qpn;
    p.remote_qpn = peer.qps[q].qpn;
    p.start_psn = local[q].psn;
    p.peer_start_psn = peer.qps[q].psn;
    p.mtu = mtu;
    qp->Connect(p);
  }
  return {};
}

Result<std::unique_ptr<UroceTransport>> UroceTransport::Create(const TransportConfig& cfg,
                                                               Host* host,
                                                               std::span<uint8_t> send_buf,
                                                               std::span<uint8_t> recv_buf) {
  if (cfg.num_ranks < 2 || cfg.rank >= cfg.num_ranks) {
    return InvalidArgument(fmt::format("rank {} of {} ranks", cfg.rank, cfg.num_ranks));
  }
  if (cfg.qps_per_peer == 0 || cfg.max_outstanding == 0 ||
      uint64_t{cfg.num_ranks} * cfg.qps_per_peer > 0xFFFF00)
    return InvalidArgument("qps_per_peer and max_outstanding must be >= 1");
  if (cfg.peers.size() != cfg.num_ranks || cfg.local_qps.size() != cfg.num_ranks) {
    return InvalidArgument(fmt::format("{} peers and {} local QP lists for {} ranks",
                                       cfg.peers.size(), cfg.local_qps.size(), cfg.num_ranks));
  }
  std::unique_ptr<UroceTransport> t(new UroceTransport(cfg, host, send_buf, recv_buf));
  host->SetMemory(MemoryRegion{recv_buf.data(), recv_buf.size(), cfg.addr, cfg.rkey});
  for (uint32_t p = 0; p < cfg.num_ranks; ++p) {
    if (p == cfg.rank) continue;
    const PeerInfo& peer = cfg.peers[p];
    if (peer.qps.size() != cfg.qps_per_peer || cfg.local_qps[p].size() != cfg.qps_per_peer) {
      return InvalidArgument(fmt::format("rank {}: {} QPs here, {} at the peer, {} asked for", p,
                                         cfg.local_qps[p].size(), peer.qps.size(),
                                         cfg.qps_per_peer));
    }
    // Receive queue as deep as the send queue: the SENDs a pair mode (or a
    // later SEND-based collective) posts get buffers.
    if (Status s = ConnectPeerQps(host, cfg.local_ip, cfg.mtu, cfg.local_qps[p], peer,
                                  cfg.max_outstanding, cfg.max_outstanding);
        !s.ok())
      return s.error();
    for (uint32_t q = 0; q < cfg.qps_per_peer; ++q) t->by_qpn_[cfg.local_qps[p][q].qpn] = {p, q};
  }
  return t;
}

Status UroceTransport::Post(const emu::WriteRequest& w) {
  if (w.peer >= cfg_.num_ranks || w.peer == cfg_.rank)
    return InvalidArgument(fmt::format("bad peer {}", w.peer));
  if (w.qp >= cfg_.qps_per_peer) return InvalidArgument(fmt::format("bad qp {}", w.qp));
  const PeerInfo& peer = cfg_.peers[w.peer];
  // len 0: a message of its immediate only (a collective's clear-to-send).
  if (w.len > (1u << 31) || w.src_off > send_.size() || w.len > send_.size() - w.src_off ||
      w.dst_off > peer.len || w.len > peer.len - w.dst_off) {
    return InvalidArgument(fmt::format("range src {}+{} dst {}+{} out of the buffers", w.src_off,
                                       w.len, w.dst_off, w.len));
  }
  Qp* qp = host_->qp(cfg_.local_qps[w.peer][w.qp].qpn);
  if (qp->failed()) return MakeError(ErrorCode::kIo, "the QP has failed");
  if (qp->outstanding() >= cfg_.max_outstanding)
    return InvalidArgument("too many outstanding writes");
  SendWr wr;
  wr.op = WrOp::kWriteImm;
  wr.local = send_.data() + w.src_off;
  wr.len = static_cast<uint32_t>(w.len);
  wr.remote_va = peer.addr + w.dst_off;
  wr.rkey = peer.rkey;
  wr.imm = w.imm;
  wr.wr_id = w.wr_id;
  wr.priority = w.priority;
  if (!qp->Post(wr)) return InvalidArgument("send queue full");
  return {};
}

void UroceTransport::Convert(std::vector<emu::Completion>* out) {
  for (const QpEvent& e : events_) {
    const auto it = by_qpn_.find(e.qpn);
    if (it == by_qpn_.end()) continue;  // not one of this transport's QPs
    emu::Completion c;
    c.peer = it->second.peer;
    c.qp = it->second.q;
    switch (e.kind) {
      case QpEventKind::kSendDone:
        c.kind = emu::CompletionKind::kWriteDone;
        c.wr_id = e.wr_id;
        break;
      case QpEventKind::kRecvDone:
        c.kind = emu::CompletionKind::kWriteArrived;
        c.imm = e.imm;
        c.len = e.len;
        break;
      case QpEventKind::kError:
        c.kind = emu::CompletionKind::kError;
        c.error = fmt::format("rank {} QP {} to rank {}: {}", cfg_.rank, c.qp, c.peer, e.error);
        break;
    }
    out->push_back(std::move(c));
  }
  events_.clear();
}

void UroceTransport::Progress(std::vector<emu::Completion>* out) {
  if (!kept_.empty()) {
    for (auto& c : kept_) out->push_back(std::move(c));
    kept_.clear();
  }
  host_->Step(&events_);
  Convert(out);
}

void UroceTransport::KeepGoing(uint32_t max_wait_us) {
  host_->Step(&events_);
  Convert(&kept_);
  if (max_wait_us) host_->Wait(static_cast<Ns>(max_wait_us) * 1000);
}

void UroceTransport::Poll(std::vector<emu::Completion>* out, uint32_t max_wait_us) {
  const size_t before = out->size();
  Progress(out);
  if (out->size() == before && max_wait_us > 0) {
    host_->Wait(static_cast<Ns>(max_wait_us) * 1000);
    Progress(out);
  }
}

}  // namespace ofan::uroce
