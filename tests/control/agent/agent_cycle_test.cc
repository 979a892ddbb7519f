// ofan-agent's cycle (control/agent/agent_cycle.h) driven by a fake command
// runner over the captured fixtures (real lldpd/FRR/iproute2 outputs) and
// synthetic variants, against a fake ofan-dp control socket that records
// every load_tables: which requests are sent, and when.
#include "control/agent/agent_cycle.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>

#include "control/agent/frr_state.h"
#include "control/agent/route_masks.h"
#include "dataplane/lb/names.h"
#include "tests/control/agent/agent_test_util.h"

namespace ofan::agent {
namespace {

using nlohmann::json;

// Outputs by command line (FormatArgv); a command it does not know fails as
// a missing program would.
class FakeRunner : public CommandRunner {
 public:
  Result<CommandOutput> Run(const std::vector<std::string>& argv) override {
    const std::string line = FormatArgv(argv);
    calls.push_back(line);
    const auto it = outputs.find(line);
    if (it == outputs.end()) return CommandOutput{1, "", "fake: no output for " + line};
    return it->second;
  }
  void Set(const std::string& line, std::string out) {
    outputs[line] = CommandOutput{0, std::move(out), ""};
  }
  std::map<std::string, CommandOutput> outputs;
  std::vector<std::string> calls;
};

// A fake ofan-dp: answers `pointers` with its masks (data keys, "order" =
// the valid uplinks) and records each load_tables.
class FakeDp {
 public:
  explicit FakeDp(std::string path) : path_(std::move(path)) {
    ::unlink(path_.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeDp() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  std::vector<std::vector<lb::PortMask>> loads() {
    std::lock_guard l(mu_);
    return loads_;
  }
  void set_masks(std::vector<lb::PortMask> m) {
    std::lock_guard l(mu_);
    masks_ = std::move(m);
  }
  std::vector<lb::PortMask> masks() {
    std::lock_guard l(mu_);
    return masks_;
  }
  int connections() const { return connections_; }
  // Closes the current connection, as an ofan-dp that restarted.
  void Restart(std::vector<lb::PortMask> m) {
    set_masks(std::move(m));
    drop_ = true;
    while (drop_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

 private:
  json Answer(const json& req) {
    std::lock_guard l(mu_);
    const std::string cmd = req.value("cmd", "");
    if (cmd == "pointers") {
      json keys = json::array();
      for (size_t d = 0; d < masks_.size(); ++d) {
        json order = json::array();
        for (int u = 0; u < 64; ++u) {
          if (masks_[d] >> u & 1) order.push_back(u);
        }
        keys.push_back({{"key", d}, {"dest", d}, {"class", "data"}, {"order", order}});
        keys.push_back(
            {{"key", d + masks_.size()}, {"dest", d}, {"class", "ack"}, {"order", order}});
      }
      return {{"v", 1}, {"ok", true}, {"result", {{"policy", "ofan"}, {"keys", keys}}}};
    }
    if (cmd == "load_tables") {
      std::vector<lb::PortMask> m;
      for (const json& x : req["masks"]) m.push_back(x.get<lb::PortMask>());
      loads_.push_back(m);
      masks_ = m;
      return {{"v", 1}, {"ok", true}, {"result", json::object()}};
    }
    return {{"v", 1}, {"ok", false}, {"error", "unknown"}, {"code", "unknown_command"}};
  }
  void Serve() {
    int c = -1;
    std::string in;
    while (!stop_) {
      if (drop_) {
        if (c >= 0) ::close(c);
        c = -1;
        in.clear();
        drop_ = false;
      }
      pollfd p{c >= 0 ? c : fd_, POLLIN, 0};
      if (::poll(&p, 1, 5) <= 0) continue;
      if (c < 0) {
        c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        ++connections_;
        continue;
      }
      char buf[4096];
      const ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) {
        ::close(c);
        c = -1;
        continue;
      }
      in.append(buf, static_cast<size_t>(n));
      for (size_t nl; (nl = in.find('\n')) != std::string::npos;) {
        const std::string out = Answer(json::parse(in.substr(0, nl))).dump() + "\n";
        in.erase(0, nl + 1);
        (void)!::write(c, out.data(), out.size());
      }
    }
    if (c >= 0) ::close(c);
  }

  std::string path_;
  int fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false}, drop_{false};
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::vector<lb::PortMask> masks_;
  std::vector<std::vector<lb::PortMask>> loads_;
};

// lldpcli -f json0 for these (local port, chassis, port id): the shape of
// the captured lldp_*.json.
std::string LldpJson0(const std::vector<std::tuple<int, std::string, std::string>>& seen) {
  json ifs = json::array();
  for (const auto& [local, chassis, port] : seen) {
    ifs.push_back(
        {{"name", PortIfName(local)},
         {"via", "LLDP"},
         {"age", "0 day, 00:00:04"},
         {"chassis", json::array({{{"id", json::array({{{"type", "local"}, {"value", chassis}}})},
                                   {"name", json::array({{{"value", chassis}}})}}})},
         {"port", json::array({{{"id", json::array({{{"type", "ifname"}, {"value", port}}})},
                                {"ttl", json::array({{{"value", "4"}}})}}})}});
  }
  return json{{"lldp", json::array({{{"interface", ifs}}})}}.dump();
}

// Every switch-facing port of s as the plan wires it.
std::vector<std::tuple<int, std::string, std::string>> AsPlanned(const lb::FatTree& t,
                                                                 lb::SwitchId s) {
  std::vector<std::tuple<int, std::string, std::string>> out;
  for (int p = 0; p < t.num_ports(s); ++p) {
    const lb::Peer peer = t.peer(s, p);
    if (!peer.is_host)
      out.emplace_back(p, lb::SwitchName(t, lb::SwitchId(peer.id)), PortIfName(peer.port));
  }
  return out;
}

constexpr const char* kLldp = "lldpcli -u /run/lldp.sock -f json0 show neighbors";
constexpr const char* kBgp = "vtysh -N l0 -c 'show bgp summary json'";
constexpr const char* kBfd = "vtysh -N l0 -c 'show bfd peers json'";
constexpr const char* kRoutes = "ip -4 -j route show";

// Leaf l0 of a k=4 leaf-spine, as the fixtures captured it.
class AgentCycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("ofan-agent-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    tree_ = *lb::FatTree::Make(4, 2);
    self_ = tree_->edge(0, 0);
    runner_.Set(kLldp, LldpJson0(AsPlanned(*tree_, self_)));
    runner_.Set(kBgp, testing::ReadFixture("bgp_summary_k4_ls_l0.json"));
    runner_.Set(kBfd, testing::ReadFixture("bfd_peers_k4_ls_l0.json"));
    runner_.Set(kRoutes, testing::ReadFixture("routes_k4_ls_l0.json"));
    apply_ = "vtysh -N l0 -f " + (dir_ / "frr.conf").string();
    runner_.Set(apply_, "");
    const auto rs = ParseIpRouteJson(testing::ReadFixture("routes_k4_ls_l0.json"));
    want_ = ComputeMasks(*tree_, self_, *rs);
    // ofan-dp's configured tables: every uplink for every other leaf.
    plan_.assign(static_cast<size_t>(tree_->num_dests(self_)), 0b11);
    plan_[0] = 0;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  AgentOptions Options(int settle_cycles = 2) {
    AgentOptions o;
    o.settle_cycles = settle_cycles;
    o.k = 4;
    o.levels = 2;
    o.switch_id = self_.value();
    o.lldpcli_socket = "/run/lldp.sock";
    o.frr_dir = dir_.string();
    o.vtysh_pathspace = "l0";
    o.frr_run_dir = (dir_ / "run").string();  // no pidfiles unless a test writes them
    return o;
  }
  std::string Sock() { return (dir_ / "dp.sock").string(); }

  std::filesystem::path dir_;
  std::optional<lb::FatTree> tree_;
  lb::SwitchId self_;
  FakeRunner runner_;
  std::string apply_;
  std::vector<lb::PortMask> want_, plan_;
};

TEST_F(AgentCycleTest, WaitsForConvergenceThenPushesOnceAndOnlyOnChange) {
  FakeDp dp(Sock());
  dp.set_masks(plan_);
  DpLink link(Sock(), 1000);
  auto ag = Agent::Make(Options(), runner_, link);
  ASSERT_TRUE(ag.ok()) << ag.error().message;
  ASSERT_NE(want_, plan_);  // the fixture's fabric has one leaf's routes

  const json s1 = ag->Cycle(0);
  EXPECT_TRUE(s1["errors"].empty()) << s1.dump();
  EXPECT_EQ(s1["usable_fabric_ports"], json({2, 3}));
  EXPECT_EQ(s1["frr"]["action"], "applied");
  EXPECT_TRUE(std::filesystem::exists(dir_ / "frr.conf"));
  EXPECT_EQ(s1["bgp"].size(), 2u);
  EXPECT_EQ(s1["bfd"][0]["status"], "up");
  // The route each key's mask came from: leaf l0's one key (leaf l1) is
  // l1's hosts' /24 over both spines; the host ports are no LLDP ports.
  EXPECT_EQ(s1["routes"], json::parse(R"([{"key": 1, "prefix": "10.0.1.0/24", "protocol": "bgp",
                                           "unicast": true, "nexthops": ["p2", "p3"]}])"))
      << s1.dump();
  EXPECT_EQ(s1["ports"][0]["faces"], "host");
  EXPECT_EQ(s1["ports"][2]["faces"], "switch");
  // Routes seen once: not settled yet, ofan-dp keeps its tables.
  EXPECT_EQ(s1["masks"]["action"], "held") << s1.dump();
  EXPECT_TRUE(dp.loads().empty());

  const json s2 = ag->Cycle(500);
  EXPECT_EQ(s2["masks"]["action"], "pushed") << s2.dump();
  EXPECT_EQ(s2["frr"]["action"], "unchanged");
  ASSERT_EQ(dp.loads().size(), 1u);
  EXPECT_EQ(dp.loads()[0], want_);
  EXPECT_EQ(want_[1], 0b11u);

  // Nothing changed: nothing sent, frr not reapplied.
  const json s3 = ag->Cycle(1000);
  EXPECT_EQ(s3["masks"]["action"], "unchanged");
  EXPECT_EQ(dp.loads().size(), 1u);
  EXPECT_EQ(std::count(runner_.calls.begin(), runner_.calls.end(), apply_), 1);

  // A route loses a next hop (BFD saw p3 fail): pushed at once, converged.
  std::string routes = testing::ReadFixture("routes_k4_ls_l0.json");
  json r = json::parse(routes);
  r[0].erase("nexthops");
  r[0]["dev"] = "p2";
  r[0]["gateway"] = "169.254.0.1";
  runner_.Set(kRoutes, r.dump());
  const json s4 = ag->Cycle(1500);
  EXPECT_EQ(s4["masks"]["action"], "pushed") << s4.dump();
  ASSERT_EQ(dp.loads().size(), 2u);
  EXPECT_EQ(dp.loads()[1][1], 0b01u);
  EXPECT_EQ(dp.connections(), 1);
}

// Converged and nothing moving, vtysh (the dearest read) runs only every
// bgp_refresh_cycles cycles; a route that changes brings it back at once.
TEST_F(AgentCycleTest, ConvergedAgentReadsBgpOnlyWhenSomethingMoves) {
  FakeDp dp(Sock());
  dp.set_masks(want_);
  DpLink link(Sock(), 1000);
  AgentOptions o = Options(1);
  o.bgp_refresh_cycles = 4;
  auto ag = Agent::Make(o, runner_, link);
  ASSERT_TRUE(ag.ok());
  auto bgp_reads = [&] { return std::count(runner_.calls.begin(), runner_.calls.end(), kBgp); };
  ASSERT_TRUE(ag->Cycle(0)["converged"].get<bool>());
  EXPECT_EQ(bgp_reads(), 1);
  for (int i = 1; i <= 3; ++i) {
    const json s = ag->Cycle(int64_t{i} * 500);
    EXPECT_EQ(s["bgp_read"], std::to_string(i) + " cycles ago") << s.dump();
    EXPECT_EQ(s["bgp"].size(), 2u);  // the last answer stands
    EXPECT_TRUE(s["converged"].get<bool>());
  }
  EXPECT_EQ(bgp_reads(), 1);
  EXPECT_EQ(std::count(runner_.calls.begin(), runner_.calls.end(), kBfd), 1);
  EXPECT_EQ(ag->Cycle(2000)["bgp_read"], "now");  // the refresh
  EXPECT_EQ(bgp_reads(), 2);
  EXPECT_EQ(ag->Cycle(2500)["bgp_read"], "1 cycles ago");
  // A route loses a next hop: BGP is read in that very cycle.
  json r = json::parse(testing::ReadFixture("routes_k4_ls_l0.json"));
  r[0].erase("nexthops");
  r[0]["dev"] = "p2";
  r[0]["gateway"] = "169.254.0.1";
  runner_.Set(kRoutes, r.dump());
  const json s = ag->Cycle(3000);
  EXPECT_EQ(s["bgp_read"], "now");
  EXPECT_EQ(s["masks"]["action"], "pushed") << s.dump();
  EXPECT_EQ(bgp_reads(), 3);
}

// An FRR daemon that restarted (its pidfile names a new pid) has lost what
// vtysh gave it: frr.conf is applied again, with nothing removed first.
TEST_F(AgentCycleTest, RestartedFrrDaemonGetsItsConfigAgain) {
  FakeDp dp(Sock());
  dp.set_masks(want_);
  DpLink link(Sock(), 1000);
  std::filesystem::create_directories(dir_ / "run");
  auto pidfile = [&](const char* d, long pid) {
    std::ofstream(dir_ / "run" / (std::string(d) + ".pid")) << pid << "\n";
  };
  pidfile("zebra", 100);
  pidfile("bgpd", 101);
  pidfile("bfdd", 102);
  auto ag = Agent::Make(Options(1), runner_, link);
  ASSERT_TRUE(ag.ok());
  auto applies = [&] { return std::count(runner_.calls.begin(), runner_.calls.end(), apply_); };
  EXPECT_EQ(ag->Cycle(0)["frr"]["action"], "applied");
  EXPECT_EQ(ag->Cycle(500)["frr"]["action"], "unchanged");
  EXPECT_EQ(applies(), 1);
  // bgpd killed: its pidfile stays; nothing to apply to yet.
  EXPECT_EQ(ag->Cycle(1000)["frr"]["action"], "unchanged");
  pidfile("bgpd", 0);  // gone (a daemon that cleaned up): waited for
  EXPECT_EQ(ag->Cycle(1500)["frr"]["action"], "unchanged");
  pidfile("bgpd", 201);  // back, empty
  // Its sessions first, without BFD (frr-restart.conf); its sessions are
  // not up yet.
  const std::string first = "vtysh -N l0 -f " + (dir_ / "frr-restart.conf").string();
  runner_.Set(first, "");
  runner_.Set(kBgp, R"({"ipv4Unicast": {"peers": {}}})");
  const json s = ag->Cycle(2000);
  EXPECT_EQ(s["frr"]["action"], "applied") << s.dump();
  EXPECT_TRUE(s["frr"]["restarted"].get<bool>());
  EXPECT_TRUE(s["frr"]["removed"].empty());
  EXPECT_EQ(s["frr"]["bfd"], "once the sessions are up");
  EXPECT_EQ(applies(), 1);
  ASSERT_EQ(std::count(runner_.calls.begin(), runner_.calls.end(), first), 1);
  std::ifstream in(dir_ / "frr-restart.conf");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("neighbor fabric bfd profile"), std::string::npos) << text;
  EXPECT_NE(text.find("neighbor p2 interface peer-group fabric"), std::string::npos) << text;
  EXPECT_EQ(ag->Cycle(2500)["frr"].value("bfd", ""), "");  // still waiting
  EXPECT_EQ(applies(), 1);
  // Every usable fabric port Established with prefixes: frr.conf, whole.
  runner_.Set(kBgp, testing::ReadFixture("bgp_summary_k4_ls_l0.json"));
  const json b = ag->Cycle(3000);
  EXPECT_EQ(b["frr"]["bfd"], "added") << b.dump();
  EXPECT_EQ(applies(), 2);
  EXPECT_EQ(ag->Cycle(3500)["frr"]["action"], "unchanged");
  EXPECT_EQ(applies(), 2);
}

TEST_F(AgentCycleTest, RestartedAgentFindingTheSameMasksSendsNothing) {
  FakeDp dp(Sock());
  dp.set_masks(want_);  // what the previous agent pushed
  DpLink link(Sock(), 1000);
  auto ag = Agent::Make(Options(1), runner_, link);
  ASSERT_TRUE(ag.ok());
  for (int i = 0; i < 3; ++i) {
    const json s = ag->Cycle(int64_t{i} * 500);
    EXPECT_EQ(s["masks"]["action"], "unchanged") << s.dump();
  }
  EXPECT_TRUE(dp.loads().empty());
  // ofan-dp restarts with its configured tables: the agent finds the old
  // connection dead, reconnects at once, reads them back and pushes its own.
  dp.Restart(plan_);
  const json s = ag->Cycle(2000);
  EXPECT_EQ(s["masks"]["action"], "pushed") << s.dump();
  ASSERT_EQ(dp.loads().size(), 1u);
  EXPECT_EQ(dp.loads()[0], want_);
  EXPECT_EQ(dp.connections(), 2);
}

TEST_F(AgentCycleTest, MiswireIsReportedAndNeverUsed) {
  FakeDp dp(Sock());
  dp.set_masks(plan_);
  DpLink link(Sock(), 1000);
  auto ag = Agent::Make(Options(1), runner_, link);
  ASSERT_TRUE(ag.ok());
  EXPECT_EQ(ag->Cycle(0)["masks"]["action"], "pushed");
  // p3's cable now reaches another leaf: reported, FRR loses the neighbour,
  // and p3 leaves every mask even though the kernel still routes over it.
  auto seen = AsPlanned(*tree_, self_);
  for (auto& [local, chassis, port] : seen) {
    if (local == 3) chassis = lb::SwitchName(*tree_, tree_->edge(1, 0));
  }
  runner_.Set(kLldp, LldpJson0(seen));
  const std::string remove = "vtysh -N l0 -c 'configure terminal' -c 'router bgp " +
                             std::to_string(FabricAsn(*tree_, self_)) + "' -c 'no neighbor p3'";
  runner_.Set(remove, "");
  const json s = ag->Cycle(500);
  ASSERT_EQ(s["miswires"].size(), 1u) << s.dump();
  EXPECT_EQ(s["miswires"][0]["port"], 3);
  EXPECT_EQ(s["usable_fabric_ports"], json({2}));
  EXPECT_EQ(s["frr"]["action"], "applied");
  EXPECT_EQ(s["frr"]["removed"], json({3}));
  EXPECT_NE(std::find(runner_.calls.begin(), runner_.calls.end(), remove), runner_.calls.end());
  EXPECT_EQ(s["masks"]["action"], "pushed") << s.dump();
  const auto loads = dp.loads();
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[1][1], 0b01u);
  for (lb::PortMask m : loads[1]) EXPECT_EQ(m & 0b10, 0u);
  std::ifstream in(dir_ / "frr.conf");
  const std::string conf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(conf.find("neighbor p2 interface"), std::string::npos);
  EXPECT_EQ(conf.find("neighbor p3"), std::string::npos);
}

TEST_F(AgentCycleTest, NothingIsPushedWhileDaemonsStartOrBgpIsLost) {
  FakeDp dp(Sock());
  dp.set_masks(plan_);
  DpLink link(Sock(), 1000);
  auto ag = Agent::Make(Options(1), runner_, link);
  ASSERT_TRUE(ag.ok());
  // lldpd has not heard anyone yet, and the kernel has no routes.
  runner_.Set(kLldp, LldpJson0({}));
  runner_.Set(kRoutes, "[]");
  runner_.Set(kBgp, "{}");
  json s = ag->Cycle(0);
  EXPECT_EQ(s["masks"]["action"], "held") << s.dump();
  // One neighbour up of two: still converging.
  runner_.Set(kLldp, LldpJson0(AsPlanned(*tree_, self_)));
  runner_.Set(kRoutes, testing::ReadFixture("routes_k4_ls_l0.json"));
  json bgp = json::parse(testing::ReadFixture("bgp_summary_k4_ls_l0.json"));
  bgp["peers"]["p3"]["state"] = "Active";
  bgp["peers"]["p3"]["pfxRcd"] = 0;
  runner_.Set(kBgp, bgp.dump());
  s = ag->Cycle(500);
  EXPECT_EQ(s["masks"]["action"], "held") << s.dump();
  EXPECT_NE(s["masks"]["reason"].get<std::string>().find("1 of 2"), std::string::npos);
  EXPECT_TRUE(dp.loads().empty());
  runner_.Set(kBgp, testing::ReadFixture("bgp_summary_k4_ls_l0.json"));
  EXPECT_EQ(ag->Cycle(1000)["masks"]["action"], "pushed");
  // bgpd killed: its routes leave the kernel, but the tables stay.
  runner_.outputs.erase(kBgp);
  runner_.Set(kRoutes, "[]");
  s = ag->Cycle(1500);
  EXPECT_EQ(s["masks"]["action"], "held") << s.dump();
  EXPECT_FALSE(s["converged"]);
  EXPECT_EQ(dp.loads().size(), 1u);
}

TEST_F(AgentCycleTest, UnreachableOfanDpIsRetriedWithBackoff) {
  DpLink link(Sock(), 200);
  auto ag = Agent::Make(Options(1), runner_, link);
  ASSERT_TRUE(ag.ok());
  json s = ag->Cycle(0);
  EXPECT_FALSE(s["dp"]["connected"]);
  EXPECT_EQ(s["masks"]["action"], "held");
  EXPECT_NE(s["dp"]["error"].get<std::string>().find("retrying in 100 ms"), std::string::npos);
  s = ag->Cycle(50);  // before the next attempt
  EXPECT_NE(s["dp"]["error"].get<std::string>().find("next try in 50 ms"), std::string::npos);
  s = ag->Cycle(100);
  EXPECT_NE(s["dp"]["error"].get<std::string>().find("retrying in 200 ms"), std::string::npos);
  FakeDp dp(Sock());
  dp.set_masks(plan_);
  s = ag->Cycle(300);
  EXPECT_TRUE(s["dp"]["connected"]);
  EXPECT_EQ(s["masks"]["action"], "pushed");
  EXPECT_EQ(dp.loads().size(), 1u);
}

TEST(AgentMake, RefusesASwitchTheFabricDoesNotHave) {
  FakeRunner r;
  DpLink link("/nonexistent", 100);
  AgentOptions o;
  o.switch_id = 999;
  auto ag = Agent::Make(o, r, link);
  ASSERT_FALSE(ag.ok());
  EXPECT_NE(ag.error().message.find("does not exist"), std::string::npos);
}

TEST(FrrState, RealFixturesParse) {
  auto b = ParseBgpSummary(testing::ReadFixture("bgp_summary_k4_ls_l0.json"));
  ASSERT_TRUE(b.ok()) << b.error().message;
  ASSERT_EQ(b->size(), 2u);
  EXPECT_EQ((*b)[0], (BgpPeer{"p2", "Established", 3, "s0"}));
  auto f = ParseBfdPeers(testing::ReadFixture("bfd_peers_k4_ls_l0.json"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->size(), 2u);
  EXPECT_EQ((*f)[0].interface, "p2");
  EXPECT_EQ((*f)[0].status, "up");
  EXPECT_TRUE(ParseBgpSummary("{}")->empty());
}

TEST(FrrState, BadInputIsATypedError) {
  testing::ExpectRefused([](const std::string& s) { return ParseBgpSummary(s); },
                         "show bgp summary json",
                         {{"[]", "not a JSON object"},
                          {R"({"peers":[]})", "'peers' is not an object"},
                          {R"({"peers":{"p2":{}}})", "has no 'state'"},
                          {R"({"peers":{"p2":{"state":1}}})", "'state' is not a string"},
                          {R"({"peers":{"p2":{"state":"Idle","pfxRcd":-1}}})", "not a count"},
                          {"{", "parse error"}});
  testing::ExpectRefused([](const std::string& s) { return ParseBfdPeers(s); },
                         "show bfd peers json",
                         {{"{}", "not a JSON array"},
                          {"[1]", "peer 0 is not an object"},
                          {R"([{"interface":"p2"}])", "has no 'status'"}});
}

TEST(DpLinkMasks, FromPointers) {
  json keys = json::array();
  keys.push_back({{"dest", 0}, {"class", "data"}, {"order", {1, 0}}});
  keys.push_back({{"dest", 1}, {"class", "data"}, {"order", json::array()}});
  keys.push_back({{"dest", 0}, {"class", "ack"}, {"order", {1}}});
  const json r = {{"keys", keys}};
  auto m = MasksFromPointers(r);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(**m, (std::vector<lb::PortMask>{0b11, 0}));
  EXPECT_FALSE(MasksFromPointers(json::object()).ok());
  keys[0]["order"] = {70};
  EXPECT_FALSE(MasksFromPointers({{"keys", keys}}).ok());
}

}  // namespace
}  // namespace ofan::agent
