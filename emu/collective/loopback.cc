#include "emu/collective/loopback.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/rng.h"
#include "emu/collective/clock.h"

namespace ofan::emu {

class LoopbackFabric::Endpoint final : public Transport {
 public:
  Endpoint(LoopbackFabric* f, Rank r)
      : f_(f), r_(r), send_(f->o_.send_bytes), recv_(f->o_.recv_bytes) {}
  Rank rank() const override { return r_; }
  uint32_t num_ranks() const override { return f_->o_.num_ranks; }
  uint32_t qps_per_peer() const override { return f_->o_.qps_per_peer; }
  uint32_t max_outstanding() const override { return f_->o_.max_outstanding; }
  std::span<uint8_t> send_buffer() override { return send_; }
  std::span<uint8_t> recv_buffer() override { return recv_; }
  Status Post(const WriteRequest& w) override { return f_->Post(r_, w); }
  void Poll(std::vector<Completion>* out, uint32_t max_wait_us) override {
    f_->Poll(r_, out, max_wait_us);
  }

 private:
  LoopbackFabric* f_;
  Rank r_;
  std::vector<uint8_t> send_;
  std::vector<uint8_t> recv_;
};

LoopbackFabric::LoopbackFabric(const LoopbackOptions& o)
    : o_(o),
      ready_(o.num_ranks),
      outstanding_(size_t{o.num_ranks} * o.num_ranks * std::max(1u, o.qps_per_peer), 0),
      posts_(o.num_ranks, 0),
      pair_inflight_(size_t{o.num_ranks} * o.num_ranks, 0),
      rng_state_(SplitMix64(o.seed ^ 0x100Bull)) {
  for (Rank r = 0; r < o.num_ranks; ++r) eps_.push_back(std::make_unique<Endpoint>(this, r));
}

LoopbackFabric::~LoopbackFabric() = default;

Transport& LoopbackFabric::endpoint(Rank r) { return *eps_.at(r); }

std::vector<Transport*> LoopbackFabric::endpoints() {
  std::vector<Transport*> v;
  for (auto& e : eps_) v.push_back(e.get());
  return v;
}

void LoopbackFabric::CorruptOnArrival(Rank dst, uint64_t offset, uint8_t mask) {
  std::lock_guard lock(mu_);
  corrupt_.push_back({dst, offset, mask});
}

void LoopbackFabric::FailAfterPosts(Rank r, uint64_t nth, std::string message) {
  std::lock_guard lock(mu_);
  fail_.push_back({r, nth, std::move(message)});
}

void LoopbackFabric::DropPost(Rank src, uint64_t nth) {
  std::lock_guard lock(mu_);
  drop_.push_back({src, nth});
}

uint32_t LoopbackFabric::DrawHold() {
  if (o_.max_hold == 0) return 0;
  rng_state_ = SplitMix64(rng_state_);
  return static_cast<uint32_t>(rng_state_ % (uint64_t{o_.max_hold} + 1));
}

Status LoopbackFabric::Post(Rank src, const WriteRequest& w) {
  std::lock_guard lock(mu_);
  auto bad = [&](std::string m) {
    ++stats_.rejected;
    return InvalidArgument(fmt::format("loopback rank {}: {}", src, m));
  };
  if (w.peer >= o_.num_ranks || w.peer == src) return bad(fmt::format("bad peer {}", w.peer));
  if (w.qp >= o_.qps_per_peer) return bad(fmt::format("bad QP {}", w.qp));
  if (w.src_off > o_.send_bytes || w.len > o_.send_bytes - w.src_off || w.dst_off > o_.recv_bytes ||
      w.len > o_.recv_bytes - w.dst_off) {
    return bad(fmt::format("range src {} dst {} len {} is outside the {} / {} B buffers", w.src_off,
                           w.dst_off, w.len, o_.send_bytes, o_.recv_bytes));
  }
  uint32_t& out = outstanding_[(size_t{src} * o_.num_ranks + w.peer) * o_.qps_per_peer + w.qp];
  if (out >= o_.max_outstanding) {
    return bad(fmt::format("{} writes outstanding on QP {} to rank {}", out, w.qp, w.peer));
  }
  ++out;
  ++stats_.posted;
  const uint64_t nth = ++posts_[src];
  for (const FailAt& f : fail_) {
    if (f.r == src && f.nth == nth) {
      Completion err;
      err.kind = CompletionKind::kError;
      err.peer = w.peer;
      err.qp = w.qp;
      err.error = f.message;
      ready_[src].push_back({std::move(err), 0});
    }
  }
  for (const DropAt& d : drop_) {
    if (d.r == src && d.nth == nth) return {};
  }
  const int64_t due = o_.delay_us == 0 ? 0 : SteadyNowNs() + int64_t{o_.delay_us} * 1000;
  inflight_.push_back({src, w, due, DrawHold()});
  if (w.len > 0) {
    uint32_t& pair = pair_inflight_[size_t{src} * o_.num_ranks + w.peer];
    stats_.max_pair_inflight = std::max(stats_.max_pair_inflight, ++pair);
  }
  return {};
}

void LoopbackFabric::Deliver(const Message& m) {
  const WriteRequest& w = m.w;
  auto& src = static_cast<Endpoint&>(*eps_[m.src]);
  auto& dst = static_cast<Endpoint&>(*eps_[w.peer]);
  uint8_t* to = dst.recv_buffer().data() + w.dst_off;
  std::memcpy(to, src.send_buffer().data() + w.src_off, w.len);
  for (auto it = corrupt_.begin(); it != corrupt_.end(); ++it) {
    if (it->dst == w.peer && it->offset >= w.dst_off && it->offset - w.dst_off < w.len) {
      to[it->offset - w.dst_off] ^= it->mask;
      corrupt_.erase(it);
      break;
    }
  }
  ++stats_.delivered;
  if (w.len > 0) --pair_inflight_[size_t{m.src} * o_.num_ranks + w.peer];
  Completion arrived;
  arrived.kind = CompletionKind::kWriteArrived;
  arrived.peer = m.src;
  arrived.qp = w.qp;
  arrived.imm = w.imm;
  arrived.len = w.len;
  ready_[w.peer].push_back({std::move(arrived), DrawHold()});
  Completion done;
  done.kind = CompletionKind::kWriteDone;
  done.peer = w.peer;
  done.qp = w.qp;
  done.wr_id = w.wr_id;
  ready_[m.src].push_back({std::move(done), DrawHold()});
}

void LoopbackFabric::Advance() {
  const int64_t now = o_.delay_us == 0 ? 0 : SteadyNowNs();
  // In order of posting, except those held back or not yet due.
  size_t keep = 0;
  for (size_t i = 0; i < inflight_.size(); ++i) {
    Message& m = inflight_[i];
    if (m.due_ns > now || m.hold > 0) {
      if (m.hold > 0) --m.hold;
      if (keep != i) inflight_[keep] = m;
      ++keep;
      continue;
    }
    Deliver(m);
  }
  inflight_.resize(keep);
}

void LoopbackFabric::Poll(Rank r, std::vector<Completion>* out, uint32_t max_wait_us) {
  const int64_t give_up = SteadyNowNs() + int64_t{max_wait_us} * 1000;
  for (;;) {
    std::unique_lock lock(mu_);
    Advance();
    std::vector<Held>& q = ready_[r];
    size_t keep = 0;
    bool any = false;
    for (size_t i = 0; i < q.size(); ++i) {
      if (q[i].hold > 0) {
        --q[i].hold;
        if (keep != i) q[keep] = std::move(q[i]);
        ++keep;
        continue;
      }
      // A write stops counting against max_outstanding when its writer
      // sees it complete, not before.
      if (q[i].c.kind == CompletionKind::kWriteDone) {
        --outstanding_[(size_t{r} * o_.num_ranks + q[i].c.peer) * o_.qps_per_peer + q[i].c.qp];
      }
      out->push_back(std::move(q[i].c));
      any = true;
    }
    q.resize(keep);
    // Held items come out on a later poll; only wait when nothing can.
    if (any || keep > 0 || max_wait_us == 0 || SteadyNowNs() >= give_up) return;
    bool held = false;
    for (const Message& m : inflight_) held |= m.hold > 0;
    if (held) return;
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(std::min<uint32_t>(max_wait_us, 50)));
  }
}

}  // namespace ofan::emu
