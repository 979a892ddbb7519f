// Small, fast, seedable PRNGs. Every random choice in ofan (LB tie-breaks,
// initial pointers, workloads, failures) draws from one of these so that a run
// is a pure function of its seed.
#pragma once

#include <cstdint>

namespace ofan {

// SplitMix64: seeding and cheap hashing of integers.
constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Maps a 32-bit uniform value onto [0, n) without division (Lemire).
constexpr uint32_t Reduce32(uint32_t x, uint32_t n) {
  return static_cast<uint32_t>((static_cast<uint64_t>(x) * n) >> 32);
}

// xoshiro256**: the per-switch / per-lcore generator.
class Rng {
 public:
  explicit Rng(uint64_t seed = 1) { Seed(seed); }
  void Seed(uint64_t seed) {
    uint64_t x = seed;
    for (auto& w : s_) {
      x = SplitMix64(x);
      w = x;
    }
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  uint32_t Next32() { return static_cast<uint32_t>(Next() >> 32); }
  // Uniform in [0, n), n >= 1.
  uint32_t Below(uint32_t n) { return Reduce32(Next32(), n); }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  static constexpr uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace ofan
