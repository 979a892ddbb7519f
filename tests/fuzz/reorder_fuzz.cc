// libFuzzer target: fabric::ReorderBuffer (dataplane/fabric/reorder.h) over
// any sequence of frames. Input: the first 4 bytes set the limits (buffer
// bytes, table size, timeout, idle time), then 6 bytes a frame: its flow
// (one of 8), a 24-bit PSN as an offset from the flow's last (so that runs,
// gaps, duplicates, old PSNs and wraps all come up), its size, its place
// (whether it continues a message, whether more follow, a READ response, a
// READ request and its length, an ACK) and the time that passed. Every frame must
// leave exactly once, never before it arrived, in time order, and the
// counters must add up.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "dataplane/fabric/reorder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ofan::fabric::TimePs;
  if (size < 4) return 0;
  ofan::fabric::ReorderLimits lim;
  lim.buffer_bytes = 64u * (1 + data[0]);
  lim.max_flows = 1 + data[1] % 8;
  lim.timeout = (TimePs{data[2]} + 1) * 1'000'000;
  lim.idle = TimePs{data[3]} * 1'000'000;
  ofan::fabric::ReorderBuffer<uint32_t> rb(lim);
  struct Frame {
    TimePs at;
    bool left;
  };
  std::vector<Frame> frames;
  uint32_t last_psn[8] = {0xFFFFF0, 5, 0, 0x7FFFFF, 1, 2, 3, 4};
  TimePs t = 0, last_out = 0;
  auto emit = [&](uint32_t h, TimePs at) {
    if (h >= frames.size() || frames[h].left || at < frames[h].at || at < last_out) std::abort();
    frames[h].left = true;
    last_out = at;
  };
  for (size_t i = 4; i + 6 <= size; i += 6) {
    const uint8_t* d = data + i;
    const uint32_t flow = d[0] % 8;
    const auto delta = static_cast<int8_t>(d[1]);
    const uint32_t psn =
        (last_psn[flow] + static_cast<uint32_t>(delta) + (d[0] & 0x80 ? 0x800000u : 0u)) &
        ofan::fabric::kPsnMask;
    last_psn[flow] = psn;
    const uint32_t bytes = 1 + (uint32_t{d[2]} << 4 | d[3] >> 4);
    t += TimePs{d[4]} * 100'000 + d[5];
    frames.push_back({t, false});
    ofan::fabric::ReorderPsn at;
    at.psn = psn;
    at.continues = (d[3] & 1) != 0;
    at.more = (d[3] & 2) != 0;
    at.payload = bytes;
    at.read = (d[3] & 8) != 0;
    at.read_bytes = uint32_t{d[2]} << 6;
    at.ack = (d[3] & 16) != 0;
    rb.Offer(t, {0x0A000000u + flow, 0x11, (d[3] & 4) != 0}, at, bytes,
             static_cast<uint32_t>(frames.size() - 1), emit);
    if (rb.bytes() > lim.buffer_bytes) std::abort();
  }
  rb.Expire(ofan::fabric::kNever - 1, emit);
  for (const Frame& f : frames)
    if (!f.left) std::abort();
  const ofan::fabric::ReorderCounters& c = rb.counters();
  if (c.in_order + c.timeouts + c.overflow + c.table_full + c.old != frames.size()) std::abort();
  if (rb.frames() != 0 || rb.bytes() != 0) std::abort();
  return 0;
}
