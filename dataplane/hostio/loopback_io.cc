// The in-process PacketIo pair of packet_io.h over a LoopbackWire.
#include "dataplane/hostio/loopback_wire.h"

namespace ofan::hostio {

namespace {

class LoopbackIo : public PacketIo {
 public:
  LoopbackIo(std::shared_ptr<LoopbackWire> w, int tx_dir) : w_(std::move(w)), tx_(tx_dir) {}
  uint32_t Send(std::span<const FrameView> frames) override {
    for (const auto& f : frames) w_->Push(tx_, {f.data, f.len});
    io_.tx += frames.size();
    return static_cast<uint32_t>(frames.size());
  }
  uint32_t Recv(std::span<FrameView> out) override {
    auto& d = w_->dir[1 - tx_];
    if (d.q.empty()) w_->Flush(1 - tx_);
    cur_.clear();
    while (!d.q.empty() && cur_.size() < out.size()) {
      cur_.push_back(std::move(d.q.front()));
      d.q.pop_front();
    }
    for (size_t i = 0; i < cur_.size(); ++i) {
      out[i] = FrameView{cur_[i].data(), static_cast<uint32_t>(cur_[i].size())};
    }
    io_.rx += cur_.size();
    return static_cast<uint32_t>(cur_.size());
  }
  int fd() const override { return -1; }
  std::string kind() const override { return "loopback"; }

 private:
  std::shared_ptr<LoopbackWire> w_;
  int tx_;
  std::vector<std::vector<uint8_t>> cur_;
};

}  // namespace

LoopbackPair MakeLoopbackPair(const Impairment& a_to_b, const Impairment& b_to_a) {
  auto w = std::make_shared<LoopbackWire>();
  w->dir[0].imp = a_to_b;
  w->dir[0].rng.Seed(a_to_b.seed);
  w->dir[1].imp = b_to_a;
  w->dir[1].rng.Seed(b_to_a.seed);
  LoopbackPair p;
  p.a = std::make_unique<LoopbackIo>(w, 0);
  p.b = std::make_unique<LoopbackIo>(w, 1);
  p.wire = w;
  return p;
}

}  // namespace ofan::hostio
