// The control socket's protocol, for both ends: ofan-dp serves it
// (dataplane/control_socket.h), the client library speaks it
// (control/client/client.h), ofanctl is its command line. This comment is
// its one description.
//
// Transport: a unix stream socket, mode 0600 (its owner only), by default
// DefaultSocketPath(name) = /run/ofan/<name>.sock. Each way, one JSON object
// per line: '\n' ends it, none is inside. A request line is at most
// kMaxRequestBytes. Each request gets one reply, in order. The switch serves
// up to 16 clients at a time and drops one that does not read its replies.
//
//   request:  {"v":1, "cmd":COMMAND, ARGUMENT...}
//   reply:    {"v":1, "ok":true, "result":RESULT}
//         or  {"v":1, "ok":false, "error":MESSAGE, "code":CODE}
// "v" is kProtocolVersion, an integer (1.0 is not 1), in requests and in
// replies; the switch refuses a request of another version. Arguments are
// members of the request object next to "v" and "cmd"; members a command does
// not take are ignored. "error" says what is wrong, for people; nothing should
// parse it. "code" (ReplyError; the wire name is ReplyErrorName) says it for
// programs:
//   bad_request          the line is not JSON, not an object, has no string
//                        "cmd", or is longer than kMaxRequestBytes
//   unsupported_version  "v" is missing or not kProtocolVersion
//   unknown_command      "cmd" is none of the commands below
//   bad_argument         an argument is missing, of the wrong type or out of
//                        range, or names what the switch does not have
//   failed               the switch could not do what was asked
// A client takes an error reply without "code" (a switch older than the
// codes) and a code it does not know (a newer switch) as an error all the same.
//
// Commands (Command; the wire name is CommandName):
//   version       -> {"protocol":kProtocolVersion, "ofan_dp":kOfanVersion}
//   status        -> the switch: {name, fabric, policy, ofan_mode, pipe_size,
//                    generation, uplinks, running, uptime_s, workers, engine}
//                    engine: {kind: "per-switch" | "shared"}; shared adds
//                    {now_s, windows, lag_events, lag_max_us, lag_threshold_us,
//                    cpu_bound, reason, stopped}
//   counters      -> {total, drops, drops_total, per_worker}
//   ports         -> [{port, dev, direction, admin, link, ...}], one per port
//   queues        -> [{port, bytes, packets, max_bytes, ...}], one per port
//   pointers      -> the forwarding table: {policy, ofan_mode, uplinks, keys}
//   set_policy    policy: a policy name (e.g. "ofan"); ofan_mode (optional,
//                 default unchanged): "pofan" | "atomic" | "combined"
//                 -> the status
//   set_port      port: a port number; admin: "up" | "down" (the port, as
//                 the switch sees it); wire: "ok" | "cut" (its cable, cut
//                 behind the switch's back: a silent failure, frames counted
//                 sent and drop_link_loss); pfc_storm_ms: the host behind the
//                 port sends continuous pause that long (0 ends it; shared
//                 engine with PFC); at least one of them -> the ports
//   load_tables   masks: [m0, m1, ...], one valid-uplink mask per destination
//                 (bit i = uplink i), each a non-negative integer or a string
//                 that is one in C notation ("0x3")  -> the status
//   reset_queues  restarts the queues' max and average statistics  -> {}
//   capture_start ports: [port, ...]; file: the pcapng file to write (made or
//                 truncated by the switch); snaplen (optional, 64..4096,
//                 default 4096); count (optional: stop after this many
//                 frames; default 0, until capture_stop)  -> the capture:
//                 {id, active, file, ports, snaplen, count, frames (written),
//                 dropped (copies a full ring could not take), error ("" or
//                 why it ended early)}. Up to 8 run at once, on disjoint ports.
//   capture_status id (optional) -> that capture (running, or one of the
//                 last 16 ended); without id: {"captures": [every one]}
//   switch_admin  admin: "up" | "down": a switch of the shared engine stops
//                 (drops and counts what reaches it and what it queued) or
//                 resumes, its process and socket staying  -> the status
//   capture_stop  id (optional) -> ends that capture (its file is then
//                 complete) -> the capture; without id: ends all ->
//                 {"captures": [...]}
//   agent_report  report: an object, the switch's control agent's last cycle
//                 (control/agent/agent_cycle.h's status), kept by the switch
//                 for `agent`; the agent sends one per cycle  -> {}
//   agent         -> {"report": the last agent_report's object, or null when
//                 none came; "age_ms": how long ago it came, or null}
// The results are the switch's JSON views (dataplane/); `ofanctl COMMAND
// --help` lists their members one by one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace ofan::control {

inline constexpr int kProtocolVersion = 1;
inline constexpr size_t kMaxRequestBytes = size_t{1} << 20;
inline constexpr std::string_view kDefaultSocketDir = "/run/ofan";

// kDefaultSocketDir/<name>.sock: where the switch named `name` listens unless
// its config (control.socket) or --socket says otherwise.
std::string DefaultSocketPath(std::string_view name);

// The commands, in the order above: one row each, X(enumerator, wire name).
#define OFAN_CONTROL_COMMANDS(X)      \
  X(kVersion, "version")              \
  X(kStatus, "status")                \
  X(kCounters, "counters")            \
  X(kPorts, "ports")                  \
  X(kQueues, "queues")                \
  X(kPointers, "pointers")            \
  X(kSetPolicy, "set_policy")         \
  X(kSetPort, "set_port")             \
  X(kLoadTables, "load_tables")       \
  X(kResetQueues, "reset_queues")     \
  X(kCaptureStart, "capture_start")   \
  X(kCaptureStatus, "capture_status") \
  X(kCaptureStop, "capture_stop")     \
  X(kSwitchAdmin, "switch_admin")     \
  X(kAgentReport, "agent_report")     \
  X(kAgent, "agent")

#define OFAN_CONTROL_ENUMERATOR(id, name) id,
#define OFAN_CONTROL_NAME(id, name) std::string_view{name},

enum class Command : uint8_t { OFAN_CONTROL_COMMANDS(OFAN_CONTROL_ENUMERATOR) };

// Every command's wire name, indexed by Command.
inline constexpr std::array kCommandNames = {OFAN_CONTROL_COMMANDS(OFAN_CONTROL_NAME)};
inline constexpr size_t kNumCommands = kCommandNames.size();

// The codes of error replies, in the order above: X(enumerator, wire name).
// (Not ErrorCode: that is Result's, common/result.h.)
#define OFAN_CONTROL_REPLY_ERRORS(X)            \
  X(kBadRequest, "bad_request")                 \
  X(kUnsupportedVersion, "unsupported_version") \
  X(kUnknownCommand, "unknown_command")         \
  X(kBadArgument, "bad_argument")               \
  X(kFailed, "failed")

enum class ReplyError : uint8_t { OFAN_CONTROL_REPLY_ERRORS(OFAN_CONTROL_ENUMERATOR) };

// Every code's wire name, indexed by ReplyError.
inline constexpr std::array kReplyErrorNames = {OFAN_CONTROL_REPLY_ERRORS(OFAN_CONTROL_NAME)};

#undef OFAN_CONTROL_NAME
#undef OFAN_CONTROL_ENUMERATOR

// The enumerator a table of names indexes whose entry is `name`, if one is.
template <class Enum, size_t N>
constexpr std::optional<Enum> ParseName(const std::array<std::string_view, N>& names,
                                        std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

constexpr std::string_view CommandName(Command c) { return kCommandNames[static_cast<size_t>(c)]; }
constexpr std::optional<Command> ParseCommand(std::string_view name) {
  return ParseName<Command>(kCommandNames, name);
}

constexpr std::string_view ReplyErrorName(ReplyError e) {
  return kReplyErrorNames[static_cast<size_t>(e)];
}
constexpr std::optional<ReplyError> ParseReplyError(std::string_view name) {
  return ParseName<ReplyError>(kReplyErrorNames, name);
}

// The code of a reply to a request that failed with `code`: what the client
// can change (a value, a name, a combination) is bad_argument, the rest failed.
constexpr ReplyError ReplyErrorOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
    case ErrorCode::kUnsupported:
    case ErrorCode::kInfeasible:
      return ReplyError::kBadArgument;
    case ErrorCode::kIo:
    case ErrorCode::kInternal:
      return ReplyError::kFailed;
  }
  return ReplyError::kFailed;
}

// "version, status, ..., reset_queues": every command, for messages.
const std::string& CommandList();
// The switch's error message for an unknown command.
std::string UnknownCommandMessage(std::string_view cmd);

}  // namespace ofan::control
