#include "emu/uroce/entropy.h"

namespace ofan::uroce {

void Entropy::Connect(const QpPeer& peer, uint16_t base_sport) {
  base_sport_ = base_sport;
  rng_.Seed(SplitMix64(cfg_.seed) ^ peer.local_qpn ^ (uint64_t{peer.local_ip} << 24));
}

uint16_t Entropy::Next() {
  switch (cfg_.entropy) {
    case EntropyMode::kPerQp:
      return base_sport_;
    case EntropyMode::kReps:
      if (count_ > 0) {
        --count_;
        return ring_[head_++ % ring_.size()];
      }
      [[fallthrough]];
    case EntropyMode::kSpray:
      break;
  }
  return static_cast<uint16_t>(0xC000 | (rng_.Next32() & 0x3FFF));
}

void Entropy::OnAck(uint16_t sport, bool becn) {
  if (cfg_.entropy == EntropyMode::kReps && !becn && count_ < ring_.size()) {
    ring_[(head_ + count_++) % ring_.size()] = sport;
  }
}

}  // namespace ofan::uroce
