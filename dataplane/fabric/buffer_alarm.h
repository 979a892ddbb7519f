// BufferAlarm: a switch's buffer occupancy against its capacity, with the
// alarm RoCE fabrics raise when a switch's shared buffer passes 80 %
// (../shared/seeds/meta-roce-at-scale-reading-guide.txt: buffer alarms at
// 80 % beside the PFC watchdog).
//
// expects:   Sample(t, bytes) at non-decreasing emulated times (ps), bytes
//            the frames the switch holds then (every port's backlog, both
//            classes); the engine samples at the end of each window it
//            emulates, so a peak inside one window is seen at its end
// modifies:  its own state: the most held, whether the alarm is up, how
//            often it was raised and for how long it has been up
// next:      the switch publishes the counts (status "buffer"); ofan-emu
//            status and run read them
//
// The alarm rises when the occupancy passes kBufferAlarmPct of the
// capacity and falls when it is back at kBufferAlarmClearPct or below, so
// that a buffer hovering at the mark raises one alarm, not one per sample.
// No DPDK and no clock of its own: time is the caller's.
#pragma once

#include <algorithm>
#include <cstdint>

#include "dataplane/lb/types.h"

namespace ofan::fabric {

using lb::TimePs;

inline constexpr uint32_t kBufferAlarmPct = 80;
inline constexpr uint32_t kBufferAlarmClearPct = 70;

class BufferAlarm {
 public:
  BufferAlarm() = default;
  explicit BufferAlarm(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  // The switch holds `bytes` at t. True when this sample raised the alarm.
  bool Sample(TimePs t, uint64_t bytes) {
    bytes_ = bytes;
    max_bytes_ = std::max(max_bytes_, bytes);
    if (capacity_ == 0) return false;
    if (active_) {
      if (bytes * 100 <= capacity_ * uint64_t{kBufferAlarmClearPct}) {
        active_ = false;
        up_ps_ += t - since_;
      }
      return false;
    }
    if (bytes * 100 > capacity_ * uint64_t{kBufferAlarmPct}) {
      active_ = true;
      since_ = t;
      ++raised_;
      return true;
    }
    return false;
  }
  // A new measurement: the most held starts again from what is held now
  // (the counts go on: their readers take differences).
  void ResetMax() { max_bytes_ = bytes_; }

  uint64_t capacity() const { return capacity_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t max_bytes() const { return max_bytes_; }
  uint64_t raised() const { return raised_; }
  bool active() const { return active_; }
  // How long the alarm has been up in all, up to t (t >= the last sample).
  TimePs up_ps(TimePs t) const { return up_ps_ + (active_ && t > since_ ? t - since_ : 0); }

 private:
  uint64_t capacity_ = 0, bytes_ = 0, max_bytes_ = 0, raised_ = 0;
  bool active_ = false;
  TimePs since_ = 0, up_ps_ = 0;
};

}  // namespace ofan::fabric
