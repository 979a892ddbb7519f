#include "emu/collective/pattern.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/rng.h"

namespace ofan::emu {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the data pattern is defined on little-endian words");

uint32_t Mix(uint64_t seed, uint64_t word) {
  return static_cast<uint32_t>(SplitMix64(SplitMix64(seed) + word));
}

uint8_t ByteOf(uint32_t word, uint64_t offset) {
  return static_cast<uint8_t>(word >> (8 * (offset % 4)));
}

// Sum over ranks 0..n-1 of PatternWord: n(n-1)/2 computed in 64 bits, then
// wrapped, as the words wrap.
uint32_t RanksSum(uint32_t n) { return static_cast<uint32_t>(uint64_t{n} * (n - 1) / 2); }

uint32_t SumWord(uint32_t n, uint64_t word, uint64_t seed) {
  return n * Mix(seed, word) + kRankStep * RanksSum(n);
}

// out[i] = Mix(seed, first + i) * mul + add for i < n, with s =
// SplitMix64(seed): the loop the compiler vectorises where the CPU
// multiplies 64-bit lanes (AVX-512DQ; AVX2 by parts), built once per
// target and picked at run time. Filling and checking the hosts' buffers
// was a third of uroce's time at 400 Mb/s (bench/RESULTS.md).
__attribute__((target_clones("arch=skylake-avx512", "avx2", "default"))) void MixWords(
    uint32_t* out, size_t n, uint64_t s, uint64_t first, uint32_t mul, uint32_t add) {
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<uint32_t>(SplitMix64(s + first + i)) * mul + add;
}

// buf[i] = byte (offset + i) of the little-endian words
// Mix(seed, w) * mul + add, w = 0, 1, ...
void FillWords(std::span<uint8_t> buf, uint64_t offset, uint64_t seed, uint32_t mul, uint32_t add) {
  const uint64_t s = SplitMix64(seed);
  auto word = [&](uint64_t w) {  // the partial words at either end
    uint32_t v;
    MixWords(&v, 1, s, w, mul, add);
    return v;
  };
  size_t i = 0;
  for (; i < buf.size() && (offset + i) % 4 != 0; ++i) {
    buf[i] = ByteOf(word((offset + i) / 4), offset + i);
  }
  uint32_t words[256];
  while (i + 4 <= buf.size()) {
    const size_t n = std::min<size_t>(std::size(words), (buf.size() - i) / 4);
    MixWords(words, n, s, (offset + i) / 4, mul, add);
    std::memcpy(&buf[i], words, n * 4);
    i += n * 4;
  }
  for (; i < buf.size(); ++i) buf[i] = ByteOf(word((offset + i) / 4), offset + i);
}

}  // namespace

uint32_t PatternWord(Rank r, uint64_t word, uint64_t seed) {
  return Mix(seed, word) + r * kRankStep;
}

uint8_t PatternByte(Rank r, uint64_t offset, uint64_t seed) {
  return ByteOf(PatternWord(r, offset / 4, seed), offset);
}

uint8_t SumPatternByte(uint32_t n, uint64_t offset, uint64_t seed) {
  return ByteOf(SumWord(n, offset / 4, seed), offset);
}

void FillPattern(std::span<uint8_t> buf, Rank r, uint64_t offset, uint64_t seed) {
  FillWords(buf, offset, seed, 1, r * kRankStep);  // PatternWord
}

void FillSumPattern(std::span<uint8_t> buf, uint32_t n, uint64_t offset, uint64_t seed) {
  FillWords(buf, offset, seed, n, kRankStep * RanksSum(n));  // SumWord
}

void ReduceAdd(std::span<uint8_t> dst, std::span<const uint8_t> src) {
  const size_t n = std::min(dst.size(), src.size());
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    uint32_t a, b;
    std::memcpy(&a, &dst[i], 4);
    std::memcpy(&b, &src[i], 4);
    a += b;
    std::memcpy(&dst[i], &a, 4);
  }
  if (i < n) {
    uint32_t a = 0, b = 0;
    std::memcpy(&a, &dst[i], n - i);
    std::memcpy(&b, &src[i], n - i);
    a += b;
    std::memcpy(&dst[i], &a, n - i);
  }
}

}  // namespace ofan::emu
