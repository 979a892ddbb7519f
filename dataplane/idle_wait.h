// IdleWait: how an idle worker waits for work.
//
// expects:  the worker's ports are started; for AF_XDP ports the PMD has
//           created its XSK sockets (one per port: queue 0)
// gives:    Wait(us): when every port of the worker has a pollable socket,
//           epoll on them and on an eventfd until a frame arrives, a kick
//           or the timeout; otherwise a plain sleep. Notify(): from another
//           thread that queued frames on a port this worker owns (another
//           worker, the control thread's ARP/ICMP replies), wakes it if it
//           waits
// why:      twenty switches share two cores in an emulated fabric. A sleep
//           that doubles to a few milliseconds still wakes 200 times a
//           second per switch, and adds that much latency to the first
//           packet after a pause; blocking on the sockets does neither. DPDK
//           22.11's af_xdp PMD has no Rx interrupts, so the sockets are
//           found by what they are: the AF_XDP fd that appeared while a
//           port was set up (AfXdpFds before and after) is that port's.
//
// Missed wakeups: the worker sets waiting, fences, and checks its queues
// once more before it blocks; a producer enqueues, fences, and kicks if
// waiting is set. One of the two always sees the other.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace ofan::dp {

// This process's AF_XDP sockets, ascending. An XSK cannot tell its
// interface (getsockname is not implemented for AF_XDP, and this kernel has
// no XDP socket diag), so a port's socket is the one its setup added.
std::vector<int> AfXdpFds();

class IdleWait {
 public:
  IdleWait() = default;
  ~IdleWait();
  IdleWait(const IdleWait&) = delete;
  IdleWait& operator=(const IdleWait&) = delete;

  // fds: one pollable fd per port of the worker; an empty list (or any -1)
  // leaves the worker sleeping instead. False if the eventfd cannot be made.
  bool Init(const std::vector<int>& fds);
  // Blocks on the fds that are sockets (any number; -1s are skipped) and a
  // kick, whatever the others: the shared engine's wait.
  bool InitAlways(const std::vector<int>& fds);
  bool can_block() const { return efd_ >= 0; }
  // Readable when a Wait() would return at once: for a thread that blocks
  // in poll() on other fds too (the control thread). Wait(0) then takes
  // the kick.
  int pollable_fd() const { return epfd_; }

  // Worker side. Begin() announces the wait; the worker then looks at its
  // queues once more and calls Wait() if they are empty, End() either way.
  void Begin() {
    waiting_.store(true, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  void Wait(uint32_t us);
  // The same, also naming the fds that woke it: fills ready[] (up to
  // max_ready) and returns how many, or kReadyUnknown when more were ready
  // than it could name.
  static constexpr uint32_t kReadyUnknown = UINT32_MAX;
  uint32_t Wait(uint32_t us, int* ready, uint32_t max_ready);
  void End() { waiting_.store(false, std::memory_order_relaxed); }

  // Producer side, after its frames are in the queue.
  void Notify() {
    notes_.fetch_add(1, std::memory_order_seq_cst);
    if (waiting_.load(std::memory_order_relaxed)) Kick();
  }
  void Kick();  // unconditionally (Stop)
  // How many Notify()s and Kick()s there have been: a worker that saw the
  // same count before knows nobody queued anything since (the shared
  // engine looks at twenty switches' inboxes only when it changed).
  uint64_t notes() const { return notes_.load(std::memory_order_seq_cst); }

  uint64_t wakeups_by_traffic() const { return by_traffic_.load(std::memory_order_relaxed); }

 private:
  int efd_ = -1;
  int epfd_ = -1;  // epoll over the PMD's sockets (not owned) and efd_
  std::atomic<bool> waiting_{false};
  std::atomic<uint64_t> notes_{0};
  std::atomic<uint64_t> by_traffic_{0};
};

}  // namespace ofan::dp
