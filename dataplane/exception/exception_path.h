// The exception path: frames the fast path does not forward, handled on the
// control thread.
//
// expects:   frames parse marked kException (ARP, LLDP, other control
//            ethertypes) or that route found addressed to the switch itself,
//            handed over by workers (Hand, multi-producer ring); IPv4 frames
//            whose TTL expired, as they came (HandExpired, the same ring)
// modifies:  the neighbour table (a port's next-hop MAC, learned from any ARP
//            it sends); nothing of the frames, which it frees
// next:      answered on the port they came from, through that port's
//            priority queue, as an IPv4 router answers (RFC 1812 4.3): ARP
//            requests for the switch's gateway address, ICMP echo requests
//            to either of its addresses (gateway, FatTree::switch_addr); ICMP
//            Time Exceeded for an expired TTL; ICMP port unreachable for UDP
//            to the switch, protocol unreachable for a protocol it does not
//            speak. Errors come from the switch's own address, at most
//            icmp_per_s (burst icmp_burst) per switch, never about an ICMP
//            error, a later fragment or a non-unicast packet (RFC 1812
//            4.3.2.7). The rest (LLDP, TCP to the switch) goes to the
//            subscriber, if any (the coming ofan-agent: LLDP, BGP, BFD; with
//            one, UDP to the switch is its too), and is otherwise counted
//
// The port a packet came in on is the way back to its sender: in a fat tree
// routed by destination, the packet just came along a shortest path from
// there.
//
// The replies are built from the typed headers of dataplane/packet/headers.h;
// this is the control thread, not the per-packet path, so there are no raw
// offsets here. ArpReply and IcmpEchoReply are pure functions of the frame,
// tested on whole frames (tests/dataplane/exception/).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "dataplane/counters.h"
#include "dataplane/egress/port_queue.h"
#include "dataplane/exception/kernel_ports.h"
#include "dataplane/idle_wait.h"
#include "dataplane/packet/headers.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;

namespace ofan::dp {

using Frame = std::vector<uint8_t>;

// Each port's next hop (neighbour) MAC, one atomic word per port: the six
// bytes, and kNeighborKnown once configured or learned. Writers bump the
// generation after a change; workers copy the table when it moves.
class NeighborTable {
 public:
  static constexpr uint64_t kKnown = 1ull << 48;
  explicit NeighborTable(uint32_t ports) : v_(ports) {}
  // Sets port's neighbour; true if that changed it.
  bool Set(uint32_t port, const pkt::MacAddr& mac);
  std::optional<pkt::MacAddr> Get(uint32_t port) const;
  uint64_t generation() const { return gen_.load(std::memory_order_acquire); }
  uint32_t size() const { return static_cast<uint32_t>(v_.size()); }

 private:
  std::vector<std::atomic<uint64_t>> v_;
  std::atomic<uint64_t> gen_{1};
};

// Puts control frames (ARP/ICMP replies, PFC) on a port's priority queue:
// a copy in an mbuf of the pool, padded to the Ethernet minimum. A frame
// that cannot be queued (no mbuf, queue full) is counted kDropControlFull.
class ControlSender {
 public:
  ControlSender() = default;
  ControlSender(rte_mempool* pool, std::vector<PortQueue>* queues) : pool_(pool), queues_(queues) {}
  bool Send(uint32_t port, std::span<const uint8_t> frame, LcoreCounters& ctr) const;

 private:
  rte_mempool* pool_ = nullptr;
  std::vector<PortQueue>* queues_ = nullptr;
};

// The reply to an ARP request for `gateway_ip` received on a port whose MAC
// is `port_mac`; nullopt if the frame is not such a request.
std::optional<Frame> ArpReply(std::span<const uint8_t> frame, const pkt::MacAddr& port_mac,
                              uint32_t gateway_ip);
// The ARP sender's MAC, if the frame is an ARP whose sender may be learned
// as the port's neighbour (unicast, nonzero).
std::optional<pkt::MacAddr> ArpSender(std::span<const uint8_t> frame);
// The echo reply to an ICMP echo request to `gateway_ip` (untagged or one
// 802.1Q tag, kept), sent from `port_mac`; nullopt if it is not one.
std::optional<Frame> IcmpEchoReply(std::span<const uint8_t> frame, const pkt::MacAddr& port_mac,
                                   uint32_t gateway_ip);
// The ICMP error (type, code) about an IPv4 frame that parse forwards
// (untagged or one 802.1Q tag, kept): from `src_ip` to the frame's IPv4
// source, TTL 64, precedence 6 (RFC 1812 4.3.2.5), quoting the frame's IPv4
// header and the first 8 bytes of its data (RFC 792); back to the frame's
// Ethernet source from `port_mac`. nullopt where RFC 1812 4.3.2.7 forbids an
// error: about an ICMP error, a fragment other than the first, a packet to a
// broadcast or multicast address (link or IP), or from a source that is not
// one host (0.0.0.0, 127/8, multicast, broadcast).
std::optional<Frame> IcmpError(std::span<const uint8_t> frame, uint8_t type, uint8_t code,
                               const pkt::MacAddr& port_mac, uint32_t src_ip);

// Tokens for ICMP errors, per switch (as Linux's icmp_msgs_per_sec and
// icmp_msgs_burst, whose defaults these are): `per_s` a second, at most
// `burst` at once. Time is the caller's, in nanoseconds.
class IcmpRateLimit {
 public:
  IcmpRateLimit(uint32_t per_s, uint32_t burst) : per_s_(per_s), burst_(burst), tokens_(burst) {}
  bool Take(uint64_t now_ns);

 private:
  uint32_t per_s_, burst_;
  double tokens_;
  uint64_t last_ns_ = 0;
};

class ExceptionPath {
 public:
  // A frame the switch does not answer itself: the port it came in on and
  // its bytes (valid during the call).
  using Subscriber = std::function<void(uint32_t port, std::span<const uint8_t> frame)>;

  struct Setup {
    std::string name;                    // for the ring's name
    int socket = 0;                      // NUMA socket of the ring
    uint32_t gateway_ip = 0;             // an edge's 10.pod.edge.1 (0: none)
    uint32_t switch_ip = 0;              // FatTree::switch_addr (0: none: sends no ICMP errors)
    uint32_t icmp_per_s = 1000;          // ICMP errors a second, per switch
    uint32_t icmp_burst = 50;            // ... at once
    std::vector<pkt::MacAddr> port_mac;  // per fat-tree port
    // DPDK port id -> fat-tree port or -1 (frames from no port are ignored).
    const std::vector<int32_t>* port_of_dpdk = nullptr;
    NeighborTable* neighbors = nullptr;
    // The ports' kernel interfaces (null: none). A port that has one
    // answers for the switch there: everything but transit frames goes to
    // the subscriber, ARP included (after learning the sender).
    const KernelPorts* kernel = nullptr;
    ControlSender sender;
  };

  ExceptionPath() = default;
  ~ExceptionPath();
  ExceptionPath(const ExceptionPath&) = delete;
  ExceptionPath& operator=(const ExceptionPath&) = delete;
  Status Init(Setup s);

  // Worker side: n frames handed over, counted kException; what the ring
  // cannot take is freed and counted kDropExceptionFull.
  void Hand(rte_mbuf** frames, uint32_t n, LcoreCounters& ctr);
  // Worker side: n IPv4 frames whose TTL expired (the worker counted them
  // dropped), for Time Exceeded; what the ring cannot take is freed and
  // counted kIcmpRateLimited (no error goes out for it).
  void HandExpired(rte_mbuf** frames, uint32_t n, LcoreCounters& ctr);
  // Control thread: handles and frees everything handed over so far.
  // Returns how many frames it handled.
  uint32_t Service(LcoreCounters& ctr);
  // One subscriber (ofan-agent's punt path); replaces any earlier one.
  void Subscribe(Subscriber s) { subscriber_ = std::move(s); }
  // Told (Notify) when a worker hands frames over: the control thread
  // waits on it rather than finding them at its next 10 ms poll (a
  // traceroute's hop took 5-7 ms). Set before the workers run.
  void set_bell(IdleWait* b) { bell_ = b; }

 private:
  void Handle(rte_mbuf* m, LcoreCounters& ctr);
  // Sends IcmpError(frame, type, code) on `port`, if the rate allows.
  void SendError(uint32_t port, std::span<const uint8_t> frame, uint8_t type, uint8_t code,
                 LcoreCounters& ctr);
  bool IsOwn(uint32_t ip) const { return ip != 0 && (ip == s_.gateway_ip || ip == s_.switch_ip); }

  Setup s_;
  std::optional<IcmpRateLimit> icmp_limit_;
  rte_ring* ring_ = nullptr;
  Subscriber subscriber_;
  IdleWait* bell_ = nullptr;
};

}  // namespace ofan::dp
