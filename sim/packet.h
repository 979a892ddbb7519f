// Packet: one frame in flight in ofan-sim, data or ACK (sim.h's model).
//
// expects:   filled by the sending host (sim.cc HostTry), turned into its ACK
//            by the receiving host
// modifies:  nothing; switches set the CE and CONGA fields as it passes
// next:      travels inside its arrival Event (event_queue.h): a packet has
//            exactly one pending event, so it is stored there, read in time
//            order with its event, and never looked up in a pool (at k=64 a
//            pool of some 10 M packets made each hop a DRAM miss)
#pragma once

#include <cstdint>

#include "dataplane/lb/types.h"

namespace ofan::sim {

struct Packet {
  uint32_t src, dst;
  uint32_t flow;
  uint32_t entropy;  // hashed by the switches (UDP source port of RoCEv2)
  uint32_t echo;     // ACK: the entropy of the data packet it acknowledges (REPS)
  uint16_t frame;
  lb::SizeClass cls;
  uint8_t ecn : 1;  // data: CE; ACK: ECE echoed
  uint8_t rtx : 1;  // --cca: a retransmission (an ACK keeps its data packet's)
  uint8_t pfc : 1;  // --pfc: a PFC frame (seq: the quanta it asks, 0 = XON)
  uint8_t nak : 1;  // --receiver gbn: a NAK (seq: the PSN its receiver expects)
  // --receiver ooo, --cca none: a copy sent only to learn what lost ACKs
  // hid (its own ACK acknowledges nothing new; an ACK keeps it).
  uint8_t probe : 1;
  uint8_t route[2];  // DRB source route: edge uplink, agg uplink
  // CONGA's overlay fields (policies/conga.h): the uplink chosen at the edge
  // and at the agg, and for each the max level of the links crossed since;
  // an ACK carries those of the data packet it acknowledges as feedback.
  uint8_t tag[2];
  uint8_t ce[2];
  uint8_t fb_tag[2];
  uint8_t fb_ce[2];
  // Transport (--cca): the flow's timeout epoch when sent (its timeouts so
  // far, mod 2^16: a packet would have to outlive 65,536 timeouts of its
  // flow, each at least two base RTTs, to be mistaken for a current one)
  // and its sequence number; an ACK keeps its data packet's (--receiver
  // gbn: an ACK carries the receiver's cumulative PSN, a NAK the expected).
  uint16_t epoch;
  uint32_t seq;
  lb::TimePs sent;  // when the data packet left its host
};
static_assert(sizeof(Packet) == 48, "a packet fills its event's last 48 bytes");

}  // namespace ofan::sim
