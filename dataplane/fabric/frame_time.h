// A frame's emulated time in the shared fabric engine: picoseconds since the
// engine started, in an mbuf dynamic field. On a link it is when the frame's
// last bit arrives at the far end; in a switch, when it arrived at the port
// it came in on (forwarding takes no emulated time).
//
// Registered once, by the engine, before any switch of it is made
// (RegisterFrameTime); read and written on the per-packet path through the
// offset (one load from the mbuf's dynamic area).
#pragma once

#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <cstdint>

#include "common/result.h"

namespace ofan::dp {

// The field's offset in every mbuf; -1 until registered.
inline int g_frame_time_offset = -1;

inline Status RegisterFrameTime() {
  if (g_frame_time_offset >= 0) return {};
  static const rte_mbuf_dynfield desc = {"ofan_emu_frame_time_ps", sizeof(uint64_t),
                                         alignof(uint64_t), 0};
  const int off = rte_mbuf_dynfield_register(&desc);
  if (off < 0) return MakeError(ErrorCode::kIo, "cannot register the frame-time mbuf field");
  g_frame_time_offset = off;
  return {};
}

inline uint64_t& FrameTime(rte_mbuf* m) {
  return *RTE_MBUF_DYNFIELD(m, g_frame_time_offset, uint64_t*);
}

}  // namespace ofan::dp
