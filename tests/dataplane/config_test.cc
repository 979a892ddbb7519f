// ofan-dp's YAML configuration: what a good file sets, and the message each
// kind of bad file gets (the command-line tests check the exit code; these
// check the words). Cases found by tests/fuzz/config_fuzz.cc are kept here.
#include "dataplane/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "dataplane/engine.h"

namespace ofan::dp {
namespace {

// With reorder on, RC ACKs queue with data (they must not overtake a QP's
// READ responses) unless egress.priority says otherwise; without, they go
// in the strict-priority queue.
TEST(Config, ReorderQueuesAcksWithDataUnlessPriorityIsGiven) {
  const auto parse = [](const char* extra) {
    return ParseConfigYaml(std::string("ports: [{port: 0, dev: a}]\n") + extra);
  };
  auto plain = parse("");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->egress.priority_ack);
  auto ro = parse("reorder: {enabled: true}\n");
  ASSERT_TRUE(ro.ok());
  EXPECT_FALSE(ro->egress.priority_ack);
  EXPECT_TRUE(ro->egress.priority_control);
  auto given = parse("reorder: {enabled: true}\negress: {priority: [ack, control]}\n");
  ASSERT_TRUE(given.ok());
  EXPECT_TRUE(given->egress.priority_ack) << "egress.priority given: as given";
  auto off = parse("reorder: {enabled: false}\n");
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off->egress.priority_ack);
}

TEST(Config, FullFileSetsEveryField) {
  auto c = ParseConfigYaml(R"(name: e0
fabric: {k: 8, levels: 3, role: edge, pod: 1, index: 2}
ports:
  - {port: 0, dev: "net_af_xdp0,iface=h0-e0", peer_mac: "02:00:00:00:00:01"}
  - {port: 5, dev: net_ring_up5, mac: "02:AA:bb:00:00:05", admin: down}
pipe_size: 2
lb: {policy: ofan, ofan_mode: atomic, seed: 9, flowlet_gap_us: 50}
egress: {rate_gbps: 25, buffer: 2MiB, ecn: 64KiB, priority: [control], ring_slots: 512}
pfc: {enabled: true, priority: 5, xoff: 300KiB, xon: 100KiB, quanta: 1000, dscp: 24,
      watchdog: {detect_ms: 400, restore_ms: 1000, action: forward}}
reorder: {enabled: true, buffer: 64KiB, timeout_us: 500, flows: 64}
control: {socket: /tmp/e0.sock, kernel_ports: true}
idle: {max_sleep_us: 200}
burst: 16
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->Validate().ok());
  EXPECT_EQ(c->name, "e0");
  EXPECT_EQ(c->k, 8);
  EXPECT_EQ(c->switch_id, c->tree().edge(1, 2).value());
  ASSERT_EQ(c->ports.size(), 2u);
  EXPECT_EQ(c->ports[0].dev, "net_af_xdp0,iface=h0-e0");
  EXPECT_EQ(FormatMac(c->ports[0].peer_mac.value()), "02:00:00:00:00:01");
  EXPECT_EQ(FormatMac(c->ports[1].mac.value()), "02:aa:bb:00:00:05");
  EXPECT_FALSE(c->ports[1].admin_up);
  EXPECT_EQ(c->pipe_size, 2u);
  EXPECT_EQ(c->policy.kind, lb::PolicyKind::kOfan);
  EXPECT_EQ(c->ofan_mode, OfanMode::kAtomic);
  EXPECT_EQ(c->policy.seed, 9u);
  EXPECT_EQ(c->policy.flowlet_gap_ps, 50'000'000);
  EXPECT_EQ(c->egress.rate_gbps, 25);
  EXPECT_EQ(c->egress.buffer_bytes, 2 * kMiB);
  EXPECT_EQ(c->egress.ecn_bytes, 64 * kKiB);
  EXPECT_FALSE(c->egress.priority_ack);
  EXPECT_TRUE(c->egress.priority_control);
  EXPECT_EQ(c->egress.ring_slots, 512u);
  EXPECT_TRUE(c->pfc.enabled);
  EXPECT_EQ(c->pfc.priority, 5);
  EXPECT_EQ(c->pfc.xoff_bytes, 300 * kKiB);
  EXPECT_EQ(c->pfc.quanta, 1000);
  EXPECT_EQ(c->pfc.dscp, 24);
  EXPECT_EQ(c->pfc.wd_detect_ms, 400u);
  EXPECT_EQ(c->pfc.wd_restore_ms, 1000u);
  EXPECT_EQ(c->pfc.wd_action, fabric::PfcWdAction::kForward);
  EXPECT_TRUE(c->reorder.enabled);
  EXPECT_EQ(c->reorder.buffer_bytes, 64 * kKiB);
  EXPECT_EQ(c->reorder.Limits(0.025).timeout, 500'000'000u) << "given: at any rate";
  EXPECT_EQ(c->reorder.max_flows, 64u);
  // Not given: the buffer's drain time at the port's rate (64 KiB at 25
  // Mb/s: 20,972 us), or the fixed wait where the port has no rate.
  DpConfig d;
  d.reorder.buffer_bytes = 64 * kKiB;
  EXPECT_EQ(d.reorder.Limits(0.025).timeout, 20'972'000'000u);
  EXPECT_EQ(d.reorder.Limits(0).timeout,
            fabric::TimePs{fabric::kReorderNoRateTimeoutUs} * 1'000'000);
  EXPECT_EQ(c->socket_path, "/tmp/e0.sock");
  EXPECT_TRUE(c->kernel_ports);
  EXPECT_EQ(c->max_sleep_us, 200u);
  EXPECT_EQ(c->burst, 16u);
}

// A file that parses may still lack what the command line can add.
// An emulated fabric's links differ: a port may have its own egress.
TEST(Config, PortEgressOverridesTheSwitchs) {
  auto c = ParseConfigYaml(R"(egress: {rate_gbps: 10, buffer: 1MiB, ecn: 100KiB}
ports:
  - {port: 0, dev: a, egress: {rate_gbps: 0.5, buffer: 256KiB, ecn: 0}}
  - {port: 1, dev: b}
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(c->Validate().ok());
  EXPECT_EQ(c->ports[0].rate_gbps, 0.5);
  EXPECT_EQ(c->ports[0].buffer_bytes, 256 * kKiB);
  EXPECT_EQ(c->ports[0].ecn_bytes, 0u);
  EXPECT_FALSE(c->ports[1].rate_gbps.has_value());
  EXPECT_FALSE(c->ports[1].buffer_bytes.has_value());
}

TEST(Config, PortsMayComeLaterButValidateWantsThem) {
  auto c = ParseConfigYaml("name: e\n");
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto v = c->Validate();
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("at least one port"), std::string::npos);
}

struct BadCase {
  const char* text;
  const char* says;  // a part of the message
};

class ConfigRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(ConfigRejects, WithAMessage) {
  const BadCase& b = GetParam();
  auto c = ParseConfigYaml(b.text);
  std::string why;
  if (c.ok()) {
    const auto v = c->Validate();
    ASSERT_FALSE(v.ok()) << "accepted: " << b.text;
    why = v.error().message;
  } else {
    why = c.error().message;
  }
  EXPECT_NE(why.find(b.says), std::string::npos) << "message: " << why;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConfigRejects,
    ::testing::Values(
        BadCase{"", "config is empty"}, BadCase{"ports: [\n", "not valid YAML"},
        BadCase{"- a\n- b\n", "config: expected a mapping"},
        BadCase{"just a string", "config: expected a mapping"},
        BadCase{"fabric: {k: 4}\nsurprise: 1\n", "unknown key 'surprise' (line 2"},
        BadCase{"fabric: {k: 5}\n", "even number from 4 to 64"},
        BadCase{"fabric: {k: x}\n", "fabric.k: expected a number"},
        BadCase{"fabric: {k: 4, switch: 99}\nports: [{port: 0, dev: a}]\n", "does not exist"},
        BadCase{"fabric: {k: 4, role: edge, pod: 7}\n", "fabric.pod 7 out of range"},
        BadCase{"fabric: {k: 4, role: leaf}\n", "fabric.role 'leaf'"},
        BadCase{"fabric: [4]\n", "fabric: expected a mapping"},
        BadCase{"ports: {port: 0}\n", "ports: expected a list"},
        BadCase{"ports: [{port: 0}]\n", "needs 'port' and 'dev'"},
        BadCase{"ports: [{port: -1, dev: a}]\n", "ports[0].port: expected a number"},
        BadCase{"ports: [{port: 9, dev: a}]\n", "port 9 out of range"},
        BadCase{"ports: [{port: 0, dev: a}, {port: 0, dev: b}]\n", "port 0 listed twice"},
        BadCase{"ports: [{port: 0, dev: a}, {port: 1, dev: a}]\n", "device 'a' used twice"},
        BadCase{"ports: [{port: 0, dev: a, mac: '02:00:00:00:00'}]\n", "not a MAC address"},
        BadCase{"ports: [{port: 0, dev: a, admin: sideways}]\n", "expected up or down"},
        BadCase{"lb: {policy: nope}\n", "lb.policy"},
        BadCase{"lb: {ofan_mode: sideways}\n", "unknown Ofan mode"},
        BadCase{"lb: {flowlet_gap_us: -1}\n", "flowlet_gap_us must be in"},
        BadCase{"lb: {flowlet_gap_us: .nan}\n", "flowlet_gap_us must be in"},
        BadCase{"lb: {flowlet_gap_us: 1e300}\n", "flowlet_gap_us must be in"},
        BadCase{"egress: {buffer: 12XB}\n", "egress.buffer"},
        BadCase{"egress: {priority: ack}\n", "egress.priority: expected a list"},
        BadCase{"egress: {priority: [bulk]}\n", "unknown class 'bulk'"},
        BadCase{"ports: [{port: 0, dev: a}]\negress: {rate_gbps: .nan}\n", "rate_gbps must be in"},
        BadCase{"ports: [{port: 0, dev: a}]\negress: {ring_slots: 100}\n", "power of two"},
        BadCase{"pfc: {priority: 8}\n", "pfc.priority must be in 0..7"},
        BadCase{"pfc: {quanta: 70000}\n", "pfc.quanta"},
        BadCase{"pfc: {dscp: 64}\n", "pfc.dscp must be in 0..63"},
        BadCase{"pfc: {watchdog: {action: explode}}\n", "drop, forward or alert"},
        BadCase{"pfc: {watchdog: {detect: 5}}\n", "unknown key 'detect'"},
        BadCase{"ports: [{port: 0, dev: a}]\npfc: {watchdog: {detect_ms: 50}}\n",
                "pfc.watchdog.detect_ms must be in 100..5000"},
        BadCase{"ports: [{port: 0, dev: a}]\npfc: {watchdog: {restore_ms: 70000}}\n",
                "pfc.watchdog.restore_ms must be in 100..60000"},
        BadCase{"ports: [{port: 0, dev: a}]\npfc: {enabled: true, xon: 1MiB, xoff: 1KiB}\n",
                "pfc.xon must be below"},
        BadCase{"ports: [{port: 0, dev: a}]\nburst: 0\n", "burst must be in 1..64"},
        BadCase{"ports: [{port: 0, dev: a}]\nreorder: {buffer: 0}\n",
                "reorder.buffer must be above 0"},
        BadCase{"ports: [{port: 0, dev: a}]\nreorder: {timeout_us: 10000001}\n",
                "reorder.timeout_us must be in 1..10000000"},
        BadCase{"ports: [{port: 0, dev: a}]\nreorder: {flows: 0}\n",
                "reorder.flows must be in 1..1000000"},
        BadCase{"reorder: {wait: 1}\n", "unknown key 'wait'"},
        BadCase{"ports: [{port: 0, dev: a, egress: {rate: 1}}]\n", "unknown key 'rate'"},
        BadCase{"ports: [{port: 0, dev: a}]\nidle: {max_wait_us: 0}\n",
                "idle.max_wait_us must be in 1..1000000"},
        BadCase{"ports: [{port: 0, dev: a, egress: {rate_gbps: -1}}]\n",
                "port 0: egress.rate_gbps must be in"},
        BadCase{"ports: [{port: 0, dev: a, egress: {buffer: 1KiB}}]\n",
                "port 0: egress.buffer must be at least 2KiB"},
        BadCase{"ports: [{port: 0, dev: a}]\nname: 'a/b'\n", "without '/'"},
        // Found by config_fuzz: a key that is not a plain name used to throw
        // out of the parser (ofan-dp then stopped with "internal error").
        BadCase{"{[a]: 1}\n", "a key must be a plain name (line 1)"},
        BadCase{"fabric: {{k: 4}: 1}\n", "fabric: a key must be a plain name"},
        BadCase{"? [x]\n: 1\n", "a key must be a plain name"}));

}  // namespace
}  // namespace ofan::dp

namespace ofan::dp {
namespace {

// The shared engine's fabric file (dataplane/engine.h, LoadFabricFile): the
// switches' config files by path (relative to the file), the engine's keys,
// and the message each kind of bad file gets.
class FabricFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("ofan-fabric-file-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    Write("e0.yaml", "name: e0\nports: [{port: 0, dev: a}]\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(FabricFile, ReadsTheSwitchesAndTheEnginesKeys) {
  auto c = LoadFabricFile(Write("f.yaml",
                                "switches: [e0.yaml]\n"
                                "engine: {lag_us: 500, batch_us: 20, max_wait_us: 1000, "
                                "host_stamp: poll}\n"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->switches.size(), 1u);
  EXPECT_EQ(c->switches[0].name, "e0");
  EXPECT_EQ(c->lag_us, 500);
  EXPECT_EQ(c->batch_us, 20);
  EXPECT_EQ(c->max_wait_us, 1000u);
  EXPECT_EQ(c->host_stamp, fabric::HostStamp::kPoll);
  auto d = LoadFabricFile(Write("g.yaml", "switches: [e0.yaml]\n"));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->host_stamp, fabric::kDefaultHostStamp);
  EXPECT_EQ(fabric::HostStampName(d->host_stamp), "kernel");
}

TEST_F(FabricFile, EachBadFileGetsItsMessage) {
  const struct {
    const char* text;
    const char* says;
  } cases[] = {
      {"switches: [e0.yaml]\nfrob: 1\n", "unknown key 'frob' (switches, engine)"},
      {"engine: {}\n", "'switches' must list the switches' config files"},
      {"switches: []\n", "'switches' must list"},
      {"switches: [[e0.yaml]]\n", "switches[0]: a path"},
      {"switches: [nowhere.yaml]\n", "nowhere.yaml"},
      {"switches: [e0.yaml]\nengine: 3\n", "'engine' must be a mapping"},
      {"switches: [e0.yaml]\nengine: {frob: 1}\n",
       "engine.frob: unknown (lag_us, batch_us, max_wait_us, host_stamp)"},
      {"switches: [e0.yaml]\nengine: {lag_us: soon}\n", "engine.lag_us: not a number"},
      {"switches: [e0.yaml]\nengine: {batch_us: 1e6}\n", "engine.batch_us must be in [0, 1e5]"},
      {"switches: [e0.yaml]\nengine: {lag_us: -1}\n", "engine.lag_us must be in [0, 1e6]"},
      {"switches: [e0.yaml]\nengine: {max_wait_us: 0}\n", "engine.max_wait_us must be in"},
      {"switches: [e0.yaml]\nengine: {host_stamp: frob}\n",
       "engine.host_stamp 'frob': not one of kernel, poll"},
      {"switches: [e0.yaml]\nengine: {host_stamp: [kernel]}\n", "engine.host_stamp: not a name"},
  };
  for (const auto& k : cases) {
    auto c = LoadFabricFile(Write("bad.yaml", k.text));
    ASSERT_FALSE(c.ok()) << k.text;
    EXPECT_NE(c.error().message.find(k.says), std::string::npos)
        << k.text << " -> " << c.error().message;
  }
}

}  // namespace
}  // namespace ofan::dp
