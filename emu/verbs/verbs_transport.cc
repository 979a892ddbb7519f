#include "emu/verbs/verbs_transport.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>

namespace ofan::verbs {

Result<std::unique_ptr<VerbsTransport>> VerbsTransport::Create(const Device& dev,
                                                               const VerbsTransportConfig& cfg) {
  auto bad = [](std::string m) { return InvalidArgument(std::move(m)); };
  if (cfg.num_ranks < 2 || cfg.rank >= cfg.num_ranks) {
    return bad(fmt::format("rank {} of {} ranks", cfg.rank, cfg.num_ranks));
  }
  if (cfg.qps_per_peer == 0 || cfg.max_outstanding == 0 || cfg.recv_depth == 0) {
    return bad("QPs per peer, outstanding writes and receive depth must all be > 0");
  }
  std::unique_ptr<VerbsTransport> t(new VerbsTransport(dev, cfg));
  t->mtu_ = dev.active_mtu();
  if (cfg.mtu) t->mtu_ = std::min(t->mtu_, cfg.mtu);
  const uint64_t nqps = uint64_t{cfg.num_ranks - 1} * t->QpsPerPeer();
  const uint64_t cqe = nqps * (cfg.max_outstanding + cfg.recv_depth);
  if (cqe > static_cast<uint64_t>(dev.attr().max_cqe)) {
    return bad(fmt::format(
        "{} QPs x ({} outstanding + {} receives) = {} completions exceed {}'s "
        "CQ of {}: fewer QPs or a smaller --recv-depth",
        nqps, cfg.max_outstanding, cfg.recv_depth, cqe, dev.name(), dev.attr().max_cqe));
  }
  auto cq = CompletionQueue::Create(dev, static_cast<uint32_t>(cqe));
  if (!cq) return cq.error();
  t->cq_ = std::move(*cq);
  auto s = RegisteredBuffer::Create(dev, cfg.send_bytes, IBV_ACCESS_LOCAL_WRITE);
  if (!s) return s.error();
  t->send_ = std::move(*s);
  auto r = RegisteredBuffer::Create(dev, cfg.recv_bytes,
                                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!r) return r.error();
  t->recv_ = std::move(*r);
  t->qps_.resize(size_t{cfg.num_ranks} * t->QpsPerPeer());
  t->outstanding_.assign(t->qps_.size(), 0);
  for (emu::Rank p = 0; p < cfg.num_ranks; ++p) {
    if (p == cfg.rank) continue;
    for (uint32_t q = 0; q < t->QpsPerPeer(); ++q) {
      auto qp = RcQp::Create(dev, *t->cq_, {cfg.max_outstanding, cfg.recv_depth});
      if (!qp) return qp.error();
      t->slot_of_qpn_[(*qp)->qpn()] = t->Slot(p, q);
      t->qps_[t->Slot(p, q)] = std::move(*qp);
    }
  }
  t->batch_.resize(64);
  return t;
}

VerbsTransport::~VerbsTransport() {
  qps_.clear();  // before the CQ they complete on
}

rcx::Hello VerbsTransport::HelloTo(emu::Rank peer) const {
  rcx::Hello h;
  h.rank = cfg_.rank;
  h.ip = cfg_.gid.ip;
  h.mac = cfg_.gid.mac;
  h.mtu = mtu_;
  h.rkey = recv_->rkey();
  h.addr = recv_->addr();
  h.len = recv_->size();
  if (peer < cfg_.num_ranks && peer != cfg_.rank) {
    for (uint32_t q = 0; q < QpsPerPeer(); ++q) {
      const auto& qp = qps_[Slot(peer, q)];
      h.qps.push_back({qp->qpn(), qp->psn()});
    }
  }
  return h;
}

Status VerbsTransport::Connect(const std::vector<rcx::Hello>& peers) {
  if (peers.size() != cfg_.num_ranks) {
    return InvalidArgument(fmt::format("{} hellos for {} ranks", peers.size(), cfg_.num_ranks));
  }
  peers_ = peers;
  for (emu::Rank p = 0; p < cfg_.num_ranks; ++p) {
    if (p == cfg_.rank) continue;
    const rcx::Hello& h = peers[p];
    if (h.qps.size() != QpsPerPeer()) {
      return InvalidArgument(
          fmt::format("rank {} lists {} QPs, rank {} {}{}", p, h.qps.size(), cfg_.rank,
                      QpsPerPeer(), cfg_.priority_qp ? " (one of them for clear-to-sends)" : ""));
    }
    for (uint32_t q = 0; q < QpsPerPeer(); ++q) {
      RcQp& qp = *qps_[Slot(p, q)];
      const bool prio = q == cfg_.qps_per_peer;  // the priority QP
      const LocalEnd l{cfg_.gid.index, mtu_, qp.psn(), cfg_.ack_timeout,
                       prio ? kPriorityTrafficClass : kDataTrafficClass};
      const RemoteEnd r{h.qps[q].qpn, h.qps[q].psn, h.ip, h.mtu};
      if (Status s = qp.Connect(l, r); !s) {
        return MakeError(s.error().code, fmt::format("rank {}: {}", p, s.error().message));
      }
      for (uint32_t i = 0; i < cfg_.recv_depth; ++i) {
        if (Status s = qp.PostRecv(0, nullptr, 0, 0); !s) return s;
      }
    }
  }
  return {};
}

Status VerbsTransport::Post(const emu::WriteRequest& w) {
  auto bad = [&](std::string m) {
    return InvalidArgument(fmt::format("rank {}: {}", cfg_.rank, m));
  };
  if (w.peer >= cfg_.num_ranks || w.peer == cfg_.rank) return bad(fmt::format("peer {}", w.peer));
  if (w.qp >= cfg_.qps_per_peer) return bad(fmt::format("QP {} of {}", w.qp, cfg_.qps_per_peer));
  if (peers_.empty()) return bad("a write before Connect()");
  if (w.priority && (!cfg_.priority_qp || w.qp != 0)) {
    return bad(cfg_.priority_qp ? fmt::format("a priority write on QP {}: QP 0's only", w.qp)
                                : "a priority write without a priority QP");
  }
  const rcx::Hello& h = peers_[w.peer];
  if (w.len > dev_.port().max_msg_sz || w.src_off + w.len > send_->size() ||
      w.src_off + w.len < w.src_off || w.dst_off + w.len > h.len || w.dst_off + w.len < w.dst_off) {
    return bad(
        fmt::format("write of {} bytes from {} to {} of rank {} (send buffer {}, its "
                    "receive buffer {})",
                    w.len, w.src_off, w.dst_off, w.peer, send_->size(), h.len));
  }
  const uint32_t slot = Slot(w.peer, w.priority ? cfg_.qps_per_peer : w.qp);
  if (outstanding_[slot] >= cfg_.max_outstanding) {
    return bad(fmt::format("{} writes already outstanding on QP {} to rank {}", outstanding_[slot],
                           w.qp, w.peer));
  }
  Status s =
      qps_[slot]->PostWriteImm(w.wr_id, send_->data() + w.src_off, static_cast<uint32_t>(w.len),
                               send_->lkey(), h.addr + w.dst_off, h.rkey, w.imm);
  if (!s)
    return MakeError(s.error().code, fmt::format("rank {}: {}", cfg_.rank, s.error().message));
  ++outstanding_[slot];
  return {};
}

void VerbsTransport::Convert(const ibv_wc& wc, std::vector<emu::Completion>* out) {
  auto it = slot_of_qpn_.find(wc.qp_num);
  emu::Completion c;
  if (it == slot_of_qpn_.end()) {
    c.kind = emu::CompletionKind::kError;
    c.error = fmt::format("rank {}: a completion of unknown QP {}", cfg_.rank, wc.qp_num);
    out->push_back(std::move(c));
    return;
  }
  c.peer = it->second / QpsPerPeer();
  c.qp = it->second % QpsPerPeer();
  if (c.qp == cfg_.qps_per_peer) c.qp = 0;  // the priority QP's writes are QP 0's
  if (wc.status != IBV_WC_SUCCESS) {
    c.kind = emu::CompletionKind::kError;
    c.error = fmt::format("rank {}: QP {} to rank {} (qpn {}): {} (vendor error {:#x})", cfg_.rank,
                          c.qp, c.peer, wc.qp_num, ibv_wc_status_str(wc.status), wc.vendor_err);
    // After the first failure the QP is in error and flushes the rest:
    // report the cause once, not each flushed WR.
    if (failed_ && wc.status == IBV_WC_WR_FLUSH_ERR) return;
    failed_ = true;
    out->push_back(std::move(c));
    return;
  }
  switch (wc.opcode) {
    case IBV_WC_RDMA_WRITE:
      --outstanding_[it->second];
      c.kind = emu::CompletionKind::kWriteDone;
      c.wr_id = wc.wr_id;
      break;
    case IBV_WC_RECV_RDMA_WITH_IMM:
      c.kind = emu::CompletionKind::kWriteArrived;
      c.imm = ntohl(wc.imm_data);
      c.len = wc.byte_len;
      ++arrived_;
      if (Status s = qps_[it->second]->PostRecv(0, nullptr, 0, 0); !s) {
        c.kind = emu::CompletionKind::kError;
        c.error = fmt::format("rank {}: {}", cfg_.rank, s.error().message);
      }
      break;
    default:
      c.kind = emu::CompletionKind::kError;
      c.error = fmt::format(
          "rank {}: QP {} to rank {}: an unexpected completion (opcode {}): "
          "the peer is not running this collective",
          cfg_.rank, c.qp, c.peer, static_cast<int>(wc.opcode));
  }
  out->push_back(std::move(c));
}

void VerbsTransport::Poll(std::vector<emu::Completion>* out, uint32_t max_wait_us) {
  auto n = cq_->Poll(batch_, max_wait_us);
  if (!n) {
    emu::Completion c;
    c.kind = emu::CompletionKind::kError;
    c.error = fmt::format("rank {}: {}", cfg_.rank, n.error().message);
    out->push_back(std::move(c));
    return;
  }
  for (size_t i = 0; i < *n; ++i) Convert(batch_[i], out);
  if (*n > 0 || !cfg_.watch) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_watch_) return;
  next_watch_ = now + cfg_.watch_every;
  if (Status s = cfg_.watch(); !s) {
    emu::Completion c;
    c.kind = emu::CompletionKind::kError;
    c.error = fmt::format("rank {}: {}", cfg_.rank, s.error().message);
    out->push_back(std::move(c));
  }
}

}  // namespace ofan::verbs
