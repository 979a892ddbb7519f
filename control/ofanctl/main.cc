// ofanctl: the command line of ofan-dp's control socket (the protocol is
// common/protocol/protocol.h).
//   ofanctl [--socket PATH | --name NAME] [--json] [--timeout-ms N] COMMAND ...
//
// Exit codes: 0 ok; 1 the switch answered with an error (printed); 2 bad
// command line (including an unreadable or invalid load-tables FILE); 3 cannot
// connect, timeout, connection closed, or a malformed reply.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/json_text.h"
#include "common/main_guard.h"
#include "common/protocol/protocol.h"
#include "common/version.h"
#include "control/client/client.h"
#include "control/ofanctl/render.h"
#include "dataplane/lb/policy.h"

namespace ofan::control {
namespace {

using nlohmann::json;

constexpr int kExitOk = 0, kExitSwitchError = 1, kExitUsage = 2, kExitConnection = 3;

constexpr const char* kGlobalsFooter =
    "Global options (before or after the command): --socket PATH | --name NAME, --json,\n"
    "--timeout-ms N; see ofanctl --help.";

// A mask as the switch accepts it: a non-negative integer, or a string that
// is one in C notation ("0x3", "7", "0b..." is not).
bool IsMask(const json& m) {
  if (m.is_number_unsigned()) return true;
  if (m.is_number_integer()) return m.get<int64_t>() >= 0;
  if (!m.is_string()) return false;
  const std::string s = m.get<std::string>();
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  try {
    size_t pos = 0;
    (void)std::stoull(s, &pos, 0);
    return pos == s.size();
  } catch (...) {
    return false;
  }
}

// Reads a load-tables file: [m0, m1, ...] or {"masks": [...]}; "-" is stdin.
Result<json> ReadMasksFile(const std::string& path) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
      return MakeError(ErrorCode::kInvalidArgument,
                       fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    }
    std::ostringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  json j;
  try {
    j = json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {
    return MakeError(ErrorCode::kInvalidArgument,
                     fmt::format("{} is not JSON: {}", path, e.what()));
  }
  if (j.is_object()) {
    if (!j.contains("masks")) {
      return MakeError(ErrorCode::kInvalidArgument,
                       fmt::format("{}: an object needs \"masks\": [...]", path));
    }
    j = j["masks"];
  }
  if (!j.is_array()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     fmt::format("{}: expected a list of masks or {{\"masks\": [...]}}", path));
  }
  if (j.empty()) return MakeError(ErrorCode::kInvalidArgument, fmt::format("{}: no masks", path));
  for (size_t i = 0; i < j.size(); ++i) {
    if (!IsMask(j[i])) {
      return MakeError(ErrorCode::kInvalidArgument,
                       fmt::format("{}: mask {} ({}) is not a port mask (a non-negative integer "
                                   "or a string such as \"0x3\")",
                                   path, i, JsonText(j[i])));
    }
  }
  return j;
}

struct Options {
  bool as_json = false;
  bool all_counters = false;
  std::optional<uint32_t> only_key;
  uint32_t port = 0;
  int timeout_ms = kDefaultTimeoutMs;
};

// One switch's answer: exit code (kExitOk, kExitSwitchError, kExitUsage,
// kExitConnection), its result, or the message that says why not.
struct Outcome {
  int rc = kExitOk;
  json result;
  std::string error;
};

// The exit code of a client error: a request ofanctl refused to send (2),
// or the connection (3).
int ClientExit(const Error& e) {
  return e.code == ErrorCode::kInvalidArgument ? kExitUsage : kExitConnection;
}

Outcome Call(const std::string& socket_path, Command cmd, const json& args, int timeout_ms) {
  auto client = ControlClient::Connect(socket_path, timeout_ms);
  if (!client) {
    return {ClientExit(client.error()), {}, client.error().message};
  }
  auto reply = (*client)->Command(cmd, args);
  if (!reply) {
    return {ClientExit(reply.error()), {}, reply.error().message};
  }
  if (!reply->ok)
    return {kExitSwitchError, {}, fmt::format("{}: {}", CommandName(cmd), reply->error)};
  return {kExitOk, std::move(reply->result), ""};
}

// The table of a command's result (throws json::exception on a reply of
// another shape).
std::string Render(Command cmd, const json& result, const json& args, const Options& o) {
  switch (cmd) {
    case Command::kVersion:
      return RenderVersion(result);
    case Command::kStatus:
      return RenderStatus(result);
    case Command::kCounters:
      return RenderCounters(result, o.all_counters);
    case Command::kPorts:
      return RenderPorts(result);
    case Command::kQueues:
      return RenderQueues(result);
    case Command::kPointers:
      return RenderPointers(result, o.only_key);
    case Command::kSetPolicy:
      return RenderPolicyLine(result);
    case Command::kSetPort:
      return RenderPortLine(result, o.port);
    case Command::kSwitchAdmin:
      return fmt::format("{}: {}\n", result.value("name", std::string("?")),
                         result.value("engine", json::object()).value("stopped", false)
                             ? "stopped"
                             : "forwarding");
    case Command::kLoadTables:
      return fmt::format("loaded {} masks: {}", args["masks"].size(), RenderPolicyLine(result));
    case Command::kResetQueues:
      return "queue statistics reset\n";
    case Command::kCaptureStart:
    case Command::kCaptureStatus:
    case Command::kCaptureStop:
      return RenderCapture(result);
    case Command::kAgent:
      return RenderAgent(result);
    case Command::kAgentReport:  // the agent's own; no subcommand sends it
      return "agent report kept\n";
  }
  return "";  // not reached: every command has a case
}

int MalformedReply(Command cmd, const std::string& from, const json::exception& e) {
  std::cerr << fmt::format(
      "ofanctl: unexpected {} reply from {}: {} (a different ofan-dp version? --json shows "
      "it as is)\n",
      CommandName(cmd), from, e.what());
  return kExitConnection;
}

int RunOne(const std::string& socket_path, Command cmd, const json& args, const Options& o) {
  Outcome out = Call(socket_path, cmd, args, o.timeout_ms);
  if (out.rc != kExitOk) {
    std::cerr << "ofanctl: " << out.error << "\n";
    return out.rc;
  }
  json& result = out.result;
  try {
    if (o.only_key) {
      json keys = json::array();
      for (const json& k : result.at("keys")) {
        if (k.at("key") == *o.only_key) keys.push_back(k);
      }
      if (keys.empty()) {
        std::cerr << "ofanctl: pointers: no key " << *o.only_key << " (the table has "
                  << result.at("keys").size() << " keys)\n";
        return kExitSwitchError;
      }
      if (o.as_json) result["keys"] = std::move(keys);
    }
    if (o.as_json) {
      std::cout << JsonText(result, 2) << "\n";
      return kExitOk;
    }
    std::cout << Render(cmd, result, args, o);
  } catch (const json::exception& e) {
    return MalformedReply(cmd, socket_path, e);
  }
  return kExitOk;
}

int RunRaw(const std::string& socket_path, const std::string& line, bool as_json, int timeout_ms) {
  auto client = ControlClient::Connect(socket_path, timeout_ms);
  if (!client) {
    std::cerr << "ofanctl: " << client.error().message << "\n";
    return ClientExit(client.error());
  }
  auto reply = (*client)->CallLine(line);
  if (!reply) {
    std::cerr << "ofanctl: " << reply.error().message << "\n";
    return ClientExit(reply.error());
  }
  std::cout << (as_json ? reply->line : JsonText(reply->raw, 2)) << "\n";
  return reply->ok ? kExitOk : kExitSwitchError;
}

// What --fabric may send to every switch: the reads, and the two changes
// that make sense fabric-wide.
bool FabricCommand(Command cmd) {
  switch (cmd) {
    case Command::kVersion:
    case Command::kStatus:
    case Command::kCounters:
    case Command::kPorts:
    case Command::kQueues:
    case Command::kPointers:
    case Command::kAgent:
    case Command::kCaptureStatus:
    case Command::kSetPolicy:
    case Command::kResetQueues:
      return true;
    default:
      return false;
  }
}

// Every NAME.sock in dir, sorted by NAME; an error when there is none.
Result<std::vector<std::pair<std::string, std::string>>> FabricSockets(const std::string& dir) {
  std::error_code ec;
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".sock") continue;
    if (!e.is_socket(ec)) continue;
    out.emplace_back(e.path().stem().string(), e.path().string());
  }
  if (ec) {
    return MakeError(ErrorCode::kInvalidArgument,
                     fmt::format("--fabric {}: {}", dir, ec.message()));
  }
  if (out.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     fmt::format("--fabric {}: no control socket (NAME.sock) there", dir));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The command on every switch of the fabric: exit code the worst of theirs
// (connection 3 > switch error 1 > ok), each switch's answer or error kept.
int RunFabric(const std::string& dir, Command cmd, const json& args, const Options& o) {
  auto socks = FabricSockets(dir);
  if (!socks) {
    std::cerr << "ofanctl: " << socks.error().message << "\n";
    return kExitUsage;
  }
  int rc = kExitOk;
  json all = json::array();
  std::vector<std::pair<std::string, Outcome>> outs;
  for (const auto& [name, path] : *socks) {
    Outcome out = Call(path, cmd, args, o.timeout_ms);
    if (out.rc == kExitConnection || (out.rc != kExitOk && rc != kExitConnection)) rc = out.rc;
    json one{{"name", name}, {"socket", path}, {"ok", out.rc == kExitOk}};
    if (out.rc == kExitOk) {
      one["result"] = out.result;
    } else {
      one["error"] = out.error;
    }
    all.push_back(std::move(one));
    outs.emplace_back(name, std::move(out));
  }
  if (o.as_json) {
    std::cout << JsonText(json{{"fabric", dir}, {"switches", all}}, 2) << "\n";
    return rc;
  }
  try {
    if (cmd == Command::kAgent || cmd == Command::kStatus) {
      std::cout << (cmd == Command::kAgent ? RenderAgentFabric(all) : RenderStatusFabric(all));
      return rc;
    }
  } catch (const json::exception& e) {
    return MalformedReply(cmd, dir, e);
  }
  for (const auto& [name, out] : outs) {
    std::cout << "== " << name << " ==\n";
    if (out.rc != kExitOk) {
      std::cout << "error: " << out.error << "\n";
      continue;
    }
    try {
      std::cout << Render(cmd, out.result, args, o);
    } catch (const json::exception& e) {
      rc = MalformedReply(cmd, name, e);
    }
  }
  return rc;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "ofanctl: the command line of ofan-dp's control socket (a unix socket speaking JSON,\n"
      "one request and one reply per line)."};
  app.name("ofanctl");
  app.set_version_flag("--version", fmt::format("ofanctl {}", kOfanVersion));
  app.require_subcommand(0, 1);  // none only with --list-policies
  app.fallthrough();  // global options may follow the command too (inherited by subcommands)

  std::string socket_path, name(kDefaultSwitchName);
  bool as_json = false, list_policies = false;
  int timeout_ms = kDefaultTimeoutMs;
  app.add_option("--socket", socket_path,
                 fmt::format("control socket path (default {}; wins over --name)",
                             DefaultSocketPath("<name>")))
      ->type_name("PATH");
  app.add_option("--name", name,
                 fmt::format("switch name: the socket is {}", DefaultSocketPath("<name>")))
      ->type_name("NAME")
      ->capture_default_str();
  std::string fabric_dir;
  app.add_option("--fabric", fabric_dir,
                 "every switch whose control socket (NAME.sock) is in DIR, e.g. ofan-emu's\n"
                 "/run/ofan-emu/FABRIC/sock: one section per switch (agent, status: one row)")
      ->type_name("DIR");
  app.add_flag("--json", as_json, "print the switch's \"result\" object as JSON, not tables");
  app.add_flag("--list-policies", list_policies, std::string(lb::kListPoliciesHelp));
  app.add_option("--timeout-ms", timeout_ms,
                 "milliseconds (1..3600000) to wait for the connection, and then for the reply")
      ->type_name("N")
      ->check(CLI::Range(1, 3600 * 1000).description(""))
      ->capture_default_str();
  app.footer(
      "Tables by default; --json prints the exact \"result\" of the reply (set-policy and\n"
      "load-tables answer with the status, port with the ports, reset-queues with {}).\n"
      "Each command documents its output: ofanctl COMMAND --help.\n"
      "\n"
      "Examples:\n"
      "  ofanctl status\n"
      "  ofanctl --name e0 counters --all\n"
      "  ofanctl queues --json\n"
      "  ofanctl set-policy ofan --ofan-mode combined\n"
      "  ofanctl --list-policies --json\n"
      "  ofanctl port 3 down\n"
      "  ofanctl load-tables masks.json\n"
      "  ofanctl capture-start --port 2 --count 100 /tmp/p2.pcapng\n"
      "  ofanctl raw '{\"v\":1,\"cmd\":\"status\"}'\n"
      "\n"
      "Exit codes: 0 ok; 1 the switch answered with an error (printed); 2 bad command line\n"
      "(including an unreadable or invalid load-tables FILE); 3 cannot connect, timeout,\n"
      "connection closed, or a malformed reply (is ofan-dp running? is it the right socket?).");

  auto sub = [&](const char* cmd, const char* desc, const std::string& footer) {
    CLI::App* s = app.add_subcommand(cmd, desc);
    s->footer(footer + "\n" + kGlobalsFooter);
    return s;
  };
  CLI::App* version = sub("version", "the switch's version and control protocol version",
                          "Prints ofan-dp's version and protocol; --json: {\"ofan_dp\", "
                          "\"protocol\"}.");
  CLI::App* status =
      sub("status", "the switch: name, place in the fabric, policy, uptime, workers",
          "--json: {\"name\", \"fabric\": {k, levels, switch, role, pod, index}, \"policy\",\n"
          "\"ofan_mode\", \"pipe_size\", \"generation\", \"uplinks\", \"running\", \"uptime_s\",\n"
          "\"workers\": [{worker, lcore, ports, busy_loops, idle_loops, sleeps, sleep_us,\n"
          "blocking (waits on its ports' AF_XDP sockets, not a timer), traffic_wakeups}]}.");
  bool all_counters = false;
  CLI::App* counters =
      sub("counters", "packet counters summed over the workers, and drops by reason",
          "The table lists the non-zero counters (one column per worker when there are several),\n"
          "then the drops by reason. --json: {\"total\": {name: n}, \"drops\": {reason: n},\n"
          "\"drops_total\", \"per_worker\": [{name: n}, ...]} with every counter (--all only\n"
          "changes the table).");
  counters->add_flag("--all", all_counters, "include the counters that are zero");
  CLI::App* ports =
      sub("ports", "one row per port: direction, admin and link state, MACs, rx/tx",
          "--json: [{port, dev, dpdk_port, direction (up|down), mac, neighbor (null until\n"
          "learned), admin, link, rx_packets, rx_bytes, rx_missed (dropped by the device\n"
          "before the switch polled them), tx_packets, tx_bytes, kernel (null, or the port's\n"
          "kernel interface: {name, via: \"tap\" (shared engine), to_kernel, to_kernel_lost,\n"
          "from_kernel, from_kernel_lost} or {name, via: \"xdp\" (per-switch engine: the\n"
          "veth's XDP trap), to_kernel, to_kernel_by_class: {arp, lldp, nd, bgp, bfd},\n"
          "to_dataplane, no_socket (for ofan-dp, but its queue had no socket yet), and\n"
          "from_kernel null: the kernel sends on the veth itself; \"error\" if unreadable}),\n"
          "pfc (null, or with PFC on: {xoff_bytes, xon_bytes, headroom_bytes: the port's\n"
          "thresholds as an ingress port; since the switch started: sent, received (pause\n"
          "frames), paused_us, xoff_events, lossless_drops; held_bytes now; since the last\n"
          "reset-queues: headroom_max_bytes, held_max_bytes; watchdog: {fired, restored,\n"
          "active, dropped, action}}), reorder (null, or an edge's host port with reorder on:\n"
          "since the switch started held, in_order, timeouts, overflow, table_full, old,\n"
          "bad_length; since the last reset-queues max_bytes, max_frames, max_hold_us;\n"
          "timeout_us: the longest a frame waits)}].");
  CLI::App* queues =
      sub("queues", "egress queues: occupancy now, max and average, drops, ECN marks, PFC pause",
          "Max and average are since the last reset-queues. --json: [{port, bytes, packets,\n"
          "priority_packets, max_bytes, max_packets, avg_bytes, avg_packets, drops_buffer,\n"
          "ecn_marked, shaper_lag_bytes (line time lost while frames waited, since the last\n"
          "reset: the switch lacked CPU), paused, limit_bytes, ecn_bytes, pfc and reorder\n"
          "(as ports has them)}].");
  uint32_t key = 0;
  CLI::App* pointers = sub(
      "pointers", "the forwarding table: per key (destination x class) the uplink order",
      "Shows each key's uplink order and, for shared Ofan, its pointer (counter).\n"
      "--json: {\"policy\", \"ofan_mode\", \"uplinks\", \"keys\": [{key, dest, class (data|ack),\n"
      "order, counter?}]}; with --key, \"keys\" holds that key only.");
  CLI::Option* key_opt = pointers->add_option("--key", key, "show this key only")->type_name("K");
  std::string policy, ofan_mode;
  CLI::App* set_policy =
      sub("set-policy", "switch the load-balancing policy (atomically, without stopping traffic)",
          fmt::format("POLICY: {} (ofanctl --list-policies; the switch\n"
                      "checks it). Prints the new policy; --json: the switch's status (see "
                      "status --help).",
                      lb::PolicyNameList()));
  set_policy->add_option("POLICY", policy, "the policy, e.g. ofan")->required();
  set_policy
      ->add_option("--ofan-mode", ofan_mode,
                   "how Ofan shares pointers across lcores (default: unchanged)")
      ->check(CLI::IsMember({"pofan", "atomic", "combined"}));
  uint32_t port = 0;
  std::string admin, wire;
  CLI::App* port_cmd =
      sub("port", "set a port's admin state (down: no traffic, no uplink use), or cut its wire",
          "Prints the port's new state; --json: every port (see ports --help).\n"
          "--wire cut: the port's cable is cut behind the switch's back (an emulated\n"
          "silent failure: the port stays up and in use, what it sends is lost and\n"
          "counted drop_link_loss); --wire ok mends it. --pfc-storm-ms N: the host behind\n"
          "the port sends continuous PFC pause for N ms of emulated time, as a broken\n"
          "NIC does (0 ends it; the shared engine with PFC).");
  port_cmd->add_option("N", port, "fat-tree port index")->required();
  port_cmd->add_option("STATE", admin, "up or down (optional with --wire)")
      ->check(CLI::IsMember({"up", "down"}));
  port_cmd->add_option("--wire", wire, "ok or cut")->check(CLI::IsMember({"ok", "cut"}));
  int64_t storm_ms = -1;
  port_cmd->add_option("--pfc-storm-ms", storm_ms, "a PFC storm from the port's host, ms")
      ->check(CLI::Range(int64_t{0}, int64_t{3'600'000}));
  std::string switch_state;
  CLI::App* switch_cmd =
      sub("switch", "stop or resume this switch (shared engine: the process stays)",
          "down: frames that reach it and those it queued are dropped and counted\n"
          "(drop_switch_down); its socket still answers. Prints its state; --json: its\n"
          "status (see status --help).");
  switch_cmd->add_option("STATE", switch_state, "up or down")
      ->required()
      ->check(CLI::IsMember({"up", "down"}));
  std::string masks_file;
  CLI::App* load_tables = sub(
      "load-tables", "load the valid-uplink masks, one per destination (the agent's tables)",
      "FILE holds JSON: a list of masks, or {\"masks\": [...]}; a mask is a number or a\n"
      "string such as \"0x3\" (bit i = uplink i); '-' reads stdin. Example: [\"0x3\", 1, 2, 3].\n"
      "Prints the new table generation; --json: the switch's status (see status --help).");
  load_tables->add_option("FILE", masks_file, "JSON file with the masks ('-': stdin)")->required();
  CLI::App* reset_queues =
      sub("reset-queues", "restart the queues' max and average statistics", "--json: {}.");
  CLI::App* agent_cmd =
      sub("agent", "the switch's control agent as it last reported: neighbours, BGP, BFD, masks",
          "ofan-agent reports each cycle to the switch (agent_report), which keeps the last one.\n"
          "--json: {\"report\": the agent's status (ofan-agent --json's object) or null,\n"
          "\"age_ms\": how long ago it came, or null}.");
  std::vector<uint32_t> cap_ports;
  std::string cap_file;
  uint32_t cap_snaplen = 4096;
  uint64_t cap_count = 0;
  uint32_t cap_id = 0;
  const std::string capture_json =
      "--json: {\"id\", \"active\", \"file\", \"ports\", \"snaplen\", \"count\", \"frames\"\n"
      "(written), \"dropped\" (copies a full ring could not take), \"error\" (\"\" or why it\n"
      "ended)}; without --id, {\"captures\": [...]}, every one.";
  CLI::App* capture_start =
      sub("capture-start", "write copies of ports' frames (both directions) to a pcapng file",
          "The switch writes FILE (an absolute path; made or truncated) as pcapng, one interface\n"
          "per port named SWITCH:pPORT, each frame's direction in its flags; read it with\n"
          "tshark -r FILE or Wireshark. Ends at --count frames or at capture-stop.\n" +
              capture_json);
  capture_start->add_option("--port", cap_ports, "a port to capture (repeatable)")
      ->required()
      ->type_name("N")
      ->check(CLI::Range(0, 63));
  capture_start->add_option("FILE", cap_file, "the pcapng file (absolute path)")->required();
  capture_start->add_option("--snaplen", cap_snaplen, "bytes kept of each frame (64..4096)")
      ->check(CLI::Range(64, 4096))
      ->capture_default_str();
  capture_start->add_option("--count", cap_count, "stop after N frames (0: at capture-stop)")
      ->capture_default_str();
  CLI::App* capture_status = sub(
      "capture-status", "what the captures are doing: file, frames written, dropped", capture_json);
  CLI::Option* status_id =
      capture_status->add_option("--id", cap_id, "this capture only")->type_name("ID");
  CLI::App* capture_stop =
      sub("capture-stop", "end a capture, or all of them (their files are then complete)",
          capture_json);
  CLI::Option* stop_id =
      capture_stop->add_option("--id", cap_id, "this capture (default: all)")->type_name("ID");
  std::string raw_line;
  CLI::App* raw = sub("raw", "send one raw request line and print the whole reply",
                      "JSON is sent as given (one line), e.g. '{\"v\":1,\"cmd\":\"pointers\"}'.\n"
                      "Prints the reply object indented; --json: the reply line exactly as\n"
                      "received. Exit code 1 when the reply says \"ok\": false.");
  raw->add_option("JSON", raw_line, "the request line")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string what = e.what(), cmd;
    for (const CLI::App* s : app.get_subcommands()) cmd = s->get_name() + " ";
    if (cmd.empty()) {
      const auto rest = app.remaining();
      if (rest.empty()) {
        what = "missing COMMAND";
      } else if (rest.front().rfind('-', 0) != 0) {
        what = fmt::format("unknown command '{}'", rest.front());
      }
    }
    std::cerr << "ofanctl: " << what << "\n(see ofanctl " << cmd << "--help)\n";
    return kExitUsage;
  }
  auto usage = [](const std::string& m, const std::string& cmd = "") {
    std::cerr << "ofanctl: " << m << "\n(see ofanctl " << (cmd.empty() ? "" : cmd + " ")
              << "--help)\n";
    return kExitUsage;
  };
  if (list_policies) {
    std::cout << (as_json ? JsonText(lb::PolicyListJson(), 1) + "\n" : lb::PolicyListText());
    return kExitOk;
  }
  if (app.get_subcommands().empty()) return usage("missing COMMAND");

  // What to send; checked before connecting. No command: raw.
  const std::pair<const CLI::App*, Command> commands[] = {{version, Command::kVersion},
                                                          {status, Command::kStatus},
                                                          {counters, Command::kCounters},
                                                          {ports, Command::kPorts},
                                                          {queues, Command::kQueues},
                                                          {pointers, Command::kPointers},
                                                          {set_policy, Command::kSetPolicy},
                                                          {port_cmd, Command::kSetPort},
                                                          {switch_cmd, Command::kSwitchAdmin},
                                                          {load_tables, Command::kLoadTables},
                                                          {reset_queues, Command::kResetQueues},
                                                          {capture_start, Command::kCaptureStart},
                                                          {capture_status, Command::kCaptureStatus},
                                                          {capture_stop, Command::kCaptureStop},
                                                          {agent_cmd, Command::kAgent}};
  std::optional<Command> cmd;
  for (const auto& [s, c] : commands) {
    if (s->parsed()) cmd = c;
  }
  json args = json::object();
  if (set_policy->parsed()) {
    args["policy"] = policy;
    if (!ofan_mode.empty()) args["ofan_mode"] = ofan_mode;
  }
  if (port_cmd->parsed()) {
    if (admin.empty() && wire.empty() && storm_ms < 0)
      return usage("port: give STATE (up|down), --wire, --pfc-storm-ms, or several", "port");
    args["port"] = port;
    if (!admin.empty()) args["admin"] = admin;
    if (!wire.empty()) args["wire"] = wire;
    if (storm_ms >= 0) args["pfc_storm_ms"] = storm_ms;
  }
  if (switch_cmd->parsed()) args["admin"] = switch_state;
  if (load_tables->parsed()) {
    auto m = ReadMasksFile(masks_file);
    if (!m) return usage(m.error().message, "load-tables");
    args["masks"] = std::move(*m);
  }
  if (capture_start->parsed()) {
    if (cap_file.empty() || cap_file[0] != '/') {
      char cwd[4096];
      if (!cap_file.empty() && getcwd(cwd, sizeof cwd))
        cap_file = std::string(cwd) + "/" + cap_file;
    }
    args["ports"] = cap_ports;
    args["file"] = cap_file;
    args["snaplen"] = cap_snaplen;
    args["count"] = cap_count;
  }
  if ((capture_status->parsed() && status_id->count()) ||
      (capture_stop->parsed() && stop_id->count())) {
    args["id"] = cap_id;
  }
  if (raw->parsed()) {
    if (raw_line.find_first_of("\r\n") != std::string::npos) {
      return usage("the raw request must be one line", "raw");
    }
  }
  if (!fabric_dir.empty()) {
    if (!cmd) return usage("--fabric does not take raw requests: use --socket", "raw");
    if (!FabricCommand(*cmd)) {
      return usage(fmt::format("{} acts on one switch: use --name or --socket, not --fabric",
                               app.get_subcommands().front()->get_name()));
    }
    return RunFabric(fabric_dir, *cmd, args, Options{as_json, all_counters, {}, port, timeout_ms});
  }
  if (socket_path.empty()) {
    if (name.empty() || name.find('/') != std::string::npos) {
      return usage(fmt::format("--name '{}' must be non-empty and have no '/'", name));
    }
    socket_path = DefaultSocketPath(name);
  }
  std::optional<uint32_t> only_key;
  if (key_opt->count()) only_key = key;
  if (!cmd) return RunRaw(socket_path, raw_line, as_json, timeout_ms);
  return RunOne(socket_path, *cmd, args,
                Options{as_json, all_counters, only_key, port, timeout_ms});
}

}  // namespace
}  // namespace ofan::control

int main(int argc, char** argv) {
  // 3: only handling a reply can throw; reported as a malformed reply.
  return ofan::GuardMain("ofanctl", 3, [&] { return ofan::control::Main(argc, argv); });
}
