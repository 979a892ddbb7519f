// ofan-verbs: rdma-core (libibverbs) hosts of ofan-emu, for soft-RoCE (rxe)
// in VMs. `ofan-verbs peer` is the pair check of docs/rc-exchange.md: the
// same check as `uroce peer`, so that either stack can face the other.
//
// Exit codes: 0 everything sent was acknowledged and everything expected
// arrived intact; 1 the run failed or data differed (the message, and the
// JSON's "error", say why); 2 bad command line.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "common/cli.h"
#include "common/json_text.h"
#include "common/main_guard.h"
#include "common/units.h"
#include "common/version.h"
#include "emu/rcx/rc_exchange.h"
#include "emu/verbs/pair_check.h"

namespace ofan::verbs {
namespace {

constexpr int kExitOk = 0, kExitFailed = 1;

int Main(int argc, char** argv) {
  CLI::App app{"ofan-verbs: RC hosts over libibverbs (rxe) for ofan-emu"};
  app.set_version_flag("--version", fmt::format("ofan-verbs {}", kOfanVersion));
  app.require_subcommand(1);
  CLI::App* peer = app.add_subcommand(
      "peer",
      "the ofan-rc-1 pair check (docs/rc-exchange.md): one side --listen, the other --connect;\n"
      "both with the same --op, --count, --size and --qps");
  PairCheckOptions o;
  std::string listen, connect, ip, op = "write", direction = "both", size = "4096";
  double setup_s = 30, timeout_s = 60;
  peer->add_option("--listen", listen, "be rank 0: listen on ADDR (default every address)")
      ->expected(0, 1);
  peer->add_option("--connect", connect, "be rank 1: connect to the listener at ADDR");
  peer->add_option("--ip", ip,
                   "this side's address (default: the listen address, else the "
                   "device's first IPv4 RoCE v2 GID)");
  peer->add_option("--rc-port", o.port, "the listener's TCP port")->capture_default_str();
  peer->add_option("--op", op, "write (RDMA WRITE WITH IMMEDIATE) or send")->capture_default_str();
  peer->add_option("--count", o.count, "messages M")->capture_default_str();
  peer->add_option("--size", size, "bytes S per message, e.g. 4096 or 64KiB")
      ->capture_default_str();
  peer->add_option("--qps", o.qps, "RC QPs N (message m on QP m % N)")->capture_default_str();
  peer->add_option("--direction", direction, "what this side sends: both, tx or rx")
      ->capture_default_str();
  peer->add_option("--device", o.device, "RDMA device (default: the first)");
  peer->add_option("--mtu", o.mtu, "cap the path MTU (0: the port's active MTU)")
      ->capture_default_str();
  peer->add_option("--depth", o.depth, "sends in flight per QP")->capture_default_str();
  peer->add_option("--recv-depth", o.recv_depth, "receive WRs posted per QP")
      ->capture_default_str();
  peer->add_option("--setup-timeout-s", setup_s, "connection setup and each later wait")
      ->capture_default_str();
  peer->add_option("--timeout-s", timeout_s, "the transfer")->capture_default_str();
  bool as_json = false;
  peer->add_flag("--json", as_json, "print one JSON object");
  if (auto rc = ParseCommandLine(app, argc, argv)) return *rc;

  auto usage = [](const std::string& m) { return UsageError("ofan-verbs peer", m); };
  const bool listening = peer->count("--listen") > 0;
  if (listening == !connect.empty())
    return usage("give exactly one of --listen [ADDR] and --connect ADDR");
  o.listen = listening;
  if (listening && !listen.empty()) {
    auto a = rcx::ParseIpv4(listen);
    if (!a) return usage("--listen: " + a.error().message);
    o.listen_ip = *a;
  }
  if (!connect.empty()) {
    auto a = rcx::ParseIpv4(connect);
    if (!a) return usage("--connect: " + a.error().message);
    o.connect_ip = *a;
  }
  if (!ip.empty()) {
    auto a = rcx::ParseIpv4(ip);
    if (!a) return usage("--ip: " + a.error().message);
    o.ip = *a;
  }
  if (op == "write") {
    o.op = PairOp::kWrite;
  } else if (op == "send") {
    o.op = PairOp::kSend;
  } else {
    return usage("--op: write or send, not " + op);
  }
  if (direction == "both") {
    o.direction = Direction::kBoth;
  } else if (direction == "tx") {
    o.direction = Direction::kTx;
  } else if (direction == "rx") {
    o.direction = Direction::kRx;
  } else {
    return usage("--direction: both, tx or rx, not " + direction);
  }
  auto s = ParseSize(size);
  if (!s) return usage("--size: " + s.error().message);
  o.size = *s;
  if (!(setup_s > 0 && setup_s <= 86400) || !(timeout_s > 0 && timeout_s <= 86400)) {
    return usage("--setup-timeout-s and --timeout-s must be in (0, 86400]");
  }
  o.setup_timeout = std::chrono::milliseconds(static_cast<int64_t>(setup_s * 1000));
  o.run_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  if (auto e = CheckPairOptions(o)) return usage(*e);

  const PairCheckResult r = RunPairCheck(o);
  if (as_json) {
    std::cout << JsonText(PairCheckJson(r)) << "\n";
  } else if (r.ok()) {
    std::cout << fmt::format(
        "{} {} x {} B on {} QPs ({}, MTU {}): sent {}, received {}, bad {}, {:.3f} s, {:.3f} "
        "Gb/s\n",
        op, r.messages, r.size, r.qps, r.device, r.mtu, r.sent, r.received, r.bad, r.seconds,
        r.gbps);
  }
  if (!r.ok()) {
    std::cerr << "ofan-verbs peer: " << r.error << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace
}  // namespace ofan::verbs

int main(int argc, char** argv) {
  return ofan::GuardMain("ofan-verbs", 1, [&] { return ofan::verbs::Main(argc, argv); });
}
