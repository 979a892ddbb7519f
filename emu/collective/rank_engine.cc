#include "emu/collective/rank_engine.h"

#include <fmt/format.h>

#include <cstring>

#include "emu/collective/pattern.h"

namespace ofan::emu {

Result<std::unique_ptr<RankEngine>> RankEngine::Create(const Schedule& s, Transport* t) {
  auto bad = [](std::string m) { return InvalidArgument(std::move(m)); };
  if (t == nullptr) return bad("no transport");
  const Rank r = t->rank();
  const uint32_t n = s.params.num_ranks;
  if (t->num_ranks() != n || r >= n) {
    return bad(
        fmt::format("transport is rank {} of {}, the schedule has {} ranks", r, t->num_ranks(), n));
  }
  if (t->qps_per_peer() != s.params.qps_per_peer) {
    return bad(fmt::format("rank {}: transport has {} QPs per peer, the schedule {}", r,
                           t->qps_per_peer(), s.params.qps_per_peer));
  }
  if (t->max_outstanding() == 0) return bad(fmt::format("rank {}: max_outstanding is 0", r));
  const RankPlan& plan = s.ranks[r];
  if (t->send_buffer().size() < plan.send_bytes || t->recv_buffer().size() < plan.recv_bytes) {
    return bad(fmt::format(
        "rank {}: buffers of {} / {} B, the schedule needs {} / {} B (send / "
        "receive)",
        r, t->send_buffer().size(), t->recv_buffer().size(), plan.send_bytes, plan.recv_bytes));
  }
  return std::unique_ptr<RankEngine>(new RankEngine(s, t));
}

RankEngine::RankEngine(const Schedule& s, Transport* t)
    : s_(s),
      plan_(s.ranks[t->rank()]),
      t_(t),
      rank_(t->rank()),
      max_outstanding_(t->max_outstanding()),
      state_(plan_.writes.size(), WriteState::kWaiting),
      queue_of_write_(plan_.writes.size()),
      arrived_flags_(plan_.arrivals.size(), false),
      expected_bytes_(plan_.ArrivalBytes()) {
  // One queue per (peer, QP) that the plan uses, in order of first use.
  const uint32_t qps = s.params.qps_per_peer;
  std::vector<uint32_t> index(size_t{s.params.num_ranks} * qps, UINT32_MAX);
  for (uint32_t w = 0; w < plan_.writes.size(); ++w) {
    const PlannedWrite& pw = plan_.writes[w];
    uint32_t& q = index[size_t{pw.peer} * qps + pw.qp];
    if (q == UINT32_MAX) {
      q = static_cast<uint32_t>(queues_.size());
      queues_.push_back({.peer = pw.peer, .qp = pw.qp, .writes = {}});
    }
    queues_[q].writes.push_back(w);
    queue_of_write_[w] = q;
    if (pw.after == kNoDep) state_[w] = WriteState::kReady;
  }
  cts_ = s.params.cts_channels > 0;
  if (cts_) {
    const uint32_t n = s.params.num_ranks;
    for (auto* v : {&credits_, &to_grant_, &granted_, &owed_, &cts_out_}) v->assign(n, 0);
    qp0_queue_.assign(n, UINT32_MAX);
    queues_of_peer_.assign(n, {});
    for (uint32_t q = 0; q < queues_.size(); ++q) {
      queues_of_peer_[queues_[q].peer].push_back(q);
      if (queues_[q].qp == 0) qp0_queue_[queues_[q].peer] = q;
    }
    for (const PlannedArrival& a : plan_.arrivals) ++to_grant_[a.from];
    for (const uint32_t g : to_grant_) cts_total_ += g;
    blocked_since_.assign(queues_.size(), -1);
    cts_waits_.reserve(plan_.writes.size());    // one wait at most per write
    cts_flights_.reserve(plan_.writes.size());  // a clear-to-send per write
  }
}

void RankEngine::Prepare() {
  const std::span<uint8_t> send = t_->send_buffer().first(plan_.send_bytes);
  FillPattern(send, rank_, 0, s_.params.seed);
  const std::span<uint8_t> recv = t_->recv_buffer();
  for (const LocalCopy& c : plan_.local) {
    std::memcpy(recv.data() + c.dst_off, send.data() + c.src_off, c.len);
  }
}

Status RankEngine::Start(int64_t now_ns) {
  last_ns_ = now_ns;
  if (plan_.writes.empty()) {  // only receives: timed from the collective's start
    started_ = true;
    first_post_ns_ = now_ns;
  }
  if (cts_) {  // every sender's first slots
    for (Rank p = 0; p < to_grant_.size(); ++p) {
      for (uint32_t i = 0; i < s_.params.cts_channels && granted_[p] < to_grant_[p]; ++i) {
        if (Status st = Grant(p, now_ns); !st) return st;
      }
    }
  }
  for (uint32_t q = 0; q < queues_.size(); ++q) {
    if (Status st = Pump(q, now_ns); !st) return st;
  }
  return {};
}

uint32_t RankEngine::Qp0Outstanding(Rank peer) const {
  const uint32_t q = qp0_queue_[peer];
  return (q == UINT32_MAX ? 0 : queues_[q].outstanding) + cts_out_[peer];
}

Status RankEngine::Grant(Rank peer, int64_t now_ns) {
  if (granted_[peer] >= to_grant_[peer]) return {};
  ++granted_[peer];
  ++owed_[peer];
  return FlushGrants(peer, now_ns);
}

Status RankEngine::FlushGrants(Rank peer, int64_t now_ns) {
  while (owed_[peer] > 0 && Qp0Outstanding(peer) < max_outstanding_) {
    // The immediate names the slot (the grant's number modulo the slots)
    // and when it was granted.
    const auto stamp = static_cast<uint32_t>(now_ns / 1000) << kCtsSlotBits;
    const WriteRequest req{.peer = peer,
                           .qp = 0,
                           .src_off = 0,
                           .dst_off = 0,
                           .len = 0,
                           .imm = stamp | (granted_[peer] - owed_[peer]) % s_.params.cts_channels,
                           .wr_id = kCtsWrId | peer,
                           .priority = s_.params.cts_priority};
    if (Status st = t_->Post(req); !st) {
      return Fail(fmt::format("clear-to-send to rank {} failed: {}", peer, st.error().message));
    }
    --owed_[peer];
    ++cts_out_[peer];
  }
  return {};
}

Status RankEngine::Fail(std::string what) const {
  return MakeError(ErrorCode::kInternal, fmt::format("rank {}: {}", rank_, what));
}

Status RankEngine::Pump(uint32_t queue, int64_t now_ns) {
  Queue& q = queues_[queue];
  while (q.next < q.writes.size() &&
         (cts_ && q.qp == 0 ? Qp0Outstanding(q.peer) : q.outstanding) < max_outstanding_) {
    const uint32_t w = q.writes[q.next];
    if (state_[w] != WriteState::kReady) break;
    if (cts_) {  // a chunk goes only into a slot its receiver granted
      int64_t& since = blocked_since_[queue];
      if (credits_[q.peer] == 0) {
        if (since < 0) since = now_ns;
        break;
      }
      --credits_[q.peer];
      if (since >= 0) {
        cts_waits_.push_back(now_ns - since);
        since = -1;
      }
    }
    const PlannedWrite& pw = plan_.writes[w];
    const WriteRequest req{.peer = pw.peer,
                           .qp = pw.qp,
                           .src_off = pw.src_off,
                           .dst_off = pw.dst_off,
                           .len = pw.len,
                           .imm = MakeImm(pw.step, pw.chunk),
                           .wr_id = w};
    if (Status st = t_->Post(req); !st) {
      return Fail(
          fmt::format("post to rank {} QP {} failed: {}", pw.peer, pw.qp, st.error().message));
    }
    if (!started_) {
      started_ = true;
      first_post_ns_ = now_ns;
    }
    state_[w] = WriteState::kPosted;
    ++q.outstanding;
    ++q.next;
  }
  return {};
}

Status RankEngine::OnCompletion(const Completion& c, int64_t now_ns) {
  last_ns_ = now_ns;
  switch (c.kind) {
    case CompletionKind::kError:
      return Fail(fmt::format("QP {} to rank {} failed: {}", c.qp, c.peer, c.error));
    case CompletionKind::kWriteDone: {
      if (cts_ && (c.wr_id & kCtsWrId)) {  // a clear-to-send this rank granted
        const uint64_t peer = c.wr_id & ~kCtsWrId;
        if (peer >= cts_out_.size() || cts_out_[peer] == 0 || c.peer != peer || c.qp != 0) {
          return Fail(
              fmt::format("completion of a clear-to-send to rank {} not outstanding", peer));
        }
        --cts_out_[peer];
        ++cts_done_;
        if (Status st = FlushGrants(c.peer, now_ns); !st) return st;
        return qp0_queue_[c.peer] == UINT32_MAX ? Status{} : Pump(qp0_queue_[c.peer], now_ns);
      }
      if (c.wr_id >= plan_.writes.size() || state_[c.wr_id] != WriteState::kPosted) {
        return Fail(fmt::format("completion of write {} that is not outstanding", c.wr_id));
      }
      const auto w = static_cast<uint32_t>(c.wr_id);
      if (c.peer != plan_.writes[w].peer || c.qp != plan_.writes[w].qp) {
        return Fail(fmt::format("write {} to rank {} QP {} completed as rank {} QP {}", w,
                                plan_.writes[w].peer, plan_.writes[w].qp, c.peer, c.qp));
      }
      state_[w] = WriteState::kDone;
      ++writes_done_;
      const uint32_t q = queue_of_write_[w];
      --queues_[q].outstanding;
      if (cts_ && queues_[q].qp == 0) {  // room on QP 0 for a clear-to-send owed
        if (Status st = FlushGrants(c.peer, now_ns); !st) return st;
      }
      return Pump(q, now_ns);
    }
    case CompletionKind::kWriteArrived: {
      if (cts_ && c.len == 0) {  // a slot at c.peer: its clear-to-send
        if (c.peer >= credits_.size()) return Fail(fmt::format("CTS from rank {}", c.peer));
        ++credits_[c.peer];
        constexpr uint32_t kStampMask = (1u << (32 - kCtsSlotBits)) - 1;
        const uint32_t flight_us =
            (static_cast<uint32_t>(now_ns / 1000) - (c.imm >> kCtsSlotBits)) & kStampMask;
        if (cts_flights_.size() < cts_flights_.capacity())  // one per chunk: reserved
          cts_flights_.push_back(int64_t{flight_us} * 1000);
        for (const uint32_t q : queues_of_peer_[c.peer]) {
          if (Status st = Pump(q, now_ns); !st) return st;
        }
        return {};
      }
      const uint32_t a = plan_.FindArrival(c.peer, c.imm);
      if (a == kNoDep) {
        return Fail(fmt::format("unexpected message from rank {} (step {}, chunk {})", c.peer,
                                ImmStep(c.imm), ImmChunk(c.imm)));
      }
      const PlannedArrival& pa = plan_.arrivals[a];
      if (arrived_flags_[a]) {
        return Fail(fmt::format("message from rank {} (step {}, chunk {}) arrived twice", c.peer,
                                pa.step, pa.chunk));
      }
      if (c.len != pa.len) {
        return Fail(fmt::format("message from rank {} (step {}, chunk {}) has {} B, expected {}",
                                c.peer, pa.step, pa.chunk, c.len, pa.len));
      }
      arrived_flags_[a] = true;
      ++arrived_;
      arrived_bytes_ += pa.len;
      uint8_t* send = t_->send_buffer().data() + pa.off;
      uint8_t* recv = t_->recv_buffer().data() + pa.off;
      switch (pa.action) {
        case OnArrival::kNone:
          break;
        case OnArrival::kCopyToSend:
          std::memcpy(send, recv, pa.len);
          break;
        case OnArrival::kReduceToSend:
          ReduceAdd({send, pa.len}, {recv, pa.len});
          break;
        case OnArrival::kReduceToRecv:
          ReduceAdd({recv, pa.len}, {send, pa.len});
          break;
      }
      if (cts_) {  // the slot is consumed: the sender may have it again
        if (Status st = Grant(c.peer, now_ns); !st) return st;
      }
      if (pa.unblocks == kNoDep) return {};
      state_[pa.unblocks] = WriteState::kReady;
      return Pump(queue_of_write_[pa.unblocks], now_ns);
    }
  }
  return Fail("unknown completion kind");
}

std::string RankEngine::Pending() const {
  std::string out =
      fmt::format("rank {}: {} of {} writes acknowledged, {} of {} messages arrived", rank_,
                  writes_done_, plan_.writes.size(), arrived_, plan_.arrivals.size());
  for (size_t a = 0; a < arrived_flags_.size(); ++a) {
    if (arrived_flags_[a]) continue;
    const PlannedArrival& pa = plan_.arrivals[a];
    out += fmt::format(" (first missing: from rank {}, step {}, chunk {})", pa.from, pa.step,
                       pa.chunk);
    break;
  }
  return out;
}

}  // namespace ofan::emu
