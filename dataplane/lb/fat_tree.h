// FatTree: the k-ary fat tree (3 levels, k^3/4 hosts) or leaf-spine (2 levels,
// k^2/2 hosts) that every part of ofan shares: switch roles and positions, port
// maps, the host address plan, the arithmetic from a destination address to its
// edge switch and pod (Ofan's pointer keys, paper §4), and, from a set of
// failed links, the valid uplinks of every switch for every key.
//
// Numbering.
//  - Hosts are numbered pod-major: host h sits on edge h / w at edge port h % w,
//    where w = k/2. Its address is 10.<pod>.<edge-in-pod>.<slot+2>.
//  - Switches: edges first (pod-major), then aggregation switches (pod-major),
//    then cores. In a 2-level tree there is one pod of k leaves ("edges") and
//    k/2 spines (role kAgg, no uplinks) and no cores.
//  - Ports: edge and agg ports 0..w-1 face down, w..k-1 face up (uplink index
//    u = port - w). Core (and spine) ports 0..k-1 face down: core port p leads
//    to pod p (spine port e leads to leaf e).
//  - Wiring: edge e of pod p, uplink j <-> agg j of pod p, down port e.
//    Agg j of pod p, uplink c <-> core j*w + c, down port p. Hence a packet
//    that leaves its source edge through uplink j reaches agg j of the
//    destination pod (App. F.1, "mandatory waypoints").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "dataplane/lb/types.h"

namespace ofan::lb {

struct SwitchInfo {
  Role role = Role::kEdge;
  int pod = 0;    // 0 for cores
  int index = 0;  // position within its pod (edge/agg) or among cores
};

// What sits at the far end of a port.
struct Peer {
  bool is_host = false;
  uint32_t id = 0;  // HostId or SwitchId value
  int port = 0;     // the far end's port (0 for a host's single NIC)
};

// Inter-switch links can fail (paper §6.2: edge-agg and agg-core links). A link
// is named by its lower switch and that switch's uplink index.
class LinkSet {
 public:
  LinkSet() = default;
  explicit LinkSet(size_t num_links) : failed_(num_links, false) {}
  bool failed(uint32_t link) const { return link < failed_.size() && failed_[link]; }
  void set_failed(uint32_t link, bool f = true) { failed_.at(link) = f; }
  size_t size() const { return failed_.size(); }
  size_t count() const;

 private:
  std::vector<bool> failed_;
};

// Where a switch's egress queue sits, as the paper's queues are reported
// (ofan-sim's stages, ofan-emu's per-stage maxima): edge uplinks (E->A), agg
// uplinks (A->C), core ports (C->A), agg down ports (A->E; a spine's ports),
// edge host ports (E->H). One list: ofan-topo prints it for ofan-emu.
enum class Stage : uint8_t { kEdgeUp, kAggUp, kCoreDown, kAggDown, kEdgeDown };
inline constexpr int kNumStages = 5;
inline constexpr std::array<std::string_view, kNumStages> kStageNames = {"E->A", "A->C", "C->A",
                                                                         "A->E", "E->H"};

class FatTree {
 public:
  // k even in [4, 64]; levels 2 or 3.
  static Result<FatTree> Make(int k, int levels);

  int k() const { return k_; }
  int levels() const { return levels_; }
  int w() const { return k_ / 2; }  // uplinks per edge/agg, hosts per edge
  int num_pods() const { return pods_; }
  int edges_per_pod() const { return edges_per_pod_; }
  int num_hosts() const { return num_edges() * w(); }
  int num_edges() const { return pods_ * edges_per_pod_; }
  int num_aggs() const { return levels_ == 3 ? pods_ * w() : w(); }
  int num_cores() const { return levels_ == 3 ? w() * w() : 0; }
  int num_switches() const { return num_edges() + num_aggs() + num_cores(); }
  std::string Describe() const;

  SwitchId edge(int pod, int idx) const { return SwitchId(pod * edges_per_pod_ + idx); }
  SwitchId agg(int pod, int idx) const { return SwitchId(num_edges() + pod * w() + idx); }
  SwitchId core(int idx) const { return SwitchId(num_edges() + num_aggs() + idx); }
  SwitchInfo info(SwitchId s) const;
  Role role(SwitchId s) const { return info(s).role; }
  int num_ports(SwitchId s) const;
  int num_uplinks(SwitchId s) const;  // w for edges (and aggs in 3 levels), else 0
  int first_uplink_port(SwitchId) const { return w(); }
  Peer peer(SwitchId s, int port) const;
  bool is_uplink_port(SwitchId s, int port) const {
    return port >= first_uplink_port(s) && num_uplinks(s) > 0;
  }
  // The stage of switch s's egress queue on `port`.
  Stage stage_of(SwitchId s, int port) const;

  // Hosts.
  int edge_of(HostId h) const { return static_cast<int>(h.value()) / w(); }  // global edge index
  int pod_of(HostId h) const { return edge_of(h) / edges_per_pod_; }
  int slot_of(HostId h) const { return static_cast<int>(h.value()) % w(); }  // edge down port
  SwitchId edge_switch_of(HostId h) const { return SwitchId(edge_of(h)); }
  uint32_t host_addr(HostId h) const;  // IPv4, host byte order
  Result<HostId> host_of_addr(uint32_t addr) const;
  static std::string FormatAddr(uint32_t addr);
  // The subnet of edge e's hosts, 10.<pod>.<edge-in-pod>.0/24 (its gateway is
  // .1), and pod p's, 10.<p>.0.0/16: what kernel routes and BGP announce.
  static constexpr int kEdgePrefixLen = 24;
  static constexpr int kPodPrefixLen = 16;
  uint32_t edge_prefix(int e) const {
    return (10u << 24) | (static_cast<uint32_t>(e / edges_per_pod_) << 16) |
           (static_cast<uint32_t>(e % edges_per_pod_) << 8);
  }
  static uint32_t pod_prefix(int p) { return (10u << 24) | (static_cast<uint32_t>(p) << 16); }
  // A switch's own address: 10.255.0.0 + id + 1 (switch 0 is 10.255.0.1),
  // outside every pod's 10.pod/16 (pods <= 64). What the switch answers
  // pings on and sends ICMP errors from; the kernel fabric's routers hold
  // the same addresses (ofan-topo prints them).
  static constexpr uint32_t kSwitchAddrBase = (10u << 24) | (255u << 16);
  uint32_t switch_addr(SwitchId s) const { return kSwitchAddrBase + s.value() + 1; }
  Result<SwitchId> switch_of_addr(uint32_t addr) const;
  // Links traversed from a to b on a shortest path (2, 4 or 6).
  int hops(HostId a, HostId b) const;
  // Shortest paths from a to b with no failure: 1, w (within a pod, or any
  // pair of a 2-level tree) or w * w (between pods).
  int paths(HostId a, HostId b) const {
    const int h = hops(a, b);
    return h == 2 ? 1 : h == 4 ? w() : w() * w();
  }

  // Pointer keys (§4). At an edge switch the destination d is the destination
  // edge switch (Nd = num_edges); at an aggregation switch, the destination
  // pod (Nd = num_pods). Cores and spines do not balance.
  int num_dests(SwitchId s) const;
  int dest_of(SwitchId s, HostId dst) const;
  // True when dst is below s: the packet goes down, through down_port().
  bool is_below(SwitchId s, HostId dst) const;
  int down_port(SwitchId s, HostId dst) const;

  // Links.
  uint32_t num_links() const;  // inter-switch links only
  uint32_t uplink_id(SwitchId lower, int uplink) const;
  // The set of failed links with these ids, each checked against the tree.
  Result<LinkSet> FailedLinks(const std::vector<uint32_t>& ids) const;
  SwitchId link_lower(uint32_t link) const;
  int link_uplink(uint32_t link) const { return static_cast<int>(link % w()); }
  bool link_up(const LinkSet& f, SwitchId lower, int uplink) const {
    return !f.failed(uplink_id(lower, uplink));
  }

  // Valid uplinks of switch s towards destination d (its key space above):
  // uplink u is valid iff a shortest (up*down*) path through u reaches the
  // destination with no failed link. At an edge switch this covers the whole
  // path to the destination edge; at an agg, the path to the destination
  // pod's agg of the same index (the agg->edge hop is the same for every
  // uplink, so the source edge accounts for it).
  PortMask valid_uplinks(SwitchId s, int dest, const LinkSet& failed) const;
  // All keys of one switch, indexed by dest.
  std::vector<PortMask> valid_uplink_table(SwitchId s, const LinkSet& failed) const;

 private:
  FatTree(int k, int levels);
  int k_ = 0;
  int levels_ = 3;
  int pods_ = 0;
  int edges_per_pod_ = 0;
};

// Per packet in the simulator: inline.
inline SwitchInfo FatTree::info(SwitchId s) const {
  int v = static_cast<int>(s.value());
  if (v < num_edges()) return {Role::kEdge, v / edges_per_pod_, v % edges_per_pod_};
  v -= num_edges();
  if (v < num_aggs()) return {Role::kAgg, v / w(), v % w()};
  v -= num_aggs();
  return {Role::kCore, 0, v};
}

inline bool FatTree::is_below(SwitchId s, HostId dst) const {
  const SwitchInfo in = info(s);
  switch (in.role) {
    case Role::kEdge:
      return edge_of(dst) == static_cast<int>(s.value());
    case Role::kAgg:
      return levels_ == 2 || pod_of(dst) == in.pod;
    case Role::kCore:
      return true;
  }
  return false;
}

inline int FatTree::down_port(SwitchId s, HostId dst) const {
  switch (role(s)) {
    case Role::kEdge:
      return slot_of(dst);
    case Role::kAgg:
      return levels_ == 2 ? edge_of(dst) : edge_of(dst) % edges_per_pod_;
    case Role::kCore:
      return pod_of(dst);
  }
  return 0;
}

}  // namespace ofan::lb
