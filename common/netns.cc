#include "common/netns.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ofan {
namespace {

std::string Errno(const std::string& what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

}  // namespace

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

Status InNetns(const std::string& netns, const std::function<Status()>& fn) {
  if (netns.empty()) return fn();
  // The calling thread's own namespace: threads that set up on their own
  // each come back to where they were.
  Fd self(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (self.get() < 0) return MakeError(ErrorCode::kIo, Errno("open /proc/thread-self/ns/net"));
  const std::string path = "/var/run/netns/" + netns;
  Fd target(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (target.get() < 0) return MakeError(ErrorCode::kNotFound, Errno(path));
  if (setns(target.get(), CLONE_NEWNET) != 0)
    return MakeError(ErrorCode::kIo, Errno("setns " + netns));
  Status s = fn();
  if (setns(self.get(), CLONE_NEWNET) != 0)
    return MakeError(ErrorCode::kInternal, Errno("setns back to our namespace"));
  return s;
}

}  // namespace ofan
