// KernelPorts: a kernel network interface for each switch port that has
// none, so that unmodified daemons (lldpd, FRR's bgpd/bfdd) in the switch's
// namespace talk through the dataplane, as VPP's Linux Control Plane and
// SONiC do. The shared engine's in-memory links have no netdev: each such
// port gets a TAP named like the port (p0, p1, ...) with the port's MAC.
//
// expects:  root; the switch's network namespace exists (DpConfig::netns,
//           "" = the process's own); no interface of the TAP's name there
// gives:    Deliver(port, frame): a frame the exception path hands over
//           (LLDP, ARP, IPv6 — ND, BGP and BFD of BGP unnumbered —, TCP and
//           UDP to the switch) written to the port's TAP; Service(): what
//           the kernel sent on each TAP, read and handed to `send` (the
//           exception path's ControlSender: into the port's egress);
//           per-port counters of both directions and of what was lost
// modifies: the namespace: the TAPs live as long as this object (they are
//           not persistent: the kernel removes them when the last fd
//           closes, whatever ended the process)
// threads:  the control thread only (Deliver from ExceptionPath::Service,
//           Service from Switch::ServiceControl); counters are read by
//           control views on that thread
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "dataplane/packet/headers.h"

namespace ofan::dp {

class KernelPorts {
 public:
  struct PortSpec {
    uint32_t port = 0;  // fat-tree port
    std::string name;   // interface name in the namespace (p<port>)
    pkt::MacAddr mac;
    uint32_t mtu = 1500;
  };
  struct PortCounters {
    uint64_t to_kernel = 0;         // frames written to the TAP
    uint64_t to_kernel_lost = 0;    // the TAP was full or down: dropped
    uint64_t from_kernel = 0;       // frames the kernel sent, handed to the port
    uint64_t from_kernel_lost = 0;  // the port's egress would not take them
  };
  // Hands a frame the kernel sent to the dataplane's port; false if the
  // port did not take it.
  using Send = std::function<bool(uint32_t port, std::span<const uint8_t> frame)>;

  // Makes one TAP per spec inside `netns`, up, with the spec's MAC and MTU.
  static Result<std::unique_ptr<KernelPorts>> Create(const std::string& netns,
                                                     const std::vector<PortSpec>& specs,
                                                     uint32_t num_ports);
  ~KernelPorts();
  KernelPorts(const KernelPorts&) = delete;
  KernelPorts& operator=(const KernelPorts&) = delete;

  bool has(uint32_t port) const { return port < fd_.size() && fd_[port] >= 0; }
  // False (and counted) when the port has no TAP or the TAP cannot take it.
  bool Deliver(uint32_t port, std::span<const uint8_t> frame);
  // Reads every TAP until it is empty (at most `budget` frames in all);
  // returns how many frames were read.
  uint32_t Service(const Send& send, uint32_t budget = 256);
  // Readable when some TAP has a frame: for the control thread's poll.
  std::vector<int> fds() const;
  const PortCounters& counters(uint32_t port) const { return ctr_[port]; }
  const std::string& name(uint32_t port) const { return name_[port]; }

 private:
  KernelPorts() = default;
  std::vector<int> fd_;  // per fat-tree port, -1 where the port has no TAP
  std::vector<std::string> name_;
  std::vector<PortCounters> ctr_;
};

}  // namespace ofan::dp
