#include "emu/verbs/completion_queue.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace ofan::verbs {

namespace {
// ibv_ack_cq_events takes a mutex; acknowledge every so many events, and
// all of them before the CQ is destroyed (which waits for them).
constexpr uint32_t kAckBatch = 64;
}  // namespace

Result<std::unique_ptr<CompletionQueue>> CompletionQueue::Create(const Device& dev,
                                                                 uint32_t entries) {
  if (entries == 0 || entries > static_cast<uint32_t>(dev.attr().max_cqe)) {
    return InvalidArgument(
        fmt::format("{}: a CQ of {} entries (the device allows 1..{}): fewer QPs or "
                    "a smaller depth",
                    dev.name(), entries, dev.attr().max_cqe));
  }
  std::unique_ptr<CompletionQueue> q(new CompletionQueue());
  q->channel_ = ibv_create_comp_channel(dev.context());
  if (!q->channel_) {
    return MakeError(ErrorCode::kIo, fmt::format("{}: ibv_create_comp_channel: {}", dev.name(),
                                                 std::strerror(errno)));
  }
  // Non-blocking, so that ibv_get_cq_event after a spurious wake-up cannot
  // block past the caller's timeout.
  const int fl = ::fcntl(q->channel_->fd, F_GETFL);
  if (fl < 0 || ::fcntl(q->channel_->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("{}: completion channel: {}", dev.name(), std::strerror(errno)));
  }
  q->cq_ = ibv_create_cq(dev.context(), static_cast<int>(entries), nullptr, q->channel_, 0);
  if (!q->cq_) {
    return MakeError(ErrorCode::kIo, fmt::format("{}: ibv_create_cq({}): {}", dev.name(), entries,
                                                 std::strerror(errno)));
  }
  return q;
}

CompletionQueue::~CompletionQueue() {
  if (cq_) {
    if (unacked_) ibv_ack_cq_events(cq_, unacked_);
    ibv_destroy_cq(cq_);
  }
  if (channel_) ibv_destroy_comp_channel(channel_);
}

Status CompletionQueue::ConsumeEvent() {
  ibv_cq* ev_cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(channel_, &ev_cq, &ctx) == 0) {
    armed_ = false;  // an event disarms the CQ until the next request
    if (++unacked_ >= kAckBatch) {
      ibv_ack_cq_events(cq_, unacked_);
      unacked_ = 0;
    }
  }
  if (errno != EAGAIN && errno != EWOULDBLOCK) {
    return MakeError(ErrorCode::kIo, fmt::format("ibv_get_cq_event: {}", std::strerror(errno)));
  }
  return {};
}

Result<size_t> CompletionQueue::Poll(std::span<ibv_wc> out, uint32_t timeout_us) {
  auto poll_cq = [&]() -> Result<size_t> {
    int n = ibv_poll_cq(cq_, static_cast<int>(out.size()), out.data());
    if (n < 0) return MakeError(ErrorCode::kIo, "ibv_poll_cq failed");
    return static_cast<size_t>(n);
  };
  auto n = poll_cq();
  if (!n || *n > 0 || timeout_us == 0) return n;
  if (!armed_) {
    if (int rc = ibv_req_notify_cq(cq_, 0); rc != 0) {
      return MakeError(ErrorCode::kIo, fmt::format("ibv_req_notify_cq: {}", std::strerror(rc)));
    }
    armed_ = true;
    n = poll_cq();  // what arrived before the request raises no event
    if (!n || *n > 0) return n;
  }
  pollfd p{channel_->fd, POLLIN, 0};
  timespec ts{static_cast<time_t>(timeout_us / 1'000'000),
              static_cast<long>(timeout_us % 1'000'000) * 1000};
  int r = ::ppoll(&p, 1, &ts, nullptr);
  if (r < 0 && errno != EINTR) {
    return MakeError(ErrorCode::kIo, fmt::format("ppoll: {}", std::strerror(errno)));
  }
  if (r > 0) {
    if (Status s = ConsumeEvent(); !s) return s.error();
  }
  return poll_cq();
}

}  // namespace ofan::verbs
