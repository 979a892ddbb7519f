#include "dataplane/idle_wait.h"

#include <dirent.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>

namespace ofan::dp {

std::vector<int> AfXdpFds() {
  std::vector<int> out;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return out;
  const int dir_fd = dirfd(d);
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dir_fd) continue;
    int domain = 0;
    socklen_t len = sizeof(domain);
    if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
        domain == AF_XDP) {
      out.push_back(static_cast<int>(fd));
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

IdleWait::~IdleWait() {
  if (epfd_ >= 0) close(epfd_);
  if (efd_ >= 0) close(efd_);
}

bool IdleWait::Init(const std::vector<int>& fds) {
  if (fds.empty()) return true;
  for (const int fd : fds) {
    if (fd < 0) return true;  // a port without a socket: keep sleeping
  }
  return InitAlways(fds);
}

bool IdleWait::InitAlways(const std::vector<int>& fds) {
  efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (efd_ < 0 || epfd_ < 0) return false;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = efd_;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, efd_, &ev) != 0) return false;
  for (const int fd : fds) {
    if (fd < 0) continue;
    ev.data.fd = fd;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) return false;
  }
  return true;
}

void IdleWait::Wait(uint32_t us) { Wait(us, nullptr, 0); }

uint32_t IdleWait::Wait(uint32_t us, int* ready, uint32_t max_ready) {
  constexpr int kEvents = 16;
  epoll_event ev[kEvents];
  const timespec ts{static_cast<time_t>(us / 1'000'000), static_cast<long>(us % 1'000'000) * 1000};
  const int r = epoll_pwait2(epfd_, ev, kEvents, &ts, nullptr);
  uint32_t n = 0;
  // A full array may have left ready fds out; an error names none.
  bool unknown = r < 0 || r == kEvents, traffic = false;
  for (int i = 0; i < r; ++i) {
    if (ev[i].data.fd == efd_) {
      uint64_t v;
      while (read(efd_, &v, sizeof(v)) == sizeof(v)) {
      }
      continue;
    }
    traffic = true;
    if (n < max_ready) {
      ready[n++] = ev[i].data.fd;
    } else {
      unknown = true;
    }
  }
  if (traffic) by_traffic_.fetch_add(1, std::memory_order_relaxed);
  return unknown ? kReadyUnknown : n;
}

void IdleWait::Kick() {
  notes_.fetch_add(1, std::memory_order_seq_cst);
  if (efd_ < 0) return;
  const uint64_t one = 1;
  ssize_t r;
  do {
    r = write(efd_, &one, sizeof(one));
  } while (r < 0 && errno == EINTR);
}

}  // namespace ofan::dp
