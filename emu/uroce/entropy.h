// Entropy: the UDP source port of each data packet a QP sends, which is
// the fabric's ECMP hash input (EngineConfig::entropy picks the mode).
//
// expects:  Connect() before Next(); OnAck() for every ACK received
// gives:    kPerQp: rxe's port for the QP pair, always; kSpray: a fresh
//           port per packet, 0xC000 | 14 random bits; kReps: the ports
//           that ACKs without BECN echoed, oldest first, each once, and a
//           fresh port when none is left (REPS: a port that crossed the
//           fabric without a CE mark is a path worth reusing)
// modifies: its random generator, seeded per QP so that runs repeat
// next:     drop recycled ports older than a round trip or two (a port
//           echoed long ago may name a path that has since filled up)
#pragma once

#include <array>
#include <cstdint>

#include "common/rng.h"
#include "emu/uroce/qp_types.h"

namespace ofan::uroce {

class Entropy {
 public:
  explicit Entropy(const EngineConfig& cfg) : cfg_(cfg), rng_(cfg.seed) {}

  // `base_sport`: the QP pair's port (kPerQp's).
  void Connect(const QpPeer& peer, uint16_t base_sport);
  // The source port of the next data packet.
  uint16_t Next();
  // An ACK that came back on `sport`, BECN set when it echoes a CE mark.
  void OnAck(uint16_t sport, bool becn);

 private:
  const EngineConfig& cfg_;
  Rng rng_;
  uint16_t base_sport_ = 0xC000;
  std::array<uint16_t, 256> ring_{};  // kReps: ports to recycle, a FIFO
  uint32_t head_ = 0, count_ = 0;
};

}  // namespace ofan::uroce
