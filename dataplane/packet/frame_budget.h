// How large a frame an ofan-dp port carries, and so the netdev MTU of every
// link of an emulated fabric: the one place it is computed (docs/design.md,
// rule 7). ofan-dp sets it on its ports (switch.cc); ofan-emu gives its veths
// and VM NICs what `ofan-topo facts` prints.
#pragma once

#include <cstdint>

namespace ofan::pkt {

// An mbuf's data room, headroom included. 3840 B: the largest the AF_XDP PMD
// accepts on veth (larger fails to create the UMEM).
inline constexpr uint32_t kMbufDataRoom = 3840;
// DPDK's RTE_PKTMBUF_HEADROOM (switch.cc checks that they agree).
inline constexpr uint32_t kMbufHeadroom = 128;
// AF_XDP keeps XDP_PACKET_HEADROOM ahead of the frame on top of the mbuf's.
inline constexpr uint32_t kXdpHeadroom = 256;
// The largest frame a port receives: 3840 - 128 - 256 = 3456 B (measured on
// veth; docs/dev/dpdk-notes.md §4).
inline constexpr uint32_t kMaxPortFrame = kMbufDataRoom - kMbufHeadroom - kXdpHeadroom;
// The netdev MTU: the largest frame less Ethernet (14) and a VLAN tag (4).
// A larger MTU (it was 3500) lets the kernel hand over frames the UMEM
// silently drops, counted nowhere. RoCE MTU 2048 frames (2110 B) fit.
inline constexpr uint32_t kNetdevMtu = kMaxPortFrame - 14 - 4;
static_assert(kNetdevMtu == 3438);
// The largest data frame of an emulated fabric: RoCE MTU 2048's (2110 B,
// as uroce and rxe send it). The engine's lag threshold and PFC's headroom
// (fabric/pfc.h) count in it.
inline constexpr uint32_t kMaxDataFrame = 2110;

// What a frame costs on the wire beyond its length as software holds it
// (destination MAC to the end of the payload: the NIC adds the FCS): the
// preamble and start-of-frame delimiter before its first bit, the FCS after
// its last, the inter-frame gap before the next frame. ofan-dp's shaper
// (egress/port_queue.cc), the emulated links (fabric/emu_port.h) and uroce's
// pacer charge exactly this; `ofan-topo facts` prints it for ofan-emu.
inline constexpr uint32_t kPreambleSfdBytes = 8;
inline constexpr uint32_t kFcsBytes = 4;
inline constexpr uint32_t kIfgBytes = 12;
inline constexpr uint32_t kWireOverheadBytes = kPreambleSfdBytes + kFcsBytes + kIfgBytes;
static_assert(kWireOverheadBytes == 24);
// Beyond a frame length that counts its FCS (ofan-sim's header_bytes, the
// collective bound's frames): the preamble and the gap.
inline constexpr uint32_t kWireGapBytes = kPreambleSfdBytes + kIfgBytes;

}  // namespace ofan::pkt
