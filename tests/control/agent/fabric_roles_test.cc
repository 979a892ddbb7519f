#include "control/agent/fabric_roles.h"

#include <gtest/gtest.h>

#include "dataplane/lb/names.h"
#include "tests/control/agent/agent_test_util.h"

namespace ofan::agent {
namespace {

using lb::FatTree;
using lb::SwitchId;

FatTree Tree(int k, int levels) { return *FatTree::Make(k, levels); }

LldpNeighbor Seen(int local, std::string chassis, std::string port) {
  LldpNeighbor n;
  n.local_port = PortIfName(local);
  n.via = "LLDP";
  n.chassis_name = std::move(chassis);
  n.port_id = std::move(port);
  n.port_id_type = "ifname";
  return n;
}

// What a correctly wired switch's lldpd reports: every switch-facing port's
// far end by the plan.
std::vector<LldpNeighbor> AsPlanned(const FatTree& t, SwitchId s) {
  std::vector<LldpNeighbor> out;
  for (int p = 0; p < t.num_ports(s); ++p) {
    const lb::Peer peer = t.peer(s, p);
    if (!peer.is_host) {
      out.push_back(Seen(p, lb::SwitchName(t, SwitchId(peer.id)), PortIfName(peer.port)));
    }
  }
  return out;
}

TEST(PortIfName, OneSpellingPerPort) {
  EXPECT_EQ(PortIfName(7), "p7");
  EXPECT_EQ(PortOfIfName("p0"), 0);
  EXPECT_EQ(PortOfIfName("p63"), 63);
  for (const char* bad : {"", "p", "p00", "p07", "eth0", "p-1", "p1x", "P1", "p99999"}) {
    EXPECT_EQ(PortOfIfName(bad), -1) << bad;
  }
}

TEST(FabricRoles, EverySwitchOfCorrectFabricsIsConfirmed) {
  for (int levels : {2, 3}) {
    for (int k : {4, 6, 8}) {
      const FatTree t = Tree(k, levels);
      for (int i = 0; i < t.num_switches(); ++i) {
        const SwitchId s(static_cast<uint32_t>(i));
        const FabricRoles r = ClassifyPorts(t, s, AsPlanned(t, s));
        ASSERT_EQ(r.ports.size(), static_cast<size_t>(k));
        for (const PortReport& p : r.ports) {
          EXPECT_TRUE(p.usable) << t.Describe() << " " << i << " " << p.detail;
          EXPECT_EQ(p.status, p.expected.is_host ? PortStatus::kNoNeighbor : PortStatus::kOk);
        }
        EXPECT_EQ(r.usable_ports, k == 64 ? ~0ull : (1ull << k) - 1);
        EXPECT_EQ(r.usable_uplinks, t.num_uplinks(s) ? (1ull << t.w()) - 1 : 0ull);
        EXPECT_TRUE(r.identity.inferred);
        EXPECT_FALSE(r.identity.contradicts) << r.identity.detail;
        EXPECT_EQ(r.identity.id, s);
        EXPECT_EQ(r.identity.votes, r.identity.voters);
      }
    }
  }
}

// The real lldpd fixture of a0-0 (k=4) with its four neighbours.
TEST(FabricRoles, RealLldpdFixtureConfirmsAgg) {
  const FatTree t = Tree(4, 3);
  const auto seen = ParseLldpNeighbors(testing::ReadFixture("lldp_a0-0_4.json"));
  ASSERT_TRUE(seen.ok()) << seen.error().message;
  const FabricRoles r = ClassifyPorts(t, t.agg(0, 0), *seen);
  for (const PortReport& p : r.ports) EXPECT_EQ(p.status, PortStatus::kOk) << p.detail;
  EXPECT_EQ(r.usable_fabric_ports, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(r.peer_ports, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(r.identity.id, t.agg(0, 0));
  EXPECT_EQ(r.identity.votes, 4);
  // Two neighbours heard so far (a cable down, or lldpd starting): FRR keeps
  // peering on all four, BGP convergence waits only for the two confirmed.
  const auto two = ParseLldpNeighbors(testing::ReadFixture("lldp_a0-0_2.json"));
  ASSERT_TRUE(two.ok()) << two.error().message;
  const FabricRoles half = ClassifyPorts(t, t.agg(0, 0), *two);
  EXPECT_EQ(half.usable_fabric_ports.size(), 2u);
  EXPECT_EQ(half.peer_ports, (std::vector<int>{0, 1, 2, 3}));
  // The same output read by a switch configured as a0-1: every port
  // contradicts and the neighbours place it as a0-0.
  const FabricRoles wrong = ClassifyPorts(t, t.agg(0, 1), *seen);
  EXPECT_TRUE(wrong.identity.contradicts);
  EXPECT_EQ(wrong.identity.id, t.agg(0, 0));
  EXPECT_NE(wrong.identity.detail.find("configured as a0-1"), std::string::npos);
  EXPECT_EQ(wrong.usable_ports, 0u);
}

TEST(FabricRoles, MiswiresSayWhatTheyContradictAndAreNeverUsable) {
  const FatTree t = Tree(4, 3);
  const SwitchId e = t.edge(1, 0);  // uplinks p2 -> a1-0 p0, p3 -> a1-1 p0
  std::vector<LldpNeighbor> n = AsPlanned(t, e);
  n[0] = Seen(2, "e1-1", "p2");  // an edge where an agg belongs: level
  n[1] = Seen(3, "a2-1", "p0");  // pod 2's agg where pod 1's belongs: pod
  FabricRoles r = ClassifyPorts(t, e, n);
  EXPECT_EQ(r.ports[2].status, PortStatus::kMiswired);
  EXPECT_EQ(r.ports[2].miswire, Miswire::kLevel);
  EXPECT_EQ(r.ports[3].miswire, Miswire::kPod);
  EXPECT_NE(r.ports[3].detail.find("expects a1-1 p0 (agg 1 of pod 1), LLDP shows 'a2-1' port "
                                   "'p0' (agg 1 of pod 2): wrong pod; never used"),
            std::string::npos)
      << r.ports[3].detail;
  EXPECT_FALSE(r.ports[2].usable || r.ports[3].usable);
  EXPECT_EQ(r.usable_uplinks, 0u);
  EXPECT_TRUE(r.usable_fabric_ports.empty());
  EXPECT_TRUE(r.peer_ports.empty());   // FRR never peers over a miswire
  EXPECT_EQ(r.usable_ports, 0b0011u);  // the host ports

  // Position: uplinks crossed (right aggs, swapped), or the right agg on
  // its wrong port.
  n = {Seen(2, "a1-1", "p0"), Seen(3, "a1-0", "p0")};
  r = ClassifyPorts(t, e, n);
  EXPECT_EQ(r.ports[2].miswire, Miswire::kPosition);
  EXPECT_EQ(r.ports[3].miswire, Miswire::kPosition);
  n = {Seen(2, "a1-0", "p1"), Seen(3, "a1-1", "p0")};
  r = ClassifyPorts(t, e, n);
  EXPECT_EQ(r.ports[2].miswire, Miswire::kPosition);
  EXPECT_EQ(r.ports[3].status, PortStatus::kOk);
  EXPECT_EQ(r.usable_uplinks, 0b10u);
  EXPECT_EQ(r.usable_fabric_ports, (std::vector<int>{3}));
  EXPECT_EQ(r.peer_ports, (std::vector<int>{3}));

  // A switch on a host port; two neighbours on one port.
  n = {Seen(0, "c1", "p1"), Seen(3, "a1-1", "p0"), Seen(3, "a1-1", "p0")};
  r = ClassifyPorts(t, e, n);
  EXPECT_EQ(r.ports[0].status, PortStatus::kMiswired);
  EXPECT_EQ(r.ports[0].miswire, Miswire::kLevel);
  EXPECT_FALSE(r.ports[0].usable);
  EXPECT_EQ(r.ports[3].status, PortStatus::kMiswired);
  EXPECT_NE(r.ports[3].detail.find("2 LLDP neighbours on one port"), std::string::npos);
}

TEST(FabricRoles, UnknownChassisAndSilentPorts) {
  const FatTree t = Tree(4, 2);
  const SwitchId l = t.edge(0, 2);  // leaf l2: hosts p0, p1; spines on p2, p3
  const std::vector<LldpNeighbor> n = {
      Seen(0, "h4", "eth0"),      // its host, speaking LLDP: confirmed
      Seen(1, "laptop", "eth0"),  // something else on a host port
      Seen(2, "7", "p2"),         // a decimal id is no chassis name of ours
      Seen(5, "s0", "p2"),        // no port 5 on a k=4 switch: ignored
      Seen(-1, "s1", "p2"),       // an interface that is not a port
  };
  const FabricRoles r = ClassifyPorts(t, l, n);
  EXPECT_EQ(r.ports[0].status, PortStatus::kOk);
  EXPECT_TRUE(r.ports[0].usable);
  EXPECT_EQ(r.ports[1].status, PortStatus::kUnknownChassis);
  EXPECT_FALSE(r.ports[1].usable);
  EXPECT_EQ(r.ports[2].status, PortStatus::kUnknownChassis);
  EXPECT_NE(r.ports[2].detail.find("no switch of this 2-level leaf-spine"), std::string::npos);
  EXPECT_EQ(r.ports[3].status, PortStatus::kNoNeighbor);
  EXPECT_FALSE(r.ports[3].usable);
  EXPECT_EQ(r.ignored.size(), 2u);
  EXPECT_FALSE(r.identity.inferred);
  EXPECT_FALSE(r.identity.contradicts);
  EXPECT_EQ(r.usable_ports, 0b0001u);
}

TEST(FabricRoles, IdentityFollowsTheMajority) {
  const FatTree t = Tree(4, 3);
  const SwitchId a = t.agg(2, 1);  // ports: p0 e2-0, p1 e2-1, p2 c2, p3 c3
  // Configured as a2-1 but cabled where a3-1 belongs on three ports.
  const std::vector<LldpNeighbor> n = {Seen(0, "e3-0", "p3"), Seen(1, "e3-1", "p3"),
                                       Seen(2, "c2", "p3"), Seen(3, "c3", "p2")};
  const FabricRoles r = ClassifyPorts(t, a, n);
  EXPECT_TRUE(r.identity.contradicts);
  EXPECT_EQ(r.identity.id, t.agg(3, 1));
  EXPECT_EQ(r.identity.votes, 3);
  EXPECT_EQ(r.identity.voters, 4);
  EXPECT_EQ(r.ports[0].miswire, Miswire::kPod);
  EXPECT_EQ(r.ports[2].miswire, Miswire::kPosition);  // c2's port 3 is pod 3's
  EXPECT_EQ(r.ports[3].status, PortStatus::kOk);      // c3's port 2 is a2-1's indeed
}

}  // namespace
}  // namespace ofan::agent
