// RoceXdpFilter: the XDP program that hands a host's AF_XDP socket only its
// RoCEv2 frames (IPv4, UDP destination port 4791) and MAC control frames
// (PFC, PAUSE: the NIC's to obey) and passes everything else to the kernel. libxdp's default
// program redirects every frame of the queue, so the host's kernel would never see the ARP and the
// TCP of an ofan-rc-1 connection (docs/rc-exchange.md) that share the interface.
//
// expects:  to be attached from inside the interface's network namespace
//           (the ifindex is that namespace's); no XDP program already on
//           the interface
// gives:    an XSKMAP (one entry per RX queue) the AF_XDP socket is put in
//           with xsk_socket__update_xskmap, and the program attached in SKB
//           (generic) mode, which is what copy-mode AF_XDP on veths uses
// modifies: the interface's XDP hook, through a BPF link: until Detach()
//           or the destructor, or the process's end (the kernel detaches a
//           link whose last descriptor closes, whatever ended the process)
// decides:  the program is a fixed array of eBPF instructions, not a
//           compiled object, so the build needs no BPF compiler
#pragma once

#include <memory>

#include "common/result.h"

namespace ofan::hostio {

class RoceXdpFilter {
 public:
  static Result<std::unique_ptr<RoceXdpFilter>> Attach(int ifindex);
  ~RoceXdpFilter();
  RoceXdpFilter(const RoceXdpFilter&) = delete;
  RoceXdpFilter& operator=(const RoceXdpFilter&) = delete;

  int map_fd() const { return map_fd_; }
  // Removes the program from the interface (closes the link).
  void Detach();

 private:
  RoceXdpFilter(int map_fd, int prog_fd, int link_fd)
      : map_fd_(map_fd), prog_fd_(prog_fd), link_fd_(link_fd) {}
  int map_fd_, prog_fd_, link_fd_;
};

}  // namespace ofan::hostio
