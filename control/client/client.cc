#include "control/client/client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/json_text.h"
#include "common/steady_ms.h"

namespace ofan::control {
namespace {

using nlohmann::json;

int Remaining(int64_t deadline_ms) {
  return static_cast<int>(std::clamp<int64_t>(deadline_ms - SteadyMs(), 0, 1 << 30));
}

// Waits for `events` on fd until the deadline: 1 ready, 0 timed out, -1 error
// (errno set); EINTR is retried here so callers handle only the outcomes.
int WaitFor(int fd, short events, int64_t deadline_ms) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int left = Remaining(deadline_ms);
    const int rc = left > 0 ? poll(&p, 1, left) : 0;
    if (rc < 0 && errno == EINTR) continue;
    return rc < 0 ? -1 : rc;
  }
}

std::string ConnectHint(int err) {
  switch (err) {
    case ENOENT:
      return "no such socket (is ofan-dp running? start it, or name its socket with --socket or "
             "--name)";
    case ECONNREFUSED:
      return "connection refused (a stale socket: ofan-dp is not running, or it crashed)";
    case EACCES:
    case EPERM:
      return "permission denied (the socket is mode 0600: run as the user that started ofan-dp, "
             "e.g. with sudo)";
    case ENOTSOCK:
      return "not a socket";
    case ENOTDIR:
      return "a component of the path is not a directory";
    default:
      return std::strerror(err);
  }
}

}  // namespace

Result<Reply> ParseReply(const std::string& line) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception& e) {
    return MakeError(ErrorCode::kInternal, fmt::format("the reply is not JSON ({})", e.what()));
  }
  if (!j.is_object()) return MakeError(ErrorCode::kInternal, "the reply is not a JSON object");
  if (!j.contains("v") || !j["v"].is_number_integer()) {
    return MakeError(ErrorCode::kInternal, "the reply has no protocol version 'v'");
  }
  if (j["v"].get<int64_t>() != kProtocolVersion) {
    return MakeError(ErrorCode::kInternal,
                     fmt::format("the switch speaks control protocol v{}, ofanctl speaks v{}",
                                 j["v"].dump(), kProtocolVersion));
  }
  if (!j.contains("ok") || !j["ok"].is_boolean()) {
    return MakeError(ErrorCode::kInternal, "the reply has no boolean 'ok'");
  }
  Reply r;
  r.ok = j["ok"].get<bool>();
  if (r.ok) {
    if (!j.contains("result")) return MakeError(ErrorCode::kInternal, "the reply has no 'result'");
    r.result = j["result"];
  } else {
    if (!j.contains("error") || !j["error"].is_string()) {
      return MakeError(ErrorCode::kInternal, "an error reply without an 'error' message");
    }
    r.error = j["error"].get<std::string>();
    if (j.contains("code")) {
      if (!j["code"].is_string()) {
        return MakeError(ErrorCode::kInternal, "an error reply whose 'code' is not a string");
      }
      r.code = ParseReplyError(j["code"].get<std::string>());
    }
  }
  r.raw = std::move(j);
  r.line = line;
  return r;
}

Result<std::unique_ptr<ControlClient>> ControlClient::Connect(const std::string& path,
                                                              int timeout_ms) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgument(fmt::format("socket path '{}' is empty or longer than {} bytes", path,
                                       sizeof(addr.sun_path) - 1));
  }
  if (timeout_ms <= 0) {
    return InvalidArgument("the timeout must be positive");
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return MakeError(ErrorCode::kIo, fmt::format("socket: {}", std::strerror(errno)));
  const int64_t deadline = SteadyMs() + timeout_ms;
  // A unix socket connects at once or fails, except when the listener's
  // backlog is full (EAGAIN): then retry until the deadline.
  while (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN && Remaining(deadline) > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(10, Remaining(deadline))));
      continue;
    }
    close(fd);
    if (err == EAGAIN) {
      return MakeError(ErrorCode::kIo,
                       fmt::format("cannot connect to {}: no room in its backlog for {} ms "
                                   "(ofan-dp is running but not accepting: stuck or overloaded?)",
                                   path, timeout_ms));
    }
    return MakeError(ErrorCode::kIo,
                     fmt::format("cannot connect to {}: {}", path, ConnectHint(err)));
  }
  return std::unique_ptr<ControlClient>(new ControlClient(path, fd, timeout_ms));
}

ControlClient::~ControlClient() {
  if (fd_ >= 0) close(fd_);
}

Status ControlClient::SendAll(const std::string& data, int64_t deadline_ms) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      const int err = errno;
      return MakeError(ErrorCode::kIo,
                       fmt::format("{} closed the connection while the request was sent ({}): "
                                   "did ofan-dp exit or drop this client?",
                                   path_, std::strerror(err)));
    }
    const int rc = WaitFor(fd_, POLLOUT, deadline_ms);
    if (rc < 0) return MakeError(ErrorCode::kIo, fmt::format("poll: {}", std::strerror(errno)));
    if (rc == 0) {
      return MakeError(ErrorCode::kIo,
                       fmt::format("timed out after {} ms sending the request to {} (ofan-dp is "
                                   "not reading its control socket: stuck or overloaded?)",
                                   timeout_ms_, path_));
    }
  }
  return {};
}

Result<std::string> ControlClient::ReadLine(int64_t deadline_ms) {
  size_t scanned = 0;
  for (;;) {
    const size_t nl = in_.find('\n', scanned);
    if (nl != std::string::npos) {
      std::string line = in_.substr(0, nl);
      in_.erase(0, nl + 1);
      return line;
    }
    scanned = in_.size();
    if (in_.size() > kMaxReplyBytes) {
      return MakeError(ErrorCode::kInternal,
                       fmt::format("the reply is longer than {} bytes", kMaxReplyBytes));
    }
    char buf[65536];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      continue;
    }
    // A peer that closes with our request unread resets the connection.
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      if (in_.empty()) {
        return MakeError(ErrorCode::kIo,
                         fmt::format("{} closed the connection without replying (did ofan-dp "
                                     "exit, or is it already serving its maximum of clients?)",
                                     path_));
      }
      return MakeError(ErrorCode::kIo,
                       fmt::format("{} closed the connection in the middle of a reply (after {} "
                                   "bytes): did ofan-dp exit?",
                                   path_, in_.size()));
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return MakeError(ErrorCode::kIo,
                       fmt::format("reading from {}: {}", path_, std::strerror(errno)));
    }
    const int rc = WaitFor(fd_, POLLIN, deadline_ms);
    if (rc < 0) return MakeError(ErrorCode::kIo, fmt::format("poll: {}", std::strerror(errno)));
    if (rc == 0) {
      return MakeError(ErrorCode::kIo,
                       fmt::format("no {}reply from {} within {} ms (is ofan-dp stuck or "
                                   "overloaded? raise --timeout-ms for very large replies)",
                                   in_.empty() ? "" : "complete ", path_, timeout_ms_));
    }
  }
}

Result<Reply> ControlClient::CallLine(const std::string& line) {
  if (line.find('\n') != std::string::npos || line.find('\r') != std::string::npos) {
    return InvalidArgument("a request must be one line (no newline inside)");
  }
  if (broken_) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("the connection to {} failed earlier; reconnect", path_));
  }
  const int64_t deadline = SteadyMs() + timeout_ms_;
  broken_ = true;  // until this call completes
  if (Status s = SendAll(line + "\n", deadline); !s) return s.error();
  auto got = ReadLine(deadline);
  if (!got) return got.error();
  broken_ = false;
  auto r = ParseReply(*got);
  if (!r) {
    return MakeError(r.error().code,
                     fmt::format("malformed reply from {}: {} (is this an ofan-dp control "
                                 "socket?)",
                                 path_, r.error().message));
  }
  return r;
}

Result<Reply> ControlClient::Call(const json& request) {
  // Invalid UTF-8 in a caller's string is replaced rather than thrown on.
  return CallLine(JsonText(request));
}

Result<Reply> ControlClient::Command(control::Command cmd, const json& args) {
  json req = {{"v", kProtocolVersion}, {"cmd", CommandName(cmd)}};
  if (args.is_object()) {
    for (auto it = args.begin(); it != args.end(); ++it) req[it.key()] = it.value();
  }
  return Call(req);
}

}  // namespace ofan::control
