// libFuzzer target: the dataplane's parse stage, then route and rewrite on
// whatever it accepts. Any input must end in a verdict, never a crash, and a
// forwarded frame must stay a valid IPv4 frame after the rewrite, and the
// fast parser must give exactly what the full one gives. A MAC control
// frame goes to the PFC reader (egress/pfc.h) as the switch hands it on,
// both strict and not, and to the lossless classifier (egress/emu_pfc.h's
// byte-level part) and the reorder stage's reader (egress/reorder.h) as any
// frame.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dataplane/egress/lossless.h"
#include "dataplane/egress/mark.h"
#include "dataplane/egress/pfc.h"
#include "dataplane/egress/reorder.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/stages/parse.h"
#include "dataplane/stages/rewrite.h"
#include "dataplane/stages/route.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ofan::lb::FatTree tree = *ofan::lb::FatTree::Make(8, 3);
  static const ofan::dp::Router router(tree, tree.edge(1, 2));
  std::vector<uint8_t> frame(data, data + size);  // exact size: ASan sees overreads
  const auto p = ofan::dp::ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()));
  // The fast path (ParseFastRoce) must agree with the full parser exactly.
  if (!ofan::dp::SameParse(
          p, ofan::dp::ParseFrameReference(frame.data(), static_cast<uint32_t>(frame.size())))) {
    __builtin_trap();
  }
  if (p.verdict == ofan::dp::Verdict::kDrop && !ofan::dp::IsDrop(p.drop)) __builtin_trap();
  (void)ofan::dp::IsLosslessFrame(frame.data(), static_cast<uint32_t>(frame.size()), 26);
  ofan::dp::RoceSeq seq;
  if (ofan::dp::ReadRoceSeq(frame.data(), static_cast<uint32_t>(frame.size()), seq) ==
          ofan::dp::RoceSeqKind::kData &&
      (seq.at.psn > ofan::fabric::kPsnMask || seq.key.dst_qp > 0xFFFFFF || seq.at.payload > size)) {
    __builtin_trap();
  }
  if (p.verdict == ofan::dp::Verdict::kPfc) {
    for (const bool strict : {false, true}) {
      const ofan::dp::ReceivedPause r = ofan::dp::ReadPause(frame, 3, strict);
      if (r.kind != ofan::dp::PauseRx::kOurs && r.quanta != 0) __builtin_trap();
      if (r.quanta > 0xFFFF) __builtin_trap();
    }
  }
  if (p.verdict != ofan::dp::Verdict::kForward) return 0;
  (void)router.Route(p.dst_ip);
  // Egress finds the IPv4 header again from the frame (for ECN marking).
  if (ofan::dp::ForwardedL3Offset(frame.data()) != p.l3_offset) __builtin_trap();
  if (ofan::dp::RewriteForward(frame.data(), p.l3_offset, ofan::pkt::MacAddr{},
                               ofan::pkt::MacAddr{})) {
    ofan::dp::MarkCe(frame.data(), ofan::dp::ForwardedL3Offset(frame.data()));
    const auto q = ofan::dp::ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()));
    if (q.verdict != ofan::dp::Verdict::kForward) __builtin_trap();  // checksum kept valid
  }
  return 0;
}
