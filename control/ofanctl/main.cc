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

#include "common/cli.h"
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
      return InvalidArgument(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    }
    std::ostringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  json j;
  try {
    j = json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {
    return InvalidArgument(fmt::format("{} is not JSON: {}", path, e.what()));
  }
  if (j.is_object()) {
    if (!j.contains("masks")) {
      return InvalidArgument(fmt::format("{}: an object needs \"masks\": [...]", path));
    }
    j = j["masks"];
  }
  if (!j.is_array()) {
    return InvalidArgument(
        fmt::format("{}: expected a list of masks or {{\"masks\": [...]}}", path));
  }
  if (j.empty()) return InvalidArgument(fmt::format("{}: no masks", path));
  for (size_t i = 0; i < j.size(); ++i) {
    if (!IsMask(j[i])) {
      return InvalidArgument(
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
    return InvalidArgument(fmt::format("--fabric {}: {}", dir, ec.message()));
  }
  if (out.empty()) {
    return InvalidArgument(fmt::format("--fabric {}: no control socket (NAME.sock) there", dir));
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

// The subcommands' own options land here; Main reads them once parsed.
struct Parsed {
  bool all_counters = false;
  uint32_t key = 0;
  CLI::Option* key_opt = nullptr;
  std::string policy, ofan_mode;
  uint32_t port = 0;
  std::string admin, wire;
  int64_t storm_ms = -1;
  std::string switch_state;
  std::string masks_file;
  std::vector<uint32_t> cap_ports;
  std::string cap_file;
  uint32_t cap_snaplen = 4096;
  uint64_t cap_count = 0;
  uint32_t cap_id = 0;
  CLI::Option* status_id = nullptr;  // capture-status --id
  CLI::Option* stop_id = nullptr;    // capture-stop --id
  std::string raw_line;
};

// A subcommand's request arguments, or the usage error that says why not.
using ArgsFn = Result<json> (*)(Parsed&);
using AddFn = void (*)(CLI::App*, Parsed&);

// One subcommand: its name, one-line summary, footer (what it prints and its
// --json; footer_json follows it), the request it sends (none: raw), its own
// options and how they become the request's arguments.
struct Subcommand {
  const char* name;
  const char* summary;
  const char* footer;
  std::optional<Command> cmd;
  AddFn add = nullptr;
  ArgsFn args = nullptr;
  const char* footer_json = "";
};

constexpr const char* kCaptureJson =
    "\n--json: {\"id\", \"active\", \"file\", \"ports\", \"snaplen\", \"count\", \"frames\"\n"
    "(written), \"dropped\" (copies a full ring could not take), \"error\" (\"\" or why it\n"
    "ended)}; without --id, {\"captures\": [...]}, every one.";

Result<json> UsageError(std::string m) { return InvalidArgument(std::move(m)); }

void AddCounters(CLI::App* s, Parsed& p) {
  s->add_flag("--all", p.all_counters, "include the counters that are zero");
}

void AddPointers(CLI::App* s, Parsed& p) {
  p.key_opt = s->add_option("--key", p.key, "show this key only")->type_name("K");
}

void AddSetPolicy(CLI::App* s, Parsed& p) {
  s->footer(
      fmt::format("POLICY: {} (ofanctl --list-policies; the switch\n"
                  "checks it). Prints the new policy; --json: the switch's status (see "
                  "status --help).\n{}",
                  lb::PolicyNameList(), kGlobalsFooter));
  s->add_option("POLICY", p.policy, "the policy, e.g. ofan")->required();
  s->add_option("--ofan-mode", p.ofan_mode,
                "how Ofan shares pointers across lcores (default: unchanged)")
      ->check(CLI::IsMember({"pofan", "atomic", "combined"}));
}

Result<json> SetPolicyArgs(Parsed& p) {
  json args{{"policy", p.policy}};
  if (!p.ofan_mode.empty()) args["ofan_mode"] = p.ofan_mode;
  return args;
}

void AddPort(CLI::App* s, Parsed& p) {
  s->add_option("N", p.port, "fat-tree port index")->required();
  s->add_option("STATE", p.admin, "up or down (optional with --wire)")
      ->check(CLI::IsMember({"up", "down"}));
  s->add_option("--wire", p.wire, "ok or cut")->check(CLI::IsMember({"ok", "cut"}));
  s->add_option("--pfc-storm-ms", p.storm_ms, "a PFC storm from the port's host, ms")
      ->check(CLI::Range(int64_t{0}, int64_t{3'600'000}));
}

Result<json> PortArgs(Parsed& p) {
  if (p.admin.empty() && p.wire.empty() && p.storm_ms < 0)
    return UsageError("port: give STATE (up|down), --wire, --pfc-storm-ms, or several");
  json args{{"port", p.port}};
  if (!p.admin.empty()) args["admin"] = p.admin;
  if (!p.wire.empty()) args["wire"] = p.wire;
  if (p.storm_ms >= 0) args["pfc_storm_ms"] = p.storm_ms;
  return args;
}

void AddSwitch(CLI::App* s, Parsed& p) {
  s->add_option("STATE", p.switch_state, "up or down")
      ->required()
      ->check(CLI::IsMember({"up", "down"}));
}

Result<json> SwitchArgs(Parsed& p) { return json{{"admin", p.switch_state}}; }

void AddLoadTables(CLI::App* s, Parsed& p) {
  s->add_option("FILE", p.masks_file, "JSON file with the masks ('-': stdin)")->required();
}

Result<json> LoadTablesArgs(Parsed& p) {
  auto m = ReadMasksFile(p.masks_file);
  if (!m) return m.error();
  return json{{"masks", std::move(*m)}};
}

void AddCaptureStart(CLI::App* s, Parsed& p) {
  s->add_option("--port", p.cap_ports, "a port to capture (repeatable)")
      ->required()
      ->type_name("N")
      ->check(CLI::Range(0, 63));
  s->add_option("FILE", p.cap_file, "the pcapng file (absolute path)")->required();
  s->add_option("--snaplen", p.cap_snaplen, "bytes kept of each frame (64..4096)")
      ->check(CLI::Range(64, 4096))
      ->capture_default_str();
  s->add_option("--count", p.cap_count, "stop after N frames (0: at capture-stop)")
      ->capture_default_str();
}

Result<json> CaptureStartArgs(Parsed& p) {
  // The switch writes the file: a relative path is the caller's.
  if (p.cap_file.empty() || p.cap_file[0] != '/') {
    char cwd[4096];
    if (!p.cap_file.empty() && getcwd(cwd, sizeof cwd))
      p.cap_file = std::string(cwd) + "/" + p.cap_file;
  }
  return json{{"ports", p.cap_ports},
              {"file", p.cap_file},
              {"snaplen", p.cap_snaplen},
              {"count", p.cap_count}};
}

void AddCaptureStatus(CLI::App* s, Parsed& p) {
  p.status_id = s->add_option("--id", p.cap_id, "this capture only")->type_name("ID");
}

void AddCaptureStop(CLI::App* s, Parsed& p) {
  p.stop_id = s->add_option("--id", p.cap_id, "this capture (default: all)")->type_name("ID");
}

Result<json> CaptureIdArgs(Parsed& p) {
  json args = json::object();
  if ((p.status_id && p.status_id->count()) || (p.stop_id && p.stop_id->count()))
    args["id"] = p.cap_id;
  return args;
}

void AddRaw(CLI::App* s, Parsed& p) {
  s->add_option("JSON", p.raw_line, "the request line")->required();
}

Result<json> RawArgs(Parsed& p) {
  if (p.raw_line.find_first_of("\r\n") != std::string::npos)
    return UsageError("the raw request must be one line");
  return json::object();
}

// Every subcommand, in the order --help lists them.
const Subcommand kSubcommands[] = {
    {"version", "the switch's version and control protocol version",
     "Prints ofan-dp's version and protocol; --json: {\"ofan_dp\", \"protocol\"}.",
     Command::kVersion},
    {"status", "the switch: name, place in the fabric, policy, uptime, workers",
     "--json: {\"name\", \"fabric\": {k, levels, switch, role, pod, index}, \"policy\",\n"
     "\"ofan_mode\", \"pipe_size\", \"generation\", \"uplinks\", \"running\", \"uptime_s\",\n"
     "\"workers\": [{worker, lcore, ports, busy_loops, idle_loops, sleeps, sleep_us,\n"
     "blocking (waits on its ports' AF_XDP sockets, not a timer), traffic_wakeups}]}.",
     Command::kStatus},
    {"counters", "packet counters summed over the workers, and drops by reason",
     "The table lists the non-zero counters (one column per worker when there are several),\n"
     "then the drops by reason. --json: {\"total\": {name: n}, \"drops\": {reason: n},\n"
     "\"drops_total\", \"per_worker\": [{name: n}, ...]} with every counter (--all only\n"
     "changes the table).",
     Command::kCounters, AddCounters},
    {"ports", "one row per port: direction, admin and link state, MACs, rx/tx",
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
     "timeout_us: the longest a frame waits)}].",
     Command::kPorts},
    {"queues", "egress queues: occupancy now, max and average, drops, ECN marks, PFC pause",
     "Max and average are since the last reset-queues. --json: [{port, bytes, packets,\n"
     "priority_packets, max_bytes, max_packets, avg_bytes, avg_packets, drops_buffer,\n"
     "ecn_marked, shaper_lag_bytes (line time lost while frames waited, since the last\n"
     "reset: the switch lacked CPU), paused, limit_bytes, ecn_bytes, pfc and reorder\n"
     "(as ports has them)}].",
     Command::kQueues},
    {"pointers", "the forwarding table: per key (destination x class) the uplink order",
     "Shows each key's uplink order and, for shared Ofan, its pointer (counter).\n"
     "--json: {\"policy\", \"ofan_mode\", \"uplinks\", \"keys\": [{key, dest, class (data|ack),\n"
     "order, counter?}]}; with --key, \"keys\" holds that key only.",
     Command::kPointers, AddPointers},
    {"set-policy", "switch the load-balancing policy (atomically, without stopping traffic)", "",
     Command::kSetPolicy, AddSetPolicy, SetPolicyArgs},
    {"port", "set a port's admin state (down: no traffic, no uplink use), or cut its wire",
     "Prints the port's new state; --json: every port (see ports --help).\n"
     "--wire cut: the port's cable is cut behind the switch's back (an emulated\n"
     "silent failure: the port stays up and in use, what it sends is lost and\n"
     "counted drop_link_loss); --wire ok mends it. --pfc-storm-ms N: the host behind\n"
     "the port sends continuous PFC pause for N ms of emulated time, as a broken\n"
     "NIC does (0 ends it; the shared engine with PFC).",
     Command::kSetPort, AddPort, PortArgs},
    {"switch", "stop or resume this switch (shared engine: the process stays)",
     "down: frames that reach it and those it queued are dropped and counted\n"
     "(drop_switch_down); its socket still answers. Prints its state; --json: its\n"
     "status (see status --help).",
     Command::kSwitchAdmin, AddSwitch, SwitchArgs},
    {"load-tables", "load the valid-uplink masks, one per destination (the agent's tables)",
     "FILE holds JSON: a list of masks, or {\"masks\": [...]}; a mask is a number or a\n"
     "string such as \"0x3\" (bit i = uplink i); '-' reads stdin. Example: [\"0x3\", 1, 2, 3].\n"
     "Prints the new table generation; --json: the switch's status (see status --help).",
     Command::kLoadTables, AddLoadTables, LoadTablesArgs},
    {"reset-queues", "restart the queues' max and average statistics", "--json: {}.",
     Command::kResetQueues},
    {"agent", "the switch's control agent as it last reported: neighbours, BGP, BFD, masks",
     "ofan-agent reports each cycle to the switch (agent_report), which keeps the last one.\n"
     "--json: {\"report\": the agent's status (ofan-agent --json's object) or null,\n"
     "\"age_ms\": how long ago it came, or null}.",
     Command::kAgent},
    {"capture-start", "write copies of ports' frames (both directions) to a pcapng file",
     "The switch writes FILE (an absolute path; made or truncated) as pcapng, one interface\n"
     "per port named SWITCH:pPORT, each frame's direction in its flags; read it with\n"
     "tshark -r FILE or Wireshark. Ends at --count frames or at capture-stop.",
     Command::kCaptureStart, AddCaptureStart, CaptureStartArgs, kCaptureJson},
    {"capture-status", "what the captures are doing: file, frames written, dropped", "",
     Command::kCaptureStatus, AddCaptureStatus, CaptureIdArgs, kCaptureJson + 1},
    {"capture-stop", "end a capture, or all of them (their files are then complete)", "",
     Command::kCaptureStop, AddCaptureStop, CaptureIdArgs, kCaptureJson + 1},
    {"raw", "send one raw request line and print the whole reply",
     "JSON is sent as given (one line), e.g. '{\"v\":1,\"cmd\":\"pointers\"}'.\n"
     "Prints the reply object indented; --json: the reply line exactly as\n"
     "received. Exit code 1 when the reply says \"ok\": false.",
     std::nullopt, AddRaw, RawArgs},
};

// The options before (or after) the command.
struct Globals {
  std::string socket_path, name{kDefaultSwitchName}, fabric_dir;
  bool as_json = false, list_policies = false;
  int timeout_ms = kDefaultTimeoutMs;
};

void AddGlobals(CLI::App& app, Globals& g) {
  app.name("ofanctl");
  app.set_version_flag("--version", fmt::format("ofanctl {}", kOfanVersion));
  app.require_subcommand(0, 1);  // none only with --list-policies
  app.fallthrough();  // global options may follow the command too (inherited by subcommands)
  app.add_option("--socket", g.socket_path,
                 fmt::format("control socket path (default {}; wins over --name)",
                             DefaultSocketPath("<name>")))
      ->type_name("PATH");
  app.add_option("--name", g.name,
                 fmt::format("switch name: the socket is {}", DefaultSocketPath("<name>")))
      ->type_name("NAME")
      ->capture_default_str();
  app.add_option("--fabric", g.fabric_dir,
                 "every switch whose control socket (NAME.sock) is in DIR, e.g. ofan-emu's\n"
                 "/run/ofan-emu/FABRIC/sock: one section per switch (agent, status: one row)")
      ->type_name("DIR");
  app.add_flag("--json", g.as_json, "print the switch's \"result\" object as JSON, not tables");
  app.add_flag("--list-policies", g.list_policies, std::string(lb::kListPoliciesHelp));
  app.add_option("--timeout-ms", g.timeout_ms,
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
}

int Usage(const std::string& m, const std::string& cmd = "") {
  std::cerr << "ofanctl: " << m << "\n(see ofanctl " << (cmd.empty() ? "" : cmd + " ")
            << "--help)\n";
  return kExitUsage;
}

// A command line CLI11 refused: the reason, and which --help to read.
int ParseFailed(CLI::App& app, const CLI::ParseError& e) {
  std::string what = e.what(), cmd;
  for (const CLI::App* s : app.get_subcommands()) cmd = s->get_name();
  if (cmd.empty()) {
    const auto rest = app.remaining();
    if (rest.empty()) {
      what = "missing COMMAND";
    } else if (rest.front().rfind('-', 0) != 0) {
      what = fmt::format("unknown command '{}'", rest.front());
    }
  }
  return Usage(what, cmd);
}

int Main(int argc, char** argv) {
  CLI::App app{
      "ofanctl: the command line of ofan-dp's control socket (a unix socket speaking JSON,\n"
      "one request and one reply per line)."};
  Globals g;
  AddGlobals(app, g);
  Parsed p;
  std::vector<CLI::App*> apps;
  for (const Subcommand& sc : kSubcommands) {
    CLI::App* s = app.add_subcommand(sc.name, sc.summary);
    s->footer(std::string(sc.footer) + sc.footer_json + "\n" + kGlobalsFooter);
    if (sc.add) sc.add(s, p);
    apps.push_back(s);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return ParseFailed(app, e);
  }
  if (ParseOnly()) return kExitOk;
  if (g.list_policies) {
    std::cout << (g.as_json ? JsonText(lb::PolicyListJson(), 1) + "\n" : lb::PolicyListText());
    return kExitOk;
  }
  const Subcommand* sc = nullptr;
  for (size_t i = 0; i < apps.size(); ++i) {
    if (apps[i]->parsed()) sc = &kSubcommands[i];
  }
  if (!sc) return Usage("missing COMMAND");

  // What to send; checked before connecting. No command: raw.
  json args = json::object();
  if (sc->args) {
    auto a = sc->args(p);
    if (!a) return Usage(a.error().message, sc->name);
    args = std::move(*a);
  }
  const std::optional<Command> cmd = sc->cmd;
  if (!g.fabric_dir.empty()) {
    if (!cmd) return Usage("--fabric does not take raw requests: use --socket", "raw");
    if (!FabricCommand(*cmd)) {
      return Usage(
          fmt::format("{} acts on one switch: use --name or --socket, not --fabric", sc->name));
    }
    return RunFabric(g.fabric_dir, *cmd, args,
                     Options{g.as_json, p.all_counters, {}, p.port, g.timeout_ms});
  }
  if (g.socket_path.empty()) {
    if (g.name.empty() || g.name.find('/') != std::string::npos) {
      return Usage(fmt::format("--name '{}' must be non-empty and have no '/'", g.name));
    }
    g.socket_path = DefaultSocketPath(g.name);
  }
  std::optional<uint32_t> only_key;
  if (p.key_opt && p.key_opt->count()) only_key = p.key;
  if (!cmd) return RunRaw(g.socket_path, p.raw_line, g.as_json, g.timeout_ms);
  return RunOne(g.socket_path, *cmd, args,
                Options{g.as_json, p.all_counters, only_key, p.port, g.timeout_ms});
}

}  // namespace
}  // namespace ofan::control

int main(int argc, char** argv) {
  // 3: only handling a reply can throw; reported as a malformed reply.
  return ofan::GuardMain("ofanctl", 3, [&] { return ofan::control::Main(argc, argv); });
}
