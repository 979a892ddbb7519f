// Capture: copies of the frames a switch's ports receive and send, written
// as pcapng by the control thread, on request over the control socket
// (capture_start / capture_status / capture_stop, common/protocol).
//
// expects:   Record*: bursts of frames of port p, from the lcore that owns p
//            (its RX, in the vector pass; its TX, in the device's TX hook,
//            stages/tx.h, before the device takes them); Start/Service/Stop: the control
//            thread
// modifies:  nothing of the frames; the capture file
// next:      the file (pcapng.h): one interface per port ("SWITCH:pP"), both
//            directions of the port's link, the direction in each frame's
//            flags, wall-clock time (from the TSC the lcore read)
//
// Off, it costs a worker one load and a bit test per RX burst and per TX
// burst (the mask). On, each captured frame is one copy of at most
// snaplen bytes into the port's ring (single producer: the port's owner;
// single consumer: the control thread), never an allocation; a full ring
// drops the copy, counted, not the frame. Rings are made once, when a port
// is first captured, and live as long as the switch, so that a worker
// holding an old mask never writes into freed memory; each copy carries the
// id of the capture it was made for, and the control thread drops copies
// of an earlier one.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "dataplane/capture/pcapng.h"

struct rte_mbuf;

namespace ofan::dp {

inline constexpr uint32_t kCaptureMaxSnaplen = 4096;  // an AF_XDP frame (MTU <= 3542) fits
inline constexpr uint32_t kCaptureRingSlots = 512;

// One port's copies: a single-producer, single-consumer ring of fixed
// slots (a header, then up to kCaptureMaxSnaplen bytes).
class CaptureRing {
 public:
  struct Slot {
    uint64_t tsc;
    uint32_t session;
    uint16_t len;   // bytes copied
    uint16_t orig;  // the frame's length
    CaptureDir dir;
    uint8_t data[kCaptureMaxSnaplen];
  };
  CaptureRing();
  // Producer: copies frames[0..n) into free slots, up to what is free;
  // returns how many it copied, which Commit then publishes (all, or the
  // first k: a TX burst publishes what the device took).
  uint32_t Copy(rte_mbuf* const* frames, uint32_t n, CaptureDir dir, uint64_t tsc, uint32_t session,
                uint32_t snaplen);
  void Commit(uint32_t k) {
    head_.store(head_.load(std::memory_order_relaxed) + k, std::memory_order_release);
  }
  // Consumer: the next published slot, or nullptr; Pop releases it.
  const Slot* Peek() const;
  void Pop() { tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

 private:
  std::unique_ptr<Slot[]> slots_;
  alignas(64) std::atomic<uint32_t> head_{0};  // written by the producer
  alignas(64) std::atomic<uint32_t> tail_{0};  // written by the consumer
};

struct CaptureRequest {
  std::vector<uint32_t> ports;
  std::string file;
  uint32_t snaplen = kCaptureMaxSnaplen;
  uint64_t count = 0;  // stop after this many frames (0: until capture_stop)
};

struct CaptureStatus {
  uint32_t id = 0;
  bool active = false;
  std::string file;
  std::vector<uint32_t> ports;
  uint32_t snaplen = 0;
  uint64_t count = 0;
  uint64_t frames = 0;   // written to the file
  uint64_t dropped = 0;  // copies a full ring could not take
  std::string error;     // why it stopped early (a write failed)
};

// Several captures may run at once, on disjoint sets of ports (two people
// capturing two links of one switch); each has its id, file and count.
class PortCapture {
 public:
  static constexpr size_t kMaxCaptures = 8;  // running at once
  static constexpr size_t kKeepEnded = 16;   // ended ones capture_status still reports

  // `switch_name` names the interfaces ("e0-0:p2"); tsc_hz converts times.
  PortCapture(uint32_t num_ports, std::string switch_name, uint64_t tsc_hz);
  // Times given in another clock (the shared engine's emulated ps): `hz`
  // ticks a second, tick `t0` being wall-clock time `ns0`. Before any capture.
  void SetClock(uint64_t hz, uint64_t t0, uint64_t ns0) {
    tsc_hz_ = hz ? hz : 1;
    tsc0_ = t0;
    ns0_ = ns0;
  }

  // Worker side. The ports being captured (bit p: port p), read once per burst.
  uint64_t mask() const { return mask_.load(std::memory_order_acquire); }
  bool captures(uint32_t port) const { return (mask() >> port) & 1; }
  // A received burst of port p: every frame.
  void RecordRx(uint32_t port, rte_mbuf* const* frames, uint32_t n, uint64_t tsc);
  // A burst about to be sent on port p: copies them (returns how many);
  // CommitTx(p, k) then publishes the first k, the ones the device took.
  uint32_t CopyTx(uint32_t port, rte_mbuf* const* frames, uint32_t n, uint64_t tsc);
  void CommitTx(uint32_t port, uint32_t k) { rings_[port]->Commit(k); }

  // Control thread.
  Result<CaptureStatus> Start(const CaptureRequest& r, const std::vector<bool>& present);
  // Writes what the rings hold; ends a capture at its count, or when a
  // write fails. Returns the frames written.
  uint64_t Service();
  Result<CaptureStatus> Stop(uint32_t id);
  std::vector<CaptureStatus> StopAll();
  Result<CaptureStatus> status(uint32_t id) const;
  // The running captures, then the ended ones kept, newest last.
  std::vector<CaptureStatus> statuses() const;

 private:
  struct Session {
    CaptureStatus st;
    PcapngWriter writer;
    std::vector<int32_t> iface_of;  // port -> pcapng interface, -1
    uint64_t dropped_at_start = 0;
  };
  uint64_t Dropped(const std::vector<uint32_t>& ports) const;
  void CountDropped(uint32_t port, uint32_t n);  // the owner lcore's
  CaptureStatus StatusOf(const Session& s) const;
  CaptureStatus End(size_t i);

  uint32_t num_ports_;
  std::string name_;
  uint64_t tsc_hz_;
  std::vector<std::unique_ptr<CaptureRing>> rings_;  // per port, made on first capture
  std::vector<std::atomic<uint64_t>> dropped_;       // per port, written by its owner
  std::vector<std::atomic<uint32_t>> tag_;           // per port: the id its copies carry
  std::vector<std::atomic<uint32_t>> snaplen_;       // per port, as its capture asked
  std::atomic<uint64_t> mask_{0};
  // Control thread only.
  std::vector<Session> running_;
  std::vector<CaptureStatus> ended_;
  uint32_t next_id_ = 1;
  uint64_t tsc0_ = 0, ns0_ = 0;  // a TSC reading and the wall-clock time it was
};

}  // namespace ofan::dp
