#include "dataplane/packet/crc32.h"

#include <zlib.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ofan::pkt {
namespace {

uint32_t ZlibCrc(uint32_t crc, const uint8_t* p, size_t n) {
  return static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(p), n));
}

#if defined(__x86_64__)
#define OFAN_FOLD_TARGET __attribute__((target("pclmul,sse4.1")))

OFAN_FOLD_TARGET inline __m128i Load(const uint8_t* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}

// a * k folded onto b: the lane 128 bits on.
OFAN_FOLD_TARGET inline __m128i Fold(__m128i a, __m128i k, __m128i b) {
  const __m128i lo = _mm_clmulepi64_si128(a, k, 0x00);
  const __m128i hi = _mm_clmulepi64_si128(a, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(hi, lo), b);
}

// The running CRC's state (not inverted) over n bytes, n >= 64 and a
// multiple of 16: four 128-bit lanes folded 64 bytes at a time, then into
// one, then 16 bytes at a time, then reduced to 32 bits.
OFAN_FOLD_TARGET uint32_t FoldState(uint32_t state, const uint8_t* p, size_t n) {
  // x^(4*128+32) mod P, x^(4*128-32) mod P (reflected, shifted by one).
  const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
  // x^(128+32) mod P, x^(128-32) mod P.
  const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
  // x^64 mod P.
  const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
  // P(x) and floor(x^64 / P(x)), reflected: Barrett's pair.
  const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
  const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
  __m128i x1 = _mm_xor_si128(Load(p), _mm_cvtsi32_si128(static_cast<int>(state)));
  __m128i x2 = Load(p + 16), x3 = Load(p + 32), x4 = Load(p + 48);
  p += 64;
  n -= 64;
  for (; n >= 64; p += 64, n -= 64) {
    x1 = Fold(x1, k1k2, Load(p));
    x2 = Fold(x2, k1k2, Load(p + 16));
    x3 = Fold(x3, k1k2, Load(p + 32));
    x4 = Fold(x4, k1k2, Load(p + 48));
  }
  x1 = Fold(x1, k3k4, x2);
  x1 = Fold(x1, k3k4, x3);
  x1 = Fold(x1, k3k4, x4);
  for (; n >= 16; p += 16, n -= 16) x1 = Fold(x1, k3k4, Load(p));
  // 128 bits to 64, then to 32 + 64.
  __m128i x = _mm_xor_si128(_mm_srli_si128(x1, 8), _mm_clmulepi64_si128(x1, k3k4, 0x10));
  x = _mm_xor_si128(_mm_srli_si128(x, 4), _mm_clmulepi64_si128(_mm_and_si128(x, low32), k5, 0x00));
  // Barrett reduction to 32 bits.
  __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x, low32), poly, 0x10);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), poly, 0x00);
  return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(x, t), 1));
}

bool CpuFolds() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}
#endif

}  // namespace

bool Crc32Folds() {
#if defined(__x86_64__)
  static const bool folds = CpuFolds();
  return folds;
#else
  return false;
#endif
}

uint32_t Crc32(uint32_t crc, const uint8_t* p, size_t n) {
#if defined(__x86_64__)
  if (n >= kCrc32FoldMin && Crc32Folds()) {
    const size_t whole = n & ~size_t{kCrc32FoldBlock - 1};
    crc = ~FoldState(~crc, p, whole);
    p += whole;
    n -= whole;
  }
#endif
  return n ? ZlibCrc(crc, p, n) : crc;
}

}  // namespace ofan::pkt
