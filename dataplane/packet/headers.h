// Wire formats the switch reads and writes: Ethernet (+ one optional 802.1Q
// tag), ARP, IPv4, UDP, 802.1Qbb PFC and LLDP ethertypes (the RoCEv2
// transport headers are in roce.h). Multi-byte fields are big-endian strong
// types (Be16, Be32), so a host-order value cannot be stored by mistake;
// every header is packed and its size checked. Nothing here depends on DPDK.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ofan::pkt {

constexpr uint16_t ByteSwap16(uint16_t v) { return static_cast<uint16_t>((v << 8) | (v >> 8)); }
constexpr uint32_t ByteSwap32(uint32_t v) {
  return (v << 24) | ((v << 8) & 0x00FF0000u) | ((v >> 8) & 0x0000FF00u) | (v >> 24);
}

// A big-endian 16-bit field. Byte-aligned and trivially constructible, so
// that packed headers hold it at any offset and calling host() on such a
// member is well defined (value-initialise with Be16{}).
class __attribute__((packed)) Be16 {
 public:
  Be16() = default;
  static constexpr Be16 FromHost(uint16_t v) {
    return Be16(std::endian::native == std::endian::little ? ByteSwap16(v) : v);
  }
  static constexpr Be16 FromRaw(uint16_t raw) { return Be16(raw); }
  constexpr uint16_t host() const {
    return std::endian::native == std::endian::little ? ByteSwap16(raw_) : raw_;
  }
  constexpr uint16_t raw() const { return raw_; }
  friend constexpr bool operator==(Be16 a, Be16 b) { return a.raw_ == b.raw_; }

 private:
  constexpr explicit Be16(uint16_t raw) : raw_(raw) {}
  uint16_t raw_;
};

// A big-endian 32-bit field (trivially constructible, as Be16).
class __attribute__((packed)) Be32 {
 public:
  Be32() = default;
  static constexpr Be32 FromHost(uint32_t v) {
    return Be32(std::endian::native == std::endian::little ? ByteSwap32(v) : v);
  }
  static constexpr Be32 FromRaw(uint32_t raw) { return Be32(raw); }
  constexpr uint32_t host() const {
    return std::endian::native == std::endian::little ? ByteSwap32(raw_) : raw_;
  }
  constexpr uint32_t raw() const { return raw_; }
  friend constexpr bool operator==(Be32 a, Be32 b) { return a.raw_ == b.raw_; }

 private:
  constexpr explicit Be32(uint32_t raw) : raw_(raw) {}
  uint32_t raw_;
};

struct MacAddr {
  std::array<uint8_t, 6> b{};
  friend constexpr bool operator==(const MacAddr& x, const MacAddr& y) { return x.b == y.b; }
  constexpr bool is_multicast() const { return b[0] & 1; }
  constexpr bool is_zero() const { return (b[0] | b[1] | b[2] | b[3] | b[4] | b[5]) == 0; }
};

namespace ethertype {
inline constexpr uint16_t kIpv4 = 0x0800;
inline constexpr uint16_t kIpv6 = 0x86DD;
inline constexpr uint16_t kArp = 0x0806;
inline constexpr uint16_t kVlan = 0x8100;
inline constexpr uint16_t kMacControl = 0x8808;  // PAUSE and PFC
inline constexpr uint16_t kLldp = 0x88CC;
}  // namespace ethertype

inline constexpr uint16_t kRoceV2Port = 4791;

#pragma pack(push, 1)
struct EtherHdr {
  MacAddr dst;
  MacAddr src;
  Be16 type;
};
static_assert(sizeof(EtherHdr) == 14);
static_assert(std::is_trivially_default_constructible_v<Be16> &&
              std::is_trivially_default_constructible_v<Be32>);
static_assert(alignof(Be16) == 1 && alignof(Be32) == 1 && sizeof(Be16) == 2 && sizeof(Be32) == 4);

struct VlanTag {
  Be16 tci;  // PCP(3) DEI(1) VID(12)
  Be16 type;
};
static_assert(sizeof(VlanTag) == 4);

struct ArpHdr {
  Be16 htype;    // 1 = Ethernet
  Be16 ptype;    // 0x0800
  uint8_t hlen;  // 6
  uint8_t plen;  // 4
  Be16 oper;     // 1 request, 2 reply
  MacAddr sha;
  Be32 spa;
  MacAddr tha;
  Be32 tpa;
};
static_assert(sizeof(ArpHdr) == 28);

struct Ipv4Hdr {
  uint8_t version_ihl;  // 4 << 4 | ihl (32-bit words)
  uint8_t tos;          // DSCP(6) ECN(2)
  Be16 total_length;
  Be16 id;
  Be16 frag;  // flags(3) offset(13)
  uint8_t ttl;
  uint8_t proto;
  Be16 checksum;
  Be32 src;
  Be32 dst;
  uint8_t version() const { return version_ihl >> 4; }
  uint32_t header_bytes() const { return (version_ihl & 0xF) * 4u; }
  uint8_t ecn() const { return tos & 3; }
};
static_assert(sizeof(Ipv4Hdr) == 20);

namespace ipproto {
inline constexpr uint8_t kIcmp = 1;
inline constexpr uint8_t kTcp = 6;
inline constexpr uint8_t kUdp = 17;
}  // namespace ipproto

// ICMP echo request / reply (RFC 792): the switch answers pings to itself.
struct IcmpEchoHdr {
  uint8_t type;  // 8 request, 0 reply
  uint8_t code;
  Be16 checksum;  // over the whole ICMP message
  Be16 id;
  Be16 seq;
};
static_assert(sizeof(IcmpEchoHdr) == 8);
// An ICMP error (RFC 792): destination unreachable, time exceeded. The
// original IPv4 header and the first 8 bytes of its data follow.
struct IcmpErrorHdr {
  uint8_t type;
  uint8_t code;
  Be16 checksum;  // over the whole ICMP message
  Be32 unused;
};
static_assert(sizeof(IcmpErrorHdr) == 8);
namespace icmp {
inline constexpr uint8_t kEchoReply = 0;
inline constexpr uint8_t kDestUnreachable = 3;
inline constexpr uint8_t kEchoRequest = 8;
inline constexpr uint8_t kTimeExceeded = 11;
inline constexpr uint8_t kParameterProblem = 12;
// Codes of kDestUnreachable, and of kTimeExceeded.
inline constexpr uint8_t kProtocolUnreachable = 2;
inline constexpr uint8_t kPortUnreachable = 3;
inline constexpr uint8_t kTtlExceededInTransit = 0;
// Whether a type is an error message (RFC 1122 3.2.2: never answered with
// another error), as opposed to a query.
constexpr bool IsError(uint8_t type) {
  return type == 3 || type == 4 || type == 5 || type == 11 || type == 12;
}
}  // namespace icmp

namespace arp {
inline constexpr uint16_t kRequest = 1;
inline constexpr uint16_t kReply = 2;
}  // namespace arp

namespace ecn {
inline constexpr uint8_t kNotEct = 0;
inline constexpr uint8_t kEct1 = 1;
inline constexpr uint8_t kEct0 = 2;
inline constexpr uint8_t kCe = 3;
}  // namespace ecn

struct UdpHdr {
  Be16 src_port;
  Be16 dst_port;
  Be16 length;
  Be16 checksum;
};
static_assert(sizeof(UdpHdr) == 8);

// 802.1Qbb priority flow control frame body (after the Ethernet header).
struct PfcFrame {
  Be16 opcode;        // 0x0101
  Be16 class_enable;  // bit i: quanta[i] is valid
  Be16 quanta[8];     // in 512-bit times; 0 resumes
};
static_assert(sizeof(PfcFrame) == 20);
#pragma pack(pop)

inline constexpr uint16_t kPfcOpcode = 0x0101;
inline constexpr uint16_t kPauseOpcode = 0x0001;
inline constexpr MacAddr kPfcDstMac{{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01}};
inline constexpr MacAddr kLldpDstMac{{0x01, 0x80, 0xC2, 0x00, 0x00, 0x0E}};

// Reads a header at an offset that has been bounds-checked by the caller,
// without assuming alignment.
template <class H>
inline H Load(const uint8_t* p) {
  H h;
  std::memcpy(&h, p, sizeof(H));
  return h;
}

// Single big-endian field reads at a bounds-checked offset: one load each
// (copying whole packed headers to the stack makes overlapping stores that
// defeat store-to-load forwarding on the hot path).
inline uint16_t Rd16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return std::endian::native == std::endian::little ? ByteSwap16(v) : v;
}
inline uint32_t Rd32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return std::endian::native == std::endian::little ? ByteSwap32(v) : v;
}

// One's-complement sum helpers (RFC 1071) and incremental update (RFC 1624).
inline uint16_t Ipv4Checksum(const uint8_t* hdr, uint32_t len) {
  uint64_t sum = 0;
  uint32_t i = 0;
  for (; i + 4 <= len; i += 4) sum += Rd32(hdr + i);
  sum = (sum & 0xFFFFFFFFu) + (sum >> 32);
  sum = (sum & 0xFFFF) + (sum >> 16) + ((sum >> 32) << 16);
  for (; i + 1 < len; i += 2) sum += Rd16(hdr + i);
  if (len & 1) sum += static_cast<uint32_t>(hdr[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// Writes a 20-byte IPv4 header's checksum afresh (a frame edited after
// PacketBuilder::Build(): a test's fragment, a changed TOS).
inline void SetIpv4Checksum20(uint8_t* hdr) {
  hdr[10] = hdr[11] = 0;
  const uint16_t c = Ipv4Checksum(hdr, 20);
  hdr[10] = static_cast<uint8_t>(c >> 8);
  hdr[11] = static_cast<uint8_t>(c);
}

// The one's-complement sum of a 20-byte header's words, folded to 16 bits,
// of the words as loaded (no byte swaps): the sum is byte-order independent
// (RFC 1071 §2(B)), so it is the network-order sum with its bytes swapped on
// a little-endian host.
inline uint16_t OnesSum20Native(const uint8_t* h) {
  uint32_t w[5];
  std::memcpy(w, h, sizeof w);
  uint64_t sum = static_cast<uint64_t>(w[0]) + w[1] + w[2] + w[3] + w[4];
  sum = (sum & 0xFFFFFFFFu) + (sum >> 32);
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// Ipv4Checksum for a 20-byte header, unrolled.
inline uint16_t Ipv4Checksum20(const uint8_t* h) {
  const uint16_t sum = OnesSum20Native(h);
  return static_cast<uint16_t>(
      ~(std::endian::native == std::endian::little ? ByteSwap16(sum) : sum));
}

// True when a 20-byte header's checksum verifies: its words sum to all ones
// (in either byte order).
// Without the folds: end-around-carry folding keeps a sum's value mod 0xFFFF
// (2^16 = 1 mod 0xFFFF) and never folds a nonzero sum to 0, so the folded
// sum is 0xFFFF exactly when the plain sum is a nonzero multiple of 0xFFFF.
// The words are added as two 64-bit and one 32-bit load with end-around
// carries (2^64 = 1 mod 0xFFFF too), which keep the sum nonzero.
inline bool Ipv4Checksum20Ok(const uint8_t* h) {
  uint64_t a, b;
  uint32_t c;
  std::memcpy(&a, h, 8);
  std::memcpy(&b, h + 8, 8);
  std::memcpy(&c, h + 16, 4);
  uint64_t sum;
  sum = a + b;
  sum += sum < a;  // no overflow: a wrapped sum is at most 2^64 - 2
  const uint64_t t = sum + c;
  sum = t + (t < sum);
  return sum % 0xFFFF == 0 && sum != 0;
}

// HC' = ~(~HC + ~m + m') for one 16-bit word changing from m to m'
// (host-order values).
constexpr uint16_t ChecksumAdjust(uint16_t hc, uint16_t m, uint16_t m_new) {
  uint32_t sum =
      static_cast<uint16_t>(~hc) + static_cast<uint32_t>(static_cast<uint16_t>(~m)) + m_new;
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

}  // namespace ofan::pkt
