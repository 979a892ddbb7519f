#include "dataplane/control_socket.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "common/json_text.h"
#include "common/steady_ms.h"
#include "common/version.h"
#include "dataplane/control_views.h"
#include "dataplane/switch.h"

namespace ofan::dp {
namespace {

using control::Command;
using control::kProtocolVersion;
using control::ReplyError;
using nlohmann::json;

constexpr size_t kMaxLine = control::kMaxRequestBytes;
constexpr size_t kMaxClients = 16;

json Ok(json result) {
  return {{"v", kProtocolVersion}, {"ok", true}, {"result", std::move(result)}};
}
json Fail(ReplyError code, const std::string& e) {
  return {{"v", kProtocolVersion},
          {"ok", false},
          {"error", e},
          {"code", control::ReplyErrorName(code)}};
}
// A request that failed with `e`: its message, and the code of its kind.
json Fail(const Error& e) { return Fail(control::ReplyErrorOf(e.code), e.message); }

Result<lb::PortMask> MaskOf(const json& j) {
  if (j.is_number_unsigned()) return j.get<lb::PortMask>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0)
    return static_cast<lb::PortMask>(j.get<int64_t>());
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    try {
      size_t pos = 0;
      const uint64_t v = std::stoull(s, &pos, 0);
      if (pos == s.size()) return static_cast<lb::PortMask>(v);
    } catch (...) {
    }
    // Quoted, not dumped: an array nested a million deep would take the
    // recursive dump() through the stack.
    constexpr size_t kQuote = 40;
    return InvalidArgument(fmt::format("'{}{}' is not a port mask", s.substr(0, kQuote),
                                       s.size() > kQuote ? "..." : ""));
  }
  return InvalidArgument(fmt::format("a port mask is a number or a string, not {}", j.type_name()));
}

// A JSON integer as the exact value it is, if it is one in [lo, hi].
std::optional<int64_t> IntIn(const json& j, int64_t lo, int64_t hi) {
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(hi)) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (!j.is_number_integer()) return std::nullopt;
  const int64_t v = j.get<int64_t>();
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

// set_policy: the policy (and Ofan mode) switched atomically.
json HandleSetPolicy(Switch& sw, const json& req) {
  if (!req.contains("policy") || !req["policy"].is_string())
    return Fail(ReplyError::kBadArgument, "set_policy needs 'policy'");
  auto kind = lb::ParsePolicy(req["policy"].get<std::string>());
  if (!kind) return Fail(kind.error());
  LbChoice lb{*kind, sw.config().ofan_mode};
  if (req.contains("ofan_mode")) {
    if (!req["ofan_mode"].is_string())
      return Fail(ReplyError::kBadArgument, "'ofan_mode' must be a string");
    if (Status s = ApplyOfanMode(req["ofan_mode"].get<std::string>(), lb); !s)
      return Fail(s.error());
  }
  if (Status s = sw.SetPolicy(lb); !s) return Fail(s.error());
  return Ok(StatusJson(sw.TakeSnapshot({.ports = false})));
}

// set_port: admin state, the wire, a PFC storm; all checked before any is applied.
json HandleSetPort(Switch& sw, const json& req) {
  const auto port = req.contains("port") ? IntIn(req["port"], 0, UINT32_MAX) : std::nullopt;
  if (!port) return Fail(ReplyError::kBadArgument, "set_port needs 'port' (a port number)");
  // admin: the port up or down, as the switch sees it (carrier);
  // wire: its cable cut or whole, which the switch does not see (an
  // emulated silent failure). At least one; both checked first.
  std::optional<bool> admin_up, wire_cut;
  if (req.contains("admin")) {
    const json& a = req["admin"];
    if (!a.is_string() || (a != "up" && a != "down"))
      return Fail(ReplyError::kBadArgument, "'admin' must be up or down");
    admin_up = a == "up";
  }
  if (req.contains("wire")) {
    const json& w = req["wire"];
    if (!w.is_string() || (w != "ok" && w != "cut"))
      return Fail(ReplyError::kBadArgument, "'wire' must be ok or cut");
    wire_cut = w == "cut";
  }
  // pfc_storm_ms: the host behind the port sends continuous pause
  // that long (0 ends it): a broken NIC, for the PFC watchdog.
  std::optional<uint32_t> storm_ms;
  if (req.contains("pfc_storm_ms")) {
    const auto v = IntIn(req["pfc_storm_ms"], 0, 3'600'000);
    if (!v) return Fail(ReplyError::kBadArgument, "'pfc_storm_ms' must be in 0..3600000");
    storm_ms = static_cast<uint32_t>(*v);
  }
  if (!admin_up && !wire_cut && !storm_ms) {
    return Fail(ReplyError::kBadArgument,
                "set_port needs 'admin': up|down, 'wire': ok|cut, or 'pfc_storm_ms'");
  }
  const auto pn = static_cast<uint32_t>(*port);
  if (storm_ms) {
    if (Status s = sw.SetPortPfcStorm(pn, *storm_ms); !s) return Fail(s.error());
  }
  if (wire_cut) {
    if (Status s = sw.SetPortWire(pn, *wire_cut); !s) return Fail(s.error());
  }
  if (admin_up) {
    if (Status s = sw.SetPortAdmin(pn, *admin_up); !s) return Fail(s.error());
  }
  return Ok(PortsJson(sw.TakeSnapshot()));
}

// load_tables: the valid-uplink masks, one per destination.
json HandleLoadTables(Switch& sw, const json& req) {
  if (!req.contains("masks") || !req["masks"].is_array())
    return Fail(ReplyError::kBadArgument, "load_tables needs 'masks': [...]");
  std::vector<lb::PortMask> masks;
  for (const json& m : req["masks"]) {
    auto v = MaskOf(m);
    if (!v) return Fail(v.error());
    masks.push_back(*v);
  }
  if (Status s = sw.LoadMasks(masks); !s) return Fail(s.error());
  return Ok(StatusJson(sw.TakeSnapshot({.ports = false})));
}

// capture_start: a pcapng capture of ports to a file.
json HandleCaptureStart(Switch& sw, const json& req) {
  CaptureRequest r;
  if (!req.contains("ports") || !req["ports"].is_array() || req["ports"].empty())
    return Fail(ReplyError::kBadArgument, "capture_start needs 'ports': [port, ...]");
  for (const json& p : req["ports"]) {
    const auto v = IntIn(p, 0, 63);
    if (!v) return Fail(ReplyError::kBadArgument, "a port is a number from 0 to 63");
    r.ports.push_back(static_cast<uint32_t>(*v));
  }
  if (!req.contains("file") || !req["file"].is_string() ||
      req["file"].get<std::string>().rfind('/', 0) != 0) {
    return Fail(ReplyError::kBadArgument, "capture_start needs 'file': an absolute path to write");
  }
  r.file = req["file"].get<std::string>();
  if (req.contains("snaplen")) {
    const auto v = IntIn(req["snaplen"], 64, kCaptureMaxSnaplen);
    if (!v) {
      return Fail(ReplyError::kBadArgument,
                  fmt::format("'snaplen' is a number from 64 to {}", kCaptureMaxSnaplen));
    }
    r.snaplen = static_cast<uint32_t>(*v);
  }
  if (req.contains("count")) {
    const auto v = IntIn(req["count"], 0, INT64_MAX);
    if (!v) return Fail(ReplyError::kBadArgument, "'count' is a number, 0 or more");
    r.count = static_cast<uint64_t>(*v);
  }
  auto st = sw.StartCapture(r);
  if (!st) return Fail(st.error());
  return Ok(CaptureJson(*st));
}

// capture_status, capture_stop: one capture ('id') or all of them.
json HandleCapture(Switch& sw, const json& req, bool stop) {
  if (!req.contains("id")) {
    return Ok(CapturesJson(stop ? sw.capture().StopAll() : sw.capture().statuses()));
  }
  const auto id = IntIn(req["id"], 1, UINT32_MAX);
  if (!id) return Fail(ReplyError::kBadArgument, "'id' is a capture's id (1 or more)");
  auto st = stop ? sw.capture().Stop(static_cast<uint32_t>(*id))
                 : sw.capture().status(static_cast<uint32_t>(*id));
  if (!st) return Fail(st.error());
  return Ok(CaptureJson(*st));
}

}  // namespace

std::string ControlReplyLine(const json& reply) { return JsonText(reply) + "\n"; }

json HandleControlRequest(Switch& sw, const std::string& line) {
  json req;
  try {
    req = json::parse(line);
  } catch (const json::exception& e) {
    return Fail(ReplyError::kBadRequest, fmt::format("request is not JSON: {}", e.what()));
  }
  if (!req.is_object()) return Fail(ReplyError::kBadRequest, "request must be a JSON object");
  if (!req.contains("v") || !IntIn(req["v"], kProtocolVersion, kProtocolVersion).has_value()) {
    return Fail(
        ReplyError::kUnsupportedVersion,
        fmt::format("unsupported protocol version (this switch speaks v{})", kProtocolVersion));
  }
  if (!req.contains("cmd") || !req["cmd"].is_string())
    return Fail(ReplyError::kBadRequest, "missing 'cmd'");
  const std::string cmd = req["cmd"].get<std::string>();
  try {
    if (const auto command = control::ParseCommand(cmd)) {
      switch (*command) {
        case Command::kVersion:
          return Ok({{"protocol", kProtocolVersion}, {"ofan_dp", kOfanVersion}});
        case Command::kStatus:
          return Ok(StatusJson(sw.TakeSnapshot({.ports = false})));
        case Command::kCounters:
          return Ok(CountersJson(sw.TakeSnapshot({.ports = false})));
        case Command::kPorts:
          return Ok(PortsJson(sw.TakeSnapshot()));
        case Command::kQueues:
          return Ok(QueuesJson(sw.TakeSnapshot()));
        case Command::kPointers:
          return Ok(PointersJson(sw.TakeSnapshot({.ports = false, .keys = true})));
        case Command::kResetQueues:
          sw.ResetQueueStats();
          return Ok(json::object());
        case Command::kAgentReport: {
          if (!req.contains("report") || !req["report"].is_object())
            return Fail(ReplyError::kBadArgument, "agent_report needs 'report': {...}");
          sw.SetAgentReport(req["report"].dump(), SteadyMs());
          return Ok(json::object());
        }
        case Command::kAgent: {
          if (sw.agent_report().empty()) return Ok(json{{"report", nullptr}, {"age_ms", nullptr}});
          // Our own dump: it parses.
          return Ok(json{{"report", json::parse(sw.agent_report())},
                         {"age_ms", SteadyMs() - sw.agent_report_ms()}});
        }
        case Command::kSetPolicy:
          return HandleSetPolicy(sw, req);
        case Command::kSetPort:
          return HandleSetPort(sw, req);
        case Command::kSwitchAdmin: {
          if (!req.contains("admin") || !req["admin"].is_string())
            return Fail(ReplyError::kBadArgument, "switch_admin needs 'admin': up|down");
          const std::string a = req["admin"].get<std::string>();
          if (a != "up" && a != "down")
            return Fail(ReplyError::kBadArgument, "'admin' must be up or down");
          if (Status s = sw.SetSwitchAdmin(a == "up"); !s) return Fail(s.error());
          return Ok(StatusJson(sw.TakeSnapshot({.ports = false})));
        }
        case Command::kLoadTables:
          return HandleLoadTables(sw, req);
        case Command::kCaptureStart:
          return HandleCaptureStart(sw, req);
        case Command::kCaptureStatus:
        case Command::kCaptureStop:
          return HandleCapture(sw, req, *command == Command::kCaptureStop);
      }
    }
  } catch (const std::exception& e) {
    return Fail(ReplyError::kFailed, fmt::format("{}: {}", cmd, e.what()));
  }
  return Fail(ReplyError::kUnknownCommand, control::UnknownCommandMessage(cmd));
}

Result<std::unique_ptr<ControlServer>> ControlServer::Listen(const std::string& path, Switch* sw) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgument(fmt::format("control socket path '{}' is empty or too long", path));
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return MakeError(ErrorCode::kIo, fmt::format("socket: {}", std::strerror(errno)));
  // A stale socket from a crashed run is replaced; a live one is not.
  if (access(path.c_str(), F_OK) == 0) {
    const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    const bool live =
        probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (probe >= 0) close(probe);
    if (live) {
      close(fd);
      return MakeError(ErrorCode::kIo,
                       fmt::format("control socket {} is in use by another switch", path));
    }
    unlink(path.c_str());
  }
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const mode_t old = umask(0177);  // 0600 from the start: no window for others
  const int rc = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  umask(old);
  if (rc != 0 || listen(fd, 8) != 0) {
    const std::string e = std::strerror(errno);
    close(fd);
    return MakeError(ErrorCode::kIo, fmt::format("control socket {}: {}", path, e));
  }
  chmod(path.c_str(), 0600);
  return std::unique_ptr<ControlServer>(new ControlServer(path, fd, sw));
}

ControlServer::~ControlServer() {
  for (auto& c : clients_) close(c.fd);
  close(fd_);
  unlink(path_.c_str());
}

void ControlServer::Drop(size_t i) {
  close(clients_[i].fd);
  clients_.erase(clients_.begin() + static_cast<long>(i));
}

bool ControlServer::Poll(int timeout_ms, int extra_fd) {
  return PollAll({this}, timeout_ms, extra_fd);
}

bool ControlServer::PollAll(const std::vector<ControlServer*>& servers, int timeout_ms,
                            int extra_fd) {
  std::vector<pollfd> fds;
  std::vector<size_t> first;
  for (ControlServer* s : servers) {
    first.push_back(fds.size());
    fds.push_back({s->fd_, POLLIN, 0});
    for (auto& c : s->clients_)
      fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
  }
  const size_t nserved = fds.size();
  if (extra_fd >= 0) fds.push_back({extra_fd, POLLIN, 0});
  if (poll(fds.data(), fds.size(), timeout_ms) <= 0) return false;
  for (size_t i = 0; i < servers.size(); ++i) {
    const size_t end = i + 1 < servers.size() ? first[i + 1] : nserved;
    servers[i]->Serve(fds.data() + first[i], end - first[i]);
  }
  return extra_fd >= 0 && (fds.back().revents & POLLIN);
}

void ControlServer::Serve(const pollfd* fds, size_t nfds) {
  if (fds[0].revents & POLLIN) {
    const int c = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c >= 0) {
      if (clients_.size() >= kMaxClients) {
        close(c);
      } else {
        clients_.push_back({c, {}, {}});
      }
    }
  }
  for (size_t i = clients_.size(); i-- > 0;) {
    if (i + 1 >= nfds) continue;  // accepted in this round
    const short re = fds[i + 1].revents;
    Client& c = clients_[i];
    if (re & (POLLERR | POLLNVAL)) {
      Drop(i);
      continue;
    }
    if (re & (POLLIN | POLLHUP)) {
      char buf[65536];
      const ssize_t n = read(c.fd, buf, sizeof(buf));
      if (n <= 0) {
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          Drop(i);
          continue;
        }
      } else {
        c.in.append(buf, static_cast<size_t>(n));
        size_t nl;
        while ((nl = c.in.find('\n')) != std::string::npos) {
          const std::string line = c.in.substr(0, nl);
          c.in.erase(0, nl + 1);
          c.out += ControlReplyLine(HandleControlRequest(*sw_, line));
        }
        if (c.in.size() > kMaxLine) {
          c.out += ControlReplyLine(Fail(ReplyError::kBadRequest, "request line too long"));
          c.in.clear();
        }
      }
    }
    if (!c.out.empty()) {
      const ssize_t n = write(c.fd, c.out.data(), c.out.size());
      if (n > 0) {
        c.out.erase(0, static_cast<size_t>(n));
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        Drop(i);
        continue;
      }
      if (c.out.size() > 64 * kMaxLine) Drop(i);  // not reading its replies
    }
  }
}

}  // namespace ofan::dp
