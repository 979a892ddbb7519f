// ofan-agent: the control daemon of one switch, run in the switch's network
// namespace. Every --interval-ms it reads lldpd's neighbours, checks them
// against the fat tree (miswires are reported and never used), keeps FRR's
// configuration to the usable fabric ports, reads the kernel's routes (what
// BGP with BFD installed) and pushes the valid-uplink masks they give to
// ofan-dp when they changed (agent_cycle.h says when it holds them back).
//
// Exit: 0 stopped by SIGTERM/SIGINT (or --once with no error), 1 a runtime
// failure (--once: a step failed; the loop never exits for one), 2 a bad
// command line or config.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "common/cli.h"
#include "common/main_guard.h"
#include "common/protocol/protocol.h"
#include "common/steady_ms.h"
#include "common/version.h"
#include "control/agent/agent_cycle.h"
#include "control/agent/command_runner.h"
#include "control/agent/dp_link.h"
#include "control/agent/frr_apply.h"
#include "control/agent/route_events.h"
#include "dataplane/config.h"

namespace {

using namespace ofan;
constexpr std::string_view kProgram = "ofan-agent";

// The command line, before it becomes AgentOptions.
struct AgentArgs {
  std::string config_path, socket, lldpcli_socket, frr_dir, pathspace, name, status_file;
  std::optional<int> k, levels;
  std::optional<uint32_t> switch_id;
  agent::AgentOptions o;
  int interval_ms = 1000, timeout_ms = 2000, command_timeout_ms = agent::kDefaultCommandTimeoutMs;
  int debounce_ms = 50;
  bool once = false, json_out = false;
};

void AddOptions(CLI::App& app, AgentArgs& a) {
  agent::AgentOptions& o = a.o;
  app.add_option("--config", a.config_path,
                 "the switch's ofan-dp config (YAML/JSON): name, fabric k/levels/switch, "
                 "control socket");
  app.add_option("--k", a.k, "fabric radix (instead of, or over, --config)");
  app.add_option("--levels", a.levels, "fabric levels, 2 or 3 (instead of, or over, --config)");
  app.add_option("--switch-id", a.switch_id, "this switch's id (instead of, or over, --config)");
  app.add_option("--socket", a.socket, "ofan-dp's control socket (default: the config's)");
  app.add_option("--name", a.name, "the switch's name in reports (default: the config's)");
  app.add_option("--lldpcli-socket", a.lldpcli_socket, "lldpd's control socket (lldpd -u)");
  app.add_option("--frr-dir", a.frr_dir,
                 "directory to write frr.conf into; without it FRR is not configured");
  app.add_option("--vtysh-pathspace", a.pathspace, "FRR's pathspace (vtysh -N)");
  app.add_option("--bfd-interval-ms", o.frr.bfd.interval_ms, "BFD transmit/receive interval")
      ->capture_default_str();
  app.add_option("--bfd-multiplier", o.frr.bfd.multiplier, "BFD detect multiplier")
      ->capture_default_str();
  app.add_option("--interval-ms", a.interval_ms,
                 "poll period; a change of the namespace's routes, links or neighbours "
                 "(rtnetlink) starts a cycle sooner")
      ->capture_default_str()
      ->check(CLI::Range(10, 3600000));
  app.add_option("--debounce-ms", a.debounce_ms,
                 "after a routing change, wait this long for the rest of it before the cycle")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
  app.add_option("--settle-cycles", o.settle_cycles,
                 "cycles the masks must stay the same, with every session up, before the "
                 "first push (and after BGP was lost)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--bgp-refresh-cycles", o.bgp_refresh_cycles,
                 "once converged, FRR's BGP/BFD state (vtysh, the dearest read) is read "
                 "again after this many cycles when nothing moved; sooner when routes, "
                 "neighbours or frr.conf change")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--timeout-ms", a.timeout_ms, "ofan-dp control socket timeout")
      ->capture_default_str()
      ->check(CLI::Range(1, 600000));
  app.add_option("--command-timeout-ms", a.command_timeout_ms,
                 "a command (lldpcli, vtysh, ip) is killed after this long")
      ->capture_default_str()
      ->check(CLI::Range(1, 600000));
  app.add_flag("--once", a.once, "one cycle, then exit (0 if no step failed, else 1)");
  app.add_flag("--json", a.json_out, "one JSON status object per cycle on stdout");
  app.add_option("--status-file", a.status_file,
                 "after every cycle, its JSON status replaces this file (atomically: a reader "
                 "sees the last cycle's whole)");
}

// The options from the config and the flags over it, the socket and the
// directories checked (a usage error otherwise).
Status Resolve(AgentArgs& a) {
  agent::AgentOptions& o = a.o;
  if (!a.config_path.empty()) {
    auto c = dp::LoadConfigFile(a.config_path);
    if (!c) return c.error();
    o.k = c->k;
    o.levels = c->levels;
    o.switch_id = c->switch_id;
    o.name = c->name;
    if (a.socket.empty()) {
      a.socket = c->socket_path.empty() ? control::DefaultSocketPath(c->name) : c->socket_path;
    }
  } else if (!a.k || !a.levels || !a.switch_id) {
    return InvalidArgument("give --config, or --k, --levels and --switch-id");
  }
  if (a.k) o.k = *a.k;
  if (a.levels) o.levels = *a.levels;
  if (a.switch_id) o.switch_id = *a.switch_id;
  if (!a.name.empty()) o.name = a.name;
  if (a.socket.empty()) {
    if (o.name.empty()) return InvalidArgument("give --socket (or --config or --name)");
    a.socket = control::DefaultSocketPath(o.name);
  }
  o.lldpcli_socket = a.lldpcli_socket;
  o.frr_dir = a.frr_dir;
  o.vtysh_pathspace = a.pathspace;
  if (!a.status_file.empty()) {
    const auto slash = a.status_file.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : a.status_file.substr(0, slash + 1);
    if (::access(dir.c_str(), W_OK) != 0) {
      return InvalidArgument(
          fmt::format("--status-file {}: {} is not a writable directory", a.status_file, dir));
    }
  }
  if (!a.frr_dir.empty() && ::access(a.frr_dir.c_str(), W_OK) != 0) {
    return InvalidArgument(fmt::format("--frr-dir {}: not a writable directory", a.frr_dir));
  }
  return {};
}

// One cycle's status where people and tools look: stdout (--json), the
// switch (ofanctl agent), --status-file, and lines on stderr.
void Report(const nlohmann::json& st, const AgentArgs& a, agent::DpLink& dp, bool& was_connected) {
  if (a.json_out) std::cout << st.dump() << std::endl;
  // For `ofanctl agent`: the switch keeps the last report. An older
  // ofan-dp refuses the command; that is no reason to stop.
  if (dp.connected()) (void)dp.Report(st, SteadyMs());
  if (!a.status_file.empty()) {
    if (Status w = agent::WriteFileAtomically(a.status_file, st.dump() + "\n"); !w) {
      std::cerr << "ofan-agent: --status-file: " << w.error().message << "\n";
    }
  }
  // Lines for people on stderr: errors, and ofan-dp's reachability changes.
  for (const auto& e : st["errors"]) std::cerr << "ofan-agent: " << e.get<std::string>() << "\n";
  const bool connected = st["dp"]["connected"].get<bool>();
  if (connected && !was_connected) std::cerr << "ofan-agent: ofan-dp reachable again\n";
  was_connected = connected;
  if (st["masks"]["action"] == "pushed") {
    std::cerr << "ofan-agent: pushed masks " << st["masks"]["computed"].dump() << "\n";
  }
}

// Cycles until SIGTERM/SIGINT (0), or once (--once: 0 if no step failed).
int Loop(agent::Agent& ag, agent::DpLink& dp, const AgentArgs& a) {
  // SIGTERM/SIGINT through a signalfd: the wait between cycles ends at once,
  // and a cycle in progress finishes (frr.conf is never left half-applied).
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  ::sigprocmask(SIG_BLOCK, &stop, nullptr);
  const int sfd = ::signalfd(-1, &stop, SFD_CLOEXEC);
  if (sfd < 0) {
    std::cerr << "ofan-agent: signalfd failed\n";
    return 1;
  }
  // Routing changes end the wait early (route_events.h); without the
  // socket the agent still polls.
  auto events = agent::RouteEvents::Open();
  if (!events) std::cerr << "ofan-agent: " << events.error().message << "; polling only\n";
  bool was_connected = true;
  for (;;) {
    const int64_t start = SteadyMs();
    const nlohmann::json st = ag.Cycle(start);
    Report(st, a, dp, was_connected);
    if (a.once) {
      ::close(sfd);
      return st["errors"].empty() ? 0 : 1;
    }
    // What this cycle changed (frr.conf, a push) echoes back as events:
    // read them first, so they do not start the next cycle.
    if (events) events->Drain();
    pollfd p[2] = {{sfd, POLLIN, 0}, {events ? events->fd() : -1, POLLIN, 0}};
    for (;;) {
      const int64_t wait = std::max<int64_t>(0, start + a.interval_ms - SteadyMs());
      if (::poll(p, 2, static_cast<int>(wait)) <= 0) break;  // the period is over
      if (p[0].revents) {
        signalfd_siginfo si{};
        (void)!::read(sfd, &si, sizeof si);
        std::cerr << "ofan-agent: signal " << si.ssi_signo << ", stopping\n";
        ::close(sfd);
        return 0;
      }
      if (p[1].revents && events->Drain()) {
        // A change: let the rest of it arrive (zebra installs a withdrawal
        // route by route), then cycle at once.
        ::poll(p, 1, a.debounce_ms);
        events->Drain();
        break;
      }
    }
  }
}

int Run(int argc, char** argv) {
  CLI::App app(
      "ofan-agent: one switch's control daemon. Reads lldpd's neighbours (lldpcli json0), "
      "reports miswired ports and never uses them, writes and applies FRR's frr.conf (BGP "
      "unnumbered + BFD on the usable fabric ports), reads the namespace's routes (ip -j "
      "route) and pushes the valid-uplink masks to ofan-dp (load_tables) when they change "
      "and BGP has converged.\nExit codes: 0 ok (stopped by SIGTERM/SIGINT, or --once "
      "without error), 1 runtime failure (--once: some step failed), 2 bad command line "
      "or config.",
      std::string(kProgram));
  app.set_version_flag("--version", fmt::format("ofan-agent {}", kOfanVersion));
  AgentArgs a;
  AddOptions(app, a);
  if (auto code = ParseCommandLine(app, argc, argv)) return *code;
  if (Status s = Resolve(a); !s) return UsageError(kProgram, s.error().message);
  agent::ProcessRunner runner(a.command_timeout_ms);
  agent::DpLink dp(a.socket, a.timeout_ms);
  auto made = agent::Agent::Make(a.o, runner, dp);
  if (!made) return UsageError(kProgram, made.error().message);
  // Render once now: BFD timers FRR would refuse are a bad command line.
  if (!a.frr_dir.empty()) {
    if (auto t = agent::RenderFrrConfig(*lb::FatTree::Make(a.o.k, a.o.levels),
                                        lb::SwitchId(a.o.switch_id), {}, a.o.frr);
        !t) {
      return UsageError(kProgram, t.error().message);
    }
  }
  return Loop(*made, dp, a);
}

}  // namespace

int main(int argc, char** argv) {
  return ofan::GuardMain(kProgram, 1, [&] { return Run(argc, argv); });
}
