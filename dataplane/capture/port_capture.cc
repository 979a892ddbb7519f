#include "dataplane/capture/port_capture.h"

#include <fmt/format.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace ofan::dp {

CaptureRing::CaptureRing() : slots_(new Slot[kCaptureRingSlots]) {}

uint32_t CaptureRing::Copy(rte_mbuf* const* frames, uint32_t n, CaptureDir dir, uint64_t tsc,
                           uint32_t session, uint32_t snaplen) {
  const uint32_t head = head_.load(std::memory_order_relaxed);
  const uint32_t free = kCaptureRingSlots - (head - tail_.load(std::memory_order_acquire));
  const uint32_t k = std::min(n, free);
  for (uint32_t i = 0; i < k; ++i) {
    Slot& s = slots_[(head + i) % kCaptureRingSlots];
    const rte_mbuf* m = frames[i];
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    const uint32_t take = std::min(len, snaplen);
    // Frames are one segment here (AF_XDP, ring ports); read_bytes copes
    // with more.
    const void* p = rte_pktmbuf_read(m, 0, take, s.data);
    if (p != s.data && p != nullptr) std::memcpy(s.data, p, take);
    s.tsc = tsc;
    s.session = session;
    s.len = static_cast<uint16_t>(p ? take : 0);
    s.orig = static_cast<uint16_t>(std::min<uint32_t>(len, 0xFFFF));
    s.dir = dir;
  }
  return k;
}

const CaptureRing::Slot* CaptureRing::Peek() const {
  const uint32_t tail = tail_.load(std::memory_order_relaxed);
  if (tail == head_.load(std::memory_order_acquire)) return nullptr;
  return &slots_[tail % kCaptureRingSlots];
}

PortCapture::PortCapture(uint32_t num_ports, std::string switch_name, uint64_t tsc_hz)
    : num_ports_(num_ports),
      name_(std::move(switch_name)),
      tsc_hz_(tsc_hz ? tsc_hz : 1),
      rings_(num_ports),
      dropped_(num_ports),
      iface_of_(num_ports, -1) {}

void PortCapture::RecordRx(uint32_t port, rte_mbuf* const* frames, uint32_t n, uint64_t tsc) {
  CaptureRing& r = *rings_[port];
  const uint32_t k =
      r.Copy(frames, n, CaptureDir::kIn, tsc, session_.load(std::memory_order_relaxed), snaplen_);
  r.Commit(k);
  if (k < n) {
    dropped_[port].store(dropped_[port].load(std::memory_order_relaxed) + (n - k),
                         std::memory_order_relaxed);
  }
}

uint32_t PortCapture::CopyTx(uint32_t port, rte_mbuf* const* frames, uint32_t n, uint64_t tsc) {
  const uint32_t k = rings_[port]->Copy(frames, n, CaptureDir::kOut, tsc,
                                        session_.load(std::memory_order_relaxed), snaplen_);
  if (k < n) {
    dropped_[port].store(dropped_[port].load(std::memory_order_relaxed) + (n - k),
                         std::memory_order_relaxed);
  }
  return k;
}

Status PortCapture::Start(const CaptureRequest& r, const std::vector<bool>& present) {
  if (st_.active) {
    return MakeError(ErrorCode::kInvalidArgument,
                     fmt::format("a capture into {} is running (capture_stop first)", st_.file));
  }
  if (r.ports.empty()) return MakeError(ErrorCode::kInvalidArgument, "no port to capture");
  if (r.snaplen < 64 || r.snaplen > kCaptureMaxSnaplen) {
    return MakeError(ErrorCode::kInvalidArgument,
                     fmt::format("snaplen {} is not in 64..{}", r.snaplen, kCaptureMaxSnaplen));
  }
  if (r.file.empty()) return MakeError(ErrorCode::kInvalidArgument, "no file to write");
  uint64_t mask = 0;
  for (uint32_t p : r.ports) {
    if (p >= num_ports_ || p >= present.size() || !present[p]) {
      return MakeError(ErrorCode::kInvalidArgument,
                       fmt::format("port {}: the switch has no such port", p));
    }
    if (mask >> p & 1) {
      return MakeError(ErrorCode::kInvalidArgument, fmt::format("port {} given twice", p));
    }
    mask |= uint64_t{1} << p;
  }
  auto w = PcapngWriter::Create(r.file, fmt::format("ofan-dp ({})", name_));
  if (!w) return w.error();
  std::fill(iface_of_.begin(), iface_of_.end(), -1);
  for (uint32_t p : r.ports) {
    auto id = w->AddInterface(fmt::format("{}:p{}", name_, p), r.snaplen);
    if (!id) return id.error();
    iface_of_[p] = static_cast<int32_t>(*id);
    if (!rings_[p]) rings_[p] = std::make_unique<CaptureRing>();
    // What an earlier capture left (copies made as it stopped) goes.
    while (rings_[p]->Peek()) rings_[p]->Pop();
  }
  if (Status s = w->Flush(); !s) return s;
  writer_.emplace(std::move(*w));
  st_ = CaptureStatus{};
  st_.active = true;
  st_.file = r.file;
  st_.ports = r.ports;
  st_.snaplen = r.snaplen;
  st_.count = r.count;
  dropped_at_start_ = 0;
  for (uint32_t p : r.ports) dropped_at_start_ += dropped_[p].load(std::memory_order_relaxed);
  tsc0_ = rte_rdtsc();
  ns0_ = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
  snaplen_ = r.snaplen;
  session_.store(session_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  mask_.store(mask, std::memory_order_release);
  return {};
}

uint64_t PortCapture::Service() {
  if (!st_.active) return 0;
  const uint32_t session = session_.load(std::memory_order_relaxed);
  uint64_t wrote = 0;
  for (uint32_t p : st_.ports) {
    CaptureRing& r = *rings_[p];
    while (const CaptureRing::Slot* s = r.Peek()) {
      if (s->session == session && (st_.count == 0 || st_.frames < st_.count)) {
        // The TSC runs steadily from the reading taken at Start.
        const auto dt = static_cast<int64_t>(s->tsc - tsc0_);
        const uint64_t ns = ns0_ + static_cast<uint64_t>(static_cast<double>(dt) * 1e9 /
                                                         static_cast<double>(tsc_hz_));
        if (Status w = writer_->Write(static_cast<uint32_t>(iface_of_[p]), ns, s->dir,
                                      {s->data, s->len}, s->orig);
            !w) {
          st_.error = w.error().message;
          r.Pop();
          (void)Stop();
          return wrote;
        }
        ++st_.frames;
        ++wrote;
      }
      r.Pop();
    }
  }
  if (wrote) (void)writer_->Flush();
  if (st_.count != 0 && st_.frames >= st_.count) (void)Stop();
  return wrote;
}

CaptureStatus PortCapture::status() const {
  CaptureStatus s = st_;
  uint64_t d = 0;
  for (uint32_t p : st_.ports) d += dropped_[p].load(std::memory_order_relaxed);
  s.dropped = st_.active ? d - dropped_at_start_ : st_.dropped;
  return s;
}

CaptureStatus PortCapture::Stop() {
  if (!st_.active) return status();
  mask_.store(0, std::memory_order_release);
  st_.dropped = status().dropped;
  st_.active = false;
  if (writer_) {
    if (Status s = writer_->Close(); !s && st_.error.empty()) st_.error = s.error().message;
    writer_.reset();
  }
  return st_;
}

uint16_t CapturingTxBurst(void* ctx, rte_mbuf** pkts, uint16_t n) {
  auto* c = static_cast<CaptureTxCtx*>(ctx);
  if (!c->capture->captures(c->port)) [[likely]]
    return rte_eth_tx_burst(c->dpdk_port, 0, pkts, n);
  // Copied before the device takes them (after, they may be gone); only
  // what it took is published.
  const uint32_t copied = c->capture->CopyTx(c->port, pkts, n, rte_rdtsc());
  const uint16_t sent = rte_eth_tx_burst(c->dpdk_port, 0, pkts, n);
  c->capture->CommitTx(c->port, std::min<uint32_t>(copied, sent));
  return sent;
}

}  // namespace ofan::dp
