#include "dataplane/capture/port_capture.h"

#include <fmt/format.h>
#include <rte_cycles.h>
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
      tag_(num_ports),
      snaplen_(num_ports) {
  tsc0_ = rte_rdtsc();
  ns0_ = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

void PortCapture::CountDropped(uint32_t port, uint32_t n) {
  if (n) {
    dropped_[port].store(dropped_[port].load(std::memory_order_relaxed) + n,
                         std::memory_order_relaxed);
  }
}

void PortCapture::RecordRx(uint32_t port, rte_mbuf* const* frames, uint32_t n, uint64_t tsc) {
  CaptureRing& r = *rings_[port];
  const uint32_t k =
      r.Copy(frames, n, CaptureDir::kIn, tsc, tag_[port].load(std::memory_order_relaxed),
             snaplen_[port].load(std::memory_order_relaxed));
  r.Commit(k);
  CountDropped(port, n - k);
}

uint32_t PortCapture::CopyTx(uint32_t port, rte_mbuf* const* frames, uint32_t n, uint64_t tsc) {
  const uint32_t k = rings_[port]->Copy(frames, n, CaptureDir::kOut, tsc,
                                        tag_[port].load(std::memory_order_relaxed),
                                        snaplen_[port].load(std::memory_order_relaxed));
  CountDropped(port, n - k);
  return k;
}

uint64_t PortCapture::Dropped(const std::vector<uint32_t>& ports) const {
  uint64_t d = 0;
  for (uint32_t p : ports) d += dropped_[p].load(std::memory_order_relaxed);
  return d;
}

CaptureStatus PortCapture::StatusOf(const Session& s) const {
  CaptureStatus st = s.st;
  st.dropped = Dropped(s.st.ports) - s.dropped_at_start;
  return st;
}

Result<CaptureStatus> PortCapture::Start(const CaptureRequest& r,
                                         const std::vector<bool>& present) {
  if (running_.size() >= kMaxCaptures) {
    return InvalidArgument(fmt::format("{} captures are running, the most at once", kMaxCaptures));
  }
  if (r.ports.empty()) return InvalidArgument("no port to capture");
  if (r.snaplen < 64 || r.snaplen > kCaptureMaxSnaplen) {
    return InvalidArgument(
        fmt::format("snaplen {} is not in 64..{}", r.snaplen, kCaptureMaxSnaplen));
  }
  if (r.file.empty()) return InvalidArgument("no file to write");
  const uint64_t busy = mask_.load(std::memory_order_relaxed);
  uint64_t mask = 0;
  for (uint32_t p : r.ports) {
    if (p >= num_ports_ || p >= present.size() || !present[p]) {
      return InvalidArgument(fmt::format("port {}: the switch has no such port", p));
    }
    if (mask >> p & 1) {
      return InvalidArgument(fmt::format("port {} given twice", p));
    }
    if (busy >> p & 1) {
      return InvalidArgument(fmt::format("port {} is being captured already (capture_status)", p));
    }
    mask |= uint64_t{1} << p;
  }
  auto w = PcapngWriter::Create(r.file, fmt::format("ofan-dp ({})", name_));
  if (!w) return w.error();
  Session s;
  s.iface_of.assign(num_ports_, -1);
  for (uint32_t p : r.ports) {
    auto id = w->AddInterface(fmt::format("{}:p{}", name_, p), r.snaplen);
    if (!id) return id.error();
    s.iface_of[p] = static_cast<int32_t>(*id);
  }
  if (Status f = w->Flush(); !f) return f.error();
  s.writer = std::move(*w);
  s.st.id = next_id_++;
  s.st.active = true;
  s.st.file = r.file;
  s.st.ports = r.ports;
  s.st.snaplen = r.snaplen;
  s.st.count = r.count;
  s.dropped_at_start = Dropped(r.ports);
  for (uint32_t p : r.ports) {
    if (!rings_[p]) rings_[p] = std::make_unique<CaptureRing>();
    // What an earlier capture of the port left (copies made as it ended) goes.
    while (rings_[p]->Peek()) rings_[p]->Pop();
    tag_[p].store(s.st.id, std::memory_order_relaxed);
    snaplen_[p].store(r.snaplen, std::memory_order_relaxed);
  }
  running_.push_back(std::move(s));
  mask_.fetch_or(mask, std::memory_order_release);
  return StatusOf(running_.back());
}

uint64_t PortCapture::Service() {
  uint64_t wrote = 0;
  for (size_t i = 0; i < running_.size();) {
    Session& s = running_[i];
    uint64_t wrote_here = 0;
    bool failed = false;
    for (uint32_t p : s.st.ports) {
      CaptureRing& r = *rings_[p];
      while (const CaptureRing::Slot* slot = r.Peek()) {
        if (slot->session == s.st.id && (s.st.count == 0 || s.st.frames < s.st.count) && !failed) {
          // The TSC runs steadily from the reading taken at construction.
          const auto dt = static_cast<int64_t>(slot->tsc - tsc0_);
          const uint64_t ns = ns0_ + static_cast<uint64_t>(static_cast<double>(dt) * 1e9 /
                                                           static_cast<double>(tsc_hz_));
          if (Status w = s.writer.Write(static_cast<uint32_t>(s.iface_of[p]), ns, slot->dir,
                                        {slot->data, slot->len}, slot->orig);
              !w) {
            s.st.error = w.error().message;
            failed = true;
          } else {
            ++s.st.frames;
            ++wrote_here;
          }
        }
        r.Pop();
      }
    }
    if (wrote_here) (void)s.writer.Flush();
    wrote += wrote_here;
    if (failed || (s.st.count != 0 && s.st.frames >= s.st.count)) {
      End(i);  // the next one moves into slot i
    } else {
      ++i;
    }
  }
  return wrote;
}

CaptureStatus PortCapture::End(size_t i) {
  Session& s = running_[i];
  uint64_t mask = 0;
  for (uint32_t p : s.st.ports) mask |= uint64_t{1} << p;
  mask_.fetch_and(~mask, std::memory_order_release);
  CaptureStatus st = StatusOf(s);
  st.active = false;
  if (Status c = s.writer.Close(); !c && st.error.empty()) st.error = c.error().message;
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
  ended_.push_back(st);
  if (ended_.size() > kKeepEnded) ended_.erase(ended_.begin());
  return st;
}

Result<CaptureStatus> PortCapture::Stop(uint32_t id) {
  for (size_t i = 0; i < running_.size(); ++i) {
    if (running_[i].st.id == id) return End(i);
  }
  for (const CaptureStatus& e : ended_) {
    if (e.id == id) return e;  // ended already (its count, or an error)
  }
  return InvalidArgument(fmt::format("no capture {}", id));
}

std::vector<CaptureStatus> PortCapture::StopAll() {
  std::vector<CaptureStatus> out;
  while (!running_.empty()) out.push_back(End(0));
  return out;
}

Result<CaptureStatus> PortCapture::status(uint32_t id) const {
  for (const Session& s : running_) {
    if (s.st.id == id) return StatusOf(s);
  }
  for (const CaptureStatus& e : ended_) {
    if (e.id == id) return e;
  }
  return InvalidArgument(fmt::format("no capture {}", id));
}

std::vector<CaptureStatus> PortCapture::statuses() const {
  std::vector<CaptureStatus> out;
  for (const Session& s : running_) out.push_back(StatusOf(s));
  out.insert(out.end(), ended_.begin(), ended_.end());
  return out;
}

}  // namespace ofan::dp
