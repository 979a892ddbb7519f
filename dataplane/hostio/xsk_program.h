// XskProgram: the XDP program in front of an AF_XDP socket, where libxdp's
// default one (every frame of the queue to the socket) is not enough:
//  - roce_only: only RoCEv2 frames (IPv4, UDP destination port 4791) and
//    MAC control frames (PFC, PAUSE: the NIC's to obey) go to the socket,
//    everything else to the kernel, so a host's kernel still sees the ARP
//    and the TCP of an ofan-rc-1 connection (docs/rc-exchange.md) that share
//    the interface (uroce's hosts);
//  - stamp: each frame for the socket comes with 8 bytes before it (the
//    socket's reader takes them off), the CLOCK_MONOTONIC time
//    (bpf_ktime_get_ns) at which the interface received it: on a veth,
//    within microseconds of the peer's transmit, in the sender's own
//    softirq. The shared engine stamps a host's frames with it
//    (dataplane/engine.h) instead of the time it polled the socket. No
//    kernel timestamp reaches an AF_XDP socket in copy mode, and the XDP
//    metadata helper is refused here (kernel 6.18), so the program moves
//    the frame's head instead.
//
// expects:  to be attached from inside the interface's network namespace
//           (the ifindex is that namespace's); no XDP program already on
//           the interface
// gives:    an XSKMAP (one entry per RX queue) the AF_XDP socket is put in
//           with xsk_socket__update_xskmap; the program attached in driver
//           mode (native_first, where the driver has a hook: veth) or SKB
//           (generic) mode, which is what copy-mode AF_XDP on veths uses
// modifies: the interface's XDP hook, through a BPF link: until Detach()
//           or the destructor, or the process's end (the kernel detaches a
//           link whose last descriptor closes, whatever ended the process)
// decides:  the program is an array of eBPF instructions assembled here,
//           not a compiled object, so the build needs no BPF compiler
#pragma once

#include <cstdint>
#include <memory>

#include "common/result.h"

namespace ofan::hostio {

// What a stamping program puts before a frame.
inline constexpr uint32_t kXskStampBytes = 8;

struct XskProgramOptions {
  bool roce_only = false;
  bool stamp = false;
  bool native_first = false;  // driver mode where it attaches, else SKB
};

class XskProgram {
 public:
  static Result<std::unique_ptr<XskProgram>> Attach(int ifindex, const XskProgramOptions& o);
  ~XskProgram();
  XskProgram(const XskProgram&) = delete;
  XskProgram& operator=(const XskProgram&) = delete;

  int map_fd() const { return map_fd_; }
  bool native() const { return native_; }  // attached in driver mode
  // Removes the program from the interface (closes the link).
  void Detach();

 private:
  XskProgram(int map_fd, int prog_fd, int link_fd, bool native)
      : map_fd_(map_fd), prog_fd_(prog_fd), link_fd_(link_fd), native_(native) {}
  int map_fd_, prog_fd_, link_fd_;
  bool native_;
};

}  // namespace ofan::hostio
