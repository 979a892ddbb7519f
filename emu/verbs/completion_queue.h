// CompletionQueue: one CQ with a completion channel, so that a host with
// nothing to do sleeps in the kernel until a completion arrives (or a
// timeout passes) instead of spinning on ibv_poll_cq: a TCG guest has two
// vCPUs for several ranks, and a spinning poller takes them from rxe.
//
// expects:  a Device that outlives it; `entries` at least the work requests
//           that can complete before they are polled (every signaled send
//           WR and every posted receive WR of the QPs that use it), else
//           the CQ overruns
// gives:    Poll(): up to out.size() completions, waiting at most
//           timeout_us for the first when there are none (0: never waits)
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <span>

#include "common/result.h"
#include "emu/verbs/device.h"

namespace ofan::verbs {

class CompletionQueue {
 public:
  static Result<std::unique_ptr<CompletionQueue>> Create(const Device& dev, uint32_t entries);
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  ibv_cq* cq() const { return cq_; }
  // Completions polled into out (the count); an error when the CQ or its
  // channel fails (not for failed work completions: those are in out with
  // their status).
  Result<size_t> Poll(std::span<ibv_wc> out, uint32_t timeout_us);

 private:
  CompletionQueue() = default;
  Status ConsumeEvent();

  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  bool armed_ = false;
  uint32_t unacked_ = 0;  // channel events not yet acknowledged (acked in batches)
};

}  // namespace ofan::verbs
