// RoCEv2 transport: the InfiniBand headers a RoCEv2 packet carries after its
// UDP header (BTH, RETH, AETH, ImmDt), the RC opcodes and what each opcode's
// packet carries, PSN arithmetic, and the ICRC.
//
// expects:   header structs are read from / written to bounds-checked bytes
//            (Load<H>, or the single-field Bth*At readers on the hot path)
// gives:     typed fields (Be16/Be32 underneath, host-order accessors), the
//            ICRC as IBA Annex A17 and Linux rxe compute it, with zlib's
//            CRC-32 (the same polynomial, reflected, pre- and post-inverted)
//
// Shared by the switch (ofan-dp reads the opcode and destination QP per
// packet), the builder, and host-side RoCE engines: nothing here needs DPDK.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "dataplane/packet/headers.h"

namespace ofan::pkt {

// BTH opcodes (IBA vol. 1, 9.2.1 table 38): transport in the top three bits
// (RC = 000), operation below. CNP (0x81) is RoCEv2's congestion
// notification (IBA Annex A17.9.3).
enum class Opcode : uint8_t {
  kSendFirst = 0x00,
  kSendMiddle = 0x01,
  kSendLast = 0x02,
  kSendLastWithImm = 0x03,
  kSendOnly = 0x04,
  kSendOnlyWithImm = 0x05,
  kRdmaWriteFirst = 0x06,
  kRdmaWriteMiddle = 0x07,
  kRdmaWriteLast = 0x08,
  kRdmaWriteLastWithImm = 0x09,
  kRdmaWriteOnly = 0x0A,
  kRdmaWriteOnlyWithImm = 0x0B,
  kRdmaReadRequest = 0x0C,
  kRdmaReadResponseFirst = 0x0D,
  kRdmaReadResponseMiddle = 0x0E,
  kRdmaReadResponseLast = 0x0F,
  kRdmaReadResponseOnly = 0x10,
  kAcknowledge = 0x11,
  kAtomicAcknowledge = 0x12,
  kCompareSwap = 0x13,
  kFetchAdd = 0x14,
  kCnp = 0x81,
};

constexpr uint8_t Raw(Opcode op) { return static_cast<uint8_t>(op); }

// The raw bytes of the non-data opcodes, for code that compares a frame's
// opcode byte directly.
namespace bth_opcode {
inline constexpr uint8_t kRcAck = Raw(Opcode::kAcknowledge);
inline constexpr uint8_t kRcAtomicAck = Raw(Opcode::kAtomicAcknowledge);
inline constexpr uint8_t kCnp = Raw(Opcode::kCnp);
}  // namespace bth_opcode

// What follows the BTH of a packet with a given opcode (IBA 9.2, table 38),
// as bits of one table entry per opcode byte, so that no question about an
// opcode is a switch. These are the RC rows: unknown opcodes (other
// transports, reserved) have none.
namespace opcode_info {
inline constexpr uint8_t kReth = 1;           // RETH, 16 bytes
inline constexpr uint8_t kAeth = 2;           // AETH, 4 bytes
inline constexpr uint8_t kImmDt = 4;          // ImmDt, 4 bytes
inline constexpr uint8_t kAtomicEth = 8;      // AtomicETH, 28 bytes
inline constexpr uint8_t kAtomicAckEth = 16;  // AtomicAckETH, 8 bytes
// Not data: ACKs (and NAKs, told apart by the AETH syndrome), atomic ACKs and
// CNPs. The LB gives them their own pointers and egress its priority queue.
inline constexpr uint8_t kAckClass = 32;
// The middle or last packet of a multi-packet message (SEND, WRITE, READ
// response): one that starts a message (FIRST, ONLY, a READ or atomic
// request) has not this bit. The reorder stage anchors a new flow at one.
inline constexpr uint8_t kContinues = 64;
// The first or middle packet of a multi-packet message: more follow, and
// its payload is the QP's path MTU (IBA 9.7.4.1.4).
inline constexpr uint8_t kMore = 128;
}  // namespace opcode_info

inline constexpr std::array<uint8_t, 256> kOpcodeInfo = [] {
  using namespace opcode_info;
  std::array<uint8_t, 256> t{};
  t[Raw(Opcode::kSendLastWithImm)] = kImmDt;
  t[Raw(Opcode::kSendOnlyWithImm)] = kImmDt;
  t[Raw(Opcode::kRdmaWriteFirst)] = kReth;
  t[Raw(Opcode::kRdmaWriteLastWithImm)] = kImmDt;
  t[Raw(Opcode::kRdmaWriteOnly)] = kReth;
  t[Raw(Opcode::kRdmaWriteOnlyWithImm)] = kReth | kImmDt;
  t[Raw(Opcode::kRdmaReadRequest)] = kReth;
  t[Raw(Opcode::kRdmaReadResponseFirst)] = kAeth;
  t[Raw(Opcode::kRdmaReadResponseLast)] = kAeth;
  t[Raw(Opcode::kRdmaReadResponseOnly)] = kAeth;
  t[Raw(Opcode::kAcknowledge)] = kAeth | kAckClass;
  t[Raw(Opcode::kAtomicAcknowledge)] = kAeth | kAtomicAckEth | kAckClass;
  t[Raw(Opcode::kCompareSwap)] = kAtomicEth;
  t[Raw(Opcode::kFetchAdd)] = kAtomicEth;
  t[Raw(Opcode::kCnp)] = kAckClass;
  for (const Opcode op :
       {Opcode::kSendMiddle, Opcode::kSendLast, Opcode::kSendLastWithImm, Opcode::kRdmaWriteMiddle,
        Opcode::kRdmaWriteLast, Opcode::kRdmaWriteLastWithImm, Opcode::kRdmaReadResponseMiddle,
        Opcode::kRdmaReadResponseLast}) {
    t[Raw(op)] |= kContinues;
  }
  for (const Opcode op :
       {Opcode::kSendFirst, Opcode::kSendMiddle, Opcode::kRdmaWriteFirst, Opcode::kRdmaWriteMiddle,
        Opcode::kRdmaReadResponseFirst, Opcode::kRdmaReadResponseMiddle}) {
    t[Raw(op)] |= kMore;
  }
  return t;
}();

constexpr bool HasReth(uint8_t op) { return kOpcodeInfo[op] & opcode_info::kReth; }
constexpr bool HasAeth(uint8_t op) { return kOpcodeInfo[op] & opcode_info::kAeth; }
constexpr bool HasImmDt(uint8_t op) { return kOpcodeInfo[op] & opcode_info::kImmDt; }
// IsAckClass as the parser asks it per packet: a 0/1 byte per opcode, so
// the answer is a compare of one load (testing a bit of kOpcodeInfo costs a
// shift and a mask more).
inline constexpr std::array<uint8_t, 256> kAckClassOpcode = [] {
  std::array<uint8_t, 256> t{};
  for (size_t op = 0; op < t.size(); ++op) t[op] = (kOpcodeInfo[op] & opcode_info::kAckClass) != 0;
  return t;
}();
constexpr bool IsAckClass(uint8_t op) { return kAckClassOpcode[op] != 0; }
constexpr bool ContinuesMessage(uint8_t op) { return kOpcodeInfo[op] & opcode_info::kContinues; }
constexpr bool MoreFollow(uint8_t op) { return kOpcodeInfo[op] & opcode_info::kMore; }
// An RC opcode (IBA 9.2, table 38: transport bits 000): the connected
// QPs' packets, in PSN order per QP; not UC, UD, XRC or a CNP.
constexpr bool IsRcOpcode(uint8_t op) { return op < 0x20; }
// An RDMA READ response (FIRST, MIDDLE, LAST, ONLY): the responder's data,
// in the requester's PSNs.
constexpr bool IsReadResponse(uint8_t op) {
  return op >= Raw(Opcode::kRdmaReadResponseFirst) && op <= Raw(Opcode::kRdmaReadResponseOnly);
}
constexpr bool HasReth(Opcode op) { return HasReth(Raw(op)); }
constexpr bool HasAeth(Opcode op) { return HasAeth(Raw(op)); }
constexpr bool HasImmDt(Opcode op) { return HasImmDt(Raw(op)); }
constexpr bool IsAckClass(Opcode op) { return IsAckClass(Raw(op)); }

// The DSCP of RoCE data, as common RoCE deployments mark it and map it to
// the lossless priority (../shared/seeds/meta-roce-at-scale-reading-guide.txt):
// uroce's and the verbs hosts' QPs send with it.
inline constexpr uint8_t kRoceDscp = 26;
// The DSCP that puts any RoCE frame in the ACK class (the strict-priority
// queue, never paused): CS6, as RoCE deployments mark CNPs; the
// collectives' clear-to-send messages (emu/collective, --cts) carry it.
inline constexpr uint8_t kPriorityDscp = 48;
// The class of a RoCE frame from its BTH opcode and its IPv4 TOS byte.
constexpr bool IsAckClassFrame(uint8_t op, uint8_t tos) {
  return IsAckClass(op) || (tos >> 2) == kPriorityDscp;
}

// Bytes of the extension headers between the BTH and the payload, in the
// order IBA puts them (RETH / AtomicETH, AETH, AtomicAckETH, ImmDt).
constexpr uint32_t ExtHeaderBytes(uint8_t op) {
  using namespace opcode_info;
  const uint8_t i = kOpcodeInfo[op];
  return (i & kReth ? 16u : 0u) + (i & kAeth ? 4u : 0u) + (i & kImmDt ? 4u : 0u) +
         (i & kAtomicEth ? 28u : 0u) + (i & kAtomicAckEth ? 8u : 0u);
}

inline constexpr uint32_t kQpnMask = 0xFFFFFF;
inline constexpr uint32_t kPsnMask = 0xFFFFFF;
inline constexpr uint32_t kIcrcBytes = 4;

#pragma pack(push, 1)
// Base Transport Header (IBA vol. 1, 9.2), 12 bytes after the UDP header.
struct BthHdr {
  uint8_t opcode;
  uint8_t flags;  // SE(1) M(1) PadCnt(2) TVer(4)
  Be16 pkey;
  Be32 dest_qp;  // FECN(1) BECN(1) reserved(6) | QPN(24) (FECN/BECN: Annex A17)
  Be32 psn;      // AckReq(1) reserved(7) | PSN(24)

  static BthHdr Make(Opcode op, uint32_t dqpn, uint32_t psn24) {
    BthHdr h{};
    h.opcode = Raw(op);
    h.pkey = Be16::FromHost(0xFFFF);  // the default partition
    h.dest_qp = Be32::FromHost(dqpn & kQpnMask);
    h.psn = Be32::FromHost(psn24 & kPsnMask);
    return h;
  }

  Opcode op() const { return static_cast<Opcode>(opcode); }
  bool solicited() const { return flags & 0x80; }
  bool migreq() const { return flags & 0x40; }
  uint8_t pad_count() const { return (flags >> 4) & 3; }  // payload pad bytes (0..3)
  uint8_t tver() const { return flags & 0xF; }
  uint16_t p_key() const { return pkey.host(); }
  bool fecn() const { return dest_qp.host() >> 31; }
  bool becn() const { return (dest_qp.host() >> 30) & 1; }
  uint32_t dqpn() const { return dest_qp.host() & kQpnMask; }
  bool ack_req() const { return psn.host() >> 31; }
  uint32_t psn24() const { return psn.host() & kPsnMask; }

  void set_solicited(bool v) { SetFlag(0x80, v); }
  void set_migreq(bool v) { SetFlag(0x40, v); }
  void set_pad_count(uint8_t n) { flags = static_cast<uint8_t>((flags & ~0x30) | (n & 3) << 4); }
  void set_tver(uint8_t v) { flags = static_cast<uint8_t>((flags & 0xF0) | (v & 0xF)); }
  void set_p_key(uint16_t v) { pkey = Be16::FromHost(v); }
  void set_becn(bool v) { dest_qp = SetBit(dest_qp, 30, v); }
  void set_fecn(bool v) { dest_qp = SetBit(dest_qp, 31, v); }
  void set_ack_req(bool v) { psn = SetBit(psn, 31, v); }

 private:
  void SetFlag(uint8_t bit, bool v) {
    flags = static_cast<uint8_t>(v ? flags | bit : flags & ~bit);
  }
  static Be32 SetBit(Be32 w, int bit, bool v) {
    const uint32_t m = 1u << bit;
    return Be32::FromHost(v ? w.host() | m : w.host() & ~m);
  }
};
static_assert(sizeof(BthHdr) == 12);

// RDMA Extended Transport Header (IBA 9.3.3): the remote buffer of an RDMA
// WRITE FIRST/ONLY or READ REQUEST.
struct RethHdr {
  Be32 va_hi;  // the 64-bit virtual address as two words: only Be16/Be32
  Be32 va_lo;  // exist, and the header is 4-byte aligned on the wire anyway
  Be32 rkey;
  Be32 dma_len;

  static RethHdr Make(uint64_t va, uint32_t rkey, uint32_t dma_len) {
    return RethHdr{Be32::FromHost(static_cast<uint32_t>(va >> 32)),
                   Be32::FromHost(static_cast<uint32_t>(va)), Be32::FromHost(rkey),
                   Be32::FromHost(dma_len)};
  }
  uint64_t va() const { return static_cast<uint64_t>(va_hi.host()) << 32 | va_lo.host(); }
  uint32_t r_key() const { return rkey.host(); }
  uint32_t length() const { return dma_len.host(); }
};
static_assert(sizeof(RethHdr) == 16);

// ACK Extended Transport Header (IBA 9.3.5): syndrome and MSN of an
// ACKNOWLEDGE or a read response's first / last / only packet.
struct AethHdr {
  Be32 syndrome_msn;  // syndrome(8) | MSN(24)

  // Syndrome bits 6..5 (IBA 9.7.5.1, table 42); NAK codes below.
  enum class Kind : uint8_t { kAck = 0, kRnrNak = 1, kReserved = 2, kNak = 3 };
  static constexpr uint8_t kNakPsnSequenceError = 0;
  static constexpr uint8_t kNakInvalidRequest = 1;
  static constexpr uint8_t kNakRemoteAccessError = 2;
  static constexpr uint8_t kNakRemoteOperationalError = 3;
  static constexpr uint8_t kNakInvalidRdRequest = 4;

  static AethHdr Make(uint8_t syndrome, uint32_t msn) {
    return AethHdr{Be32::FromHost(static_cast<uint32_t>(syndrome) << 24 | (msn & 0xFFFFFF))};
  }
  // An ACK with a credit count, an RNR NAK with a timer, a NAK with a code:
  // the five low bits of the syndrome.
  static AethHdr Make(Kind kind, uint8_t value, uint32_t msn) {
    return Make(static_cast<uint8_t>(static_cast<uint8_t>(kind) << 5 | (value & 0x1F)), msn);
  }
  uint8_t syndrome() const { return static_cast<uint8_t>(syndrome_msn.host() >> 24); }
  uint32_t msn() const { return syndrome_msn.host() & 0xFFFFFF; }
  Kind kind() const { return static_cast<Kind>((syndrome() >> 5) & 3); }
  uint8_t value() const { return syndrome() & 0x1F; }  // credits, RNR timer or NAK code
};
static_assert(sizeof(AethHdr) == 4);

// Immediate data of the *_WITH_IMMEDIATE opcodes (IBA 9.3.6): opaque to the
// transport, so kept as its wire bytes.
struct ImmDtHdr {
  Be32 imm;
};
static_assert(sizeof(ImmDtHdr) == 4);
#pragma pack(pop)

// The per-packet readers of ofan-dp: one load each at a BTH known to be in
// bounds (a whole-header Load<BthHdr> copy defeats store-to-load forwarding
// on the hot path).
inline uint8_t BthOpcodeAt(const uint8_t* bth) { return bth[offsetof(BthHdr, opcode)]; }
inline uint32_t BthDqpnAt(const uint8_t* bth) {
  return Rd32(bth + offsetof(BthHdr, dest_qp)) & kQpnMask;
}

// PSN arithmetic modulo 2^24 (IBA 9.7.1: the window is half the space).
constexpr uint32_t PsnAdd(uint32_t psn, int32_t n) {
  return (psn + static_cast<uint32_t>(n)) & kPsnMask;
}
// a - b as the signed distance in [-2^23, 2^23): positive when a is after b.
constexpr int32_t PsnDiff(uint32_t a, uint32_t b) {
  return static_cast<int32_t>((a - b) << 8) >> 8;
}
constexpr bool PsnBefore(uint32_t a, uint32_t b) { return PsnDiff(a, b) < 0; }

// The RoCEv2 ICRC of an IPv4 datagram `ip` whose first `len` bytes run from
// the IPv4 header to the end of the payload (the ICRC itself excluded):
// CRC-32 over 8 bytes of ones (the masked LRH), then the IPv4 and UDP headers
// with TOS, TTL, the IPv4 checksum and the UDP checksum set to ones, the BTH
// with FECN, BECN and its 6 reserved bits set to ones, and the rest. Requires
// len to cover the IPv4, UDP and BTH headers. On the wire the value is stored
// least significant byte first (as rxe and scapy store it).
uint32_t RoceIcrc(const uint8_t* ip, uint32_t len);

// The ICRC stored in the 4 bytes at p.
inline uint32_t LoadIcrc(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}
inline void StoreIcrc(uint8_t* p, uint32_t icrc) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(icrc >> (8 * i));
}

// True when `frame` (an Ethernet frame, untagged or with one 802.1Q tag) is
// a RoCEv2 packet (IPv4, not a fragment, UDP to port 4791, room for a BTH and
// an ICRC inside the IPv4 total length) whose ICRC is right. What a host
// checks before it believes a received packet; bytes after the IPv4 total
// length (Ethernet padding) are not covered.
bool RoceIcrcOk(const uint8_t* frame, uint32_t len);

}  // namespace ofan::pkt
