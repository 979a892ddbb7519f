// A client of ofan-dp's control socket: a unix stream socket that speaks
// versioned JSON, one object per line each way (the protocol is
// common/protocol/protocol.h). Used by ofanctl; meant to be reused by
// ofan-agent.
//
// Failures of the transport (no socket, refused, timeout, connection closed,
// a reply that is not a protocol object) are errors of the Result; a switch
// that answers with an error is a Reply with ok == false.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/protocol/protocol.h"
#include "common/result.h"

namespace ofan::control {

inline constexpr std::string_view kDefaultSwitchName = "ofan-dp";
inline constexpr int kDefaultTimeoutMs = 5000;
// Replies larger than this are refused (a runaway or hostile peer).
inline constexpr size_t kMaxReplyBytes = size_t{256} << 20;

// One reply of the switch.
// The implicit moves are noexcept; tidy sees nlohmann::json's assertions in them.
struct Reply {  // NOLINT(bugprone-exception-escape)
  bool ok = false;
  nlohmann::json result;  // when ok (may be an object, an array, ...)
  std::string error;      // when !ok
  nlohmann::json raw;     // the whole reply object
  std::string line;       // the reply line exactly as received, without '\n'
  // When !ok: the reply's "code", if it has one this client knows (an older
  // switch sends none, a newer one may send codes added since).
  std::optional<ReplyError> code;
};

// Parses and checks one reply line ({"v":1,"ok":...}); errors say what is
// wrong. An error reply's "code", when there is one, must be a string.
Result<Reply> ParseReply(const std::string& line);

class ControlClient {
 public:
  // Connects to the socket at `path`. `timeout_ms` (> 0) bounds the connect
  // and, later, each Call. Errors: kInvalidArgument (unusable path), kIo.
  static Result<std::unique_ptr<ControlClient>> Connect(const std::string& path, int timeout_ms);
  ~ControlClient();
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  // Sends {"v":1,"cmd":CommandName(cmd), ...args} and waits for its reply.
  Result<Reply> Command(control::Command cmd,
                        const nlohmann::json& args = nlohmann::json::object());
  // Sends one request object (sent as is: "v" and "cmd" are the caller's).
  Result<Reply> Call(const nlohmann::json& request);
  // Sends one request line (no '\n' inside; one is appended) and waits for
  // one reply line. kInvalidArgument if `line` holds a newline; kIo for the
  // transport; kInternal for a malformed reply.
  Result<Reply> CallLine(const std::string& line);

  const std::string& path() const { return path_; }
  int timeout_ms() const { return timeout_ms_; }

 private:
  ControlClient(std::string path, int fd, int timeout_ms)
      : path_(std::move(path)), fd_(fd), timeout_ms_(timeout_ms) {}
  Status SendAll(const std::string& data, int64_t deadline_ms);
  Result<std::string> ReadLine(int64_t deadline_ms);

  std::string path_;
  int fd_ = -1;
  int timeout_ms_ = kDefaultTimeoutMs;
  bool broken_ = false;  // a failed call leaves the stream out of step
  std::string in_;       // bytes received after the last reply line
};

}  // namespace ofan::control
