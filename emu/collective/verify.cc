#include "emu/collective/verify.h"

#include <fmt/format.h>

#include <array>
#include <cstring>

#include "emu/collective/pattern.h"

namespace ofan::emu {

std::string Mismatch::ToString() const {
  return fmt::format("rank {}: receive buffer offset {}: expected 0x{:02x}, got 0x{:02x}", rank,
                     offset, expected, got);
}

std::optional<Mismatch> VerifyRank(const Schedule& s, Rank r, std::span<const uint8_t> recv) {
  const uint64_t seed = s.params.seed;
  std::array<uint8_t, 4096> want{};
  for (const Expectation& e : s.ranks[r].expect) {
    if (e.recv_off + e.len > recv.size()) {
      return Mismatch{.rank = r, .offset = recv.size()};
    }
    // Compare a page at a time; look for the byte only where a page differs.
    for (uint64_t i = 0; i < e.len; i += want.size()) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(want.size(), e.len - i));
      const std::span<uint8_t> w(want.data(), len);
      if (e.sum) {
        FillSumPattern(w, s.params.num_ranks, e.recv_off + i, seed);
      } else {
        FillPattern(w, e.src, e.src_off + i, seed);
      }
      const uint8_t* got = recv.data() + e.recv_off + i;
      if (std::memcmp(got, want.data(), len) == 0) continue;
      for (size_t j = 0; j < len; ++j) {
        if (got[j] != want[j]) {
          return Mismatch{
              .rank = r, .offset = e.recv_off + i + j, .expected = want[j], .got = got[j]};
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace ofan::emu
