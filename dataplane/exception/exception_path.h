// The exception path: frames the fast path does not forward, handled on the
// control thread.
//
// expects:   frames parse marked kException (ARP, LLDP, other control
//            ethertypes) or that route found addressed to the switch itself,
//            handed over by workers (Hand, multi-producer ring)
// modifies:  the neighbour table (a port's next-hop MAC, learned from any ARP
//            it sends); nothing of the frames, which it frees
// next:      ARP requests for the switch's gateway address and ICMP echo
//            requests to it are answered on the port they came from, through
//            that port's priority queue; every other frame goes to the
//            subscriber, if any (the coming ofan-agent: LLDP, BGP, BFD), and
//            is otherwise only counted
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

class ExceptionPath {
 public:
  // A frame the switch does not answer itself: the port it came in on and
  // its bytes (valid during the call).
  using Subscriber = std::function<void(uint32_t port, std::span<const uint8_t> frame)>;

  struct Setup {
    std::string name;                    // for the ring's name
    int socket = 0;                      // NUMA socket of the ring
    uint32_t gateway_ip = 0;             // the switch's own address (0: none, answers nothing)
    std::vector<pkt::MacAddr> port_mac;  // per fat-tree port
    // DPDK port id -> fat-tree port or -1 (frames from no port are ignored).
    const std::vector<int32_t>* port_of_dpdk = nullptr;
    NeighborTable* neighbors = nullptr;
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
  // Control thread: handles and frees everything handed over so far.
  // Returns how many frames it handled.
  uint32_t Service(LcoreCounters& ctr);
  // One subscriber (ofan-agent's punt path); replaces any earlier one.
  void Subscribe(Subscriber s) { subscriber_ = std::move(s); }

 private:
  void Handle(rte_mbuf* m, LcoreCounters& ctr);

  Setup s_;
  rte_ring* ring_ = nullptr;
  Subscriber subscriber_;
};

}  // namespace ofan::dp
