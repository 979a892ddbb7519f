// ofan-dp: one switch of an ofan fabric on DPDK.
//   ofan-dp [EAL options] -- --config FILE [options]
//   ofan-dp -- --help
// Exit codes: 0 clean stop (SIGINT/SIGTERM); 1 runtime failure; 2 bad command
// line or configuration; 3 the environment refused (EAL, hugepages, devices).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/cli.h"
#include "common/json_text.h"
#include "common/main_guard.h"
#include "common/protocol/protocol.h"
#include "common/units.h"
#include "dataplane/bench_support/bench_traffic.h"
#include "dataplane/config.h"
#include "dataplane/control_socket.h"
#include "dataplane/engine.h"
#include "dataplane/lb/policy.h"
#include "dataplane/switch.h"

namespace ofan::dp {
namespace {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2, kExitEnv = 3;

std::atomic<bool> g_stop{false};

uint64_t FreeHugepages() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t v = 0;
  while (f >> key >> v) {
    if (key == "HugePages_Free:") return v;
    f.ignore(256, '\n');
  }
  return 0;
}

bool HasArg(const std::vector<std::string>& args, std::initializer_list<const char*> names) {
  for (const auto& a : args) {
    for (const char* n : names) {
      if (a == n || a.rfind(std::string(n) + "=", 0) == 0) return true;
    }
  }
  return false;
}

// EAL with defaults that let many ofan-dp share a machine. False: it failed
// (said on stderr).
bool InitEal(std::vector<std::string> eal_args) {
  if (!HasArg(eal_args, {"--file-prefix", "--in-memory"})) eal_args.emplace_back("--in-memory");
  if (!HasArg(eal_args, {"-a", "--allow", "-b", "--block", "--no-pci"}))
    eal_args.emplace_back("--no-pci");
  if (!HasArg(eal_args, {"-l", "-c", "--lcores"})) {
    eal_args.emplace_back("-l");
    eal_args.emplace_back("0,1");
  }
  std::vector<char*> eargv;
  eargv.reserve(eal_args.size());
  for (auto& s : eal_args) eargv.push_back(s.data());
  if (rte_eal_init(static_cast<int>(eargv.size()), eargv.data()) < 0) {
    std::cerr << fmt::format("ofan-dp: EAL initialisation failed: {} (EAL args:",
                             rte_strerror(rte_errno));
    for (auto& s : eal_args) std::cerr << " " << s;
    std::cerr << ")\n";
    return false;
  }
  return true;
}

void CatchSignals() {
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop.store(true); };
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// The control thread's loop: answers the control sockets and services the
// switches (exception paths, captures, PFC, agents' services), at once when
// a worker hands an exception frame over (the bell: a traceroute's hop or a
// ping to a switch), otherwise at least every 10 ms. `serve` polls the
// sockets with a timeout and an extra fd; `service` runs the switches.
template <typename Serve, typename Service>
void ControlLoop(IdleWait& bell, Serve serve, Service service, bool spin) {
  uint64_t seen = bell.notes();
  while (!g_stop.load()) {
    bell.Begin();  // a hand-over from now on kicks the poll awake
    const bool pending = bell.notes() != seen;
    const bool rung = serve(spin || pending ? 0 : 10, bell.pollable_fd());
    bell.End();
    if (rung) bell.Wait(0);  // takes the kick
    seen = bell.notes();     // before servicing: a later hand-over is seen
    service();
  }
}

// --fabric: the shared engine, one control socket per switch.
int RunFabric(const std::vector<std::string>& eal_args, const EngineConfig& fc) {
  // Every host port's AF_XDP socket pins its UMEM, which the kernel may
  // charge to RLIMIT_MEMLOCK: 8 MiB by default, exhausted near the 50th
  // port (a k=6 fabric has 54 hosts). Best effort (root may raise it).
  const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_MEMLOCK, &unlimited);
  if (!HasArg(eal_args, {"--no-huge"}) && FreeHugepages() == 0) {
    std::cerr << "ofan-dp: no free hugepages (bash scripts/hugepages.sh)\n";
    return kExitEnv;
  }
  if (!InitEal(eal_args)) return kExitEnv;
  int rc = kExitOk;
  {
    auto engine = Engine::Create(fc);
    if (!engine) {
      std::cerr << "ofan-dp: " << engine.error().message << "\n";
      rte_eal_cleanup();
      return engine.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitEnv;
    }
    std::vector<std::unique_ptr<ControlServer>> servers;
    std::vector<ControlServer*> polled;
    for (const auto& sw : (*engine)->switches()) {
      std::string path = sw->config().socket_path;
      if (path.empty()) path = control::DefaultSocketPath(sw->config().name);
      auto server = ControlServer::Listen(path, sw.get());
      if (!server) {
        std::cerr << "ofan-dp: " << server.error().message << "\n";
        rc = kExitEnv;
        break;
      }
      polled.push_back(server->get());
      servers.push_back(std::move(*server));
    }
    CatchSignals();
    // The bell's epoll also watches the switches' kernel interfaces: a
    // frame a daemon sends goes out at once, not at the next 10 ms poll.
    IdleWait bell;
    std::vector<int> kernel_fds;
    for (const auto& sw : (*engine)->switches()) {
      if (const KernelPorts* k = sw->kernel_ports()) {
        for (const int fd : k->fds()) kernel_fds.push_back(fd);
      }
    }
    if (rc == kExitOk && !bell.InitAlways(kernel_fds)) {
      std::cerr << "ofan-dp: cannot make the control thread's eventfd\n";
      rc = kExitEnv;
    }
    for (const auto& sw : (*engine)->switches()) sw->exception_path().set_bell(&bell);
    if (rc == kExitOk) {
      if (Status s = (*engine)->Launch(); !s) {
        std::cerr << "ofan-dp: " << s.error().message << "\n";
        rc = kExitEnv;
      }
    }
    if (rc == kExitOk) {
      std::cerr << fmt::format(
          "ofan-dp: shared engine, {} switches, lookahead {:.3f} us, lag threshold {:.1f} us\n",
          (*engine)->switches().size(), static_cast<double>((*engine)->lookahead_ps()) / 1e6,
          static_cast<double>((*engine)->lag_threshold_ps()) / 1e6);
      ControlLoop(
          bell,
          [&](int timeout_ms, int fd) { return ControlServer::PollAll(polled, timeout_ms, fd); },
          [&] {
            for (const auto& sw : (*engine)->switches()) sw->ServiceControl();
          },
          false);
      std::cerr << "ofan-dp: shared engine stopping\n";
    }
    (*engine)->Stop();
    servers.clear();
    engine->reset();
  }
  rte_eal_cleanup();
  return rc;
}

// The switch's life on an initialised EAL: created, its control socket
// listening, launched on `workers` lcores, served until SIGINT/SIGTERM, and
// stopped. --bench-inject keeps `bench_population` frames circulating.
int ServeSwitch(const DpConfig& c, uint32_t workers, uint32_t bench_population,
                uint32_t bench_frame) {
  auto sw = Switch::Create(c, workers);
  if (!sw) {
    std::cerr << "ofan-dp: " << sw.error().message << "\n";
    return sw.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitEnv;
  }
  auto server = ControlServer::Listen(c.socket_path, sw->get());
  if (!server) {
    std::cerr << "ofan-dp: " << server.error().message << "\n";
    return kExitEnv;
  }
  int rc = kExitOk;
  CatchSignals();
  IdleWait bell;
  if (!bell.InitAlways({})) {
    std::cerr << "ofan-dp: cannot make the control thread's eventfd\n";
    rc = kExitEnv;
    g_stop.store(true);
  }
  (*sw)->exception_path().set_bell(&bell);
  std::unique_ptr<BenchTraffic> bench;
  if (bench_population) {
    auto b = BenchTraffic::Start(**sw, bench_population, bench_frame);
    if (!b) {
      std::cerr << "ofan-dp: " << b.error().message << "\n";
      rc = kExitFailed;
      g_stop.store(true);
    } else {
      bench = std::move(*b);
    }
  }
  if (Status s = (*sw)->Launch(); !s) {
    std::cerr << "ofan-dp: " << s.error().message << "\n";
    rc = kExitEnv;
  } else {
    std::cerr << fmt::format(
        "ofan-dp {}: {} switch {} ({}), {} port(s), {} worker(s), policy {} ({}), socket {}\n",
        c.name, c.tree().Describe(), c.switch_id, lb::RoleName(c.tree().role(c.self())),
        c.ports.size(), workers, lb::PolicyName(c.policy.kind), ReportedOfanMode(c.lb()),
        c.socket_path);
    // --bench-inject: ServiceControl replaces the frames that expired (TTL)
    // since its last run; at one run per 10 ms, most of the population would
    // be dead between runs and the measured rate would be that of the
    // control loop. So look every ~100 us while benchmarking.
    ControlLoop(
        bell, [&](int timeout_ms, int fd) { return (*server)->Poll(timeout_ms, fd); },
        [&] {
          if (bench_population) std::this_thread::sleep_for(std::chrono::microseconds(100));
          (*sw)->ServiceControl();
        },
        bench_population);
    std::cerr << fmt::format("ofan-dp {}: stopping\n", c.name);
  }
  (*sw)->Stop();
  bench.reset();
  server->reset();
  sw->reset();
  return rc;
}

// ofan-dp's own command line (after "--"), and EAL's (before it).
struct DpArgs {
  std::vector<std::string> eal_args;
  std::string config_path, name, policy, ofan_mode, socket, buffer, ecn, fabric_path;
  std::vector<std::string> port_specs;
  int k = 0, levels = 0;
  int64_t switch_id = -1;
  uint32_t pipe_size = 0, workers = 0, max_sleep = UINT32_MAX;
  double rate = -1;
  bool check = false, list_policies = false, as_json = false;
  uint32_t bench_population = 0, bench_frame = 64;
  // The options that configure one switch: --fabric takes every switch from
  // its config files, so it refuses these by name.
  std::vector<const CLI::Option*> one_switch;
};

// argv split at "--": EAL's arguments before, ofan-dp's after.
// `ofan-dp --help` and `ofan-dp --list-policies [--json]` work without "--".
std::vector<std::string> SplitArgs(int argc, char** argv, DpArgs& a) {
  a.eal_args = {argv[0]};
  int split = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      split = i;
      break;
    }
    a.eal_args.emplace_back(argv[i]);
  }
  std::vector<std::string> own{"ofan-dp"};
  for (int i = split + 1; i < argc; ++i) own.emplace_back(argv[i]);
  if (split == argc && argc > 1 &&
      (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
       std::strcmp(argv[1], "--list-policies") == 0)) {
    for (int i = 1; i < argc; ++i) own.emplace_back(argv[i]);
    a.eal_args.resize(1);
  }
  return own;
}

void AddOptions(CLI::App& app, DpArgs& a) {
  auto one = [&](CLI::Option* o) {
    a.one_switch.push_back(o);
    return o;
  };
  one(app.add_option("--config", a.config_path, "YAML configuration (see dataplane/config.h)"));
  one(app.add_option("--name", a.name, "switch name (default from config, or ofan-dp)"));
  one(app.add_option("--k", a.k, "fat-tree radix (overrides the config)"));
  one(app.add_option("--levels", a.levels, "2 or 3 (overrides the config)"));
  one(app.add_option("--switch", a.switch_id, "switch id in the fat tree (overrides the config)"));
  one(app.add_option("--port", a.port_specs,
                     "PORT=DEV, e.g. 0=net_af_xdp0,iface=veth0 (repeatable; adds to the config)"));
  one(app.add_option(
      "--policy", a.policy,
      std::string("LB policy: ") + std::string(lb::PolicyNameList()) + " (--list-policies)"));
  app.add_flag("--list-policies", a.list_policies, std::string(lb::kListPoliciesHelp));
  app.add_flag("--json", a.as_json, "--list-policies: as JSON (--check always prints JSON)");
  one(app.add_option("--ofan-mode", a.ofan_mode,
                     "how Ofan shares pointers across lcores: atomic|combined (pofan: the same as "
                     "--policy pofan)"));
  one(app.add_option("--pipe-size", a.pipe_size, "ports per pipe (worker lcore / POfan table)"));
  one(app.add_option("--rate-gbps", a.rate, "emulated line rate per port (0 = device speed)"));
  one(app.add_option("--buffer", a.buffer, "per-port buffer, e.g. 1MiB"));
  one(app.add_option("--ecn", a.ecn, "ECN marking threshold, e.g. 100KiB (0 = off)"));
  one(app.add_option(
      "--socket", a.socket,
      fmt::format("control socket path (default {})", control::DefaultSocketPath("<name>"))));
  one(app.add_option("--workers", a.workers,
                     "worker lcores to use (default: all EAL workers, at most one per pipe)"));
  one(app.add_option("--max-sleep-us", a.max_sleep, "idle backoff cap in microseconds"));
  app.add_flag("--check", a.check, "validate the configuration, print it as JSON and exit");
  app.add_option("--fabric", a.fabric_path,
                 "the shared engine: every switch of FILE (switches: [config files]) in this "
                 "process, in-memory links, emulated time (dataplane/engine.h)");
  one(app.add_option(
      "--bench-inject", a.bench_population,
      "benchmark on loopback ports (net_ring): keep N frames circulating through the switch"));
  one(app.add_option("--bench-frame", a.bench_frame, "benchmark frame size in bytes (64..3456)")
          ->capture_default_str());
}

// The switch's configuration: the file, then the flags over it, validated.
Result<DpConfig> BuildConfig(const DpArgs& a) {
  DpConfig c;
  if (!a.config_path.empty()) {
    auto r = LoadConfigFile(a.config_path);
    if (!r) return r.error();
    c = *r;
  }
  if (!a.name.empty()) c.name = a.name;
  if (a.k) c.k = a.k;
  if (a.levels) c.levels = a.levels;
  if (a.switch_id >= 0) c.switch_id = static_cast<uint32_t>(a.switch_id);
  for (const auto& spec : a.port_specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos)
      return InvalidArgument(fmt::format("--port '{}': expected PORT=DEV", spec));
    PortConfig p;
    try {
      p.port = static_cast<uint32_t>(std::stoul(spec.substr(0, eq)));
    } catch (...) {
      return InvalidArgument(
          fmt::format("--port '{}': '{}' is not a port number", spec, spec.substr(0, eq)));
    }
    p.dev = spec.substr(eq + 1);
    c.ports.push_back(p);
  }
  if (!a.policy.empty()) {
    auto kind = lb::ParsePolicy(a.policy);
    if (!kind) return kind.error();
    c.policy.kind = *kind;
  }
  if (!a.ofan_mode.empty()) {
    LbChoice ch = c.lb();
    if (Status s = ApplyOfanMode(a.ofan_mode, ch); !s) return s.error();
    c.set_lb(ch);
  }
  if (a.pipe_size) c.pipe_size = c.policy.pipe_size = a.pipe_size;
  if (a.rate >= 0) c.egress.rate_gbps = a.rate;
  if (!a.buffer.empty()) {
    auto v = ParseSize(a.buffer);
    if (!v) return InvalidArgument("--buffer: " + v.error().message);
    c.egress.buffer_bytes = *v;
  }
  if (!a.ecn.empty()) {
    auto v = ParseSize(a.ecn);
    if (!v) return InvalidArgument("--ecn: " + v.error().message);
    c.egress.ecn_bytes = *v;
  }
  if (a.max_sleep != UINT32_MAX) c.max_sleep_us = a.max_sleep;
  if (!a.socket.empty()) c.socket_path = a.socket;
  if (c.socket_path.empty()) c.socket_path = control::DefaultSocketPath(c.name);
  if (Status s = c.Validate(); !s) return s.error();
  return c;
}

int Usage(const std::string& m) { return UsageError("ofan-dp", m, "-- --help"); }

// --fabric FILE: the shared engine.
int FabricMain(const DpArgs& a) {
  std::vector<std::string> ignored;
  for (const CLI::Option* o : a.one_switch) {
    if (o->count()) ignored.push_back(o->get_name());
  }
  if (!ignored.empty()) {
    return Usage(fmt::format(
        "--fabric takes every switch from the config files FILE lists: {} would be ignored "
        "(put it in the switches' configs)",
        fmt::join(ignored, ", ")));
  }
  auto fc = LoadFabricFile(a.fabric_path);
  if (!fc) return Usage(fc.error().message);
  if (a.check) {
    std::cout << fmt::format("{{\"ok\":true,\"engine\":\"shared\",\"switches\":{}}}\n",
                             fc->switches.size());
    return kExitOk;
  }
  return RunFabric(a.eal_args, *fc);
}

// One switch on EAL's devices: --vdev per port, workers, the control socket,
// until SIGINT/SIGTERM. EAL is initialised here and cleaned up on every path.
int RunSwitch(std::vector<std::string> eal_args, const DpConfig& c, const DpArgs& a) {
  for (const PortConfig& p : c.ports) {
    if (p.ring()) return Usage(fmt::format("port {}: ring: ports exist only inside tests", p.port));
    if (p.in_memory()) {
      return Usage(
          fmt::format("port {}: mem: ports exist only in the shared engine (--fabric)", p.port));
    }
    bool given = false;
    for (const auto& e : eal_args) given |= e.find(p.dev) != std::string::npos;
    if (!given) eal_args.push_back("--vdev=" + p.dev);
  }
  if (!HasArg(eal_args, {"--no-huge"}) && FreeHugepages() == 0) {
    std::cerr << "ofan-dp: no free hugepages. Reserve some first (as root):\n"
                 "  bash scripts/hugepages.sh   # mounts hugetlbfs and reserves 512 x 2 MiB\n"
                 "or pass --no-huge to EAL (ring/null ports only; AF_XDP needs hugepages).\n";
    return kExitEnv;
  }
  if (!InitEal(eal_args)) return kExitEnv;
  const uint32_t avail = rte_lcore_count() > 1 ? rte_lcore_count() - 1 : 0;
  const uint32_t nw = a.workers ? a.workers : std::min(avail, c.num_pipes());
  if (avail == 0 || nw > avail) {
    std::cerr << fmt::format(
        "ofan-dp: {} worker lcore(s) wanted, EAL has {}; give EAL more with -l\n", std::max(1u, nw),
        avail);
    rte_eal_cleanup();
    return kExitEnv;
  }
  const int rc = ServeSwitch(c, nw, a.bench_population, a.bench_frame);
  rte_eal_cleanup();
  return rc;
}

int Main(int argc, char** argv) {
  DpArgs a;
  const std::vector<std::string> own = SplitArgs(argc, argv, a);
  CLI::App app{
      "ofan-dp: Ofan/POfan switches on DPDK.\n"
      "usage: ofan-dp [EAL options] -- --config FILE [options]   (one switch)\n"
      "       ofan-dp [EAL options] -- --fabric FILE             (the shared engine)\n"
      "Ports named in the config are added to EAL as --vdev automatically; EAL defaults to\n"
      "--in-memory --no-pci -l 0,1 when not given."};
  AddOptions(app, a);
  std::vector<const char*> cargv;
  cargv.reserve(own.size());
  for (const auto& s : own) cargv.push_back(s.c_str());
  if (auto rc =
          ParseCommandLine(app, static_cast<int>(cargv.size()), const_cast<char**>(cargv.data())))
    return *rc;
  if (a.list_policies) {
    std::cout << (a.as_json ? JsonText(lb::PolicyListJson(), 1) + "\n" : lb::PolicyListText());
    return kExitOk;
  }
  if (!a.fabric_path.empty()) return FabricMain(a);
  auto c = BuildConfig(a);
  if (!c) return Usage(c.error().message);
  if (a.check) {
    std::cout << fmt::format(
        "{{\"ok\":true,\"name\":\"{}\",\"k\":{},\"levels\":{},\"switch\":{},\"ports\":{},"
        "\"policy\":\"{}\",\"ofan_mode\":\"{}\"}}\n",
        c->name, c->k, c->levels, c->switch_id, c->ports.size(), lb::PolicyName(c->policy.kind),
        ReportedOfanMode(c->lb()));
    return kExitOk;
  }
  return RunSwitch(a.eal_args, *c, a);
}

}  // namespace
}  // namespace ofan::dp

int main(int argc, char** argv) {
  // 1: a runtime failure, as for any other error.
  return ofan::GuardMain("ofan-dp", 1, [&] { return ofan::dp::Main(argc, argv); });
}
