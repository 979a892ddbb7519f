#include "emu/uroce/dcqcn.h"

#include <algorithm>
#include <cstring>

namespace ofan::uroce {

void CnpSender::OnCe(Ns now) {
  ++c_->ce_rx;
  if (!ever_ || now - last_ >= DcqcnTime(cfg_.cnp_interval_ns, cfg_.line_rate_gbps)) owed_ = true;
}

uint32_t CnpSender::Build(uint8_t* out, Ns now) {
  if (!owed_) return 0;
  owed_ = false;
  ever_ = true;
  last_ = now;
  ++c_->cnps_tx;
  constexpr uint32_t kReserved = 16;  // IBA A17.9.3
  const uint32_t frame_len = kL2L4 + kBth + kReserved + pkt::kIcrcBytes;
  uint8_t* p = out + framer_->Header(out, frame_len - sizeof(pkt::EtherHdr), framer_->base_sport(),
                                     /*ect=*/false);
  pkt::BthHdr bth = pkt::BthHdr::Make(pkt::Opcode::kCnp, framer_->peer().remote_qpn, 0);
  bth.set_becn(true);
  std::memcpy(p, &bth, kBth);
  std::memset(p + kBth, 0, kReserved);
  return Framer::Finish(out, frame_len);
}

void RateLimiter::OnCnp(Ns now) {
  ++c_->cnps_rx;
  if (!cfg_.dcqcn) return;
  // The reaction point's cut, g = 1/16.
  alpha_ = alpha_ * (15.0 / 16.0) + 1.0 / 16.0;
  rate_ = std::max(0.01, rate_ * (1.0 - alpha_ / 2.0));
  updated_ = now;
}

void RateLimiter::OnTimer(Ns now) {
  if (limiting() && now - updated_ >= recovery()) {
    alpha_ *= 15.0 / 16.0;
    rate_ = std::min(1.0, (rate_ + 1.0) / 2.0);  // fast recovery towards line rate
    updated_ = now;
  }
}

Ns RateLimiter::NextDeadline() const { return limiting() ? updated_ + recovery() : ~Ns{0}; }

Ns RateLimiter::Spacing(uint32_t frame_len) const {
  const double ns = (frame_len + 24) * 8.0 / (rate_ * cfg_.line_rate_gbps);
  return static_cast<Ns>(ns);
}

}  // namespace ofan::uroce
