#include "control/agent/route_events.h"

#include <errno.h>
#include <fmt/format.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ofan::agent {

Result<RouteEvents> RouteEvents::Open() {
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
  if (fd < 0) {
    return MakeError(ErrorCode::kIo, fmt::format("rtnetlink socket: {}", ::strerror(errno)));
  }
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  sa.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_ROUTE | RTMGRP_NEIGH;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    const int e = errno;
    ::close(fd);
    return MakeError(ErrorCode::kIo, fmt::format("rtnetlink bind: {}", ::strerror(e)));
  }
  return RouteEvents(fd);
}

RouteEvents::~RouteEvents() {
  if (fd_ >= 0) ::close(fd_);
}

bool RouteEvents::Drain() {
  char buf[16384];
  bool any = false;
  for (;;) {
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      any = true;
      continue;
    }
    // ENOBUFS: the kernel dropped messages for us; something changed anyway.
    if (n < 0 && errno == ENOBUFS) {
      any = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return any;  // EAGAIN (drained), or an error that a later cycle's reads will surface
  }
}

}  // namespace ofan::agent
