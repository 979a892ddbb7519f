// RouteEvents: a wake-up when the kernel's routes, links or neighbours change
// in the agent's network namespace (rtnetlink multicast groups), so that a
// route BGP withdrew (BFD saw a failure) reaches the masks at once while the
// agent otherwise polls slowly: every poll spawns lldpcli, vtysh and ip, and
// twenty agents polling fast kept both cores of a 2-core machine busy
// (bench/RESULTS.md, "ofan-agent").
//
// expects:  the namespace the agent runs in (the socket is made in it)
// gives:    fd() for poll(2): readable when something changed; Drain() reads
//           every pending message and says whether there was one (the
//           messages are not parsed: a cycle re-reads what it needs)
// why:      fpmsyncd (SONiC) and VPP's linux-cp follow the kernel by events
//           too; the agent keeps its poll as the floor.
#pragma once

#include "common/result.h"

namespace ofan::agent {

class RouteEvents {
 public:
  // kIo when the socket cannot be made or bound.
  static Result<RouteEvents> Open();
  RouteEvents(RouteEvents&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  RouteEvents& operator=(RouteEvents&&) = delete;
  RouteEvents(const RouteEvents&) = delete;
  ~RouteEvents();

  int fd() const { return fd_; }
  // Reads what is pending (never blocks); true if anything was.
  bool Drain();

 private:
  explicit RouteEvents(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace ofan::agent
