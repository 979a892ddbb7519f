// What ofan-dp does with one frame at one switch under POfan, written with
// ofan-dp's own stages (dataplane/stages/: parse, route, rewrite) and the LB
// library's POfan, in the order dataplane/vector.cc runs them: the reference
// the P4 model's frames are held to. Test support only (the tests and the
// model's fuzz target).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/names.h"
#include "dataplane/lb/policies/ofan.h"
#include "dataplane/lb/policy.h"
#include "dataplane/lb/uplink_table.h"
#include "dataplane/stages/parse.h"
#include "dataplane/stages/rewrite.h"
#include "dataplane/stages/route.h"
#include "tofino_p4/control/pofan_tables.h"

namespace ofan::p4::testing {

struct OfanDpResult {
  // kTtlExpired: not forwarded; ofan-dp answers with ICMP Time Exceeded
  // from its exception path (pofan.p4 drops it: a documented difference).
  // kFragment: an IPv4 fragment, which ofan-dp forwards on its datagram's
  // hash (pofan.p4 drops fragments: a documented difference).
  enum class Kind { kForward, kException, kPfc, kDrop, kTtlExpired, kFragment } kind = Kind::kDrop;
  uint32_t port = 0;  // fabric port (kForward)
  std::vector<uint8_t> bytes;
  bool balanced = false;
  uint8_t uplink = lb::kNoUplink;
};

inline lb::PolicyConfig PolicyOf(const PofanOptions& o) {
  lb::PolicyConfig pc;
  pc.kind = o.policy;
  pc.seed = o.seed;
  pc.pipe_size = o.pipe_size;
  return pc;
}

class OfanDpReference {
 public:
  // The switch, failures, seed, pipe size and salt the P4 tables t were
  // computed with: the same POfan (or Ofan), by construction.
  OfanDpReference(const lb::FatTree& tree, const PofanTables& t, const lb::LinkSet& failed)
      : tree_(tree),
        sw_(t.sw),
        router_(tree, t.sw),
        table_(lb::UplinkTable::ForSwitch(tree, t.sw, failed)),
        pipe_size_(t.options.pipe_size) {
    const lb::SwitchLbSetup s{&table_, static_cast<uint32_t>(tree.k()), t.options.salt};
    if (t.options.policy == lb::PolicyKind::kOfan) {
      ofan_.emplace(PolicyOf(t.options), s);
    } else {
      pofan_.emplace(PolicyOf(t.options), s);
    }
  }

  // New failures: a new table; the pointers stay (as in ofan-dp's swap).
  void UpdateFailures(const lb::LinkSet& failed) {
    table_ = lb::UplinkTable::ForSwitch(tree_, sw_, failed);
  }

  // lb::Pofan (or lb::Ofan) alone: the uplink for (dest, class) entering
  // through a pipe.
  uint8_t Pick(uint32_t dest, lb::SizeClass cls, uint32_t pipe) {
    lb::PacketKey k;
    k.dest = static_cast<uint16_t>(dest);
    k.key = static_cast<uint16_t>(table_.key(dest, cls));
    k.pipe = static_cast<uint8_t>(pipe);
    k.cls = cls;
    lb::LbView v{&table_, nullptr, 0};
    return ofan_ ? ofan_->Pick(k, v) : pofan_->Pick(k, v);
  }

  OfanDpResult Process(uint32_t in_port, std::span<const uint8_t> frame) {
    OfanDpResult r;
    std::vector<uint8_t> d(frame.begin(), frame.end());
    const dp::ParsedPacket p = dp::ParseFrame(d.data(), static_cast<uint32_t>(d.size()));
    if (p.verdict == dp::Verdict::kException) {
      r.kind = OfanDpResult::Kind::kException;
      return r;
    }
    if (p.verdict == dp::Verdict::kPfc) {
      r.kind = OfanDpResult::Kind::kPfc;
      return r;
    }
    if (p.verdict != dp::Verdict::kForward) return r;
    const dp::RouteResult rt = router_.Route(p.dst_ip);
    if (rt.kind == dp::RouteKind::kLocal) {
      r.kind = OfanDpResult::Kind::kException;
      return r;
    }
    if (rt.kind == dp::RouteKind::kNoRoute) return r;
    if (dp::TtlExpires(d.data() + p.l3_offset)) {
      r.kind = OfanDpResult::Kind::kTtlExpired;
      return r;
    }
    if (p.fragment) {
      r.kind = OfanDpResult::Kind::kFragment;
      return r;
    }
    uint32_t port = rt.port;
    if (rt.kind == dp::RouteKind::kUp) {
      r.balanced = true;
      r.uplink = Pick(rt.dest, p.cls, in_port / pipe_size_);
      if (r.uplink == lb::kNoUplink) return r;
      port = static_cast<uint32_t>(tree_.w()) + r.uplink;
    }
    dp::DecrementLiveTtl(d.data() + p.l3_offset);
    pkt::MacAddr dst{lb::PeerMac(tree_, sw_, static_cast<int>(port))};
    pkt::MacAddr src{lb::SwitchPortMac(sw_, static_cast<int>(port))};
    dp::SetMacs(d.data(), dp::MacPair(dst, src));
    r.kind = OfanDpResult::Kind::kForward;
    r.port = port;
    r.bytes = std::move(d);
    return r;
  }

  const lb::UplinkTable& table() const { return table_; }

 private:
  const lb::FatTree& tree_;
  lb::SwitchId sw_;
  dp::Router router_;
  lb::UplinkTable table_;
  std::optional<lb::Pofan> pofan_;
  std::optional<lb::Ofan> ofan_;
  uint32_t pipe_size_;
};

}  // namespace ofan::p4::testing
