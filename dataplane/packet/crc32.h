// Crc32: the CRC-32 of IEEE 802.3 (zlib's crc32: reflected polynomial
// 0xEDB88320, pre- and post-inverted), which RoCEv2's ICRC is (roce.h).
// zlib's table-driven loop runs at about 1-2 GB/s; uroce's hosts compute
// it over every frame they send and receive, 8 % of the machine in a
// 400 Mb/s k=4 run (bench/RESULTS.md). Where the CPU has PCLMULQDQ,
// 64-byte blocks are folded with carry-less multiplies (Intel, "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction", 2009:
// the folding and Barrett-reduction constants of its reflected case), the
// tail by zlib.
//
// expects:  p readable for n bytes (any alignment)
// gives:    crc32_z(crc, p, n): the same value, chainable the same way
#pragma once

#include <cstddef>
#include <cstdint>

namespace ofan::pkt {

uint32_t Crc32(uint32_t crc, const uint8_t* p, size_t n);

// What Crc32 folds: runs of at least kCrc32FoldMin bytes, kCrc32FoldBlock
// bytes at a time; a shorter run, and a run's last < kCrc32FoldBlock bytes,
// go to zlib's byte loop, slow on short runs (callers that assemble a run,
// as RoceIcrc does, size it by these).
inline constexpr uint32_t kCrc32FoldMin = 64, kCrc32FoldBlock = 16;

// Whether Crc32 folds with PCLMULQDQ on this CPU (tests, benchmarks).
bool Crc32Folds();

}  // namespace ofan::pkt
