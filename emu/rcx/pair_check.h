// The data of ofan-rc-1's pair check (docs/rc-exchange.md, "The pair
// check"), defined once for both stacks' peers (uroce peer, ofan-verbs
// peer): which QP message m travels on, what its bytes are, and which
// message the k-th SEND arriving on a QP is.
//
// expects:  qps >= 1
// gives:    byte k of message m is (k * 7 + m * 13 + 1) & 0xff; message m on
//           QP m % qps; the k-th SEND on QP q is message q + k * qps (RC
//           delivers in order); Fill / Matches over whole messages, 256
//           bytes of pattern at a time (the pattern's period in k)
#pragma once

#include <cstdint>

namespace ofan::rcx {

constexpr uint8_t PairByte(uint64_t m, uint64_t k) {
  return static_cast<uint8_t>((k * 7 + m * 13 + 1) & 0xFF);
}
constexpr uint32_t PairQp(uint64_t m, uint32_t qps) { return static_cast<uint32_t>(m % qps); }
constexpr uint64_t PairSendMessage(uint32_t q, uint64_t k, uint32_t qps) { return q + k * qps; }
// How many of `count` messages travel on QP q.
constexpr uint64_t PairMessagesOn(uint32_t q, uint64_t count, uint32_t qps) {
  return q < count ? (count - q + qps - 1) / qps : 0;
}

// Writes message m's `len` bytes to p.
void FillPairMessage(uint8_t* p, uint64_t m, uint64_t len);
// True when p holds message m's `len` bytes.
bool PairMessageMatches(const uint8_t* p, uint64_t m, uint64_t len);

}  // namespace ofan::rcx
