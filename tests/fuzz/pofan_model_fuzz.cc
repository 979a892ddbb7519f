// libFuzzer target: any frame through the P4 model (tofino_p4/model/) and
// through ofan-dp's own stages (tests/tofino_p4/ofan_dp_reference.h), at
// edge e0-0 of a k=8 fat tree. The model must never crash, and the two must
// agree: the same port and bytes, or both hand the frame to the CPU, or both
// drop it. The differences pofan.p4 documents are the only ones allowed:
// it drops IPv4 options and fragments (ofan-dp forwards them), it drops a
// packet whose TTL expires (ofan-dp answers ICMP Time Exceeded from its
// exception path), and it cannot check an IPv4 total length against the
// frame's length (ofan-dp drops the frame).
// Input: the first byte picks the fabric port, the rest is the frame.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tests/tofino_p4/ofan_dp_reference.h"
#include "tofino_p4/control/pofan_tables.h"
#include "tofino_p4/model/pofan_model.h"

namespace {

using ofan::p4::testing::OfanDpReference;
using ofan::p4::testing::OfanDpResult;

struct World {
  ofan::lb::FatTree tree = *ofan::lb::FatTree::Make(8, 3);
  ofan::p4::PofanTables tables =
      *ofan::p4::ComputePofanTables(tree, ofan::lb::SwitchId(0), {}, {.pipe_size = 2});
  ofan::lb::LinkSet none{tree.num_links()};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const World w;
  if (size < 1) return 0;
  const uint32_t port = data[0] % static_cast<uint32_t>(w.tree.k());
  const std::vector<uint8_t> frame(data + 1, data + size);  // exact size: ASan sees overreads
  // Fresh pointers per input: both sides start from the same state.
  ofan::p4::PofanModel model(w.tables);
  OfanDpReference ref(w.tree, w.tables, w.none);
  const auto out = model.Process(w.tables.options.dev_ports[port], frame);
  if (!out) __builtin_trap();  // every fabric port is on the device
  const OfanDpResult want = ref.Process(port, frame);
  const auto parsed = ofan::dp::ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()));
  const bool total_past_frame = parsed.verdict == ofan::dp::Verdict::kDrop &&
                                parsed.drop == ofan::dp::Counter::kDropIpv4TotalLength;
  if (out->dropped()) {
    if (want.kind == OfanDpResult::Kind::kDrop || want.kind == OfanDpResult::Kind::kPfc) return 0;
    if (out->drop_reason == OFAN_P4_DROP_IPV4_OPTIONS) return 0;
    if (out->drop_reason == OFAN_P4_DROP_TTL_EXPIRED &&
        want.kind == OfanDpResult::Kind::kTtlExpired) {
      return 0;
    }
    // A fragment: ofan-dp forwards it, or hands it to its exception path
    // when it is addressed to the switch.
    if (out->drop_reason == OFAN_P4_DROP_IPV4_FRAGMENT && parsed.fragment) return 0;
    __builtin_trap();
  }
  if (total_past_frame) return 0;
  if (out->to_cpu) {
    if (want.kind != OfanDpResult::Kind::kException) __builtin_trap();
    if (out->bytes != frame) __builtin_trap();  // to the CPU as it came
    return 0;
  }
  if (want.kind != OfanDpResult::Kind::kForward) __builtin_trap();
  if (w.tables.options.dev_ports[want.port] != out->port) __builtin_trap();
  if (want.bytes != out->bytes) __builtin_trap();
  return 0;
}
