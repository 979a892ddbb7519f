// uroce's hosts move frames through dataplane/hostio (PacketIo over AF_XDP,
// AF_PACKET, an in-process pair), shared with the fabric engine's host
// ports; these are its names in uroce's namespace.
#pragma once

#include "dataplane/hostio/packet_io.h"
#include "dataplane/hostio/shm_io.h"
#include "dataplane/hostio/xsk_program.h"
#include "emu/uroce/qp_types.h"

namespace ofan::uroce {

using hostio::FrameView;
using hostio::IfaceInfo;
using hostio::Impairment;
using hostio::IoCounters;
using hostio::IoKind;
using hostio::IoOptions;
using hostio::LoopbackPair;
using hostio::LoopbackWire;
using hostio::MakeLoopbackPair;
using hostio::OpenAfPacket;
using hostio::OpenAfXdp;
using hostio::OpenIo;
using hostio::OpenShmLink;
using hostio::PacketIo;
using hostio::ReadIface;
using hostio::RoceMtuOffer;
using hostio::TcpSocketIn;
using hostio::XskProgram;

static_assert(kMaxFrame <= hostio::kIoMaxFrame, "a uroce frame must fit a PacketIo's buffers");

}  // namespace ofan::uroce
