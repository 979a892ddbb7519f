// PacketIo: how a process moves Ethernet frames on a host's interface
// without DPDK: uroce's hosts, and the shared fabric engine's host ports
// (dataplane/engine.h: DPDK allows 32 ethdevs a process, a k=8
// fabric has 128 hosts). Three implementations: AF_XDP through libxdp (copy
// mode, need_wakeup), AF_PACKET (the fallback where AF_XDP cannot bind),
// and an in-process pair for tests that drops, reorders and duplicates
// frames by a seeded rule.
//
// expects:  Send() frames of at most kMaxFrame bytes; the views Recv() gives
//           are read before the next Recv() call
// gives:    Send() returns how many frames it took (copied; the rest may be
//           retried); Recv() up to out.size() frames; fd() a descriptor that,
//           after PrepareSleep() returned true, is readable when Recv() may
//           return frames (-1: always poll)
// next:     zero-copy transmit (frames built in the UMEM)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/netns.h"
#include "common/result.h"
#include "common/rng.h"
#include "dataplane/packet/headers.h"

namespace ofan::hostio {

// The largest frame a PacketIo carries: RoCE MTU 4096 with every header
// and pad (uroce's kMaxFrame, emu/uroce/qp_types.h, is checked against it).
inline constexpr uint32_t kIoMaxFrame = 4224;

struct FrameView {
  const uint8_t* data = nullptr;
  uint32_t len = 0;
  // Recv(): the CLOCK_MONOTONIC ns at which the interface received it, where
  // the socket knows (AF_XDP with IoOptions::stamp); 0 where it does not.
  uint64_t rx_ns = 0;
};

struct IoCounters {
  uint64_t tx = 0, rx = 0, tx_full = 0;  // tx_full: frames Send() refused
  // What the kernel dropped before the socket saw it (AF_XDP: ring full,
  // fill ring empty, other; AF_PACKET: its receive buffer full), as of the
  // last ReadKernelDrops().
  uint64_t kernel_rx_ring_full = 0, kernel_fill_empty = 0, kernel_rx_dropped = 0;
};

class PacketIo {
 public:
  virtual ~PacketIo() = default;
  virtual uint32_t Send(std::span<const FrameView> frames) = 0;
  virtual uint32_t Recv(std::span<FrameView> out) = 0;
  virtual int fd() const = 0;
  // The caller is about to sleep on fd(): false if frames are waiting
  // (do not). A socket's fd() is readable whenever its ring holds frames,
  // so it has nothing to do; shared-memory rings arm their doorbell here
  // (shm_io.h), so that a consumer that polls does not pay for one.
  virtual bool PrepareSleep() { return true; }
  virtual std::string kind() const = 0;
  // The longest frame Send() carries whole (0: up to kIoMaxFrame).
  virtual uint32_t max_frame() const { return 0; }
  // Refreshes the kernel_* counters (a system call: not per frame).
  virtual void ReadKernelDrops() {}
  const IoCounters& io_counters() const { return io_; }

 protected:
  IoCounters io_;
};

// The interface of a host, read inside its namespace.
struct IfaceInfo {
  std::string netns;  // "" = this process's namespace
  std::string name;
  int ifindex = 0;
  pkt::MacAddr mac;
  uint32_t ipv4 = 0;  // host order; 0 if it has none
  uint32_t mtu = 0;
};

// The RoCE (IB) path MTU a host offers: the largest of 256..4096 that is at
// most `wanted`, that a netdev of `netdev_mtu` carries as rxe computes its
// active MTU (rxe_net.c: the netdev MTU less RXE_MAX_HDR_LENGTH, 80 B), and
// whose frames (Ethernet to ICRC, 78 B more, plus up to 3 B of pad) fit the
// PacketIo's max_frame(); 0 means no limit.
constexpr uint32_t RoceMtuOffer(uint32_t wanted, uint32_t netdev_mtu, uint32_t max_frame) {
  uint32_t mtu = 4096;
  while (mtu > 256 && (mtu > wanted || (netdev_mtu && mtu + 80 > netdev_mtu) ||
                       (max_frame && mtu + 81 > max_frame)))
    mtu /= 2;
  return mtu;
}

// InNetns (common/netns.h) runs setup inside a host's namespace.
Result<IfaceInfo> ReadIface(const std::string& netns, const std::string& ifname);
// A TCP socket (AF_INET, SOCK_STREAM, close-on-exec) made inside `netns`, so
// that an ofan-rc-1 exchange goes through that host's kernel; -1 on failure.
int TcpSocketIn(const std::string& netns);

enum class IoKind : uint8_t { kAfXdp, kAfPacket, kAuto };
struct IoOptions {
  // AF_XDP: the socket gets only RoCEv2 frames and the kernel the rest
  // (xsk_program.h), for a host whose kernel talks on the same interface (the
  // TCP of `uroce peer`'s exchange, ARP). AF_PACKET sees copies anyway.
  bool roce_only = false;
  // AF_XDP: attach in the driver's mode where it can (veth), generic (SKB)
  // mode otherwise. Generic XDP never sees frames tc mirred redirected,
  // which is how a netem wire reaches the port (the shared engine's host
  // ports; emu/fabric/netns.py's wire).
  bool native_first = false;
  // AF_XDP: each frame Recv() gives carries the time the interface received
  // it (FrameView::rx_ns; xsk_program.h).
  bool stamp = false;
};
// Opens the interface's queue 0. kAuto tries AF_XDP and falls back to
// AF_PACKET; `why` (optional) says why AF_XDP was not used.
Result<std::unique_ptr<PacketIo>> OpenIo(IoKind kind, const IfaceInfo& iface,
                                         std::string* why = nullptr, const IoOptions& opts = {});
Result<std::unique_ptr<PacketIo>> OpenAfPacket(const IfaceInfo& iface);
Result<std::unique_ptr<PacketIo>> OpenAfXdp(const IfaceInfo& iface, const IoOptions& opts = {});

// What the loopback pair does to each frame, drawn from a seeded RNG in the
// order frames are sent (so a run is a function of the seed).
struct Impairment {
  double drop = 0, duplicate = 0, reorder = 0;  // probabilities
  uint32_t reorder_depth = 8;                   // a reordered frame is overtaken by up to this many
  // Drops every frame for which this returns true (after the random rules):
  // index is the frame's number on this direction, from 0.
  std::function<bool(uint64_t index, std::span<const uint8_t> frame)> drop_if;
  // Sees (and may change: corrupt, CE-mark) every frame first.
  std::function<void(uint64_t index, std::vector<uint8_t>& frame)> mutate;
  uint64_t seed = 1;
};

// Two in-process ends joined by a lossy wire: what one end sends the other
// receives. Not thread-safe (tests drive both ends from one thread).
class LoopbackWire;
struct LoopbackPair {
  std::unique_ptr<PacketIo> a, b;
  std::shared_ptr<LoopbackWire> wire;
};
LoopbackPair MakeLoopbackPair(const Impairment& a_to_b, const Impairment& b_to_a);

}  // namespace ofan::hostio
