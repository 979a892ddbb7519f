// The emulator's own scale in ofan-sim, for tests that set the simulator
// beside ofan-emu: k=4 at 25 Mb/s, 1 us links, ofan-emu's frames (2048 B +
// 62 B), infinite buffers unless given (ofan-emu's ports have 256 KiB).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "sim/config.h"

namespace ofan::sim::testing {

inline SimConfig EmuScale(const std::string& lb, uint64_t msg, uint64_t buffer_bytes = 0) {
  SimConfig c;
  c.k = 4;
  c.link_gbps = 0.025;
  c.latency_us = 1;
  c.payload = 2048;
  c.header = 62;
  c.buffer_bytes = buffer_bytes;
  c.msg_bytes = msg;
  EXPECT_TRUE(ApplyLbName(lb, c).ok()) << lb;
  return c;
}

}  // namespace ofan::sim::testing
