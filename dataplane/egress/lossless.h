// The lossless class (PFC's one priority) of a frame, from its bytes: what
// the shared engine's switches (egress/emu_pfc.h) and the hosts' NICs it
// emulates (dataplane/engine.cc) pause instead of dropping. No DPDK: the parse
// fuzz target runs it on any input.
//
// expects:   a frame (data, length), any content
// modifies:  nothing
// next:      true: the normal queue's lossless frames (EmuPfc::Admit); the
//            host's NIC queue 1 (paused); false: lossy
#pragma once

#include <cstdint>

#include "dataplane/egress/mark.h"
#include "dataplane/packet/headers.h"
#include "dataplane/packet/roce.h"

namespace ofan::dp {

// A lossless frame waiting in a switch's queue carries this bit in its
// mbuf's port (the ingress port's id stays in the low bits): its bytes are
// the ingress account's, not the egress buffer's lossy share (EmuPfc on the
// shared engine, PortQueue on the per-switch engine). No port id reaches it.
inline constexpr uint16_t kLosslessPortMark = 0x4000;

// An IPv4 frame whose DSCP is `dscp`: the traffic class a NIC queues it in.
// A host's NIC (dataplane/engine.cc) queues a QP's ACKs with its data, as
// one QP's packets leave a real NIC in the order it made them: an ACK that
// overtook the READ responses before it would tell the reader they were
// lost (IBA 9.7.5.1: rxe's completer retries).
inline bool HasDscp(const uint8_t* f, uint32_t len, uint8_t dscp) {
  if (len < 14 + 20) return false;
  const uint16_t l3 = ForwardedL3Offset(f);
  if (len < l3 + 20u || pkt::Rd16(f + l3 - 2) != pkt::ethertype::kIpv4) return false;
  return (f[l3 + 1] >> 2) == dscp;
}

// Is this frame of the lossless class? An IPv4 frame whose DSCP is `dscp`,
// unless it is a RoCE ACK/NAK/CNP (those go in the strict-priority class,
// as the switch queues them: switch.cc's queue_of_; a frame marked
// kPriorityDscp is not `dscp`'s). The switch asks it of
// its normal queue's frames, the engine of a host's (its NIC's MAC pauses
// only this class).
// acks: RC ACKs and NAKs of `dscp` are lossless too (a switch that queues
// them with data, egress.priority without ack: a dropped ACK costs the
// sender a timeout, and one the lossless class cannot overtake).
inline bool IsLosslessFrame(const uint8_t* f, uint32_t len, uint8_t dscp, bool acks = false) {
  if (!HasDscp(f, len, dscp)) return false;
  const uint16_t l3 = ForwardedL3Offset(f);
  const uint8_t* ip = f + l3;
  const uint32_t ihl = (ip[0] & 0xFu) * 4u;
  if (ip[9] != pkt::ipproto::kUdp || ihl < 20 || len < l3 + ihl + 8 + 1) return true;
  const uint8_t* udp = ip + ihl;
  if (pkt::Rd16(udp + 2) != pkt::kRoceV2Port) return true;
  const uint8_t op = udp[8];  // the BTH's opcode
  return !pkt::IsAckClass(op) || (acks && pkt::IsRcOpcode(op));
}

}  // namespace ofan::dp
