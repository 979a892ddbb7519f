#include "emu/uroce/uroce_transport.h"

#include <fmt/format.h>

namespace ofan::uroce {

uint32_t TransportStartPsn(uint32_t from, uint32_t to, uint32_t q) {
  return static_cast<uint32_t>(SplitMix64((uint64_t{from} << 40) ^ (uint64_t{to} << 16) ^ q)) &
         pkt::kPsnMask;
}

Result<std::unique_ptr<UroceTransport>> UroceTransport::Create(const TransportConfig& cfg,
                                                               Host* host,
                                                               std::span<uint8_t> send_buf,
                                                               std::span<uint8_t> recv_buf) {
  if (cfg.num_ranks < 2 || cfg.rank >= cfg.num_ranks)
    return MakeError(ErrorCode::kInvalidArgument,
                     fmt::format("rank {} of {} ranks", cfg.rank, cfg.num_ranks));
  if (cfg.rank_ips.size() != cfg.num_ranks)
    return MakeError(ErrorCode::kInvalidArgument, fmt::format("{} rank addresses for {} ranks",
                                                              cfg.rank_ips.size(), cfg.num_ranks));
  if (cfg.qps_per_peer == 0 || cfg.max_outstanding == 0 ||
      uint64_t{cfg.num_ranks} * cfg.qps_per_peer > 0xFFFF00)
    return MakeError(ErrorCode::kInvalidArgument, "qps_per_peer and max_outstanding must be >= 1");
  std::unique_ptr<UroceTransport> t(new UroceTransport(cfg, host, send_buf, recv_buf));
  if (t->cfg_.peer_recv_bytes == 0) t->cfg_.peer_recv_bytes = recv_buf.size();
  host->SetMemory(MemoryRegion{recv_buf.data(), recv_buf.size(), 0, cfg.rkey});
  for (uint32_t p = 0; p < cfg.num_ranks; ++p) {
    if (p == cfg.rank) continue;
    for (uint32_t q = 0; q < cfg.qps_per_peer; ++q) {
      const uint32_t qpn = TransportQpn(p, q, cfg.qps_per_peer);
      // Receive queue as deep as the send queue: the SENDs a pair mode (or a
      // later SEND-based collective) posts get buffers.
      Qp* qp = host->AddQp(qpn, cfg.max_outstanding, cfg.max_outstanding);
      if (!qp) return MakeError(ErrorCode::kInvalidArgument, fmt::format("QP {} exists", qpn));
      QpPeer peer;
      peer.local_mac = host->config().mac;
      peer.next_hop_mac = cfg.next_hop_mac;
      peer.local_ip = cfg.rank_ips[cfg.rank];
      peer.remote_ip = cfg.rank_ips[p];
      peer.local_qpn = qpn;
      peer.remote_qpn = TransportQpn(cfg.rank, q, cfg.qps_per_peer);
      peer.start_psn = TransportStartPsn(cfg.rank, p, q);
      peer.peer_start_psn = TransportStartPsn(p, cfg.rank, q);
      qp->Connect(peer);
    }
  }
  return t;
}

Status UroceTransport::Post(const emu::WriteRequest& w) {
  if (w.peer >= cfg_.num_ranks || w.peer == cfg_.rank)
    return MakeError(ErrorCode::kInvalidArgument, fmt::format("bad peer {}", w.peer));
  if (w.qp >= cfg_.qps_per_peer)
    return MakeError(ErrorCode::kInvalidArgument, fmt::format("bad qp {}", w.qp));
  if (w.len == 0 || w.len > (1u << 31) || w.src_off > send_.size() ||
      w.len > send_.size() - w.src_off || w.dst_off > cfg_.peer_recv_bytes ||
      w.len > cfg_.peer_recv_bytes - w.dst_off)
    return MakeError(ErrorCode::kInvalidArgument,
                     fmt::format("range src {}+{} dst {}+{} out of the buffers", w.src_off, w.len,
                                 w.dst_off, w.len));
  Qp* qp = host_->qp(TransportQpn(w.peer, w.qp, cfg_.qps_per_peer));
  if (qp->failed()) return MakeError(ErrorCode::kIo, "the QP has failed");
  if (qp->outstanding() >= cfg_.max_outstanding)
    return MakeError(ErrorCode::kInvalidArgument, "too many outstanding writes");
  SendWr wr;
  wr.op = WrOp::kWriteImm;
  wr.local = send_.data() + w.src_off;
  wr.len = static_cast<uint32_t>(w.len);
  wr.remote_va = w.dst_off;
  wr.rkey = cfg_.rkey;
  wr.imm = w.imm;
  wr.wr_id = w.wr_id;
  if (!qp->Post(wr)) return MakeError(ErrorCode::kInvalidArgument, "send queue full");
  return {};
}

void UroceTransport::Convert(std::vector<emu::Completion>* out) {
  for (const QpEvent& e : events_) {
    const uint32_t idx = e.qpn - 0x100;
    emu::Completion c;
    c.peer = idx / cfg_.qps_per_peer;
    c.qp = idx % cfg_.qps_per_peer;
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
  host_->Step(&events_);
  Convert(out);
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
