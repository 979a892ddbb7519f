// What the responder asks of a request's BTH opcode (IBA 9.2, table 36:
// the RC SEND opcodes are 0x00-0x05, the RDMA WRITE ones 0x06-0x0B).
#pragma once

#include <cstdint>

#include "dataplane/packet/roce.h"

namespace ofan::uroce {

// The first packet of a message (FIRST or ONLY).
inline bool IsFirst(uint8_t op) {
  using pkt::Opcode;
  return op == Raw(Opcode::kSendFirst) || op == Raw(Opcode::kSendOnly) ||
         op == Raw(Opcode::kSendOnlyWithImm) || op == Raw(Opcode::kRdmaWriteFirst) ||
         op == Raw(Opcode::kRdmaWriteOnly) || op == Raw(Opcode::kRdmaWriteOnlyWithImm);
}
// The last packet of a message (LAST or ONLY).
inline bool IsLast(uint8_t op) {
  using pkt::Opcode;
  return op == Raw(Opcode::kSendLast) || op == Raw(Opcode::kSendLastWithImm) ||
         op == Raw(Opcode::kSendOnly) || op == Raw(Opcode::kSendOnlyWithImm) ||
         op == Raw(Opcode::kRdmaWriteLast) || op == Raw(Opcode::kRdmaWriteLastWithImm) ||
         op == Raw(Opcode::kRdmaWriteOnly) || op == Raw(Opcode::kRdmaWriteOnlyWithImm);
}
inline bool IsSend(uint8_t op) { return op <= Raw(pkt::Opcode::kSendOnlyWithImm); }
inline bool IsWrite(uint8_t op) {
  return op >= Raw(pkt::Opcode::kRdmaWriteFirst) && op <= Raw(pkt::Opcode::kRdmaWriteOnlyWithImm);
}

}  // namespace ofan::uroce
