#include "emu/verbs/pair_check.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "emu/rcx/rc_exchange.h"
#include "emu/verbs/completion_queue.h"
#include "emu/verbs/device.h"
#include "emu/verbs/memory.h"
#include "emu/verbs/rc_qp.h"

namespace ofan::verbs {
namespace {

using Clock = std::chrono::steady_clock;

const char* OpName(PairOp op) { return op == PairOp::kWrite ? "write" : "send"; }
const char* DirectionName(Direction d) {
  return d == Direction::kBoth ? "both" : d == Direction::kTx ? "tx" : "rx";
}

// One side's run, after the options were checked.
class PairRun {
 public:
  explicit PairRun(const PairCheckOptions& o) : o_(o) {
    r_.op = o.op;
    r_.direction = o.direction;
    r_.messages = o.count;
    r_.size = o.size;
    r_.qps = o.qps;
    r_.device = o.device;
  }
  PairCheckResult Run();

 private:
  struct QpState {
    uint64_t send_next = 0, send_inflight = 0;  // in k: message q + k * N
    uint64_t recv_posted = 0, recv_done = 0;
  };
  Status Setup();
  Status Exchange();
  Status PostReceives(uint32_t q);
  Status PostSends(uint32_t q);
  Status OnCompletion(const ibv_wc& wc);
  Status Loop();
  bool finished() const {
    return (!sends_ || r_.sent == o_.count) && (!receives_ || r_.received == o_.count);
  }
  // How many messages go on QP q: q, q + N, ... below M.
  uint64_t OnQp(uint32_t q) const { return q < o_.count ? (o_.count - 1 - q) / o_.qps + 1 : 0; }
  uint32_t QpOf(uint32_t qpn) const;
  std::string Progress() const {
    return fmt::format("{} of {} sent messages acknowledged, {} of {} received", r_.sent,
                       sends_ ? o_.count : 0, r_.received, receives_ ? o_.count : 0);
  }

  PairCheckOptions o_;
  PairCheckResult r_;
  bool sends_ = false, receives_ = false;
  std::unique_ptr<Device> dev_;
  GidChoice gid_;
  uint32_t mtu_ = 0;
  std::unique_ptr<CompletionQueue> cq_;
  std::vector<std::unique_ptr<RcQp>> qps_;  // declared after the CQ: destroyed before it
  std::unique_ptr<RegisteredBuffer> send_, recv_;
  std::unique_ptr<rcx::Rendezvous> rv_;
  rcx::Hello peer_;
  std::vector<QpState> st_;
  std::vector<bool> seen_;  // per message, when this side receives
};

uint32_t PairRun::QpOf(uint32_t qpn) const {
  for (uint32_t q = 0; q < qps_.size(); ++q) {
    if (qps_[q]->qpn() == qpn) return q;
  }
  return UINT32_MAX;
}

Status PairRun::Setup() {
  sends_ = o_.direction != Direction::kRx;
  receives_ = o_.direction != Direction::kTx;
  auto d = Device::Open(o_.device);
  if (!d) return d.error();
  dev_ = std::move(*d);
  r_.device = dev_->name();
  std::optional<uint32_t> ip = o_.ip;
  if (!ip && o_.listen && o_.listen_ip) ip = o_.listen_ip;
  auto g = dev_->FindGid(ip);
  if (!g) return g.error();
  gid_ = *g;
  mtu_ = dev_->active_mtu();
  if (o_.mtu) mtu_ = std::min(mtu_, o_.mtu);
  if (o_.size > dev_->port().max_msg_sz) {
    return InvalidArgument(fmt::format("--size {}: {} takes messages of at most {} bytes", o_.size,
                                       dev_->name(), dev_->port().max_msg_sz));
  }
  auto cq = CompletionQueue::Create(*dev_, o_.qps * (o_.depth + o_.recv_depth));
  if (!cq) return cq.error();
  cq_ = std::move(*cq);
  for (uint32_t q = 0; q < o_.qps; ++q) {
    auto qp = RcQp::Create(*dev_, *cq_, {o_.depth, o_.recv_depth});
    if (!qp) return qp.error();
    qps_.push_back(std::move(*qp));
  }
  const uint64_t total = o_.count * o_.size;
  auto s = RegisteredBuffer::Create(*dev_, sends_ ? total : 0, IBV_ACCESS_LOCAL_WRITE);
  if (!s) return s.error();
  send_ = std::move(*s);
  auto rb = RegisteredBuffer::Create(*dev_, receives_ ? total : 0,
                                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!rb) return rb.error();
  recv_ = std::move(*rb);
  if (sends_) {
    for (uint64_t m = 0; m < o_.count; ++m)
      rcx::FillPairMessage(send_->data() + m * o_.size, m, o_.size);
  }
  st_.assign(o_.qps, QpState{});
  seen_.assign(receives_ ? o_.count : 0, false);
  return {};
}

Status PairRun::Exchange() {
  rcx::RendezvousOptions ro;
  ro.num_ranks = 2;
  ro.rank = o_.listen ? 0 : 1;
  ro.ips = o_.listen ? std::vector<uint32_t>{o_.listen_ip, 0}
                     : std::vector<uint32_t>{o_.connect_ip, gid_.ip};
  ro.port = o_.port;
  ro.timeout = o_.setup_timeout;
  rcx::Hello mine;
  mine.rank = ro.rank;
  mine.ip = gid_.ip;
  mine.mac = gid_.mac;
  mine.mtu = mtu_;
  mine.rkey = recv_->rkey();
  mine.addr = recv_->addr();
  mine.len = recv_->size();
  for (const auto& q : qps_) mine.qps.push_back({q->qpn(), q->psn()});
  std::vector<rcx::Hello> peers;
  auto rv = rcx::Rendezvous::Connect(
      ro, [&](uint32_t) { return mine; }, &peers);
  if (!rv) return rv.error();
  rv_ = std::move(*rv);
  peer_ = peers[1 - ro.rank];
  // For WRITEs the hello's buffer length says how the peer was started:
  // M * S when it receives, 0 when it only sends (--direction tx). A SEND
  // lands in receive WRs, not at addr, so its len says nothing (uroce's is
  // 0 for --op send).
  const uint64_t total = o_.count * o_.size;
  if (o_.op == PairOp::kWrite && sends_ && peer_.len == 0) {
    return InvalidArgument(
        fmt::format("the peer ({}) takes no WRITEs (its --direction is tx? its --op "
                    "send?) but this side writes (--direction {})",
                    rcx::Ipv4Text(peer_.ip), DirectionName(o_.direction)));
  }
  if (o_.op == PairOp::kWrite && peer_.len != 0 && peer_.len != total) {
    return InvalidArgument(
        fmt::format("the peer's receive buffer is {} bytes, this side's --count {} x "
                    "--size {} = {}: give both sides the same --count and --size",
                    peer_.len, o_.count, o_.size, total));
  }
  r_.mtu = std::min(mtu_, peer_.mtu);
  for (uint32_t q = 0; q < o_.qps; ++q) {
    const LocalEnd l{gid_.index, mtu_, qps_[q]->psn()};
    const RemoteEnd re{peer_.qps[q].qpn, peer_.qps[q].psn, peer_.ip, peer_.mtu};
    if (Status s = qps_[q]->Connect(l, re); !s) return s;
    if (receives_) {
      if (Status s = PostReceives(q); !s) return s;
    }
  }
  return {};
}

Status PairRun::PostReceives(uint32_t q) {
  QpState& st = st_[q];
  const bool with_buffer = o_.op == PairOp::kSend;  // a WRITE's immediate needs no buffer
  while (st.recv_posted < OnQp(q) && st.recv_posted - st.recv_done < o_.recv_depth) {
    const uint64_t m = q + st.recv_posted * o_.qps;
    Status s = qps_[q]->PostRecv(m, recv_->data() + m * o_.size,
                                 with_buffer ? static_cast<uint32_t>(o_.size) : 0, recv_->lkey());
    if (!s) return s;
    ++st.recv_posted;
  }
  return {};
}

Status PairRun::PostSends(uint32_t q) {
  QpState& st = st_[q];
  while (st.send_next < OnQp(q) && st.send_inflight < o_.depth) {
    const uint64_t m = q + st.send_next * o_.qps;
    const uint8_t* src = send_->data() + m * o_.size;
    const auto len = static_cast<uint32_t>(o_.size);
    Status s = o_.op == PairOp::kWrite
                   ? qps_[q]->PostWriteImm(m, src, len, send_->lkey(), peer_.addr + m * o_.size,
                                           peer_.rkey, static_cast<uint32_t>(m))
                   : qps_[q]->PostSend(m, src, len, send_->lkey());
    if (!s) return s;
    ++st.send_next;
    ++st.send_inflight;
  }
  return {};
}

Status PairRun::OnCompletion(const ibv_wc& wc) {
  const uint32_t q = QpOf(wc.qp_num);
  if (q == UINT32_MAX) {
    return MakeError(ErrorCode::kInternal, fmt::format("a completion of unknown QP {}", wc.qp_num));
  }
  if (wc.status != IBV_WC_SUCCESS) {
    return MakeError(
        ErrorCode::kIo,
        fmt::format("QP {} (qpn {}), message {}: {} (vendor error {:#x}); {}", q, wc.qp_num,
                    wc.wr_id, ibv_wc_status_str(wc.status), wc.vendor_err, Progress()));
  }
  QpState& st = st_[q];
  switch (wc.opcode) {
    case IBV_WC_RDMA_WRITE:
    case IBV_WC_SEND:
      --st.send_inflight;
      ++r_.sent;
      return PostSends(q);
    case IBV_WC_RECV:
    case IBV_WC_RECV_RDMA_WITH_IMM: {
      const bool is_write = wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM;
      if (is_write != (o_.op == PairOp::kWrite)) {
        return InvalidArgument(
            fmt::format("QP {}: the peer sent a {} to a {} check: give both sides "
                        "the same --op",
                        q, is_write ? "WRITE" : "SEND", OpName(o_.op)));
      }
      // A WRITE names its message in the immediate; a SEND is the next in
      // this QP's order (the receive WR's id).
      const uint64_t m = is_write ? ntohl(wc.imm_data) : wc.wr_id;
      if (m >= o_.count || m % o_.qps != q || seen_[m]) {
        return InvalidArgument(
            fmt::format("QP {}: message {} is not one this QP expects ({})", q, m,
                        m < o_.count && seen_[m] ? "a duplicate" : "out of range"));
      }
      seen_[m] = true;
      ++st.recv_done;
      ++r_.received;
      if (wc.byte_len != o_.size ||
          !rcx::PairMessageMatches(recv_->data() + m * o_.size, m, o_.size)) {
        ++r_.bad;
      }
      return PostReceives(q);
    }
    default:
      return MakeError(ErrorCode::kInternal, fmt::format("QP {}: a completion of opcode {}", q,
                                                         static_cast<int>(wc.opcode)));
  }
}

Status PairRun::Loop() {
  for (uint32_t q = 0; q < o_.qps && sends_; ++q) {
    if (Status s = PostSends(q); !s) return s;
  }
  const auto deadline = Clock::now() + o_.run_timeout;
  std::vector<ibv_wc> batch(64);
  auto next_watch = Clock::now();
  while (!finished()) {
    const auto now = Clock::now();
    if (now >= deadline) {
      return MakeError(ErrorCode::kIo, fmt::format("no progress within --timeout-s {}: {}",
                                                   o_.run_timeout.count() / 1000.0, Progress()));
    }
    // Sleep in the kernel until a completion, at most 100 ms at a time.
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now);
    auto n = cq_->Poll(batch, static_cast<uint32_t>(std::min<int64_t>(left.count(), 100'000)));
    if (!n) return n.error();
    for (size_t i = 0; i < *n; ++i) {
      if (Status s = OnCompletion(batch[i]); !s) return s;
    }
    // A peer that failed closes its connection; its QPs stop answering and
    // rxe would retry for ever (retry_cnt 7), so look, when idle or every
    // 100 ms.
    if (*n == 0 || Clock::now() >= next_watch) {
      if (Status s = rv_->Watch(); !s)
        return MakeError(s.error().code, s.error().message + "; " + Progress());
      next_watch = Clock::now() + std::chrono::milliseconds(100);
    }
  }
  return {};
}

PairCheckResult PairRun::Run() {
  if (auto e = CheckPairOptions(o_)) {
    r_.error = *e;
    return r_;
  }
  auto fail = [&](const Status& s) {
    r_.error = s.error().message;
    return r_;
  };
  if (Status s = Setup(); !s) return fail(s);
  if (Status s = Exchange(); !s) return fail(s);
  auto before = ReadCounters(dev_->counters_dir());
  if (Status s = rv_->Ready(); !s) return fail(s);
  const auto t0 = Clock::now();
  Status run = Loop();
  r_.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (before) {
    if (auto after = ReadCounters(dev_->counters_dir()))
      r_.counters = CounterDeltas(*before, *after);
  }
  // A side whose QPs failed says nothing more: the peer sees the connection
  // close before a done, and fails too, instead of trusting a done.
  if (!run) return fail(run);
  const double bits = static_cast<double>((r_.sent + r_.received) * o_.size) * 8;
  r_.gbps = r_.seconds > 0 ? bits / r_.seconds / 1e9 : 0;
  // The peer may finish up to its --timeout-s after this side.
  rv_->set_timeout(std::max(o_.setup_timeout, o_.run_timeout));
  auto done = rv_->Done(r_.received, r_.bad);
  if (!done) return fail(done.error());
  if (!done->empty()) {
    r_.peer_received = done->front().received;
    r_.peer_bad = done->front().bad;
  }
  if (r_.bad) {
    r_.error =
        fmt::format("{} of {} messages received differ from what was sent", r_.bad, r_.received);
  }
  return r_;
}

}  // namespace

std::optional<std::string> CheckPairOptions(const PairCheckOptions& o) {
  if (!o.listen && o.connect_ip == 0) return "--connect needs the listener's address";
  if (o.count == 0 || o.count > UINT32_MAX) return "--count must be 1..4294967295";
  if (o.size == 0 || o.size > UINT32_MAX) return "--size must be 1 B..4 GiB";
  if (o.qps == 0 || o.qps > 1024) return "--qps must be 1..1024";
  if (o.count * o.size > kMaxPairBytes) {
    return fmt::format("--count x --size is {} bytes; at most {} (the receive buffer holds all)",
                       o.count * o.size, kMaxPairBytes);
  }
  if (o.depth == 0 || o.depth > 4096 || o.recv_depth == 0 || o.recv_depth > 4096) {
    return "--depth and --recv-depth must be 1..4096";
  }
  if (o.mtu != 0 && o.mtu != 256 && o.mtu != 512 && o.mtu != 1024 && o.mtu != 2048 &&
      o.mtu != 4096) {
    return fmt::format("--mtu {}: 256, 512, 1024, 2048 or 4096", o.mtu);
  }
  return std::nullopt;
}

PairCheckResult RunPairCheck(const PairCheckOptions& o) { return PairRun(o).Run(); }

nlohmann::json PairCheckJson(const PairCheckResult& r) {
  nlohmann::json j = {
      {"ok", r.ok()},
      {"op", OpName(r.op)},
      {"direction", DirectionName(r.direction)},
      {"device", r.device},
      {"mtu", r.mtu},
      {"qps", r.qps},
      {"size", r.size},
      {"messages", r.messages},
      {"sent", r.sent},
      {"received", r.received},
      {"bad", r.bad},
      {"seconds", r.seconds},
      {"gbps", r.gbps},
      {"peer_done", nullptr},
      {"rxe_counters", CountersJson(r.counters)},
      {"error", r.ok() ? nlohmann::json(nullptr) : nlohmann::json(r.error)},
  };
  if (r.peer_received) j["peer_done"] = {{"received", *r.peer_received}, {"bad", *r.peer_bad}};
  return j;
}

}  // namespace ofan::verbs
