// LB policies: one typed suite of invariants every policy must keep (valid
// picks, drops exactly when no uplink is valid, determinism, no stray writes,
// every valid uplink used), then the behaviour specific to each policy.
#include "dataplane/lb/policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "common/rng.h"
#include "dataplane/lb/any_policy.h"
#include "tests/dataplane/lb/lb_test_util.h"

namespace ofan::lb {
namespace {

using ::ofan::lb::testing::AllPorts;
using ::ofan::lb::testing::MakeTree;
using ::ofan::lb::testing::RandomFailures;
using ::ofan::lb::testing::RandomMasks;

bool Has(PortMask m, uint32_t port) { return port < 64 && ((m >> port) & 1) != 0; }

// One switch's table and port count, as a policy is built with.
struct Scenario {
  std::string name;
  std::unique_ptr<UplinkTable> table;
  uint32_t num_ports = 0;
  // Same switch, another failure set: for table swaps (same w and Nd).
  std::unique_ptr<UplinkTable> other;
};

Scenario FromTree(std::string name, int k, int levels, SwitchId s, double p, uint64_t seed) {
  const FatTree t = MakeTree(k, levels);
  const LinkSet f = RandomFailures(t, p, seed);
  const LinkSet g = RandomFailures(t, 0.3, seed + 1);
  return {std::move(name), std::make_unique<UplinkTable>(UplinkTable::ForSwitch(t, s, f)),
          static_cast<uint32_t>(t.num_ports(s)),
          std::make_unique<UplinkTable>(UplinkTable::ForSwitch(t, s, g))};
}

Scenario FromMasks(std::string name, uint32_t w, uint32_t nd, uint32_t num_ports, uint64_t seed) {
  Rng rng(seed);
  std::vector<PortMask> a = RandomMasks(w, nd, rng), b = RandomMasks(w, nd, rng);
  return {std::move(name), std::make_unique<UplinkTable>(w, std::move(a)), num_ports,
          std::make_unique<UplinkTable>(w, std::move(b))};
}

std::vector<Scenario> Scenarios() {
  std::vector<Scenario> v;
  const FatTree k8 = MakeTree(8, 3);
  v.push_back(FromTree("k8_edge", 8, 3, k8.edge(0, 0), 0.0, 11));
  v.push_back(FromTree("k8_edge_fail20", 8, 3, k8.edge(2, 1), 0.2, 12));
  v.push_back(FromTree("k8_agg_fail30", 8, 3, k8.agg(1, 2), 0.3, 13));
  v.push_back(FromTree("k12_leaf_fail10", 12, 2, SwitchId(3), 0.1, 14));
  v.push_back(FromMasks("w5_random", 5, 9, 10, 15));
  v.push_back(FromMasks("w64_random", 64, 3, 128, 16));
  v.push_back(FromMasks("w1_random", 1, 4, 2, 17));
  return v;
}

uint32_t NumPipes(uint32_t num_ports, uint32_t pipe_size) {
  const uint32_t ps = std::max(pipe_size, 1u);
  return std::max((num_ports + ps - 1) / ps, 1u);
}

// Random packets: every field a policy may read varies, flows repeat (a pool)
// so that flowlets and hashes see the same flow again, and time moves by
// steps around the flowlet gap.
class KeyGen {
 public:
  KeyGen(const UplinkTable& t, uint32_t pipes, uint64_t seed) : t_(t), pipes_(pipes), rng_(seed) {
    for (auto& f : flows_) f = rng_.Next32();
  }
  PacketKey Next() {
    PacketKey k;
    const uint32_t w = std::max(t_.w(), 1u);
    k.dest = static_cast<uint16_t>(rng_.Below(t_.num_dests()));
    k.cls = rng_.Below(4) == 0 ? SizeClass::kAck : SizeClass::kData;
    k.key = static_cast<uint16_t>(t_.key(k.dest, k.cls));
    k.flow_hash = rng_.Below(2) ? flows_[rng_.Below(kFlows)] : rng_.Next32();
    k.dst_qp = rng_.Next32() & 0xFFFFFF;
    k.frame_bytes = static_cast<uint16_t>(k.cls == SizeClass::kAck ? 64 : 64 + rng_.Below(4097));
    k.slice = static_cast<uint8_t>(rng_.Below(w));
    k.pipe = static_cast<uint8_t>(rng_.Below(pipes_));
    const uint32_t r = rng_.Below(8);
    k.source_uplink = static_cast<uint8_t>(r == 0 ? kNoUplink : r == 1 ? 200 : rng_.Below(w));
    return k;
  }
  TimePs Advance() { return rng_.Below(4'000'000); }

 private:
  static constexpr uint32_t kFlows = 64;
  const UplinkTable& t_;
  uint32_t pipes_;
  Rng rng_;
  uint32_t flows_[kFlows];
};

// Scratch queue array with guard cells on both sides, refilled per burst in
// one of several shapes (empty, random, level boundaries, saturated). The
// tail guard reaches past index kNoUplink, the likeliest stray write.
class Queues {
 public:
  static constexpr uint32_t kGuard = 16;
  static constexpr uint32_t kTail = kNoUplink + 1;
  static constexpr uint32_t kSentinel = 0xDEADBEEF;
  explicit Queues(uint32_t w) : w_(w), buf_(kGuard + w + kTail, kSentinel) {}
  uint32_t* data() { return buf_.data() + kGuard; }
  uint32_t& operator[](uint32_t u) { return buf_[kGuard + u]; }
  void Refill(Rng& rng) {
    const uint32_t shape = rng.Below(6);
    for (uint32_t u = 0; u < w_; ++u) {
      uint32_t q = 0;
      switch (shape) {
        case 0:
          q = 0;
          break;
        case 1:
        case 2:
          q = rng.Below(1'000'000);
          break;
        case 3:
          q = rng.Next32();
          break;
        case 4: {
          constexpr uint32_t kEdges[] = {0, 39'999, 40'000, 80'000, 160'000, UINT32_MAX - 5000};
          q = kEdges[rng.Below(6)];
          break;
        }
        default:
          q = UINT32_MAX;  // saturated counters
          break;
      }
      (*this)[u] = q;
    }
  }
  bool GuardsIntact() const {
    for (uint32_t i = 0; i < kGuard; ++i) {
      if (buf_[i] != kSentinel) return false;
    }
    for (uint32_t i = kGuard + w_; i < buf_.size(); ++i) {
      if (buf_[i] != kSentinel) return false;
    }
    return true;
  }

 private:
  uint32_t w_;
  std::vector<uint32_t> buf_;
};

struct RunResult {
  std::vector<uint8_t> picks;
  std::vector<PortMask> used;  // per destination
};

// Drives one policy instance over n random packets in random bursts and
// checks every pick. With swap_tables, the view alternates between the
// scenario's two tables, as after a failure-set update.
template <class P>
RunResult RunPolicy(const Scenario& sc, const PolicyConfig& cfg, uint64_t seed, int n,
                    bool swap_tables = false) {
  const UplinkTable& base = *sc.table;
  const SwitchLbSetup setup{&base, sc.num_ports, static_cast<uint32_t>(seed * 7919)};
  P policy(cfg, setup);
  KeyGen gen(base, NumPipes(sc.num_ports, cfg.pipe_size), seed);
  Rng rng(seed ^ 0xABCDEFull);
  Queues q(base.w());
  LbView view{&base, q.data(), 0};
  std::vector<uint32_t> before(base.w());
  RunResult r;
  r.used.assign(base.num_dests(), 0);
  int burst_left = 0;
  for (int i = 0; i < n; ++i) {
    if (burst_left == 0) {
      burst_left = 1 + static_cast<int>(rng.Below(32));
      q.Refill(rng);
      if (swap_tables) view.table = rng.Below(2) ? sc.other.get() : &base;
    }
    --burst_left;
    view.now += gen.Advance();
    const PacketKey k = gen.Next();
    for (uint32_t u = 0; u < base.w(); ++u) before[u] = q[u];
    const uint8_t out = policy.Pick(k, view);
    r.picks.push_back(out);
    const PortMask m = view.table->mask(k.dest);
    if (m == 0) {
      EXPECT_EQ(out, kNoUplink) << sc.name << " packet " << i << ": no valid uplink";
    } else {
      EXPECT_TRUE(Has(m, out)) << sc.name << " packet " << i << ": picked " << int{out}
                               << " outside mask " << std::hex << m;
      if (Has(m, out)) r.used[k.dest] |= PortMask{1} << out;
    }
    EXPECT_TRUE(q.GuardsIntact()) << sc.name << " packet " << i << ": write out of range";
    // Only a queue-aware policy writes the scratch array, and only its pick.
    for (uint32_t u = 0; u < base.w(); ++u) {
      const bool charged = IsQueueAware(kKindOf<P>) && u == out;
      const uint32_t want = charged ? before[u] + k.frame_bytes : before[u];
      EXPECT_EQ(q[u], want) << sc.name << " packet " << i << " port " << u;
    }
    if (::testing::Test::HasFailure()) break;  // one broken pick is enough
  }
  return r;
}

template <class P>
class PolicyInvariantTest : public ::testing::Test {};

// Every policy of policy_list.h: a new one joins the suite by being listed.
template <class V>
struct TypesOf;
template <class... Ps>
struct TypesOf<std::variant<Ps...>> {
  using type = ::testing::Types<Ps...>;
};
using AllPolicies = TypesOf<PolicyVariant>::type;

class PolicyTypeNames {
 public:
  template <class P>
  static std::string GetName(int) {
    return std::string(PolicyName(kKindOf<P>));
  }
};

TYPED_TEST_SUITE(PolicyInvariantTest, AllPolicies, PolicyTypeNames);

TYPED_TEST(PolicyInvariantTest, PicksValidUplinksAndUsesThemAll) {
  for (const Scenario& sc : Scenarios()) {
    PolicyConfig cfg;
    cfg.kind = kKindOf<TypeParam>;
    const RunResult r = RunPolicy<TypeParam>(sc, cfg, 42, 20000);
    if (this->HasFailure()) return;
    // Over many random keys every valid uplink of every destination is used.
    for (uint32_t d = 0; d < sc.table->num_dests(); ++d) {
      EXPECT_EQ(r.used[d], sc.table->mask(d)) << sc.name << " dest " << d;
    }
  }
}

TYPED_TEST(PolicyInvariantTest, DeterministicForTheSameSeed) {
  for (const Scenario& sc : Scenarios()) {
    for (uint64_t seed : {1u, 99u}) {
      PolicyConfig cfg;
      cfg.kind = kKindOf<TypeParam>;
      cfg.seed = seed;
      const RunResult a = RunPolicy<TypeParam>(sc, cfg, seed, 3000);
      const RunResult b = RunPolicy<TypeParam>(sc, cfg, seed, 3000);
      EXPECT_EQ(a.picks, b.picks) << sc.name << " seed " << seed;
    }
  }
}

TYPED_TEST(PolicyInvariantTest, OtherConfigsAndTableSwapsStayValid) {
  // Non-default knobs, and a new failure set published by table swap while
  // the policy keeps its state (pointers, flowlets, DRILL's memory).
  for (const Scenario& sc : Scenarios()) {
    PolicyConfig cfg;
    cfg.kind = kKindOf<TypeParam>;
    cfg.seed = 5;
    cfg.pipe_size = 1;
    cfg.drill_samples = 0;
    cfg.flowlet_slots = 3;
    cfg.flowlet_gap_ps = 500'000;
    cfg.ar_quanta[0] = 0.0;
    RunPolicy<TypeParam>(sc, cfg, 7, 5000, /*swap_tables=*/true);
    if (this->HasFailure()) return;
  }
}

// ---- Ofan -----------------------------------------------------------------

// Every window of n consecutive picks of a key holds each valid uplink once.
void ExpectExactlyOncePerRound(const std::vector<uint8_t>& seq, PortMask m,
                               const std::string& what) {
  const size_t n = static_cast<size_t>(PopCount(m));
  if (n == 0) {
    for (uint8_t p : seq) EXPECT_EQ(p, kNoUplink) << what;
    return;
  }
  PortMask first = 0;
  for (size_t i = 0; i < std::min(n, seq.size()); ++i) {
    ASSERT_TRUE(Has(m, seq[i])) << what;
    EXPECT_FALSE(Has(first, seq[i])) << what << ": port " << int{seq[i]} << " twice in a round";
    first |= PortMask{1} << seq[i];
  }
  // Periodic with period n: every sliding window is then a full round.
  for (size_t i = n; i < seq.size(); ++i) {
    ASSERT_EQ(seq[i], seq[i - n]) << what << " at packet " << i;
  }
}

TEST(OfanTest, EveryValidUplinkOncePerRoundWithOtherKeysInterleaved) {
  for (const Scenario& sc : Scenarios()) {
    const UplinkTable& t = *sc.table;
    PolicyConfig cfg;
    Ofan ofan(cfg, {&t, sc.num_ports, 3});
    LbView view{&t, nullptr, 0};
    Rng rng(123);
    std::vector<std::vector<uint8_t>> seq(t.num_keys());
    for (int i = 0; i < 30000; ++i) {
      PacketKey k;
      k.dest = static_cast<uint16_t>(rng.Below(t.num_dests()));
      k.cls = rng.Below(2) ? SizeClass::kAck : SizeClass::kData;
      k.key = static_cast<uint16_t>(t.key(k.dest, k.cls));
      k.flow_hash = rng.Next32();  // must not matter
      const UplinkList l = t.list(k.key);
      const uint32_t ptr = ofan.next(t, k.key);
      const uint8_t out = ofan.Pick(k, view);
      if (l.n > 0) {
        // The pointer designates the port, then advances by one.
        ASSERT_LT(ptr, l.n);
        ASSERT_EQ(out, l.ports[ptr]);
        ASSERT_EQ(ofan.next(t, k.key), (ptr + 1) % l.n);
      }
      seq[k.key].push_back(out);
    }
    for (uint32_t key = 0; key < t.num_keys(); ++key) {
      ExpectExactlyOncePerRound(seq[key], t.mask(key % t.num_dests()),
                                sc.name + " key " + std::to_string(key));
    }
  }
}

TEST(OfanTest, AckPointerStartsHalfARotationFromData) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    for (int k : {4, 8, 12}) {
      const FatTree tree = MakeTree(k, 3);
      const uint32_t w = static_cast<uint32_t>(tree.w());
      for (SwitchId s : {tree.edge(1, 0), tree.agg(0, 1)}) {
        const LinkSet none(tree.num_links());
        const UplinkTable t = UplinkTable::ForSwitch(tree, s, none);
        PolicyConfig cfg;
        cfg.seed = seed;
        const Ofan ofan(cfg, {&t, static_cast<uint32_t>(k), s.value()});
        std::set<uint32_t> starts;
        for (uint32_t d = 0; d < t.num_dests(); ++d) {
          const uint32_t data = ofan.next(t, t.key(d, SizeClass::kData));
          const uint32_t ack = ofan.next(t, t.key(d, SizeClass::kAck));
          if (t.mask(d) == 0) continue;  // own edge / pod
          // No invalid port: list positions are pi positions.
          ASSERT_EQ(t.RankOf(t.key(d, SizeClass::kData), data), data);
          EXPECT_EQ((ack + w - data) % w, w / 2) << "k=" << k << " d=" << d;
          starts.insert(data);
        }
        // Data pointers start at random positions, not all at one (checked
        // where 7+ destinations over 4+ ports make a tie astronomically rare).
        if (k >= 8) {
          EXPECT_GT(starts.size(), 1u) << "k=" << k;
        }
      }
    }
  }
}

TEST(OfanTest, AckOffsetSurvivesFilteringUnderFailures) {
  // With invalid ports the pointers are RankOf of raw positions start and
  // start + floor(w/2): some start must explain both.
  for (const Scenario& sc : Scenarios()) {
    const UplinkTable& t = *sc.table;
    const uint32_t w = t.w();
    const Ofan ofan(PolicyConfig{}, {&t, sc.num_ports, 9});
    for (uint32_t d = 0; d < t.num_dests(); ++d) {
      const uint32_t kd = t.key(d, SizeClass::kData), ka = t.key(d, SizeClass::kAck);
      bool explained = false;
      for (uint32_t start = 0; start < w && !explained; ++start) {
        explained = t.RankOf(kd, start) == ofan.next(t, kd) &&
                    t.RankOf(ka, (start + w / 2) % w) == ofan.next(t, ka);
      }
      EXPECT_TRUE(explained) << sc.name << " d=" << d;
    }
  }
}

// ---- POfan ----------------------------------------------------------------

TEST(PofanTest, PipeCountIsCeilOfPortsOverPipeSize) {
  const UplinkTable t(4, std::vector<PortMask>(3, AllPorts(4)));
  for (uint32_t ports = 0; ports <= 130; ++ports) {
    for (uint32_t ps : {0u, 1u, 2u, 3u, 4u, 5u, 7u, 8u, 16u, 64u, 200u}) {
      PolicyConfig cfg;
      cfg.pipe_size = ps;
      const Pofan p(cfg, {&t, ports, 1});
      const uint32_t eff = ps == 0 ? 1 : ps;  // 0 means one port per pipe
      const uint32_t want = ports == 0 ? 1 : (ports + eff - 1) / eff;
      EXPECT_EQ(p.num_pipes(), want) << "ports=" << ports << " pipe_size=" << ps;
    }
  }
}

TEST(PofanTest, PipesRotateIndependently) {
  const Scenario sc = FromTree("k8_edge_fail20", 8, 3, MakeTree(8, 3).edge(2, 1), 0.2, 12);
  const UplinkTable& t = *sc.table;
  PolicyConfig cfg;
  cfg.pipe_size = 4;
  Pofan pofan(cfg, {&t, 16, 5});
  ASSERT_EQ(pofan.num_pipes(), 4u);
  LbView view{&t, nullptr, 0};
  Rng rng(77);
  const auto snapshot = [&] {
    std::vector<uint32_t> v;
    for (uint32_t p = 0; p < pofan.num_pipes(); ++p) {
      for (uint32_t key = 0; key < t.num_keys(); ++key) v.push_back(pofan.next(t, p, key));
    }
    return v;
  };
  // Pipes draw their initial pointers independently.
  const std::vector<uint32_t> init = snapshot();
  EXPECT_FALSE(std::equal(init.begin(), init.begin() + t.num_keys(), init.begin() + t.num_keys()));

  // Packets on pipe 0 move only pipe 0's pointers.
  std::vector<uint32_t> touched(t.num_keys(), 0);
  for (int i = 0; i < 200; ++i) {
    PacketKey k;
    k.dest = static_cast<uint16_t>(rng.Below(t.num_dests()));
    k.key = static_cast<uint16_t>(t.key(k.dest, SizeClass::kData));
    k.pipe = 0;
    pofan.Pick(k, view);
    ++touched[k.key];
  }
  const std::vector<uint32_t> after = snapshot();
  for (uint32_t key = 0; key < t.num_keys(); ++key) {
    const uint32_t n = t.list(key).n;
    if (n > 0) {
      EXPECT_EQ(after[key], (init[key] + touched[key]) % n) << "pipe 0 key " << key;
    }
  }
  EXPECT_TRUE(std::equal(after.begin() + t.num_keys(), after.end(), init.begin() + t.num_keys()))
      << "a packet on pipe 0 moved another pipe's pointer";

  // Interleaved pipes: each (pipe, key) sequence is a full round per n packets.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint8_t>> seq;
  for (int i = 0; i < 40000; ++i) {
    PacketKey k;
    k.dest = static_cast<uint16_t>(rng.Below(t.num_dests()));
    k.cls = rng.Below(2) ? SizeClass::kAck : SizeClass::kData;
    k.key = static_cast<uint16_t>(t.key(k.dest, k.cls));
    k.pipe = static_cast<uint8_t>(rng.Below(pofan.num_pipes()));
    const uint32_t before = pofan.next(t, k.pipe, k.key);
    const UplinkList l = t.list(k.key);
    const uint8_t out = pofan.Pick(k, view);
    if (l.n > 0) {
      ASSERT_EQ(out, l.ports[before]);
    }
    seq[{k.pipe, k.key}].push_back(out);
  }
  for (const auto& [pk, s] : seq) {
    ExpectExactlyOncePerRound(
        s, t.mask(pk.second % t.num_dests()),
        "pipe " + std::to_string(pk.first) + " key " + std::to_string(pk.second));
  }
}

// ---- SimpleRR -------------------------------------------------------------

TEST(SimpleRrTest, ConsecutivePacketsOfAnyKeysRoundRobin) {
  // One switch-wide pointer per size class (data and ACKs rotate apart),
  // shared by every destination.
  for (const Scenario& sc : Scenarios()) {
    const UplinkTable& t = *sc.table;
    const uint32_t w = t.w();
    SimpleRr rr(PolicyConfig{}, {&t, sc.num_ports, 4});
    LbView view{&t, nullptr, 0};
    Rng rng(31);
    int prev[kNumSizeClasses] = {-1, -1};
    for (int i = 0; i < 5000; ++i) {
      PacketKey k;
      k.dest = static_cast<uint16_t>(rng.Below(t.num_dests()));
      k.cls = rng.Below(3) == 0 ? SizeClass::kAck : SizeClass::kData;
      k.key = static_cast<uint16_t>(t.key(k.dest, k.cls));
      const PortMask m = t.mask(k.dest);
      const uint8_t out = rr.Pick(k, view);
      if (m == 0) continue;  // dropped packets do not move the pointer
      int& last = prev[static_cast<int>(k.cls)];
      if (last >= 0) {
        // The first valid port after the class's previous pick, cyclically.
        uint32_t want = (static_cast<uint32_t>(last) + 1) % w;
        while (!Has(m, want)) want = (want + 1) % w;
        ASSERT_EQ(out, want) << sc.name << " packet " << i;
      }
      last = out;
    }
  }
  // With every port valid: p, p+1, p+2, ... whatever the destination, and
  // ACKs in between do not move the data pointer.
  const UplinkTable full(6, std::vector<PortMask>(5, AllPorts(6)));
  SimpleRr rr(PolicyConfig{}, {&full, 12, 8});
  LbView view{&full, nullptr, 0};
  PacketKey k, ack;
  ack.cls = SizeClass::kAck;
  ack.key = static_cast<uint16_t>(full.key(0, SizeClass::kAck));
  const uint8_t first = rr.Pick(k, view);
  for (uint32_t i = 1; i < 100; ++i) {
    k.dest = static_cast<uint16_t>(i % 5);
    k.key = k.dest;
    ASSERT_EQ(rr.Pick(k, view), (first + i) % 6);
    for (uint32_t j = 0; j < i % 4; ++j) rr.Pick(ack, view);
  }
}

TEST(SimpleRrTest, RandomStartPerSwitch) {
  const UplinkTable t(8, std::vector<PortMask>(2, AllPorts(8)));
  std::set<uint8_t> starts;
  for (uint32_t salt = 0; salt < 32; ++salt) {
    SimpleRr rr(PolicyConfig{}, {&t, 16, salt});
    LbView view{&t, nullptr, 0};
    starts.insert(rr.Pick(PacketKey{}, view));
  }
  EXPECT_GT(starts.size(), 1u);
}

// ---- Queue-aware ----------------------------------------------------------

TEST(JsqTest, PicksAMinimumQueueAndBreaksTiesUniformly) {
  // Port 2 has the emptiest queue but no path; ports 1, 4 and 6 tie.
  const uint32_t w = 8;
  const PortMask m = AllPorts(w) & ~(PortMask{1} << 2);
  const UplinkTable t(w, {m});
  Jsq jsq(PolicyConfig{}, {&t, 16, 1});
  Rng rng(5);
  std::map<uint8_t, int> count;
  const int trials = 3000;
  for (int i = 0; i < trials; ++i) {
    uint32_t q[w];
    for (uint32_t u = 0; u < w; ++u) q[u] = 1001 + rng.Below(1'000'000);
    q[1] = q[4] = q[6] = 1000;
    q[2] = 0;
    LbView view{&t, q, 0};
    PacketKey k;
    k.frame_bytes = 1500;
    const uint8_t out = jsq.Pick(k, view);
    ASSERT_TRUE(out == 1 || out == 4 || out == 6) << int{out};
    EXPECT_EQ(q[out], 2500u);  // the pick is charged so a burst sees it
    ++count[out];
  }
  ASSERT_EQ(count.size(), 3u);
  for (const auto& [port, c] : count) {
    EXPECT_GT(c, trials / 4) << "port " << int{port};
    EXPECT_LT(c, trials * 5 / 12) << "port " << int{port};
  }
}

TEST(JsqTest, ABurstSpreadsOverEmptyQueues) {
  const uint32_t w = 8;
  const UplinkTable t(w, {AllPorts(w)});
  Jsq jsq(PolicyConfig{}, {&t, 16, 2});
  uint32_t q[w] = {};
  LbView view{&t, q, 0};
  PacketKey k;
  k.frame_bytes = 1000;
  PortMask used = 0;
  for (uint32_t i = 0; i < w; ++i) used |= PortMask{1} << jsq.Pick(k, view);
  EXPECT_EQ(used, AllPorts(w));
}

TEST(ArTest, PicksTheMinimumLevelAtRandomWithinIt) {
  PolicyConfig cfg;  // levels at 40 KB, 80 KB, 160 KB of 800 KB
  const uint32_t w = 8;
  const PortMask m = AllPorts(w) & ~(PortMask{1} << 4);
  const UplinkTable t(w, {m});
  Ar ar(cfg, {&t, 16, 1});
  EXPECT_EQ(ar.Level(0), 0u);
  EXPECT_EQ(ar.Level(39'999), 0u);
  EXPECT_EQ(ar.Level(40'000), 1u);
  EXPECT_EQ(ar.Level(80'000), 2u);
  EXPECT_EQ(ar.Level(159'999), 2u);
  EXPECT_EQ(ar.Level(160'000), 3u);
  EXPECT_EQ(ar.Level(UINT32_MAX), 3u);
  std::map<uint8_t, int> count;
  for (int i = 0; i < 2000; ++i) {
    // Levels 1, 0, 0, 3, (invalid, empty), 2, 0, 2: AR does not look inside
    // a level, so 39,999 B ties with 30,000 B.
    uint32_t q[w] = {50'000, 30'000, 39'999, 200'000, 0, 80'000, 35'000, 100'000};
    LbView view{&t, q, 0};
    PacketKey k;
    k.frame_bytes = 100;
    const uint8_t out = ar.Pick(k, view);
    ASSERT_TRUE(out == 1 || out == 2 || out == 6) << int{out};
    ++count[out];
  }
  EXPECT_EQ(count.size(), 3u);

  // Custom quanta move the levels.
  cfg.ar_quanta[0] = 0.5;
  cfg.ar_quanta[1] = 0.6;
  cfg.ar_quanta[2] = 0.7;
  cfg.ar_buffer_bytes = 1000;
  const Ar custom(cfg, {&t, 16, 1});
  EXPECT_EQ(custom.Level(499), 0u);
  EXPECT_EQ(custom.Level(500), 1u);
  EXPECT_EQ(custom.Level(600), 2u);
  EXPECT_EQ(custom.Level(700), 3u);
}

// ---- Congestion-aware: CONGA, DLB, SGLB ----------------------------------

TEST(LinkMeterTest, DreTracksRateTimesTauAndDecays) {
  PolicyConfig cfg;  // 800 Gb/s, period 0.5 us, shift 3: tau = 4 us
  const LinkMeter meter(cfg);
  EXPECT_EQ(meter.full_bytes(), 400'000u);  // 100 B/ns * 4000 ns
  EXPECT_EQ(meter.CongaLevel(0), 0u);
  EXPECT_EQ(meter.CongaLevel(199'999), 3u);
  EXPECT_EQ(meter.CongaLevel(200'000), 4u);
  EXPECT_EQ(meter.CongaLevel(10'000'000), 7u);
  // At line rate (4000 B every 40 ns) X settles between 7/8 and 1 of C * tau
  // (the sawtooth of the decay steps): level 6 or 7; at half rate between
  // 7/16 and 1/2 of it: level 3 or 4.
  for (const auto& [gap_ps, lo, hi] : {std::tuple{40'000u, 6u, 7u}, std::tuple{80'000u, 3u, 4u}}) {
    Dre d;
    TimePs now = 0;
    for (int i = 0; i < 20000; ++i, now += gap_ps) meter.Charge(d, 4000, now);
    const uint32_t level = meter.CongaLevel(meter.Read(d, now));
    EXPECT_GE(level, lo) << gap_ps;
    EXPECT_LE(level, hi) << gap_ps;
    // Idle for 10 tau: nearly nothing left; for long: nothing.
    EXPECT_LT(meter.Read(d, now + 40'000'000), 1000u);
    EXPECT_EQ(meter.Read(d, now + 40'000'000'000ull), 0u);
  }
}

TEST(LinkMeterTest, DecayOfManyPeriodsAtOnceIsThatOfEachInTurn) {
  // X * (7/8)^n, whether read once after n periods or at every one of them
  // (floors apart: a byte per multiplication at most).
  const LinkMeter meter(PolicyConfig{});
  for (const TimePs n : {1u, 2u, 3u, 7u, 100u, 511u}) {
    Dre once, each;
    meter.Charge(once, 1'000'000, 0);
    meter.Charge(each, 1'000'000, 0);
    for (TimePs i = 1; i <= n; ++i) meter.Read(each, i * 500'000);
    const double want = 1e6 * std::pow(7.0 / 8.0, static_cast<double>(n));
    const uint64_t got = meter.Read(once, n * 500'000 + 499'999);
    EXPECT_NEAR(static_cast<double>(got), want, 24.0) << n;
    EXPECT_NEAR(static_cast<double>(got), static_cast<double>(each.x), static_cast<double>(n)) << n;
  }
}

TEST(LinkMeterTest, DlbLevelWeighsLoadAndQueueEqually) {
  PolicyConfig cfg;  // load bands between 20 % and 80 % of C * tau, queue bands of 10 KB
  const LinkMeter meter(cfg);
  const uint64_t full = meter.full_bytes();
  EXPECT_EQ(meter.DlbLevel(0, 0), 0u);
  EXPECT_EQ(meter.DlbLevel(full / 5, 9'999), 0u);  // both in band 0
  EXPECT_EQ(meter.DlbLevel(0, 10'000), 1u);        // (0 + 1 + 1) / 2
  EXPECT_EQ(meter.DlbLevel(full, 0), 4u);          // (7 + 0 + 1) / 2
  EXPECT_EQ(meter.DlbLevel(0, 80'000), 4u);
  EXPECT_EQ(meter.DlbLevel(full, 80'000), 7u);
  EXPECT_EQ(meter.DlbLevel(full / 2, 40'000), 4u);  // load band 4, queue band 4
  cfg.dlb_queue_bytes = 8'000;
  EXPECT_EQ(LinkMeter(cfg).DlbLevel(0, 7'000), 4u);
}

// A single-destination table of w uplinks, all valid but `skip`.
UplinkTable OneDest(uint32_t w, int skip = -1) {
  PortMask m = AllPorts(w);
  if (skip >= 0) m &= ~(PortMask{1} << skip);
  return UplinkTable(w, {m});
}

TEST(CongaTest, FollowsTheFedBackPathLevelUntilItsOwnUplinkFills) {
  const uint32_t w = 4;
  const UplinkTable t = OneDest(w);
  Conga conga(PolicyConfig{}, {&t, 8, 1});
  const uint8_t remote[w] = {7, 7, 2, 7};
  LbView view{&t, nullptr, 1'000'000, remote};
  PacketKey k;
  k.frame_bytes = 4158;
  // Uplink 2 costs max(local, 2) while its own DRE is below level 7:
  // 350 KB = 84 frames at one instant; the others cost 7.
  for (int i = 0; i < 84; ++i) ASSERT_EQ(conga.Pick(k, view), 2) << "packet " << i;
  // Then every uplink costs 7: ties, spread at random.
  std::map<uint8_t, int> count;
  for (int i = 0; i < 400; ++i) ++count[conga.Pick(k, view)];
  EXPECT_EQ(count.size(), 4u);
  // Much later its DRE has decayed, and the path with the low fed-back
  // level wins again.
  view.now += 100'000'000;
  EXPECT_EQ(conga.Pick(k, view), 2);
}

TEST(CongaTest, WithoutFeedbackSpreadsByItsOwnRates) {
  // No remote table (the dataplane today): the least-loaded uplink by DRE.
  const uint32_t w = 4;
  const UplinkTable t = OneDest(w, 1);
  Conga conga(PolicyConfig{}, {&t, 8, 3});
  LbView view{&t, nullptr, 0, nullptr};
  PacketKey k;
  k.frame_bytes = 50'000;  // one frame = one level (C * tau / 8)
  std::map<uint8_t, int> count;
  for (int i = 0; i < 3 * 7; ++i) ++count[conga.Pick(k, view)];
  // 21 frames over 3 valid uplinks, levels rising one per frame: 7 each.
  EXPECT_EQ(count, (std::map<uint8_t, int>{{0, 7}, {2, 7}, {3, 7}}));
}

TEST(DlbTest, PicksTheLeastLocalLevelAndIgnoresRemoteLevels) {
  const uint32_t w = 4;
  const UplinkTable t = OneDest(w);
  Dlb dlb(PolicyConfig{}, {&t, 8, 1});
  Sglb sglb(PolicyConfig{}, {&t, 8, 1});
  const uint8_t remote[w] = {0, 7, 7, 7};
  for (int i = 0; i < 200; ++i) {
    // Queue bands 7, 0, 4, 7: uplink 1 has the least level; uplink 0's
    // short remote path matters only to SGLB.
    uint32_t q[w] = {80'000, 0, 40'000, 80'000};
    LbView view{&t, q, static_cast<TimePs>(i) * 100'000'000, remote};
    PacketKey k;
    k.frame_bytes = 1000;
    ASSERT_EQ(dlb.Pick(k, view), 1);
    EXPECT_EQ(q[1], 1000u);  // the pick is charged
    uint32_t q2[w] = {0, 0, 0, 0};
    LbView v2{&t, q2, view.now, remote};
    ASSERT_EQ(sglb.Pick(k, v2), 0);
  }
}

TEST(DlbTest, ItsOwnLoadMovesTrafficOffAnUplink) {
  // Empty queues: only the load bands differ, and they grow with the bytes
  // the policy itself sends; a burst at one instant spreads over all.
  const uint32_t w = 4;
  const UplinkTable t = OneDest(w);
  Dlb dlb(PolicyConfig{}, {&t, 8, 2});
  std::map<uint8_t, int> count;
  for (int i = 0; i < 400; ++i) {
    uint32_t q[w] = {};
    LbView view{&t, q, 0, nullptr};
    PacketKey k;
    k.frame_bytes = 4000;
    ++count[dlb.Pick(k, view)];
  }
  ASSERT_EQ(count.size(), 4u);
  for (const auto& [port, c] : count) EXPECT_NEAR(c, 100, 25) << int{port};
}

TEST(SglbTest, TakesTheMaxOfLocalAndRemoteAndAvoidsInvalidUplinks) {
  const uint32_t w = 4;
  const UplinkTable t = OneDest(w, 3);
  Sglb sglb(PolicyConfig{}, {&t, 8, 5});
  // Uplink 3 has the best levels but no path; uplink 0 a full queue (local
  // 4), uplink 1 a congested path beyond (7), uplink 2 both at 2.
  const uint8_t remote[w] = {0, 7, 2, 0};
  for (int i = 0; i < 100; ++i) {
    uint32_t q[w] = {80'000, 0, 30'000, 0};
    LbView view{&t, q, static_cast<TimePs>(i) * 100'000'000, remote};
    PacketKey k;
    k.frame_bytes = 64;
    ASSERT_EQ(sglb.Pick(k, view), 2) << i;
  }
}

TEST(ChoiceTest, IsThePowerOfTwoChoicesWithoutMemory) {
  // Queues 0 < 100 < 200 < 300 B, two samples with replacement, no memory:
  // uplink i wins with probability ((4-i)^2 - (3-i)^2) / 16 = 7, 5, 3, 1
  // sixteenths. DRILL would stick to uplink 0 once it has seen it.
  const uint32_t w = 4;
  const UplinkTable t(w, {AllPorts(w)});
  Choice choice(PolicyConfig{}, {&t, 8, 4});
  Drill drill(PolicyConfig{}, {&t, 8, 4});
  std::map<uint8_t, int> count, drill_count;
  const int n = 16000;
  for (int i = 0; i < n; ++i) {
    uint32_t q[w] = {0, 100, 200, 300}, r[w] = {0, 100, 200, 300};
    LbView view{&t, q, 0}, dview{&t, r, 0};
    PacketKey k;
    k.frame_bytes = 64;
    ++count[choice.Pick(k, view)];
    ++drill_count[drill.Pick(k, dview)];
  }
  for (uint8_t u = 0; u < w; ++u) {
    EXPECT_NEAR(count[u], n * (7 - 2 * u) / 16, n / 40) << int{u};
  }
  EXPECT_GT(drill_count[0], n - 20);
}

TEST(DrillTest, PrefersTheOnlyEmptyPort) {
  const uint32_t w = 8;
  const UplinkTable t(w, {AllPorts(w)});
  Drill drill(PolicyConfig{}, {&t, 16, 1});
  const int trials = 1000;
  int empty_picked = 0;
  for (int i = 0; i < trials; ++i) {
    uint32_t q[w];
    std::fill(q, q + w, 1'000'000u);
    q[5] = 0;
    LbView view{&t, q, 0};
    PacketKey k;
    k.frame_bytes = 1500;
    const uint8_t out = drill.Pick(k, view);
    ASSERT_LT(out, w);
    empty_picked += out == 5;
  }
  // Two samples find it with probability 1 - (7/8)^2 per packet, and the
  // memory then keeps it: almost every packet goes there.
  EXPECT_GT(empty_picked, trials * 9 / 10);
}

TEST(DrillTest, NeverPicksALargerQueueThanItsMemory) {
  // Memory (m = 1): the remembered port is always a candidate, so the pick's
  // queue is at most the remembered port's queue.
  const uint32_t w = 6;
  const UplinkTable t(w, {AllPorts(w)});
  Drill drill(PolicyConfig{}, {&t, 12, 3});
  Rng rng(9);
  PacketKey k;
  uint32_t q[w] = {};
  LbView view{&t, q, 0};
  int prev = drill.Pick(k, view);
  for (int i = 0; i < 2000; ++i) {
    for (uint32_t u = 0; u < w; ++u) q[u] = rng.Below(100'000);
    const uint32_t mem_q = q[prev];
    const uint8_t out = drill.Pick(k, view);
    ASSERT_LT(out, w);
    EXPECT_LE(q[out] - k.frame_bytes, mem_q);
    prev = out;
  }
}

TEST(DrillTest, SaturatedQueuesStillPickAValidPort) {
  // Regression: with no remembered port and every sampled queue at
  // UINT32_MAX, DRILL returned kNoUplink for a key with valid uplinks and
  // charged queue_bytes[kNoUplink], past the end of the array.
  const uint32_t w = 4;
  const UplinkTable t(w, {AllPorts(w)});
  for (uint32_t salt = 0; salt < 50; ++salt) {
    Drill drill(PolicyConfig{}, {&t, 8, salt});
    uint32_t q[w + 1];
    std::fill(q, q + w + 1, UINT32_MAX);
    LbView view{&t, q, 0};
    PacketKey k;
    k.frame_bytes = 100;
    const uint8_t out = drill.Pick(k, view);
    ASSERT_LT(out, w);
    EXPECT_EQ(q[w], UINT32_MAX);  // nothing written past the uplinks
  }
}

// ---- Flowlet --------------------------------------------------------------

TEST(FlowletTest, KeepsThePortWithinTheGapAndMayChangeAfter) {
  const uint32_t w = 8;
  const UplinkTable t(w, std::vector<PortMask>(4, AllPorts(w)));
  PolicyConfig cfg;
  cfg.flowlet_gap_ps = 1000;
  Flowlet fl(cfg, {&t, 16, 1});
  LbView view{&t, nullptr, 0};
  PacketKey k;
  k.flow_hash = 0x1234567;
  k.dest = 1;
  k.key = 1;
  view.now = 5'000'000;
  std::set<uint8_t> flowlet_ports;
  for (int flowlet = 0; flowlet < 100; ++flowlet) {
    view.now += cfg.flowlet_gap_ps + 1;  // a new flowlet
    const uint8_t port = fl.Pick(k, view);
    ASSERT_LT(port, w);
    flowlet_ports.insert(port);
    for (int i = 0; i < 20; ++i) {
      view.now += cfg.flowlet_gap_ps;  // a gap of exactly the threshold keeps it
      ASSERT_EQ(fl.Pick(k, view), port) << "flowlet " << flowlet << " packet " << i;
    }
  }
  EXPECT_GT(flowlet_ports.size(), 1u);
}

TEST(FlowletTest, LeavesAPortThatLostItsPath) {
  const uint32_t w = 8;
  const UplinkTable t(w, std::vector<PortMask>(2, AllPorts(w)));
  Flowlet fl(PolicyConfig{}, {&t, 16, 1});
  LbView view{&t, nullptr, 1000};
  PacketKey k;
  k.flow_hash = 99;
  const uint8_t port = fl.Pick(k, view);
  ASSERT_LT(port, w);
  // Same flowlet (no gap), but the port no longer leads to the destination.
  const UplinkTable failed(w, std::vector<PortMask>(2, AllPorts(w) & ~(PortMask{1} << port)));
  view.table = &failed;
  view.now += 1;
  const uint8_t moved = fl.Pick(k, view);
  EXPECT_NE(moved, port);
  EXPECT_TRUE(Has(failed.mask(0), moved));
  view.now += 1;
  EXPECT_EQ(fl.Pick(k, view), moved);  // and sticks to the new one
}

// ---- Hash-based -----------------------------------------------------------

TEST(PathPinTest, UsesSliceModWWhenValidElseFallsBack) {
  const uint32_t w = 8, nd = 16;
  Rng rng(3);
  const std::vector<PortMask> masks = RandomMasks(w, nd, rng);
  const UplinkTable t(w, masks);
  const PathPin pin(PolicyConfig{}, {&t, 16, 1});
  LbView view{&t, nullptr, 0};
  for (uint32_t d = 0; d < nd; ++d) {
    PortMask fallback_used = 0;
    for (uint32_t slice = 0; slice < 2 * w; ++slice) {
      for (uint32_t f = 0; f < 64; ++f) {
        PacketKey k;
        k.dest = static_cast<uint16_t>(d);
        k.key = static_cast<uint16_t>(d);
        k.slice = static_cast<uint8_t>(slice);
        k.flow_hash = static_cast<uint32_t>(SplitMix64(f));
        const uint8_t out = pin.Pick(k, view);
        if (masks[d] == 0) {
          ASSERT_EQ(out, kNoUplink);
        } else if (Has(masks[d], slice % w)) {
          ASSERT_EQ(out, slice % w) << "d=" << d << " slice=" << slice;
        } else {
          ASSERT_TRUE(Has(masks[d], out)) << "d=" << d << " slice=" << slice;
          fallback_used |= PortMask{1} << out;
        }
      }
    }
    // The fallback is ECMP over the valid ports: it spreads over several.
    if (PopCount(masks[d]) >= 2 && PopCount(masks[d]) < static_cast<int>(w)) {
      EXPECT_GT(PopCount(fallback_used), 1) << "d=" << d;
    }
  }
}

TEST(EcmpTest, EEcmpSpreadsQpsOfOneFlowWhileEcmpIgnoresTheQp) {
  const uint32_t w = 8;
  const UplinkTable t(w, std::vector<PortMask>(4, AllPorts(w)));
  const Ecmp ecmp(PolicyConfig{}, {&t, 16, 1});
  const EEcmp eecmp(PolicyConfig{}, {&t, 16, 1});
  LbView view{&t, nullptr, 0};
  Rng rng(8);
  for (int flow = 0; flow < 50; ++flow) {
    PacketKey k;
    k.dest = static_cast<uint16_t>(flow % 4);
    k.key = k.dest;
    k.flow_hash = rng.Next32();
    std::set<uint8_t> ecmp_ports, eecmp_ports;
    for (uint32_t qp = 0; qp < 64; ++qp) {
      k.dst_qp = 0x100 + qp * 37;
      ecmp_ports.insert(ecmp.Pick(k, view));
      eecmp_ports.insert(eecmp.Pick(k, view));
    }
    EXPECT_EQ(ecmp_ports.size(), 1u) << "flow " << flow;
    EXPECT_GT(eecmp_ports.size(), 1u) << "flow " << flow;
  }
}

TEST(EcmpTest, DependsOnlyOnFlowHashDestinationAndSalt) {
  const uint32_t w = 8;
  const UplinkTable t(w, std::vector<PortMask>(4, AllPorts(w)));
  const Ecmp a(PolicyConfig{}, {&t, 16, 1});
  const Ecmp b(PolicyConfig{}, {&t, 16, 2});
  LbView view{&t, nullptr, 0};
  Rng rng(4);
  int salt_differs = 0;
  for (int flow = 0; flow < 200; ++flow) {
    PacketKey k;
    k.dest = static_cast<uint16_t>(flow % 4);
    k.key = k.dest;
    k.flow_hash = rng.Next32();
    const uint8_t port = a.Pick(k, view);
    PacketKey other = k;  // ACKs, other slices, pipes, sizes: same path
    other.cls = SizeClass::kAck;
    other.key = static_cast<uint16_t>(t.key(k.dest, SizeClass::kAck));
    other.slice = 3;
    other.pipe = 1;
    other.frame_bytes = 64;
    other.source_uplink = 2;
    EXPECT_EQ(a.Pick(other, view), port);
    salt_differs += b.Pick(k, view) != port;
  }
  // Per-switch salts decorrelate the levels (hash polarisation).
  EXPECT_GT(salt_differs, 0);
}

TEST(SourceRoutedTest, FollowsTheHostUnlessItsChoiceIsInvalid) {
  const uint32_t w = 8;
  const PortMask m = 0b10110101;
  const UplinkTable t(w, {m, 0});
  const SourceRouted sr(PolicyConfig{}, {&t, 16, 1});
  LbView view{&t, nullptr, 0};
  for (uint32_t choice = 0; choice < 256; ++choice) {
    PacketKey k;
    k.source_uplink = static_cast<uint8_t>(choice);
    k.flow_hash = choice * 2654435761u;
    const uint8_t out = sr.Pick(k, view);
    if (Has(m, choice)) {
      EXPECT_EQ(out, choice);
    } else {
      EXPECT_TRUE(Has(m, out)) << choice;
    }
    k.dest = 1;
    k.key = 1;
    EXPECT_EQ(sr.Pick(k, view), kNoUplink);
  }
}

// ---- Dispatch and names ---------------------------------------------------

TEST(AnyPolicyTest, BurstDispatchMatchesTheConcretePolicy) {
  const Scenario sc = FromTree("k8_edge_fail20", 8, 3, MakeTree(8, 3).edge(2, 1), 0.2, 12);
  const UplinkTable& t = *sc.table;
  for (int kind = 0; kind < kNumPolicyKinds; ++kind) {
    PolicyConfig cfg;
    cfg.kind = static_cast<PolicyKind>(kind);
    cfg.seed = 17;
    const SwitchLbSetup setup{&t, sc.num_ports, 21};
    AnyPolicy any(cfg, setup);
    EXPECT_EQ(any.kind(), cfg.kind);
    EXPECT_EQ(any.variant().index(), static_cast<size_t>(kind));  // enum order = variant order
    WithPolicyType(cfg.kind, [&](auto type) {
      using P = typename decltype(type)::type;
      EXPECT_EQ(kKindOf<P>, cfg.kind);
      P direct(cfg, setup);
      KeyGen gen(t, NumPipes(sc.num_ports, cfg.pipe_size), 3);
      Rng rng(4);
      uint32_t qa[8] = {}, qd[8] = {};
      LbView va{&t, qa, 0}, vd{&t, qd, 0};
      PacketKey keys[32];
      uint8_t out[32];
      for (int burst = 0; burst < 200; ++burst) {
        const uint32_t n = 1 + rng.Below(32);
        for (uint32_t i = 0; i < n; ++i) keys[i] = gen.Next();
        va.now = vd.now = va.now + gen.Advance();
        any.PickBurst(keys, out, n, va);
        for (uint32_t i = 0; i < n; ++i) {
          ASSERT_EQ(out[i], direct.Pick(keys[i], vd)) << PolicyName(cfg.kind) << " burst " << burst;
        }
      }
    });
  }
}

TEST(PolicyNameTest, ParseRoundTripsAndRejectsUnknown) {
  for (int kind = 0; kind < kNumPolicyKinds; ++kind) {
    const PolicyKind k = static_cast<PolicyKind>(kind);
    const std::string_view name = PolicyName(k);
    const Result<PolicyKind> r = ParsePolicy(name);
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_EQ(*r, k);
    EXPECT_EQ(Info(k).kind, k);
    EXPECT_FALSE(Info(k).help.empty()) << name;
    EXPECT_NE(PolicyNameList().find(name), std::string_view::npos) << name;
    EXPECT_EQ(IsQueueAware(k), k == PolicyKind::kJsq || k == PolicyKind::kAr ||
                                   k == PolicyKind::kDrill || k == PolicyKind::kChoice ||
                                   k == PolicyKind::kDlb || k == PolicyKind::kSglb);
  }
  EXPECT_EQ(*ParsePolicy("simplerr"), PolicyKind::kSimpleRr);
  EXPECT_EQ(*ParsePolicy("rsq"), PolicyKind::kRps);  // RSQ is the switch's RPS (§3.1)
  EXPECT_EQ(*ParsePolicy("simple-rr"), PolicyKind::kSimpleRr);
  EXPECT_EQ(*ParsePolicy("e-ecmp"), PolicyKind::kEEcmp);
  for (std::string_view bad : {"", "OFAN", "ofan ", "nope"}) {
    const Result<PolicyKind> r = ParsePolicy(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST(PolicyNameTest, ListingNamesEveryPolicyOnce) {
  const nlohmann::json list = PolicyListJson();
  ASSERT_EQ(list.size(), static_cast<size_t>(kNumPolicyKinds));
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& p = list[i];
    const auto name = p.at("name").get<std::string>();
    EXPECT_EQ(name, PolicyName(static_cast<PolicyKind>(i)));
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(p.at("queue_aware").get<bool>(), IsQueueAware(static_cast<PolicyKind>(i)));
    EXPECT_EQ(p.at("host_chooses").get<bool>(), HostChooses(static_cast<PolicyKind>(i)));
    // Modes: Ofan's ways of sharing its pointers, ofan-dp's lb.ofan_mode.
    EXPECT_EQ(p.at("modes").size(), static_cast<PolicyKind>(i) == PolicyKind::kOfan ? 2u : 0u);
    for (const auto& a : p.at("aliases")) {
      EXPECT_TRUE(names.insert(a.get<std::string>()).second) << a;
      EXPECT_EQ(*ParsePolicy(a.get<std::string>()), static_cast<PolicyKind>(i)) << a;
    }
    EXPECT_NE(PolicyListText().find(name), std::string::npos) << name;
  }
  EXPECT_TRUE(HostChooses(PolicyKind::kSourceRouted));
  EXPECT_FALSE(HostChooses(PolicyKind::kEcmp));
}

}  // namespace
}  // namespace ofan::lb
