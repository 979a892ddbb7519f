// Destination-oblivious, stateless policies: ECMP, E-ECMP and path pinning.
//
// ECMP hashes the 5-tuple (RFC 2992); E-ECMP adds the RoCE destination QP, as
// Meta's switches do with a user-defined field so that the extra QPs opened by
// "QP scaling" take different paths. Path pinning sends traffic for
// destination slice s (the destination host's edge port) through uplink
// s mod w and falls back to ECMP when that uplink has no path (Meta, §4 of the
// reading guide: "when an uplink failed, the affected flows fell back to ECMP").
#pragma once

#include "common/rng.h"
#include "dataplane/lb/policy_params.h"

namespace ofan::lb {

// The valid uplink a hash designates: the one ECMP rule every hash-based
// policy (and the fallbacks of pinning and source routing) uses.
inline uint8_t HashPick(const UplinkList& l, uint32_t flow_hash, uint32_t salt) {
  return l.n == 0 ? kNoUplink : l.ports[Reduce32(MixHash(flow_hash, salt), l.n)];
}

class Ecmp {
 public:
  Ecmp(const PolicyParams&, const SwitchLbSetup& s) : salt_(s.salt) {}
  uint8_t Pick(const PacketKey& k, LbView& v) const {
    return HashPick(v.table->list(k.dest), k.flow_hash,
                    salt_);  // any key row lists all valid ports
  }
  // Prefetch hint (ofan-sim): the uplink Pick(k) returns (stateless).
  uint8_t Peek(const PacketKey& k, const UplinkTable& t) const {
    return HashPick(t.list(k.dest), k.flow_hash, salt_);
  }

 private:
  uint32_t salt_;
};

class EEcmp {
 public:
  EEcmp(const PolicyParams&, const SwitchLbSetup& s) : salt_(s.salt) {}
  uint8_t Pick(const PacketKey& k, LbView& v) const {
    return HashPick(v.table->list(k.dest), k.flow_hash ^ (k.dst_qp * 0x9E3779B1u), salt_);
  }

 private:
  uint32_t salt_;
};

class PathPin {
 public:
  PathPin(const PolicyParams&, const SwitchLbSetup& s) : salt_(s.salt) {}
  uint8_t Pick(const PacketKey& k, LbView& v) const {
    const uint32_t w = v.table->w();
    const uint32_t pinned = w ? k.slice % w : 0;
    if (v.table->mask(k.dest) & (PortMask{1} << pinned)) return static_cast<uint8_t>(pinned);
    return HashPick(v.table->list(k.dest), k.flow_hash, salt_);
  }

 private:
  uint32_t salt_;
};

// Follows the uplink the source host chose (DRB encapsulates packets towards
// the core it rotates to; here the choice rides in PacketKey::source_uplink).
// An invalid choice falls back to ECMP rather than blackholing.
class SourceRouted {
 public:
  SourceRouted(const PolicyParams&, const SwitchLbSetup& s) : salt_(s.salt) {}
  uint8_t Pick(const PacketKey& k, LbView& v) const {
    const PortMask m = v.table->mask(k.dest);
    if (k.source_uplink < kMaxUplinks && (m & (PortMask{1} << k.source_uplink))) {
      return k.source_uplink;
    }
    return HashPick(v.table->list(k.dest), k.flow_hash, salt_);
  }
  uint8_t Peek(const PacketKey& k, const UplinkTable& t) const {
    const PortMask m = t.mask(k.dest);
    if (k.source_uplink < kMaxUplinks && (m & (PortMask{1} << k.source_uplink))) {
      return k.source_uplink;
    }
    return HashPick(t.list(k.dest), k.flow_hash, salt_);
  }

 private:
  uint32_t salt_;
};

}  // namespace ofan::lb
