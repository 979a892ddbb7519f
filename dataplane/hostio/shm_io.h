// ShmIo: a host's link to the shared engine as two rings of frames in a
// file both processes map (`up --host-io shm`), instead of a veth and
// copy-mode AF_XDP at each end: no skb, no softirq, no system call per
// burst while both sides are busy. A frame costs one copy into the ring and
// one out of it. Measured against the veth (bench/RESULTS.md, "Host links
// through shared memory"): what the kernel's host path cost the engine
// thread was most of its time at 400 Mb/s.
//
// The file (PATH) holds a header and two rings of fixed slots: "up" (host
// to switch) and "down" (switch to host). Each ring has one producer and
// one consumer; indices run free (uint32, wrapping), the producer owns
// head, the consumer tail. A slot holds the frame's length, the producer's
// CLOCK_MONOTONIC time at Send (FrameView::rx_ns on the other side: the
// engine starts the frame on its wire then) and the bytes. The consumer's
// fd() is a doorbell, a FIFO (PATH.up or PATH.down): PrepareSleep(), when
// the ring is empty, arms it, and the producer's next Send() rings it once
// (store head, fence, load armed / store armed, fence, load head: one of
// the two sees the other); a consumer that polls (the busy engine, a busy
// uroce host) never arms it and no system call is made. The engine and
// uroce sleep on it as on a socket.
//
// expects:  one process at each end (the engine's switch end made first;
//           a host end attaches to it); frames of at most kIoMaxFrame bytes
// gives:    CreateShmLink: the switch end, making PATH and its doorbells
//           (replacing any left there); OpenShmLink: the host end, which
//           first drops what waited for a host before it
// modifies: PATH, PATH.up, PATH.down: the caller removes them (ofan-emu's
//           state directory goes with `down`)
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "dataplane/hostio/packet_io.h"

namespace ofan::hostio {

// Frames each ring holds: 5 ms of a 400 Mb/s link's 2 KiB frames, twice
// uroce's largest burst. Fewer slots keep the rings the engine copies
// through warmer in the cache: with 128 against 512, a 4 MiB permutation
// at 400 Mb/s (RPS, Ofan, POfan, PFC, two seeds each, twice) finished
// 2-12 % above the NIC bound against 9-36 % (bench/RESULTS.md).
inline constexpr uint32_t kShmSlots = 128;

Result<std::unique_ptr<PacketIo>> CreateShmLink(const std::string& path);
Result<std::unique_ptr<PacketIo>> OpenShmLink(const std::string& path);

}  // namespace ofan::hostio
