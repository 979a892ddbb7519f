// The data a collective moves, and the reduction reduce-scatter applies.
//
// expects:  buffers as the schedule laid them out
// gives:    FillPattern: the bytes rank r starts with, a pure function of
//           (rank, offset, seed); ExpectedByte / ExpectedSumByte: what a
//           byte must be at the end, computed from the formula, never from a
//           buffer; ReduceAdd: dst += src element-wise
// next:     RankEngine fills and reduces; Verify (verify.h) compares
//
// Data are little-endian uint32 words: word w of rank r is
// Mix(seed, w) + r * kRankStep (mod 2^32). The rank enters linearly so that
// the sum over all n ranks has a closed form, n * Mix + kRankStep * n(n-1)/2,
// and verifying a reduce-scatter costs no more than verifying a copy; kRankStep
// is odd, so data from the wrong rank always differs somewhere in the word.
// The reduction is the element-wise wrapping sum of those words; a trailing
// partial word (S not a multiple of 4) is added as a zero-padded word, which
// gives the low bytes of the sum, as the closed form does.
#pragma once

#include <cstdint>
#include <span>

#include "emu/collective/transport.h"

namespace ofan::emu {

inline constexpr uint32_t kRankStep = 0x9E3779B1u;

uint32_t PatternWord(Rank r, uint64_t word, uint64_t seed);
uint8_t PatternByte(Rank r, uint64_t offset, uint64_t seed);
// Byte `offset` of the sum of all n ranks' data.
uint8_t SumPatternByte(uint32_t n, uint64_t offset, uint64_t seed);

// buf[i] = PatternByte(r, offset + i, seed).
void FillPattern(std::span<uint8_t> buf, Rank r, uint64_t offset, uint64_t seed);

// buf[i] = SumPatternByte(n, offset + i, seed).
void FillSumPattern(std::span<uint8_t> buf, uint32_t n, uint64_t offset, uint64_t seed);

// dst += src as uint32 words; both start at an offset that is a multiple of
// 4 (the schedule aligns reduce-scatter's chunks), a short tail as above.
void ReduceAdd(std::span<uint8_t> dst, std::span<const uint8_t> src);

}  // namespace ofan::emu
