// Network namespaces by name (/var/run/netns/<name>, as `ip netns` makes
// them): run a piece of setup inside one, so that the sockets and devices
// it opens live there. Used by uroce's hosts and by the shared fabric
// engine, which opens each switch's host ports in that switch's namespace.
#pragma once

#include <functional>
#include <string>

#include "common/result.h"

namespace ofan {

// Runs `fn` inside network namespace `netns` ("" runs it here) on the
// calling thread and switches back (setns moves only the calling thread).
Status InNetns(const std::string& netns, const std::function<Status()>& fn);

// A file descriptor closed with its owner.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_;
};

}  // namespace ofan
