// FatTree: sizes, wiring, host addresses, hop counts, pointer keys, link ids
// and, against a brute-force path search over the wiring that peer() reports,
// the valid uplinks of every switch under random link failures.
#include "dataplane/lb/fat_tree.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/rng.h"
#include "tests/dataplane/lb/lb_test_util.h"

namespace ofan::lb {
namespace {

using ::ofan::lb::testing::MakeTree;
using ::ofan::lb::testing::RandomFailures;

// The fabric as a plain graph, built from peer() alone, so that the checks
// below do not reuse the arithmetic they test. Switches are nodes 0..S-1,
// hosts S..S+H-1.
struct Wiring {
  int num_switches = 0;
  int num_hosts = 0;
  std::vector<std::vector<int>> nbr;       // [switch][port] -> node
  std::vector<std::vector<int>> far_port;  // [switch][port] -> port at nbr
  std::vector<int> host_switch;            // [host] -> its switch
  std::vector<int> level;                  // [switch] -> hops to a host - 1
  std::vector<std::vector<int>> dist;      // [switch][switch], no failures

  bool is_switch(int node) const { return node < num_switches; }
};

Wiring BuildWiring(const FatTree& t) {
  Wiring g;
  g.num_switches = t.num_switches();
  g.num_hosts = t.num_hosts();
  g.nbr.resize(static_cast<size_t>(g.num_switches));
  g.far_port.resize(static_cast<size_t>(g.num_switches));
  g.host_switch.assign(static_cast<size_t>(g.num_hosts), -1);
  for (int s = 0; s < g.num_switches; ++s) {
    const SwitchId sid(static_cast<uint32_t>(s));
    for (int p = 0; p < t.num_ports(sid); ++p) {
      const Peer pr = t.peer(sid, p);
      const int node =
          pr.is_host ? g.num_switches + static_cast<int>(pr.id) : static_cast<int>(pr.id);
      g.nbr[static_cast<size_t>(s)].push_back(node);
      g.far_port[static_cast<size_t>(s)].push_back(pr.port);
      if (pr.is_host && pr.id < static_cast<uint32_t>(g.num_hosts)) g.host_switch[pr.id] = s;
    }
  }
  // Levels: multi-source BFS from the hosts (edge 0, agg 1, core 2).
  g.level.assign(static_cast<size_t>(g.num_switches), -1);
  std::deque<int> q;
  for (int h = 0; h < g.num_hosts; ++h) {
    const int s = g.host_switch[static_cast<size_t>(h)];
    if (s >= 0 && g.level[static_cast<size_t>(s)] < 0) {
      g.level[static_cast<size_t>(s)] = 0;
      q.push_back(s);
    }
  }
  while (!q.empty()) {
    const int x = q.front();
    q.pop_front();
    for (int y : g.nbr[static_cast<size_t>(x)]) {
      if (g.is_switch(y) && g.level[static_cast<size_t>(y)] < 0) {
        g.level[static_cast<size_t>(y)] = g.level[static_cast<size_t>(x)] + 1;
        q.push_back(y);
      }
    }
  }
  // Failure-free switch-to-switch distances.
  g.dist.assign(static_cast<size_t>(g.num_switches),
                std::vector<int>(static_cast<size_t>(g.num_switches), -1));
  for (int s = 0; s < g.num_switches; ++s) {
    std::vector<int>& d = g.dist[static_cast<size_t>(s)];
    d[static_cast<size_t>(s)] = 0;
    q.assign(1, s);
    while (!q.empty()) {
      const int x = q.front();
      q.pop_front();
      for (int y : g.nbr[static_cast<size_t>(x)]) {
        if (g.is_switch(y) && d[static_cast<size_t>(y)] < 0) {
          d[static_cast<size_t>(y)] = d[static_cast<size_t>(x)] + 1;
          q.push_back(y);
        }
      }
    }
  }
  return g;
}

// Brute-force valid uplinks: uplink u of s is valid towards edge switch T iff
// some up*-then-down* path of the failure-free shortest length from s to T
// starts with u and uses no failed link.
class BruteForce {
 public:
  BruteForce(const FatTree& t, const Wiring& g, const LinkSet& failed) : t_(t), g_(g) {
    down_.resize(static_cast<size_t>(g.num_switches));
    for (int s = 0; s < g.num_switches; ++s) {
      down_[static_cast<size_t>(s)].assign(g.nbr[static_cast<size_t>(s)].size(), false);
    }
    // A link is named by its lower switch and that switch's uplink index.
    for (uint32_t l = 0; l < t.num_links(); ++l) {
      if (!failed.failed(l)) continue;
      const SwitchId lower = t.link_lower(l);
      const int s = static_cast<int>(lower.value());
      const int p = t.first_uplink_port(lower) + t.link_uplink(l);
      const int far = g.nbr[static_cast<size_t>(s)][static_cast<size_t>(p)];
      down_[static_cast<size_t>(s)][static_cast<size_t>(p)] = true;
      down_[static_cast<size_t>(far)]
           [static_cast<size_t>(g.far_port[static_cast<size_t>(s)][static_cast<size_t>(p)])] = true;
    }
    Prepare();
  }

  PortMask Valid(int s, int target) const {
    const SwitchId sid(static_cast<uint32_t>(s));
    const int len = g_.dist[static_cast<size_t>(s)][static_cast<size_t>(target)];
    PortMask m = 0;
    for (int u = 0; u < t_.num_uplinks(sid); ++u) {
      const int p = t_.first_uplink_port(sid) + u;
      const int y = g_.nbr[static_cast<size_t>(s)][static_cast<size_t>(p)];
      if (!g_.is_switch(y) || Level(y) != Level(s) + 1) {
        ADD_FAILURE() << "uplink " << u << " of switch " << s << " does not go up";
        continue;
      }
      if (!down_[static_cast<size_t>(s)][static_cast<size_t>(p)] && CanReach(target, y, len - 1)) {
        m |= PortMask{1} << u;
      }
    }
    return m;
  }

 private:
  // Longest down-only tail of a shortest path (core to edge).
  static constexpr int kMaxDown = 4;

  int Level(int s) const { return g_.level[static_cast<size_t>(s)]; }

  // reach_[target][r][x]: x reaches the edge switch `target` in exactly r
  // live down moves.
  void Prepare() {
    const size_t n = static_cast<size_t>(g_.num_switches);
    reach_.resize(static_cast<size_t>(t_.num_edges()));
    for (int target = 0; target < t_.num_edges(); ++target) {
      auto& reach = reach_[static_cast<size_t>(target)];
      reach.assign(kMaxDown + 1, std::vector<char>(n, 0));
      reach[0][static_cast<size_t>(target)] = 1;
      for (int r = 1; r <= kMaxDown; ++r) {
        for (size_t x = 0; x < n; ++x) {
          for (size_t p = 0; p < g_.nbr[x].size(); ++p) {
            const int y = g_.nbr[x][p];
            if (g_.is_switch(y) && Level(y) == Level(static_cast<int>(x)) - 1 && !down_[x][p] &&
                reach[static_cast<size_t>(r - 1)][static_cast<size_t>(y)]) {
              reach[static_cast<size_t>(r)][x] = 1;
              break;
            }
          }
        }
      }
    }
  }

  // Up moves first, then only down moves (reach_).
  bool CanReach(int target, int x, int rem) const {
    if (rem < 0 || rem > kMaxDown) return false;
    if (reach_[static_cast<size_t>(target)][static_cast<size_t>(rem)][static_cast<size_t>(x)]) {
      return true;
    }
    if (rem == 0) return false;
    const auto& nb = g_.nbr[static_cast<size_t>(x)];
    for (size_t p = 0; p < nb.size(); ++p) {
      const int y = nb[p];
      if (g_.is_switch(y) && Level(y) == Level(x) + 1 && !down_[static_cast<size_t>(x)][p] &&
          CanReach(target, y, rem - 1)) {
        return true;
      }
    }
    return false;
  }

  const FatTree& t_;
  const Wiring& g_;
  std::vector<std::vector<bool>> down_;  // [switch][port]: link failed
  std::vector<std::vector<std::vector<char>>> reach_;
};

struct Shape {
  int k;
  int levels;
};

std::string ShapeName(const ::testing::TestParamInfo<Shape>& info) {
  return fmt::format("k{}_levels{}", info.param.k, info.param.levels);
}

class FatTreeShapeTest : public ::testing::TestWithParam<Shape> {
 protected:
  FatTreeShapeTest() : t_(MakeTree(GetParam().k, GetParam().levels)), g_(BuildWiring(t_)) {}
  int k() const { return GetParam().k; }
  bool three() const { return GetParam().levels == 3; }
  SwitchId Sw(int s) const { return SwitchId(static_cast<uint32_t>(s)); }
  HostId Host(int h) const { return HostId(static_cast<uint32_t>(h)); }

  FatTree t_;
  Wiring g_;
};

INSTANTIATE_TEST_SUITE_P(Shapes, FatTreeShapeTest,
                         ::testing::Values(Shape{4, 2}, Shape{4, 3}, Shape{6, 2}, Shape{6, 3},
                                           Shape{8, 2}, Shape{8, 3}, Shape{12, 2}, Shape{12, 3}),
                         ShapeName);

TEST_P(FatTreeShapeTest, Counts) {
  const int k = this->k(), w = k / 2;
  EXPECT_EQ(t_.k(), k);
  EXPECT_EQ(t_.w(), w);
  EXPECT_EQ(t_.levels(), GetParam().levels);
  if (three()) {
    EXPECT_EQ(t_.num_hosts(), k * k * k / 4);
    EXPECT_EQ(t_.num_pods(), k);
    EXPECT_EQ(t_.edges_per_pod(), w);
    EXPECT_EQ(t_.num_edges(), k * k / 2);
    EXPECT_EQ(t_.num_aggs(), k * k / 2);
    EXPECT_EQ(t_.num_cores(), k * k / 4);
    EXPECT_EQ(t_.num_switches(), 5 * k * k / 4);
    EXPECT_EQ(t_.num_links(), static_cast<uint32_t>(k * k * k / 2));
  } else {
    EXPECT_EQ(t_.num_hosts(), k * k / 2);
    EXPECT_EQ(t_.num_pods(), 1);
    EXPECT_EQ(t_.edges_per_pod(), k);
    EXPECT_EQ(t_.num_edges(), k);
    EXPECT_EQ(t_.num_aggs(), w);
    EXPECT_EQ(t_.num_cores(), 0);
    EXPECT_EQ(t_.num_switches(), k + w);
    EXPECT_EQ(t_.num_links(), static_cast<uint32_t>(k * k / 2));
  }
  EXPECT_FALSE(t_.Describe().empty());
}

TEST_P(FatTreeShapeTest, RolesAndPositions) {
  const int w = t_.w();
  for (int pod = 0; pod < t_.num_pods(); ++pod) {
    for (int i = 0; i < t_.edges_per_pod(); ++i) {
      const SwitchInfo in = t_.info(t_.edge(pod, i));
      EXPECT_EQ(in.role, Role::kEdge);
      EXPECT_EQ(in.pod, pod);
      EXPECT_EQ(in.index, i);
    }
    if (three()) {
      for (int i = 0; i < w; ++i) {
        const SwitchInfo in = t_.info(t_.agg(pod, i));
        EXPECT_EQ(in.role, Role::kAgg);
        EXPECT_EQ(in.pod, pod);
        EXPECT_EQ(in.index, i);
      }
    }
  }
  for (int c = 0; c < t_.num_cores(); ++c) EXPECT_EQ(t_.role(t_.core(c)), Role::kCore);
  for (int s = 0; s < t_.num_switches(); ++s) {
    const Role r = t_.role(Sw(s));
    // The graph's levels agree with the roles.
    EXPECT_EQ(g_.level[static_cast<size_t>(s)], r == Role::kEdge ? 0 : r == Role::kAgg ? 1 : 2);
    EXPECT_EQ(t_.num_ports(Sw(s)), k());
    const bool balances = r == Role::kEdge || (r == Role::kAgg && three());
    EXPECT_EQ(t_.num_uplinks(Sw(s)), balances ? w : 0);
    EXPECT_EQ(t_.num_dests(Sw(s)), r == Role::kEdge ? t_.num_edges()
                                   : balances       ? t_.num_pods()
                                                    : 0);
    EXPECT_EQ(RoleName(r).empty(), false);
  }
}

TEST(FatTreeMakeTest, RejectsBadParameters) {
  for (int k : {-2, 0, 1, 2, 3, 5, 7, 9, 13, 63, 65, 66, 128}) {
    for (int levels : {2, 3}) {
      const Result<FatTree> r = FatTree::Make(k, levels);
      ASSERT_FALSE(r.ok()) << "k=" << k << " levels=" << levels;
      EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
      EXPECT_FALSE(r.error().message.empty());
    }
  }
  for (int levels : {-1, 0, 1, 4, 5}) {
    const Result<FatTree> r = FatTree::Make(8, levels);
    ASSERT_FALSE(r.ok()) << "levels=" << levels;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  }
  for (int k = 4; k <= 64; k += 2) {
    EXPECT_TRUE(FatTree::Make(k, 2).ok()) << k;
    EXPECT_TRUE(FatTree::Make(k, 3).ok()) << k;
  }
}

TEST_P(FatTreeShapeTest, PeersAreSymmetricAndHostsAttachOnce) {
  std::vector<int> seen(static_cast<size_t>(t_.num_hosts()), 0);
  for (int s = 0; s < t_.num_switches(); ++s) {
    const SwitchId sid = Sw(s);
    for (int p = 0; p < t_.num_ports(sid); ++p) {
      const Peer pr = t_.peer(sid, p);
      if (pr.is_host) {
        ASSERT_LT(pr.id, static_cast<uint32_t>(t_.num_hosts()));
        EXPECT_EQ(t_.role(sid), Role::kEdge);
        EXPECT_EQ(pr.port, 0);
        const HostId h(pr.id);
        EXPECT_EQ(t_.edge_switch_of(h), sid);
        EXPECT_EQ(t_.edge_of(h), s);
        EXPECT_EQ(t_.slot_of(h), p);
        EXPECT_EQ(t_.pod_of(h), t_.info(sid).pod);
        ++seen[pr.id];
        continue;
      }
      ASSERT_LT(pr.id, static_cast<uint32_t>(t_.num_switches()));
      ASSERT_NE(pr.id, static_cast<uint32_t>(s));
      ASSERT_GE(pr.port, 0);
      ASSERT_LT(pr.port, t_.num_ports(SwitchId(pr.id)));
      const Peer back = t_.peer(SwitchId(pr.id), pr.port);
      EXPECT_FALSE(back.is_host);
      EXPECT_EQ(back.id, static_cast<uint32_t>(s)) << "switch " << s << " port " << p;
      EXPECT_EQ(back.port, p) << "switch " << s << " port " << p;
      // Uplink ports (>= w) lead up, down ports lead down.
      const int up = g_.level[pr.id] - g_.level[static_cast<size_t>(s)];
      EXPECT_EQ(up, p >= t_.first_uplink_port(sid) && t_.num_uplinks(sid) > 0 ? 1 : -1);
    }
  }
  for (int h = 0; h < t_.num_hosts(); ++h) EXPECT_EQ(seen[static_cast<size_t>(h)], 1) << h;
}

TEST_P(FatTreeShapeTest, HostAddressesRoundTrip) {
  std::set<uint32_t> addrs;
  for (int h = 0; h < t_.num_hosts(); ++h) {
    const uint32_t a = t_.host_addr(Host(h));
    EXPECT_EQ(a >> 24, 10u);
    EXPECT_EQ((a >> 16) & 0xFF, static_cast<uint32_t>(t_.pod_of(Host(h))));
    EXPECT_EQ(a & 0xFF, static_cast<uint32_t>(t_.slot_of(Host(h)) + 2));
    EXPECT_TRUE(addrs.insert(a).second);
    const Result<HostId> back = t_.host_of_addr(a);
    ASSERT_TRUE(back.ok()) << FatTree::FormatAddr(a);
    EXPECT_EQ(back->value(), static_cast<uint32_t>(h));
  }
  const auto addr = [](uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    return (a << 24) | (b << 16) | (c << 8) | d;
  };
  EXPECT_EQ(FatTree::FormatAddr(addr(10, 1, 2, 3)), "10.1.2.3");
  const uint32_t pods = static_cast<uint32_t>(t_.num_pods());
  const uint32_t epp = static_cast<uint32_t>(t_.edges_per_pod());
  const uint32_t w = static_cast<uint32_t>(t_.w());
  const uint32_t foreign[] = {addr(11, 0, 0, 2),
                              addr(9, 0, 0, 2),
                              addr(0, 0, 0, 0),
                              0xFFFFFFFFu,
                              addr(10, pods, 0, 2),
                              addr(10, 255, 0, 2),
                              addr(10, 0, epp, 2),
                              addr(10, 0, 255, 2),
                              addr(10, 0, 0, 0),
                              addr(10, 0, 0, 1),
                              addr(10, 0, 0, w + 2),
                              addr(10, 0, 0, 255),
                              addr(10, pods - 1, epp - 1, w + 2)};
  for (uint32_t a : foreign) {
    const Result<HostId> r = t_.host_of_addr(a);
    EXPECT_FALSE(r.ok()) << FatTree::FormatAddr(a);
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
    }
  }
}

TEST_P(FatTreeShapeTest, HopsMatchBfs) {
  const int nodes = g_.num_switches + g_.num_hosts;
  std::vector<int> d(static_cast<size_t>(nodes));
  std::deque<int> q;
  for (int a = 0; a < t_.num_hosts(); ++a) {
    d.assign(static_cast<size_t>(nodes), -1);
    const int start = g_.num_switches + a;
    d[static_cast<size_t>(start)] = 0;
    q.assign(1, start);
    while (!q.empty()) {
      const int x = q.front();
      q.pop_front();
      if (!g_.is_switch(x)) {
        const int s = g_.host_switch[static_cast<size_t>(x - g_.num_switches)];
        if (d[static_cast<size_t>(s)] < 0) {
          d[static_cast<size_t>(s)] = d[static_cast<size_t>(x)] + 1;
          q.push_back(s);
        }
        continue;
      }
      for (int y : g_.nbr[static_cast<size_t>(x)]) {
        if (d[static_cast<size_t>(y)] < 0) {
          d[static_cast<size_t>(y)] = d[static_cast<size_t>(x)] + 1;
          q.push_back(y);
        }
      }
    }
    for (int b = 0; b < t_.num_hosts(); ++b) {
      if (b == a) continue;  // hops() is defined between distinct hosts
      ASSERT_EQ(t_.hops(Host(a), Host(b)), d[static_cast<size_t>(g_.num_switches + b)])
          << a << " -> " << b;
    }
  }
}

TEST_P(FatTreeShapeTest, IsBelowAndDownPortFollowTheWiring) {
  for (int s = 0; s < t_.num_switches(); ++s) {
    // Hosts reachable from s by down moves only.
    std::vector<char> below(static_cast<size_t>(t_.num_hosts()), 0);
    std::vector<int> stack = {s};
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      for (int y : g_.nbr[static_cast<size_t>(x)]) {
        if (!g_.is_switch(y)) {
          below[static_cast<size_t>(y - g_.num_switches)] = 1;
        } else if (g_.level[static_cast<size_t>(y)] < g_.level[static_cast<size_t>(x)]) {
          stack.push_back(y);
        }
      }
    }
    for (int h = 0; h < t_.num_hosts(); ++h) {
      ASSERT_EQ(t_.is_below(Sw(s), Host(h)), below[static_cast<size_t>(h)] != 0)
          << "switch " << s << " host " << h;
      if (!below[static_cast<size_t>(h)]) continue;
      // Following down_port() from s must land on h.
      int x = s;
      for (int step = 0; step < 3; ++step) {
        const int p = t_.down_port(Sw(x), Host(h));
        ASSERT_GE(p, 0);
        ASSERT_LT(p, t_.num_ports(Sw(x)));
        const int y = g_.nbr[static_cast<size_t>(x)][static_cast<size_t>(p)];
        if (!g_.is_switch(y)) {
          ASSERT_EQ(y - g_.num_switches, h) << "switch " << s;
          x = -1;
          break;
        }
        ASSERT_LT(g_.level[static_cast<size_t>(y)], g_.level[static_cast<size_t>(x)]);
        ASSERT_TRUE(t_.is_below(Sw(y), Host(h)));
        x = y;
      }
      EXPECT_EQ(x, -1) << "down ports from switch " << s << " never reach host " << h;
    }
  }
}

TEST_P(FatTreeShapeTest, PointerKeys) {
  for (int s = 0; s < t_.num_switches(); ++s) {
    if (t_.num_uplinks(Sw(s)) == 0) continue;
    for (int h = 0; h < t_.num_hosts(); ++h) {
      const int d = t_.dest_of(Sw(s), Host(h));
      EXPECT_GE(d, 0);
      EXPECT_LT(d, t_.num_dests(Sw(s)));
      EXPECT_EQ(d, t_.role(Sw(s)) == Role::kEdge ? g_.host_switch[static_cast<size_t>(h)]
                                                 : t_.pod_of(Host(h)));
    }
  }
}

TEST_P(FatTreeShapeTest, LinkIdsAreABijection) {
  std::vector<int> hit(t_.num_links(), 0);
  for (int s = 0; s < t_.num_switches(); ++s) {
    for (int u = 0; u < t_.num_uplinks(Sw(s)); ++u) {
      const uint32_t id = t_.uplink_id(Sw(s), u);
      ASSERT_LT(id, t_.num_links());
      ++hit[id];
      EXPECT_EQ(t_.link_lower(id), Sw(s));
      EXPECT_EQ(t_.link_uplink(id), u);
    }
  }
  for (uint32_t l = 0; l < t_.num_links(); ++l) EXPECT_EQ(hit[l], 1) << l;
}

TEST_P(FatTreeShapeTest, NoFailuresEverythingValid) {
  const PortMask all = (PortMask{1} << t_.w()) - 1;
  const LinkSet none, none_sized(t_.num_links());
  EXPECT_EQ(none_sized.count(), 0u);
  for (int s = 0; s < t_.num_switches(); ++s) {
    const SwitchId sid = Sw(s);
    const std::vector<PortMask> table = t_.valid_uplink_table(sid, none);
    ASSERT_EQ(table.size(), static_cast<size_t>(t_.num_dests(sid)));
    const int own = t_.role(sid) == Role::kEdge ? s : t_.info(sid).pod;
    for (int d = 0; d < t_.num_dests(sid); ++d) {
      EXPECT_EQ(table[static_cast<size_t>(d)], d == own ? 0 : all) << s << " " << d;
      EXPECT_EQ(t_.valid_uplinks(sid, d, none_sized), table[static_cast<size_t>(d)]);
    }
    // Out-of-range destinations and non-balancing switches have no uplinks.
    EXPECT_EQ(t_.valid_uplinks(sid, -1, none), 0u);
    EXPECT_EQ(t_.valid_uplinks(sid, t_.num_dests(sid), none), 0u);
  }
}

// How many (switch, destination edge) brute-force masks were empty, partial
// or full: shows the comparison is not vacuous.
struct MaskStats {
  int empty = 0;
  int partial = 0;
  int full = 0;
};

// Checks valid_uplinks() of every balancing switch towards every host against
// the brute-force path search.
MaskStats CheckAgainstBruteForce(const FatTree& t, const Wiring& g, const LinkSet& failed) {
  MaskStats stats;
  const BruteForce bf(t, g, failed);
  for (int s = 0; s < t.num_switches(); ++s) {
    const SwitchId sid(static_cast<uint32_t>(s));
    if (t.num_uplinks(sid) == 0) continue;
    const SwitchInfo in = t.info(sid);
    // Brute force per destination edge switch, then read per host.
    std::vector<PortMask> brute(static_cast<size_t>(g.num_switches), 0);
    for (int e = 0; e < t.num_edges(); ++e) {
      // Destinations below s need no uplink.
      if (e == s || (in.role == Role::kAgg && e / t.edges_per_pod() == in.pod)) continue;
      const PortMask m = bf.Valid(s, e);
      brute[static_cast<size_t>(e)] = m;
      (m == 0 ? stats.empty : PopCount(m) == t.w() ? stats.full : stats.partial)++;
    }
    const std::vector<PortMask> table = t.valid_uplink_table(sid, failed);
    for (int h = 0; h < t.num_hosts(); ++h) {
      const HostId dst(static_cast<uint32_t>(h));
      const int target = g.host_switch[static_cast<size_t>(h)];
      if (in.role == Role::kEdge) {
        if (target == s) continue;  // below E: no uplink involved
        const PortMask want = brute[static_cast<size_t>(target)];
        EXPECT_EQ(t.valid_uplinks(sid, t.edge_of(dst), failed), want)
            << "edge " << s << " host " << h << " (" << failed.count() << " failed links)";
        EXPECT_EQ(table[static_cast<size_t>(t.edge_of(dst))], want);
        if (::testing::Test::HasFailure()) return stats;
      } else {
        if (t.pod_of(dst) == in.pod) continue;
        // The last hop, destination pod's agg of A's index down to D's edge,
        // is the same for every uplink of A: the edge layer accounts for it.
        const bool last_hop_up =
            t.link_up(failed, SwitchId(static_cast<uint32_t>(target)), in.index);
        const PortMask got = t.valid_uplinks(sid, t.pod_of(dst), failed);
        EXPECT_EQ(last_hop_up ? got : 0, brute[static_cast<size_t>(target)])
            << "agg " << s << " host " << h << " (" << failed.count() << " failed links)";
        EXPECT_EQ(table[static_cast<size_t>(t.pod_of(dst))], got);
        if (::testing::Test::HasFailure()) return stats;
      }
    }
    if (in.role == Role::kAgg) {
      EXPECT_EQ(t.valid_uplinks(sid, in.pod, failed), 0u);
    }
  }
  return stats;
}

TEST_P(FatTreeShapeTest, ValidUplinksMatchBruteForceWithoutFailures) {
  const MaskStats st = CheckAgainstBruteForce(t_, g_, LinkSet(t_.num_links()));
  EXPECT_EQ(st.empty + st.partial, 0);
  EXPECT_GT(st.full, 0);
}

TEST_P(FatTreeShapeTest, ValidUplinksMatchBruteForceWithRandomFailures) {
  MaskStats total;
  for (double p : {0.05, 0.2, 0.5}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      const LinkSet failed = RandomFailures(t_, p, seed * 1000 + static_cast<uint64_t>(k()));
      SCOPED_TRACE(::testing::Message() << "p=" << p << " seed=" << seed);
      const MaskStats st = CheckAgainstBruteForce(t_, g_, failed);
      if (HasFailure()) return;
      total.empty += st.empty;
      total.partial += st.partial;
    }
  }
  // The failure sets exercised both partial and empty masks.
  EXPECT_GT(total.partial, 0);
  EXPECT_GT(total.empty, 0);
}

TEST_P(FatTreeShapeTest, ValidUplinksMatchBruteForceWithSingleFailures) {
  // Every single failed link, one at a time: the smallest sets catch
  // off-by-one mappings between link ids and (switch, uplink).
  // Large trees: a sample of links, with a stride coprime to w so that every
  // uplink index still comes up.
  uint32_t stride = (t_.num_links() + 99) / 100;
  while (std::gcd(stride, static_cast<uint32_t>(t_.w())) != 1) ++stride;
  for (uint32_t l = 0; l < t_.num_links(); l += stride) {
    LinkSet failed(t_.num_links());
    failed.set_failed(l);
    ASSERT_EQ(failed.count(), 1u);
    ASSERT_TRUE(failed.failed(l));
    ASSERT_FALSE(t_.link_up(failed, t_.link_lower(l), t_.link_uplink(l)));
    SCOPED_TRACE(::testing::Message() << "failed link " << l);
    const MaskStats st = CheckAgainstBruteForce(t_, g_, failed);
    if (HasFailure()) return;
    EXPECT_GT(st.partial, 0);  // one failed link always costs someone a port
  }
}

TEST(LinkSetTest, Basics) {
  LinkSet f(10);
  EXPECT_EQ(f.size(), 10u);
  EXPECT_EQ(f.count(), 0u);
  f.set_failed(3);
  f.set_failed(7);
  EXPECT_EQ(f.count(), 2u);
  EXPECT_TRUE(f.failed(3));
  EXPECT_FALSE(f.failed(4));
  EXPECT_FALSE(f.failed(1000));  // unknown links are up
  f.set_failed(3, false);
  EXPECT_EQ(f.count(), 1u);
  EXPECT_FALSE(LinkSet().failed(0));
}

}  // namespace
}  // namespace ofan::lb
