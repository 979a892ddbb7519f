// Verification of a finished collective: every rank's receive buffer against
// what its senders must have sent, computed from the pattern's formula.
//
// expects:  the schedule and a rank's receive buffer after the run
// gives:    the first mismatching byte of the rank (receive-buffer offset,
//           expected, got), or none
// next:     the driver puts the first mismatch over all ranks in the result's
//           error and the count of bad ranks next to it
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "emu/collective/schedule.h"

namespace ofan::emu {

struct Mismatch {
  Rank rank = 0;
  uint64_t offset = 0;  // in the receive buffer
  uint8_t expected = 0;
  uint8_t got = 0;
  std::string ToString() const;
};

std::optional<Mismatch> VerifyRank(const Schedule& s, Rank r, std::span<const uint8_t> recv);

}  // namespace ofan::emu
