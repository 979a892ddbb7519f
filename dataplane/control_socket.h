// The switch's control socket: a unix stream socket (mode 0600) that speaks
// versioned JSON, one object per line each way; the protocol (requests,
// replies, commands) is common/protocol/protocol.h.
// Served by the control thread between its other duties; a bad request gets
// an error reply, never a crash, and a client that misbehaves is dropped.
#pragma once

#include <poll.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/protocol/protocol.h"
#include "common/result.h"

namespace ofan::dp {

class Switch;

// Handles one request line; always returns a reply object.
nlohmann::json HandleControlRequest(Switch& sw, const std::string& line);

// A reply as the line the socket sends, newline included. Never throws: bytes
// of the request that an error message quotes (a JSON parse error does) may be
// invalid UTF-8, and they are sent as U+FFFD.
std::string ControlReplyLine(const nlohmann::json& reply);

class ControlServer {
 public:
  static Result<std::unique_ptr<ControlServer>> Listen(const std::string& path, Switch* sw);
  ~ControlServer();
  // Accepts, reads and answers whatever is ready, waiting at most timeout_ms
  // or until extra_fd (if not -1) is readable; returns whether it is.
  bool Poll(int timeout_ms, int extra_fd = -1);
  // Several servers in one poll (the shared engine's switches, one socket each).
  static bool PollAll(const std::vector<ControlServer*>& servers, int timeout_ms,
                      int extra_fd = -1);
  const std::string& path() const { return path_; }

 private:
  struct Client {
    int fd;
    std::string in;
    std::string out;
  };
  ControlServer(std::string path, int fd, Switch* sw) : path_(std::move(path)), fd_(fd), sw_(sw) {}
  void Drop(size_t i);
  void Serve(const ::pollfd* fds, size_t nfds);  // its own fds of a poll
  std::string path_;
  int fd_;
  Switch* sw_;
  std::vector<Client> clients_;
};

}  // namespace ofan::dp
