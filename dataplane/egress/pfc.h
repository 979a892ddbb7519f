// PFC (802.1Qbb) and 802.3x PAUSE, both directions, for the egress stage.
//
// expects:   received: a frame parse marked kPfc (MAC control ethertype,
//            opcode PFC or PAUSE, long enough); generated: the IngressTally
//            of the switch's queues
// modifies:  received: the PortQueue of the port it came in on (its normal
//            queue pauses for the frame's quanta of our class); generated:
//            nothing but the xoff state per port
// next:      generated PFC frames go out through ControlSender (the port's
//            priority queue), counted kPfcTx
//
// Generation (the per-switch engine): a port sends XOFF when the bytes
// queued anywhere in the switch that arrived on it pass xoff, and XON when
// they fall to xon. The XOFF is decided by the worker that queued the frame
// crossing xoff, at once (PfcGenerator::Crossed), so that it does not wait
// for the control thread's next poll; the control thread refreshes it and
// sends XON at its polls (Step). The shared engine decides in emulated
// time instead (fabric/pfc.h, egress/emu_pfc.h).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "dataplane/fabric/pfc.h"
#include "dataplane/packet/headers.h"
#include "dataplane/packet/pfc_frame.h"

namespace ofan::dp {

// The frames themselves: dataplane/packet/pfc_frame.h.
using pkt::BuildPfcFrame;
using pkt::PauseRx;
using pkt::ReadPause;
using pkt::ReceivedPause;
using pkt::ReceivedPauseQuanta;
inline constexpr size_t kPfcFrameBytes = pkt::kPfcFrameBytes;

// Per port: has it sent XOFF, and when? Decides, from the tally, what to
// send (the shared engine's is exact: fabric/pfc.h's PfcIngress, with the
// same thresholds and the same refresh): XOFF above xoff, again every
// `refresh` (half the pause it asks) while above xon, so that the peer never
// resumes while the port is still full; XON at or below xon.
//
// Two sides share a port's state. Workers call Crossed after queueing
// frames (any worker, any time); the control thread calls Step at its polls
// (one thread). A port's paused flag changes only by compare-and-swap, so
// exactly one side sends each XOFF that starts a pause and one XON ends it.
// A worker's XOFF can reach the priority queue after an XON the control
// thread decided while the worker was sending it; the worker counts its
// sent XOFFs, and Step sends XON again when one came after its last XON.
class PfcGenerator {
 public:
  enum class Action : uint8_t { kNone, kXoff, kXon };
  PfcGenerator() = default;
  // Per port: thresholds and refresh interval (ps, 0: never refresh).
  PfcGenerator(std::vector<fabric::PfcThresholds> th, std::vector<fabric::TimePs> refresh);
  PfcGenerator(PfcGenerator&&) = default;
  PfcGenerator& operator=(PfcGenerator&&) = default;

  // The control thread's, at `now` (ps, non-decreasing per port).
  Action Step(uint32_t port, uint64_t ingress_bytes, fabric::TimePs now);
  // A worker's, after queueing frames from `port`: true if the port's bytes
  // passed xoff and this call paused it; the caller sends the XOFF, then
  // calls XoffSent.
  bool Crossed(uint32_t port, uint64_t ingress_bytes) {
    if (port >= th_.size() || ingress_bytes <= th_[port].xoff) return false;
    PortState& s = st_[port];
    return !s.xoff.load(std::memory_order_relaxed) && Pause(s);  // a plain load first: cheap
  }
  void XoffSent(uint32_t port) { st_[port].worker_xoffs.fetch_add(1, std::memory_order_release); }
  // The XOFF could not be queued: the port is not paused, and the next
  // crossing (or poll) tries again.
  void XoffFailed(uint32_t port) { st_[port].xoff.store(false, std::memory_order_release); }
  // Whether the port is paused (its last word was XOFF).
  bool xoff(uint32_t port) const {
    return port < th_.size() && st_[port].xoff.load(std::memory_order_acquire);
  }
  // Pauses begun (XOFF after XON or none), by either side.
  uint64_t xoff_events(uint32_t port) const {
    return port < th_.size() ? st_[port].xoff_events.load(std::memory_order_relaxed) : 0;
  }

 private:
  struct alignas(64) PortState {
    std::atomic<bool> xoff{false};
    std::atomic<uint64_t> worker_xoffs{0};  // XOFFs workers have queued
    std::atomic<uint64_t> xoff_events{0};
  };
  bool Pause(PortState& s) {
    bool was = false;
    if (!s.xoff.compare_exchange_strong(was, true, std::memory_order_acq_rel)) return false;
    s.xoff_events.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  std::vector<fabric::PfcThresholds> th_;
  std::vector<fabric::TimePs> refresh_;
  std::unique_ptr<PortState[]> st_;
  // The control thread's alone.
  std::vector<fabric::TimePs> next_refresh_;
  std::vector<uint8_t> known_xoff_;     // Step has seen the port paused
  std::vector<uint64_t> xoffs_at_xon_;  // worker_xoffs when Step last sent XON
};

}  // namespace ofan::dp
