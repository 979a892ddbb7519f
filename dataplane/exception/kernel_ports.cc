#include "dataplane/exception/kernel_ports.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/if.h>
#include <linux/if_arp.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/netns.h"

namespace ofan::dp {
namespace {

Error Io(const std::string& m) { return MakeError(ErrorCode::kIo, m); }

// One ioctl on an interface by name, through `sock` (a socket of the
// namespace the interface is in).
Status IfIoctl(int sock, unsigned long req, ifreq& ifr, const char* what) {
  if (ioctl(sock, req, &ifr) != 0) {
    return Io(fmt::format("{} {}: {}", what, ifr.ifr_name, std::strerror(errno)));
  }
  return {};
}

// A TAP named spec.name, up, with the spec's MAC and MTU: its fd, non-
// blocking. Runs inside the namespace (TUNSETIFF makes the device in the
// calling thread's namespace).
Result<int> MakeTap(const KernelPorts::PortSpec& spec) {
  if (spec.name.empty() || spec.name.size() >= IFNAMSIZ) {
    return InvalidArgument(fmt::format("port {}: interface name '{}' (1 to {} characters)",
                                       spec.port, spec.name, IFNAMSIZ - 1));
  }
  Fd fd(open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return Io(fmt::format("/dev/net/tun: {}", std::strerror(errno)));
  ifreq ifr{};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  std::memcpy(ifr.ifr_name, spec.name.data(), spec.name.size());
  if (ioctl(fd.get(), TUNSETIFF, &ifr) != 0) {
    return Io(fmt::format("TAP {}: {}{}", spec.name, std::strerror(errno),
                          errno == EBUSY ? " (an interface of that name exists)" : ""));
  }
  Fd sock(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (sock.get() < 0) return Io(fmt::format("socket: {}", std::strerror(errno)));
  ifreq r{};
  std::memcpy(r.ifr_name, spec.name.data(), spec.name.size());
  r.ifr_hwaddr.sa_family = ARPHRD_ETHER;
  std::memcpy(r.ifr_hwaddr.sa_data, spec.mac.b.data(), spec.mac.b.size());
  if (Status s = IfIoctl(sock.get(), SIOCSIFHWADDR, r, "MAC of"); !s) return s.error();
  r.ifr_mtu = static_cast<int>(spec.mtu);
  if (Status s = IfIoctl(sock.get(), SIOCSIFMTU, r, "MTU of"); !s) return s.error();
  if (Status s = IfIoctl(sock.get(), SIOCGIFFLAGS, r, "flags of"); !s) return s.error();
  r.ifr_flags = static_cast<short>(r.ifr_flags | IFF_UP);
  if (Status s = IfIoctl(sock.get(), SIOCSIFFLAGS, r, "up:"); !s) return s.error();
  return fd.release();
}

}  // namespace

Result<std::unique_ptr<KernelPorts>> KernelPorts::Create(const std::string& netns,
                                                         const std::vector<PortSpec>& specs,
                                                         uint32_t num_ports) {
  std::unique_ptr<KernelPorts> k(new KernelPorts());
  k->fd_.assign(num_ports, -1);
  k->name_.assign(num_ports, "");
  k->ctr_.assign(num_ports, PortCounters{});
  for (const PortSpec& spec : specs) {
    if (spec.port >= num_ports || k->fd_[spec.port] >= 0) {
      return InvalidArgument(
          fmt::format("kernel port {}: not a port of this switch, or given twice", spec.port));
    }
    int fd = -1;
    Status s = InNetns(netns, [&]() -> Status {
      auto r = MakeTap(spec);
      if (!r) return r.error();
      fd = *r;
      return {};
    });
    if (!s) {
      if (fd >= 0) close(fd);
      return MakeError(s.error().code,
                       fmt::format("kernel interface for port {}{}: {}", spec.port,
                                   netns.empty() ? "" : " in " + netns, s.error().message));
    }
    k->fd_[spec.port] = fd;
    k->name_[spec.port] = spec.name;
  }
  return k;
}

KernelPorts::~KernelPorts() {
  for (const int fd : fd_) {
    if (fd >= 0) close(fd);
  }
}

bool KernelPorts::Deliver(uint32_t port, std::span<const uint8_t> frame) {
  if (port >= fd_.size()) return false;
  if (fd_[port] < 0) {
    ++ctr_[port].to_kernel_lost;
    return false;
  }
  // The kernel takes it whole or not at all (a TAP is a datagram device).
  if (write(fd_[port], frame.data(), frame.size()) != static_cast<ssize_t>(frame.size())) {
    ++ctr_[port].to_kernel_lost;
    return false;
  }
  ++ctr_[port].to_kernel;
  return true;
}

uint32_t KernelPorts::Service(const Send& send, uint32_t budget) {
  uint8_t buf[16384];  // a jumbo frame: more than any port's MTU
  uint32_t n = 0;
  for (uint32_t p = 0; p < fd_.size() && n < budget; ++p) {
    if (fd_[p] < 0) continue;
    while (n < budget) {
      const ssize_t r = read(fd_[p], buf, sizeof buf);
      if (r <= 0) break;  // EAGAIN: empty (errors too: the next call tries again)
      ++n;
      if (send(p, std::span<const uint8_t>(buf, static_cast<size_t>(r)))) {
        ++ctr_[p].from_kernel;
      } else {
        ++ctr_[p].from_kernel_lost;
      }
    }
  }
  return n;
}

std::vector<int> KernelPorts::fds() const {
  std::vector<int> out;
  for (const int fd : fd_) {
    if (fd >= 0) out.push_back(fd);
  }
  return out;
}

}  // namespace ofan::dp
