#include "emu/rcx/pair_check.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace ofan::rcx {
namespace {

// Bytes 0..255 of message m: k * 7 mod 256 repeats every 256 bytes.
std::array<uint8_t, 256> Period(uint64_t m) {
  std::array<uint8_t, 256> row{};
  for (uint32_t k = 0; k < row.size(); ++k) row[k] = PairByte(m, k);
  return row;
}

}  // namespace

void FillPairMessage(uint8_t* p, uint64_t m, uint64_t len) {
  const auto row = Period(m);
  for (uint64_t off = 0; off < len; off += row.size())
    std::memcpy(p + off, row.data(), std::min<uint64_t>(row.size(), len - off));
}

bool PairMessageMatches(const uint8_t* p, uint64_t m, uint64_t len) {
  const auto row = Period(m);
  for (uint64_t off = 0; off < len; off += row.size()) {
    if (std::memcmp(p + off, row.data(), std::min<uint64_t>(row.size(), len - off)) != 0)
      return false;
  }
  return true;
}

}  // namespace ofan::rcx
