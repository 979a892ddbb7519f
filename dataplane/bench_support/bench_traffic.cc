#include "dataplane/bench_support/bench_traffic.h"

#include <fmt/format.h>
#include <rte_mbuf.h>

#include <algorithm>

#include "common/rng.h"
#include "dataplane/packet/builder.h"
#include "dataplane/switch.h"

namespace ofan::dp {
namespace {

// The largest frame an mbuf of the switch's pool holds.
constexpr uint32_t kMaxBenchFrame = kMbufDataRoom - RTE_PKTMBUF_HEADROOM;

}  // namespace

Result<std::unique_ptr<BenchTraffic>> BenchTraffic::Start(Switch& sw, uint32_t population,
                                                          uint32_t frame_bytes) {
  if (frame_bytes < 64 || frame_bytes > kMaxBenchFrame) {
    return InvalidArgument(fmt::format("bench frame size must be in [64, {}]", kMaxBenchFrame));
  }
  std::unique_ptr<BenchTraffic> t(new BenchTraffic(sw));
  t->BuildFrames(frame_bytes);
  t->drops_seen_ = sw.TotalCounters().Drops();
  const uint32_t got = t->Inject(population);
  if (got < population) {
    return MakeError(
        ErrorCode::kIo,
        fmt::format("bench: only {} of {} frames injected (pool or rings full)", got, population));
  }
  BenchTraffic* self = t.get();
  t->service_ = sw.AddControlService([self] { self->Replace(); });
  return t;
}

BenchTraffic::~BenchTraffic() { sw_.RemoveControlService(service_); }

void BenchTraffic::BuildFrames(uint32_t frame_bytes) {
  // Frames to destinations above this switch, spread over many keys and
  // flows, TTL 255: on loopback ports they circulate until the TTL expires.
  // Built once: the control thread replaces expired frames at the
  // forwarding rate / 254 (over 100 k/s), and building each (the ICRC
  // especially) would take a good part of a core that, with two workers,
  // one of them shares.
  const lb::FatTree& tree = sw_.tree();
  const Router& router = sw_.router();
  const uint32_t w = sw_.num_uplinks();
  const auto k = static_cast<uint32_t>(sw_.config().k);
  for (uint32_t p = 0; p < k; ++p) {
    if (sw_.port_present(p) && (p < w || w == 0)) down_.push_back(p);
  }
  if (down_.empty()) {
    for (uint32_t p = 0; p < k; ++p) {
      if (sw_.port_present(p)) down_.push_back(p);
    }
  }
  const auto hosts = static_cast<uint32_t>(tree.num_hosts());
  // 16 K flows, as ECMP sees them, in at most 4 MiB of templates.
  const uint32_t n = std::clamp<uint32_t>((4u << 20) / frame_bytes, 1024, kFlows);
  for (uint64_t seq = 0; seq < n; ++seq) {
    // A destination that is not below this switch (a core has none: any will do).
    auto h = static_cast<uint32_t>(SplitMix64(seq) % hosts);
    for (uint32_t t = 0;
         t < hosts && router.Route(tree.host_addr(lb::HostId(h))).kind == RouteKind::kDown &&
         router.role() != lb::Role::kCore;
         ++t) {
      h = (h + 1) % hosts;
    }
    const uint32_t dst = tree.host_addr(lb::HostId(h));
    const uint32_t payload = frame_bytes > 62 ? frame_bytes - 62 : 0;
    frames_.push_back(
        pkt::PacketBuilder()
            .Eth(pkt::MacAddr{{0x02, 0, 0, 0, 0, 1}}, pkt::MacAddr{{0x02, 0, 0, 0, 0, 2}})
            .Ipv4((10u << 24) | 0xFE02u, dst, 255, pkt::ecn::kEct0)
            .Udp(static_cast<uint16_t>(0xC000 | (seq & 0x3FFF)), pkt::kRoceV2Port)
            .Bth(0x0A, static_cast<uint32_t>(seq & 0xFFFF), static_cast<uint32_t>(seq))
            .Payload(payload)
            .PadTo(frame_bytes)
            .Build());
  }
}

uint32_t BenchTraffic::Inject(uint32_t n) {
  if (frames_.empty() || down_.empty()) return 0;
  uint32_t done = 0;
  for (; done < n; ++done, ++seq_) {
    if (!sw_.InjectFrame(down_[seq_ % down_.size()], frames_[seq_ % frames_.size()])) break;
  }
  return done;
}

void BenchTraffic::Replace() {
  // Replace what the switch dropped since the last look.
  const uint64_t drops = sw_.TotalCounters().Drops();
  if (drops > drops_seen_) {
    drops_seen_ += Inject(static_cast<uint32_t>(std::min<uint64_t>(drops - drops_seen_, 1u << 16)));
  }
}

}  // namespace ofan::dp
