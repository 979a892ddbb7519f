// Congestion measures of one link, shared by the congestion-aware policies
// (policies/conga.h, policies/glb.h) and by ofan-sim, which measures the
// remote links those policies hear about (sim/sim.cc) with the same code.
//
// expects:   the PolicyParams the policies are built from (link_gbps,
//            dre_period_ps, dre_shift, DLB's bands)
// modifies:  a Dre's two fields, lazily, when it is read or charged
// next:      levels 0 (idle) .. 7 (congested), compared by the policies
//
// Dre is CONGA's discounting rate estimator [3]: a register X that grows by
// every frame's bytes and loses X * 2^-shift every period, so that X tracks
// rate * tau with tau = period * 2^shift. The decay of all the periods
// elapsed is applied when the register is next touched, X * (1 -
// 2^-shift)^n: no timer, no work on idle links, at most one multiplication
// per bit of n. CONGA's metric is X / (C * tau)
// quantized to 3 bits (CongaLevel).
//
// DlbLevel is the quality of a member port as switch vendors document
// Broadcom's DLB: two local metrics, the port's recent load (here the same
// DRE) and its queue, each quantized into 8 bands and weighted equally (the
// documented default). Bands, as assumed here (paper Table 1 gives none):
// load below dlb_load_min of line rate is band 0, above dlb_load_max band 7,
// linear between; the queue's band is bytes / (dlb_queue_bytes / 8), capped
// at 7 (dlb_queue_bytes = 80 KB, §6's ECN threshold). Level = (load band +
// queue band + 1) / 2.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "dataplane/lb/policy_params.h"
#include "dataplane/lb/types.h"

namespace ofan::lb {

inline constexpr uint8_t kMaxCongestionLevel = 7;

struct Dre {
  uint64_t x = 0;    // bytes, decayed
  TimePs epoch = 0;  // start of the current decay period
};

// The rate estimator's parameters and the level scales, fixed per switch.
class LinkMeter {
 public:
  explicit LinkMeter(const PolicyParams& p)
      : period_(std::max<TimePs>(p.dre_period_ps, 1)), shift_(std::clamp(p.dre_shift, 1u, 16u)) {
    // C * tau in bytes: link_gbps / 8000 bytes per ps, times tau in ps.
    const double tau = static_cast<double>(period_ << shift_);
    full_ = std::max<uint64_t>(1, static_cast<uint64_t>(std::max(p.link_gbps, 0.0) / 8000.0 * tau));
    const double full = static_cast<double>(full_);
    load_lo_ = static_cast<uint64_t>(std::clamp(p.dlb_load_min, 0.0, 1.0) * full);
    load_hi_ = static_cast<uint64_t>(std::clamp(p.dlb_load_max, 0.0, 1.0) * full);
    if (load_hi_ <= load_lo_) load_hi_ = load_lo_ + 1;
    queue_step_ = std::max(p.dlb_queue_bytes / 8, 1u);
    double f = 1.0 - std::ldexp(1.0, -static_cast<int>(shift_));
    for (uint64_t& q : decay_) {
      q = static_cast<uint64_t>(std::ldexp(f, 32));
      f *= f;
    }
  }

  // X as of `now`: X * (1 - 2^-shift)^n for the n periods elapsed since the
  // last touch, in at most kDecayBits multiplications by the precomputed
  // factors for n's bits (after 64 << shift periods X is 0 whatever it was).
  uint64_t Read(Dre& d, TimePs now) const {
    if (now < d.epoch + period_) return d.x;
    const TimePs steps = (now - d.epoch) / period_;
    d.epoch += steps * period_;
    if (steps >= (TimePs{64} << shift_)) {
      d.x = 0;
    } else {
      for (TimePs n = steps, i = 0; n != 0 && d.x != 0; n >>= 1, ++i) {
        if (n & 1) d.x = MulQ32(d.x, decay_[i]);
      }
    }
    return d.x;
  }
  void Charge(Dre& d, uint32_t bytes, TimePs now) const {
    Read(d, now);
    d.x += bytes;
  }

  // CONGA's metric: X / (C * tau) in eighths, 0..7.
  uint8_t CongaLevel(uint64_t x) const {
    return static_cast<uint8_t>(std::min<uint64_t>(kMaxCongestionLevel, x * 8 / full_));
  }
  // DLB's quality as a congestion level, 0 (best) .. 7 (worst).
  uint8_t DlbLevel(uint64_t load_x, uint64_t queue_bytes) const {
    uint64_t lb = 0;
    if (load_x >= load_hi_) {
      lb = kMaxCongestionLevel;
    } else if (load_x > load_lo_) {
      lb = std::min<uint64_t>(kMaxCongestionLevel, (load_x - load_lo_) * 8 / (load_hi_ - load_lo_));
    }
    const uint64_t qb = std::min<uint64_t>(kMaxCongestionLevel, queue_bytes / queue_step_);
    return static_cast<uint8_t>((lb + qb + 1) / 2);
  }
  uint64_t full_bytes() const { return full_; }

 private:
  // (1 - 2^-shift)^(2^i) in 32.32 fixed point: 64 << 16 periods < 2^23.
  static constexpr int kDecayBits = 23;
  // floor(x * q / 2^32) for q < 2^32, without a 128-bit product.
  static constexpr uint64_t MulQ32(uint64_t x, uint64_t q) {
    return (x >> 32) * q + (((x & 0xFFFFFFFFu) * q) >> 32);
  }

  TimePs period_;
  uint32_t shift_;
  uint64_t full_ = 1;
  uint64_t load_lo_ = 0, load_hi_ = 1;
  uint32_t queue_step_ = 1;
  std::array<uint64_t, kDecayBits> decay_{};
};

}  // namespace ofan::lb
