// The kernel-backed PacketIo implementations of packet_io.h and the network
// namespace helpers. AF_XDP: libxdp's default program redirects the queue to
// the socket (or, roce_only or stamp, ours: xsk_program.h), copy mode
// (veth), need_wakeup; half the UMEM frames feed the fill ring, half are transmit
// buffers. AF_PACKET: a raw socket bound to the
// interface, recvmmsg/sendmmsg, our own transmissions not looped back.
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dataplane/hostio/packet_io.h"
#include "dataplane/hostio/xsk_program.h"

namespace ofan::hostio {
namespace {

// libxdp and libbpf narrate every program load (and the missing bpffs of
// a namespace-only setup) on stderr; failures come back as error codes.
int Quiet(enum libxdp_print_level, const char*, va_list) { return 0; }
int QuietBpf(enum libbpf_print_level, const char*, va_list) { return 0; }

std::string Errno(const char* what) { return fmt::format("{}: {}", what, std::strerror(errno)); }

// ---------------------------------------------------------------- AF_PACKET

class AfPacketIo : public PacketIo {
 public:
  static constexpr uint32_t kBatch = 64;
  AfPacketIo(int fd, int udp_guard) : fd_(fd), guard_(udp_guard) {
    bufs_.resize(static_cast<size_t>(kBatch) * kIoMaxFrame);
    for (uint32_t i = 0; i < kBatch; ++i) {
      iov_[i] = iovec{bufs_.data() + static_cast<size_t>(i) * kIoMaxFrame, kIoMaxFrame};
      msgs_[i] = mmsghdr{};
      msgs_[i].msg_hdr.msg_iov = &iov_[i];
      msgs_[i].msg_hdr.msg_iovlen = 1;
    }
  }
  ~AfPacketIo() override {
    close(fd_);
    if (guard_ >= 0) close(guard_);
  }
  uint32_t Send(std::span<const FrameView> frames) override {
    uint32_t done = 0;
    while (done < frames.size()) {
      const uint32_t n = std::min<uint32_t>(kBatch, static_cast<uint32_t>(frames.size()) - done);
      for (uint32_t i = 0; i < n; ++i) {
        tx_iov_[i] = iovec{const_cast<uint8_t*>(frames[done + i].data), frames[done + i].len};
        tx_msgs_[i] = mmsghdr{};
        tx_msgs_[i].msg_hdr.msg_iov = &tx_iov_[i];
        tx_msgs_[i].msg_hdr.msg_iovlen = 1;
      }
      const int r = sendmmsg(fd_, tx_msgs_, n, MSG_DONTWAIT);
      if (r <= 0) break;
      done += static_cast<uint32_t>(r);
    }
    io_.tx += done;
    io_.tx_full += frames.size() - done;
    return done;
  }
  uint32_t Recv(std::span<FrameView> out) override {
    const uint32_t n = std::min<uint32_t>(kBatch, static_cast<uint32_t>(out.size()));
    for (uint32_t i = 0; i < n; ++i) msgs_[i].msg_hdr.msg_flags = 0;
    const int r = recvmmsg(fd_, msgs_, n, MSG_DONTWAIT, nullptr);
    if (r <= 0) return 0;
    for (int i = 0; i < r; ++i) {
      out[i] = FrameView{static_cast<const uint8_t*>(iov_[i].iov_base), msgs_[i].msg_len};
    }
    io_.rx += static_cast<uint64_t>(r);
    return static_cast<uint32_t>(r);
  }
  int fd() const override { return fd_; }
  std::string kind() const override { return "af_packet"; }
  void ReadKernelDrops() override {
    tpacket_stats st{};  // reading resets the kernel's: accumulate
    socklen_t len = sizeof st;
    if (getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
      io_.kernel_rx_dropped += st.tp_drops;
  }

 private:
  int fd_, guard_;
  std::vector<uint8_t> bufs_;
  iovec iov_[kBatch], tx_iov_[kBatch];
  mmsghdr msgs_[kBatch], tx_msgs_[kBatch];
};

// ------------------------------------------------------------------- AF_XDP

class AfXdpIo : public PacketIo {
 public:
  static constexpr uint32_t kFrames = 4096, kFrameSize = 4096, kRing = 2048;
  ~AfXdpIo() override {
    // libxdp detaches its program by ifindex: in the interface's namespace.
    if (xsk_ || program_) {
      (void)InNetns(netns_, [this]() {
        if (xsk_) xsk_socket__delete(xsk_);
        if (program_) program_->Detach();
        return Status{};
      });
    }
    if (umem_) xsk_umem__delete(umem_);
    if (area_) munmap(area_, static_cast<size_t>(kFrames) * kFrameSize);
  }
  Status Open(const IfaceInfo& iface, const IoOptions& opts) {
    netns_ = iface.netns;
    if (!std::getenv("UROCE_XDP_DEBUG")) {
      libxdp_set_print(Quiet);
      libbpf_set_print(QuietBpf);
    }
    rlimit r{RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_MEMLOCK, &r);  // older kernels charge the UMEM to it
    const size_t size = static_cast<size_t>(kFrames) * kFrameSize;
    void* a = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) return MakeError(ErrorCode::kIo, Errno("mmap of the UMEM"));
    area_ = static_cast<uint8_t*>(a);
    xsk_umem_config ucfg{};
    ucfg.fill_size = kRing;
    ucfg.comp_size = kRing;
    ucfg.frame_size = kFrameSize;
    ucfg.frame_headroom = 0;
    int err = xsk_umem__create(&umem_, area_, size, &fill_, &comp_, &ucfg);
    if (err) {
      umem_ = nullptr;
      return MakeError(ErrorCode::kIo, fmt::format("xsk_umem__create: {}", std::strerror(-err)));
    }
    xsk_socket_config scfg{};
    scfg.rx_size = kRing;
    scfg.tx_size = kRing;
    scfg.xdp_flags = XDP_FLAGS_SKB_MODE;
    scfg.bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP;
    if (opts.roce_only || opts.stamp) {
      auto f = XskProgram::Attach(iface.ifindex,
                                  XskProgramOptions{opts.roce_only, opts.stamp, opts.native_first});
      if (!f.ok()) return f.error();
      program_ = std::move(*f);
      stamp_ = opts.stamp;
      scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
    }
    // The socket of a process that just exited may still hold the queue
    // for a moment (the kernel frees it after the close): EBUSY, retried.
    auto create = [&] {
      int e = 0;
      for (int tries = 0; tries < 40; ++tries) {
        e = xsk_socket__create(&xsk_, iface.name.c_str(), 0, umem_, &rx_, &tx_, &scfg);
        if (e != -EBUSY) break;
        usleep(50'000);
      }
      return e;
    };
    if (opts.native_first && !program_) {
      // The driver's XDP hook where it has one (veth does): generic XDP
      // passes to the kernel every frame tc mirred redirected (the kernel's
      // netif_receive_generic_xdp), so a socket on a port behind a netem
      // wire namespace would see nothing.
      scfg.xdp_flags = XDP_FLAGS_DRV_MODE;
      err = create();
      if (err) scfg.xdp_flags = XDP_FLAGS_SKB_MODE;
    }
    if (scfg.xdp_flags == XDP_FLAGS_SKB_MODE) err = create();
    if (err) {
      xsk_ = nullptr;
      return MakeError(ErrorCode::kIo, fmt::format("xsk_socket__create on {}: {}", iface.name,
                                                   std::strerror(-err)));
    }
    if (program_) {
      err = xsk_socket__update_xskmap(xsk_, program_->map_fd());
      if (err) {
        return MakeError(ErrorCode::kIo,
                         fmt::format("putting the socket in the XSKMAP: {}", std::strerror(-err)));
      }
    }
    uint32_t idx = 0;
    const uint32_t nfill = kFrames / 2;
    if (xsk_ring_prod__reserve(&fill_, nfill, &idx) != nfill)
      return MakeError(ErrorCode::kIo, "fill ring reserve");
    for (uint32_t i = 0; i < nfill; ++i)
      *xsk_ring_prod__fill_addr(&fill_, idx + i) = static_cast<uint64_t>(i) * kFrameSize;
    xsk_ring_prod__submit(&fill_, nfill);
    for (uint32_t i = nfill; i < kFrames; ++i)
      free_tx_.push_back(static_cast<uint64_t>(i) * kFrameSize);
    return {};
  }
  uint32_t Send(std::span<const FrameView> frames) override {
    Reclaim();
    uint32_t n = std::min<uint32_t>(static_cast<uint32_t>(frames.size()),
                                    static_cast<uint32_t>(free_tx_.size()));
    uint32_t idx = 0;
    if (n) n = xsk_ring_prod__reserve(&tx_, n, &idx);
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t addr = free_tx_.back();
      free_tx_.pop_back();
      xdp_desc* d = xsk_ring_prod__tx_desc(&tx_, idx + i);
      d->addr = addr;
      d->len = std::min<uint32_t>(frames[i].len, kFrameSize);
      std::memcpy(area_ + addr, frames[i].data, d->len);
    }
    if (n) xsk_ring_prod__submit(&tx_, n);
    // Copy mode transmits at most 32 descriptors per wakeup (the kernel's
    // TX_BATCH_SIZE in __xsk_generic_xmit): kick once per 32.
    pending_ += n;
    if (pending_ && xsk_ring_prod__needs_wakeup(&tx_)) {
      for (uint32_t k = 0; k < (pending_ + 31) / 32; ++k)
        sendto(xsk_socket__fd(xsk_), nullptr, 0, MSG_DONTWAIT, nullptr, 0);
    }
    io_.tx += n;
    io_.tx_full += frames.size() - n;
    return n;
  }
  uint32_t Recv(std::span<FrameView> out) override {
    // The previous batch's frames go back to the kernel.
    if (!held_.empty()) {
      uint32_t idx = 0;
      const uint32_t n = static_cast<uint32_t>(held_.size());
      if (xsk_ring_prod__reserve(&fill_, n, &idx) == n) {
        for (uint32_t i = 0; i < n; ++i) *xsk_ring_prod__fill_addr(&fill_, idx + i) = held_[i];
        xsk_ring_prod__submit(&fill_, n);
        held_.clear();
      }
    }
    if (xsk_ring_prod__needs_wakeup(&fill_))
      recvfrom(xsk_socket__fd(xsk_), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
    uint32_t idx = 0;
    const uint32_t n = xsk_ring_cons__peek(&rx_, static_cast<uint32_t>(out.size()), &idx);
    for (uint32_t i = 0; i < n; ++i) {
      const xdp_desc* d = xsk_ring_cons__rx_desc(&rx_, idx + i);
      const uint64_t addr = xsk_umem__add_offset_to_addr(d->addr);
      out[i] = FrameView{area_ + addr, d->len, 0};
      if (stamp_ && d->len >= kXskStampBytes) {
        // The program's receive time, before the frame (xsk_program.h).
        std::memcpy(&out[i].rx_ns, out[i].data, sizeof out[i].rx_ns);
        out[i].data += kXskStampBytes;
        out[i].len -= kXskStampBytes;
      }
      held_.push_back(xsk_umem__extract_addr(d->addr));
    }
    if (n) xsk_ring_cons__release(&rx_, n);
    io_.rx += n;
    return n;
  }
  int fd() const override { return xsk_socket__fd(xsk_); }
  std::string kind() const override { return "af_xdp"; }
  uint32_t max_frame() const override {  // one UMEM chunk, less the stamp before it
    return stamp_ ? kFrameSize - kXskStampBytes : kFrameSize;
  }
  void ReadKernelDrops() override {
    xdp_statistics st{};
    socklen_t len = sizeof st;
    if (getsockopt(xsk_socket__fd(xsk_), SOL_XDP, XDP_STATISTICS, &st, &len) == 0) {
      io_.kernel_rx_ring_full = st.rx_ring_full;
      io_.kernel_fill_empty = st.rx_fill_ring_empty_descs;
      io_.kernel_rx_dropped = st.rx_dropped;
    }
  }

 private:
  void Reclaim() {
    uint32_t idx = 0;
    const uint32_t n = xsk_ring_cons__peek(&comp_, kRing, &idx);
    for (uint32_t i = 0; i < n; ++i) free_tx_.push_back(*xsk_ring_cons__comp_addr(&comp_, idx + i));
    if (n) xsk_ring_cons__release(&comp_, n);
    // Completed: no longer kicked for. (It only grew before, so a
    // long-lived socket made one sendto per 32 frames it had EVER sent on
    // every Send: 200k system calls in 20 s for a k=6 fabric's hosts, and
    // sends of 100+ ms.)
    pending_ -= std::min(pending_, n);
  }
  std::string netns_;
  uint8_t* area_ = nullptr;
  xsk_umem* umem_ = nullptr;
  xsk_socket* xsk_ = nullptr;
  xsk_ring_prod fill_{}, tx_{};
  xsk_ring_cons comp_{}, rx_{};
  std::vector<uint64_t> free_tx_, held_;
  uint32_t pending_ = 0;  // submitted, not completed
  std::unique_ptr<XskProgram> program_;
  bool stamp_ = false;
};

}  // namespace

int TcpSocketIn(const std::string& netns) {
  int fd = -1;
  Status s = InNetns(netns, [&]() -> Status {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    return {};
  });
  if (!s.ok() && fd >= 0) {
    close(fd);  // made, but this thread could not come back: refuse it
    return -1;
  }
  return fd;
}

Result<IfaceInfo> ReadIface(const std::string& netns, const std::string& ifname) {
  IfaceInfo info;
  info.netns = netns;
  info.name = ifname;
  Status s = InNetns(netns, [&]() -> Status {
    if (ifname.size() >= IFNAMSIZ) return InvalidArgument("name too long");
    info.ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
    if (info.ifindex == 0) {
      return MakeError(ErrorCode::kNotFound,
                       fmt::format("no interface {} in netns '{}'", ifname, netns));
    }
    Fd sock(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (sock.get() < 0) return MakeError(ErrorCode::kIo, Errno("socket"));
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, ifname.c_str(), ifname.size());
    if (ioctl(sock.get(), SIOCGIFHWADDR, &ifr) != 0)
      return MakeError(ErrorCode::kIo, Errno("SIOCGIFHWADDR"));
    std::memcpy(info.mac.b.data(), ifr.ifr_hwaddr.sa_data, 6);
    if (ioctl(sock.get(), SIOCGIFMTU, &ifr) == 0) info.mtu = static_cast<uint32_t>(ifr.ifr_mtu);
    if (ioctl(sock.get(), SIOCGIFADDR, &ifr) == 0) {
      info.ipv4 = ntohl(reinterpret_cast<sockaddr_in*>(&ifr.ifr_addr)->sin_addr.s_addr);
    }
    return {};
  });
  if (!s.ok()) return s.error();
  return info;
}

Result<std::unique_ptr<PacketIo>> OpenAfPacket(const IfaceInfo& iface) {
  std::unique_ptr<PacketIo> io;
  Status s = InNetns(iface.netns, [&]() -> Status {
    Fd fd(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL)));
    if (fd.get() < 0) return MakeError(ErrorCode::kIo, Errno("AF_PACKET socket"));
    int one = 1;
    // Our own transmissions are not received (Linux >= 4.20).
    setsockopt(fd.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = iface.ifindex;
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0)
      return MakeError(ErrorCode::kIo, Errno(("bind AF_PACKET to " + iface.name).c_str()));
    // A window of 1 MiB messages is thousands of frames; the default buffer
    // (rmem_default) holds a few dozen. FORCE (root) passes rmem_max.
    int buf = 16 << 20;
    if (setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) != 0)
      setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    if (setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf) != 0)
      setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    // A bound UDP socket on 4791 that is never read: the kernel queues (and
    // then drops) RoCE datagrams to it instead of answering each with an
    // ICMP port unreachable.
    Fd guard(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (guard.get() >= 0) {
      int small = 4096;
      setsockopt(guard.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
      sockaddr_in sin{};
      sin.sin_family = AF_INET;
      sin.sin_port = htons(pkt::kRoceV2Port);
      if (bind(guard.get(), reinterpret_cast<sockaddr*>(&sin), sizeof sin) != 0) {
        close(guard.release());
      }
    }
    io = std::make_unique<AfPacketIo>(fd.release(), guard.release());
    return {};
  });
  if (!s.ok()) return s.error();
  return io;
}

Result<std::unique_ptr<PacketIo>> OpenAfXdp(const IfaceInfo& iface, const IoOptions& opts) {
  auto io = std::make_unique<AfXdpIo>();
  Status s = InNetns(iface.netns, [&]() { return io->Open(iface, opts); });
  if (!s.ok()) return s.error();
  return std::unique_ptr<PacketIo>(std::move(io));
}

Result<std::unique_ptr<PacketIo>> OpenIo(IoKind kind, const IfaceInfo& iface, std::string* why,
                                         const IoOptions& opts) {
  if (kind == IoKind::kAfPacket) return OpenAfPacket(iface);
  auto x = OpenAfXdp(iface, opts);
  if (x.ok() || kind == IoKind::kAfXdp) return x;
  if (why) *why = x.error().message;
  return OpenAfPacket(iface);
}

}  // namespace ofan::hostio
