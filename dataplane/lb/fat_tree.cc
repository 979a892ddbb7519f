#include "dataplane/lb/fat_tree.h"

#include <fmt/format.h>

#include <algorithm>

namespace ofan::lb {

size_t LinkSet::count() const {
  return static_cast<size_t>(std::count(failed_.begin(), failed_.end(), true));
}

FatTree::FatTree(int k, int levels)
    : k_(k), levels_(levels), pods_(levels == 3 ? k : 1), edges_per_pod_(levels == 3 ? k / 2 : k) {}

Result<FatTree> FatTree::Make(int k, int levels) {
  if (levels != 2 && levels != 3) {
    return InvalidArgument(
        fmt::format("levels must be 2 (leaf-spine) or 3 (fat tree), got {}", levels));
  }
  if (k < 4 || k > 64 || k % 2 != 0) {
    return InvalidArgument(fmt::format("k must be an even number from 4 to 64, got {}", k));
  }
  return FatTree(k, levels);
}

std::string FatTree::Describe() const {
  if (levels_ == 3) {
    return fmt::format("3-level fat tree k={}: {} hosts, {} edge, {} agg, {} core switches", k_,
                       num_hosts(), num_edges(), num_aggs(), num_cores());
  }
  return fmt::format("2-level leaf-spine k={}: {} hosts, {} leaves, {} spines", k_, num_hosts(),
                     num_edges(), num_aggs());
}

int FatTree::num_ports(SwitchId) const { return k_; }

int FatTree::num_uplinks(SwitchId s) const {
  const Role r = role(s);
  if (r == Role::kEdge) return w();
  if (r == Role::kAgg && levels_ == 3) return w();
  return 0;
}

Stage FatTree::stage_of(SwitchId s, int port) const {
  const bool up = is_uplink_port(s, port);
  switch (role(s)) {
    case Role::kEdge:
      return up ? Stage::kEdgeUp : Stage::kEdgeDown;
    case Role::kAgg:
      return up ? Stage::kAggUp : Stage::kAggDown;
    case Role::kCore:
      break;
  }
  return Stage::kCoreDown;
}

Peer FatTree::peer(SwitchId s, int port) const {
  const SwitchInfo in = info(s);
  switch (in.role) {
    case Role::kEdge:
      if (port < w()) {
        return {true,
                static_cast<uint32_t>(s.value()) * static_cast<uint32_t>(w()) +
                    static_cast<uint32_t>(port),
                0};
      }
      return {false, agg(in.pod, port - w()).value(), in.index};
    case Role::kAgg:
      if (levels_ == 2) return {false, edge(0, port).value(), w() + in.index};
      if (port < w()) return {false, edge(in.pod, port).value(), w() + in.index};
      return {false, core(in.index * w() + (port - w())).value(), in.pod};
    case Role::kCore:
      return {false, agg(port, in.index / w()).value(), w() + in.index % w()};
  }
  return {};
}

uint32_t FatTree::host_addr(HostId h) const {
  const uint32_t e = static_cast<uint32_t>(edge_of(h));
  const uint32_t pod = e / static_cast<uint32_t>(edges_per_pod_);
  const uint32_t eip = e % static_cast<uint32_t>(edges_per_pod_);
  const uint32_t slot = static_cast<uint32_t>(slot_of(h)) + 2;
  return (10u << 24) | (pod << 16) | (eip << 8) | slot;
}

Result<SwitchId> FatTree::switch_of_addr(uint32_t addr) const {
  const uint32_t i = addr - kSwitchAddrBase - 1;
  if (addr <= kSwitchAddrBase || i >= static_cast<uint32_t>(num_switches())) {
    return MakeError(ErrorCode::kNotFound,
                     fmt::format("{} is not a switch address of this {}", FormatAddr(addr),
                                 levels_ == 3 ? "fat tree" : "leaf-spine"));
  }
  return SwitchId(i);
}

Result<HostId> FatTree::host_of_addr(uint32_t addr) const {
  const uint32_t a = addr >> 24, pod = (addr >> 16) & 0xFF, eip = (addr >> 8) & 0xFF,
                 slot = addr & 0xFF;
  if (a != 10 || pod >= static_cast<uint32_t>(pods_) ||
      eip >= static_cast<uint32_t>(edges_per_pod_) || slot < 2 ||
      slot >= static_cast<uint32_t>(w()) + 2) {
    return MakeError(ErrorCode::kNotFound,
                     fmt::format("{} is not a host address of this {}", FormatAddr(addr),
                                 levels_ == 3 ? "fat tree" : "leaf-spine"));
  }
  const uint32_t e = pod * static_cast<uint32_t>(edges_per_pod_) + eip;
  return HostId(e * static_cast<uint32_t>(w()) + (slot - 2));
}

std::string FatTree::FormatAddr(uint32_t a) {
  return fmt::format("{}.{}.{}.{}", a >> 24, (a >> 16) & 0xFF, (a >> 8) & 0xFF, a & 0xFF);
}

int FatTree::hops(HostId a, HostId b) const {
  if (edge_of(a) == edge_of(b)) return 2;
  if (levels_ == 2 || pod_of(a) == pod_of(b)) return 4;
  return 6;
}

int FatTree::num_dests(SwitchId s) const {
  const Role r = role(s);
  if (r == Role::kEdge) return num_edges();
  if (r == Role::kAgg && levels_ == 3) return num_pods();
  return 0;
}

int FatTree::dest_of(SwitchId s, HostId dst) const {
  return role(s) == Role::kEdge ? edge_of(dst) : pod_of(dst);
}

uint32_t FatTree::num_links() const {
  const uint32_t ww = static_cast<uint32_t>(w());
  return static_cast<uint32_t>(num_edges()) * ww +
         (levels_ == 3 ? static_cast<uint32_t>(num_aggs()) * ww : 0);
}

uint32_t FatTree::uplink_id(SwitchId lower, int uplink) const {
  const uint32_t ww = static_cast<uint32_t>(w());
  const uint32_t v = lower.value();
  if (v < static_cast<uint32_t>(num_edges())) return v * ww + static_cast<uint32_t>(uplink);
  return static_cast<uint32_t>(num_edges()) * ww + (v - static_cast<uint32_t>(num_edges())) * ww +
         static_cast<uint32_t>(uplink);
}

Result<LinkSet> FatTree::FailedLinks(const std::vector<uint32_t>& ids) const {
  LinkSet set(num_links());
  for (uint32_t l : ids) {
    if (l >= num_links()) {
      return InvalidArgument(fmt::format("no link {}: the {} has inter-switch links 0..{}", l,
                                         Describe(), num_links() - 1));
    }
    set.set_failed(l);
  }
  return set;
}

SwitchId FatTree::link_lower(uint32_t link) const {
  const uint32_t ww = static_cast<uint32_t>(w());
  const uint32_t edge_links = static_cast<uint32_t>(num_edges()) * ww;
  if (link < edge_links) return SwitchId(link / ww);
  return SwitchId(static_cast<uint32_t>(num_edges()) + (link - edge_links) / ww);
}

PortMask FatTree::valid_uplinks(SwitchId s, int dest, const LinkSet& failed) const {
  const SwitchInfo in = info(s);
  PortMask mask = 0;
  if (in.role == Role::kEdge) {
    const int src_edge = static_cast<int>(s.value());
    if (dest == src_edge || dest < 0 || dest >= num_edges()) return 0;
    const SwitchId dst_edge(static_cast<uint32_t>(dest));
    const int dst_pod = dest / edges_per_pod_;
    for (int j = 0; j < w(); ++j) {
      if (!link_up(failed, s, j) || !link_up(failed, dst_edge, j)) continue;
      bool ok = levels_ == 2 || dst_pod == in.pod;
      if (!ok) {
        const SwitchId a_src = agg(in.pod, j), a_dst = agg(dst_pod, j);
        for (int c = 0; c < w() && !ok; ++c) {
          ok = link_up(failed, a_src, c) && link_up(failed, a_dst, c);
        }
      }
      if (ok) mask |= PortMask{1} << j;
    }
  } else if (in.role == Role::kAgg && levels_ == 3) {
    if (dest == in.pod || dest < 0 || dest >= num_pods()) return 0;
    const SwitchId a_dst = agg(dest, in.index);
    for (int c = 0; c < w(); ++c) {
      if (link_up(failed, s, c) && link_up(failed, a_dst, c)) mask |= PortMask{1} << c;
    }
  }
  return mask;
}

std::vector<PortMask> FatTree::valid_uplink_table(SwitchId s, const LinkSet& failed) const {
  std::vector<PortMask> t(static_cast<size_t>(num_dests(s)));
  for (int d = 0; d < num_dests(s); ++d) t[static_cast<size_t>(d)] = valid_uplinks(s, d, failed);
  return t;
}

}  // namespace ofan::lb
