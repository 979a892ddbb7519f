// PFC (IEEE 802.1Qbb) in emulated time: what a switch decides per ingress
// port for its one lossless priority, shared by the fabric engine and the
// simulator so that both pause alike.
//
// expects:   for each lossless frame a switch takes in, Admit(port, bytes, t)
//            at its arrival; Release(port, bytes, t) when its transmission
//            starts at the egress it went to (it leaves the buffer's
//            accounting then, as its cells are freed); Due(t) at every time
//            the caller reaches, for the refreshes (NextRefresh says when)
// modifies:  per ingress port: the bytes it holds, whether XOFF is out,
//            when to refresh it, the counters
// next:      each PfcAction the calls return is a PFC frame the caller sends
//            out of that port at that emulated time, on its strict-priority
//            queue (XOFF: kPfcMaxQuanta quanta; XON: 0)
//
// Buffer: a static partition of the switch's buffer by ingress port, as a
// switch with per-port reserved headroom and no shared pool does. Port p's
// lossless frames may hold up to xoff + headroom bytes; past xoff the port
// sends XOFF, and the headroom absorbs what its peer still sends until the
// pause takes effect (PfcHeadroomBytes), so a frame that finds it full is a
// lossless drop — a bug in the thresholds, never expected. Below xon the
// port sends XON. While XOFF is out it is sent again every half of its
// pause time, so the peer never resumes on its own while the port is above
// xon. No DPDK and no clock of its own: time is the caller's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "dataplane/lb/types.h"
#include "dataplane/packet/pfc_frame.h"
#include "dataplane/packet/roce.h"

namespace ofan::fabric {

using lb::TimePs;

// 802.1Qbb's pause quantum (packet/pfc_frame.h).
inline constexpr uint32_t kPfcQuantumBytes = pkt::kPfcQuantumBytes;
// The longest pause a frame can ask (its time fields are 16 bits).
inline constexpr uint16_t kPfcMaxQuanta = 0xFFFF;
// The lossless priority and the DSCP that maps to it (the RoCE data's), as
// common RoCE deployments configure them
// (../shared/seeds/meta-roce-at-scale-reading-guide.txt).
inline constexpr uint8_t kDefaultPfcPriority = 3;
inline constexpr uint8_t kRoceDscp = pkt::kRoceDscp;
// A PFC frame on the wire (packet/pfc_frame.h).
inline constexpr uint32_t kPfcFrameBytes = pkt::kPfcFrameBytes;
// A host NIC's receive buffer, as the shared engine emulates its MAC: when
// the frames due at a host that its device (AF_XDP socket, tap) has not
// taken pass it, the NIC sends XOFF to its edge; at half of it, XON.
inline constexpr uint64_t kHostRxBufferBytes = uint64_t{64} * 1024;
// The peer's response time counted into the headroom: IEEE 802.3 31B.3.7's
// bound at 100 Gb/s, in quanta (docs/design.md, lossless facts).
inline constexpr uint32_t kPfcResponseQuanta = 394;

// How long `quanta` pause quanta last on a link of `ps_per_byte`.
inline TimePs PauseQuantaPs(uint32_t quanta, double ps_per_byte) {
  return static_cast<TimePs>(
      std::llround(static_cast<double>(quanta) * kPfcQuantumBytes * ps_per_byte));
}

// The headroom of one ingress port, in bytes, as SONiC's headroom
// calculation (sonic-swss cfgmgr/buffer_headroom_*.lua) sizes it: what the
// peer still sends after the port crosses xoff — the cable both ways
// (2 x latency x rate: XOFF's flight there, the last frames' flight back),
// the peer's response (`response_quanta`), and two frames of `mtu_bytes`
// (the one this port is sending when XOFF is due, which XOFF waits behind,
// and the one the peer has started when XOFF arrives).
inline uint64_t PfcHeadroomBytes(double ps_per_byte, TimePs latency_ps, uint32_t mtu_bytes,
                                 uint32_t response_quanta = kPfcResponseQuanta) {
  const double cable = 2.0 * static_cast<double>(latency_ps) / ps_per_byte;
  return static_cast<uint64_t>(cable + 0.999) + uint64_t{response_quanta} * kPfcQuantumBytes +
         2ull * mtu_bytes;
}

// One ingress port's lossless thresholds, bytes.
struct PfcThresholds {
  uint64_t xoff = 0;      // XOFF when the port holds more than this
  uint64_t xon = 0;       // XON when it holds this or less (after XOFF)
  uint64_t headroom = 0;  // admitted above xoff; beyond it a lossless drop
};

// The thresholds of a port whose share of the buffer is `buffer` bytes:
// xoff = buffer - headroom (or `xoff` where given), xon = xoff - `xon_offset`
// (or `xon` where given). An error names what does not fit.
// 0 for xoff or xon: derived.
inline Result<PfcThresholds> MakePfcThresholds(uint64_t buffer, uint64_t headroom, uint64_t xoff,
                                               uint64_t xon, uint64_t xon_offset) {
  auto bad = [](const std::string& m) { return InvalidArgument(m); };
  if (headroom >= buffer) {
    return bad("PFC headroom " + std::to_string(headroom) +
               " B does not fit the port's buffer of " + std::to_string(buffer) +
               " B (a larger buffer, or a shorter or slower link)");
  }
  PfcThresholds th;
  th.headroom = headroom;
  th.xoff = xoff ? xoff : buffer - headroom;
  if (th.xoff + headroom > buffer) {
    return bad("PFC xoff " + std::to_string(th.xoff) + " B + headroom " + std::to_string(headroom) +
               " B exceed the port's buffer of " + std::to_string(buffer) + " B");
  }
  if (xon) {
    th.xon = xon;
  } else {
    th.xon = th.xoff > xon_offset ? th.xoff - xon_offset : 0;
  }
  if (th.xon >= th.xoff) {
    return bad("PFC xon " + std::to_string(th.xon) + " B must be below xoff " +
               std::to_string(th.xoff) + " B");
  }
  return th;
}

// The thresholds of a port whose buffer is `buffer` bytes on a link of
// `ps_per_byte` and `latency_ps`, frames up to `mtu_bytes`: headroom as
// PfcHeadroomBytes sizes it, xon two frames below xoff unless given. What
// ofan-dp's switches (switch.cc) and ofan-sim (sim/config.cc) both set.
inline Result<PfcThresholds> PortPfcThresholds(uint64_t buffer, double ps_per_byte,
                                               TimePs latency_ps, uint32_t mtu_bytes,
                                               uint32_t response_quanta, uint64_t xoff = 0,
                                               uint64_t xon = 0) {
  const uint64_t headroom = PfcHeadroomBytes(ps_per_byte, latency_ps, mtu_bytes, response_quanta);
  return MakePfcThresholds(buffer, headroom, xoff, xon, 2ull * mtu_bytes);
}

// A PFC frame to send: out of `port`, at `t`, pausing for `quanta` (0: XON).
struct PfcAction {
  uint32_t port = 0;
  TimePs t = 0;
  uint16_t quanta = 0;
};

// Counters of one ingress port (sent: the frames the port sent), counted
// since the start but for the maxima (ResetMaxima).
struct PfcPortCounters {
  uint64_t xoff_sent = 0, xon_sent = 0, xoff_events = 0;
  uint64_t headroom_max_bytes = 0;  // the most held above xoff
  uint64_t lossless_drops = 0;      // headroom overflows
  uint64_t max_bytes = 0;           // the most held at once
};

class PfcIngress {
 public:
  PfcIngress() = default;
  // XOFF asks `quanta`; `refresh_ps[p]`: how often port p repeats it while
  // above xon (half of the pause it asks, at the port's rate).
  PfcIngress(std::vector<PfcThresholds> th, std::vector<TimePs> refresh_ps,
             uint16_t quanta = kPfcMaxQuanta)
      : th_(std::move(th)), refresh_ps_(std::move(refresh_ps)), st_(th_.size()), quanta_(quanta) {}

  uint32_t ports() const { return static_cast<uint32_t>(th_.size()); }
  const PfcThresholds& thresholds(uint32_t p) const { return th_[p]; }
  uint64_t held(uint32_t p) const { return st_[p].bytes; }
  bool xoff_out(uint32_t p) const { return st_[p].xoff; }
  const PfcPortCounters& counters(uint32_t p) const { return st_[p].c; }

  // A lossless frame of `bytes` from port p at t: false if the headroom is
  // full (a lossless drop, counted). May append an XOFF to `out`.
  template <class Out>
  bool Admit(uint32_t p, uint32_t bytes, TimePs t, Out& out) {
    State& s = st_[p];
    const PfcThresholds& th = th_[p];
    if (s.bytes + bytes > th.xoff + th.headroom) {
      ++s.c.lossless_drops;
      return false;
    }
    s.bytes += bytes;
    s.c.max_bytes = std::max(s.c.max_bytes, s.bytes);
    if (s.bytes > th.xoff) {
      s.c.headroom_max_bytes = std::max(s.c.headroom_max_bytes, s.bytes - th.xoff);
      if (!s.xoff) {
        s.xoff = true;
        ++s.c.xoff_events;
        Xoff(p, t, out);
      }
    }
    return true;
  }

  // A frame Admit took from port p starts leaving at t. May append an XON.
  template <class Out>
  void Release(uint32_t p, uint32_t bytes, TimePs t, Out& out) {
    State& s = st_[p];
    s.bytes -= std::min<uint64_t>(bytes, s.bytes);
    if (s.xoff && s.bytes <= th_[p].xon) {
      s.xoff = false;
      s.refresh_at = kNoRefresh;
      ++s.c.xon_sent;
      out.push_back(PfcAction{p, t, 0});
      Recompute();  // rare: a port's XON
    }
  }

  // The refreshes due before t, each at its own time, in time order per port.
  template <class Out>
  void Due(TimePs t, Out& out) {
    if (next_refresh_ >= t) return;
    for (uint32_t p = 0; p < st_.size(); ++p) {
      while (st_[p].refresh_at < t) Xoff(p, st_[p].refresh_at, out);
    }
    Recompute();
  }

  // When the next refresh is due (max: none).
  TimePs NextRefresh() const { return next_refresh_; }
  // The maxima start again from what is held now (a new measurement);
  // the counts go on (their readers take differences).
  void ResetMaxima() {
    for (size_t p = 0; p < st_.size(); ++p) {
      State& s = st_[p];
      s.c.max_bytes = s.bytes;
      s.c.headroom_max_bytes = s.bytes > th_[p].xoff ? s.bytes - th_[p].xoff : 0;
    }
  }

 private:
  static constexpr TimePs kNoRefresh = std::numeric_limits<TimePs>::max();
  struct State {
    uint64_t bytes = 0;
    bool xoff = false;
    TimePs refresh_at = kNoRefresh;
    PfcPortCounters c;
  };
  template <class Out>
  void Xoff(uint32_t p, TimePs t, Out& out) {
    ++st_[p].c.xoff_sent;
    st_[p].refresh_at = t + refresh_ps_[p];
    next_refresh_ = std::min(next_refresh_, st_[p].refresh_at);
    out.push_back(PfcAction{p, t, quanta_});
  }
  void Recompute() {
    next_refresh_ = kNoRefresh;
    for (const State& s : st_) next_refresh_ = std::min(next_refresh_, s.refresh_at);
  }

  std::vector<PfcThresholds> th_;
  std::vector<TimePs> refresh_ps_;
  std::vector<State> st_;
  uint16_t quanta_ = kPfcMaxQuanta;
  TimePs next_refresh_ = kNoRefresh;
};

// The PFC watchdog of one port's lossless queue, as SONiC's pfcwd has it
// (sonic-utilities pfcwd): a queue paused without a break, with frames
// waiting, for `detect` is in a storm (a peer that never resumes: a broken
// NIC); the watchdog fires and the queue acts (PfcWdAction); once no pause
// has come for `restore`, it is restored. Fed the pauses the port receives
// and, at any time the caller reaches, whether frames wait; Deadline() says
// when it next needs a look.
enum class PfcWdAction : uint8_t { kDrop, kForward, kAlert };
inline constexpr uint32_t kPfcWdDetectMs = 200, kPfcWdRestoreMs = 200;  // SONiC's defaults
inline constexpr uint32_t kPfcWdDetectMinMs = 100, kPfcWdDetectMaxMs = 5000;
inline constexpr uint32_t kPfcWdRestoreMinMs = 100, kPfcWdRestoreMaxMs = 60000;

// "drop" | "forward" | "alert", and back (an error names the choices).
inline std::string_view PfcWdActionName(PfcWdAction a) {
  switch (a) {
    case PfcWdAction::kDrop:
      return "drop";
    case PfcWdAction::kForward:
      return "forward";
    case PfcWdAction::kAlert:
      return "alert";
  }
  return "drop";
}
inline Result<PfcWdAction> ParsePfcWdAction(std::string_view s) {
  for (auto a : {PfcWdAction::kDrop, PfcWdAction::kForward, PfcWdAction::kAlert}) {
    if (s == PfcWdActionName(a)) return a;
  }
  std::string m = "'";
  m.append(s);
  m.append("': drop, forward or alert");
  return InvalidArgument(std::move(m));
}

class PfcWatchdog {
 public:
  enum class Event : uint8_t { kNone, kFire, kRestore };
  PfcWatchdog() = default;
  PfcWatchdog(TimePs detect, TimePs restore) : detect_(detect), restore_(restore) {}

  // A pause frame received at t asking until `until` (t: XON). While the
  // watchdog has fired, the queue ignores pause (drop, forward): such a
  // pause only keeps the storm going. It restores once the peer has asked
  // no pause for `restore` (its last pause's end, or its XON, that long
  // ago: on a slow link one XOFF covers seconds, and frames that stop
  // coming do not mean the peer stopped pausing); restored, nothing it
  // ignored pauses it.
  void Paused(TimePs t, TimePs until, bool waiting) {
    if (fired_) {
      pause_end_ = until > t ? std::max(pause_end_, until) : t;
      return;
    }
    pause_end_ = until;
    if (t > covered_until_) storm_since_ = kNone;  // the pause had lapsed
    covered_until_ = until;
    if (until <= t) {
      storm_since_ = kNone;
    } else if (waiting && storm_since_ == kNone) {
      storm_since_ = t;
    }
  }
  // At t (non-decreasing): frames waiting or not. Returns what happened by
  // t and when (fired_at / restored_at), at most one event per call.
  Event Check(TimePs t, bool waiting) {
    if (fired_) {
      if (t >= pause_end_ + restore_) {
        fired_ = false;
        storm_since_ = kNone;
        at_ = pause_end_ + restore_;
        ++restored_;
        return Event::kRestore;
      }
      return Event::kNone;
    }
    if (storm_since_ != kNone && covered_until_ < storm_since_ + detect_ && t >= covered_until_) {
      storm_since_ = kNone;  // the pause ended before the detection time
    }
    if (storm_since_ == kNone) {
      if (waiting && covered_until_ > t) storm_since_ = t;
      return Event::kNone;
    }
    if (!waiting) {
      storm_since_ = kNone;
      return Event::kNone;
    }
    if (t >= storm_since_ + detect_) {
      fired_ = true;
      at_ = storm_since_ + detect_;
      covered_until_ = at_;  // from here the queue ignores the pause
      ++fired_count_;
      return Event::kFire;
    }
    return Event::kNone;
  }
  // When Check next has something to decide (max: nothing pending).
  TimePs Deadline() const {
    if (fired_) return pause_end_ + restore_;
    return storm_since_ == kNone ? kNone : storm_since_ + detect_;
  }
  bool fired() const { return fired_; }
  TimePs event_time() const { return at_; }  // of the last event Check returned
  uint64_t fired_count() const { return fired_count_; }
  uint64_t restored_count() const { return restored_; }

 private:
  static constexpr TimePs kNone = std::numeric_limits<TimePs>::max();
  TimePs detect_ = 0, restore_ = 0;
  // covered_until_: the pause in effect (the queue's view: cut at the
  // watchdog's fire); pause_end_: the one the peer asked (ignored or not).
  TimePs covered_until_ = 0, storm_since_ = kNone, pause_end_ = 0, at_ = 0;
  bool fired_ = false;
  uint64_t fired_count_ = 0, restored_ = 0;
};

// How long a port's lossless queue has been paused: the union of the pause
// intervals a port received, in emulated time.
class PauseClock {
 public:
  // A pause frame received at t asking `until` (t itself: XON).
  void Received(TimePs t, TimePs until) {
    total_ += Overlap(t);
    start_ = t;
    end_ = until;
  }
  TimePs until() const { return end_; }
  bool paused_at(TimePs t) const { return t < end_; }
  // Paused time up to t.
  TimePs paused_ps(TimePs t) const { return total_ + Overlap(t); }

 private:
  TimePs Overlap(TimePs t) const {
    return std::min(t, end_) > start_ ? std::min(t, end_) - start_ : 0;
  }
  TimePs start_ = 0, end_ = 0, total_ = 0;
};

// One lossless queue's view of the pauses it receives, watchdog included:
// what the engine's ports (egress/port_queue.cc) and the simulator's
// (sim/sim.cc) do with a pause and with the watchdog's verdicts, in one
// place. The caller owns the queue: it stops it until what Paused returns,
// and on a watchdog fire (Check) stops it no longer and, for kDrop,
// discards its frames.
class PfcPauseState {
 public:
  PfcPauseState() = default;
  PfcPauseState(TimePs detect, TimePs restore, PfcWdAction action)
      : wd_(detect, restore), action_(action), watched_(true) {}

  // A pause received at t asking until `until` (t: XON), frames waiting or
  // not. Returns when the queue may send again, or nothing: a stormed queue
  // (the watchdog fired, drop or forward) ignores pause. Call Check(t)
  // first, for what the watchdog decided before it.
  std::optional<TimePs> Paused(TimePs t, TimePs until, bool waiting) {
    if (watched_) wd_.Paused(t, until, waiting);
    if (ignores_) return std::nullopt;
    clock_.Received(t, until);
    return until;
  }

  // The watchdog at t (frames waiting or not). kFire: at `at` it fired;
  // `stop_pausing`: the queue ignores pause from then on (its pause ends
  // at `at`), `drop`: and discards its frames (action drop). kRestore: it
  // heeds pause again.
  struct Verdict {
    PfcWatchdog::Event event = PfcWatchdog::Event::kNone;
    TimePs at = 0;
    bool stop_pausing = false, drop = false;
  };
  Verdict Check(TimePs t, bool waiting) {
    Verdict v;
    if (!watched_) return v;
    v.event = wd_.Check(t, waiting);
    if (v.event == PfcWatchdog::Event::kNone) return v;
    v.at = wd_.event_time();
    if (v.event == PfcWatchdog::Event::kRestore) {
      ignores_ = false;
    } else if (action_ != PfcWdAction::kAlert) {
      ignores_ = v.stop_pausing = true;
      v.drop = action_ == PfcWdAction::kDrop;
      clock_.Received(v.at, v.at);
    }
    return v;
  }

  // A frame for the queue while the watchdog has it dropping.
  bool dropping() const { return ignores_ && action_ == PfcWdAction::kDrop; }
  bool ignores_pause() const { return ignores_; }
  const PauseClock& clock() const { return clock_; }
  const PfcWatchdog& watchdog() const { return wd_; }
  // When Check next has something to decide (max: nothing, or no watchdog).
  TimePs Deadline() const { return watched_ ? wd_.Deadline() : std::numeric_limits<TimePs>::max(); }

 private:
  PauseClock clock_;
  PfcWatchdog wd_;
  PfcWdAction action_ = PfcWdAction::kDrop;
  bool watched_ = false;  // a watchdog configured (PFC on)
  bool ignores_ = false;  // fired with action drop or forward
};

}  // namespace ofan::fabric
