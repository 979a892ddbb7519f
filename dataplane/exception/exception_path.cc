#include "dataplane/exception/exception_path.h"

#include <fmt/format.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "dataplane/stages/parse.h"
#include "dataplane/vector_constants.h"

namespace ofan::dp {
namespace {

constexpr uint32_t kMinFrame = 60;  // Ethernet minimum without FCS
constexpr uint32_t kRingSlots = 1024;

uint64_t PackMac(const pkt::MacAddr& m) {
  uint64_t v = 0;
  for (size_t i = 0; i < 6; ++i) v |= static_cast<uint64_t>(m.b[i]) << (8 * i);
  return v;
}
pkt::MacAddr UnpackMac(uint64_t v) {
  pkt::MacAddr m;
  for (size_t i = 0; i < 6; ++i) m.b[i] = static_cast<uint8_t>(v >> (8 * i));
  return m;
}

template <class H>
void Store(Frame& f, size_t off, const H& h) {
  std::memcpy(f.data() + off, &h, sizeof(H));
}

// The ARP header of an Ethernet/IPv4 ARP frame, if it is one.
std::optional<pkt::ArpHdr> ArpOf(std::span<const uint8_t> f) {
  if (f.size() < sizeof(pkt::EtherHdr) + sizeof(pkt::ArpHdr)) return std::nullopt;
  if (pkt::Load<pkt::EtherHdr>(f.data()).type.host() != pkt::ethertype::kArp) return std::nullopt;
  return pkt::Load<pkt::ArpHdr>(f.data() + sizeof(pkt::EtherHdr));
}

}  // namespace

bool NeighborTable::Set(uint32_t port, const pkt::MacAddr& mac) {
  const uint64_t nb = PackMac(mac) | kKnown;
  if (v_[port].exchange(nb, std::memory_order_relaxed) == nb) return false;
  gen_.fetch_add(1, std::memory_order_release);
  return true;
}

std::optional<pkt::MacAddr> NeighborTable::Get(uint32_t port) const {
  const uint64_t nb = v_[port].load(std::memory_order_relaxed);
  if (!(nb & kKnown)) return std::nullopt;
  return UnpackMac(nb);
}

bool ControlSender::Send(uint32_t port, std::span<const uint8_t> frame, LcoreCounters& ctr) const {
  if (!queues_ || port >= queues_->size() || !(*queues_)[port].present()) return false;
  const uint32_t len = std::max<uint32_t>(static_cast<uint32_t>(frame.size()), kMinFrame);
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  uint8_t* d =
      m ? reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(len))) : nullptr;
  if (!d) {
    rte_pktmbuf_free(m);  // NULL-safe
    ctr.Add(Counter::kDropControlFull);
    return false;
  }
  std::memset(d, 0, len);
  std::memcpy(d, frame.data(), frame.size());
  m->port = RTE_MBUF_PORT_INVALID;  // not from any ingress: no PFC accounting
  if (!(*queues_)[port].EnqueueOne(kPrioQueue, m)) {
    rte_pktmbuf_free(m);
    ctr.Add(Counter::kDropControlFull);
    return false;
  }
  return true;
}

std::optional<pkt::MacAddr> ArpSender(std::span<const uint8_t> frame) {
  const auto a = ArpOf(frame);
  if (!a || a->sha.is_multicast() || a->sha.is_zero()) return std::nullopt;
  return a->sha;
}

std::optional<Frame> ArpReply(std::span<const uint8_t> frame, const pkt::MacAddr& port_mac,
                              uint32_t gateway_ip) {
  const auto a = ArpOf(frame);
  if (!a || gateway_ip == 0 || a->oper.host() != pkt::arp::kRequest ||
      a->tpa.host() != gateway_ip) {
    return std::nullopt;
  }
  Frame r(sizeof(pkt::EtherHdr) + sizeof(pkt::ArpHdr));
  Store(r, 0, pkt::EtherHdr{a->sha, port_mac, pkt::Be16::FromHost(pkt::ethertype::kArp)});
  pkt::ArpHdr ra = *a;
  ra.oper = pkt::Be16::FromHost(pkt::arp::kReply);
  ra.sha = port_mac;
  ra.spa = pkt::Be32::FromHost(gateway_ip);
  ra.tha = a->sha;
  ra.tpa = a->spa;
  Store(r, sizeof(pkt::EtherHdr), ra);
  return r;
}

std::optional<Frame> IcmpEchoReply(std::span<const uint8_t> frame, const pkt::MacAddr& port_mac,
                                   uint32_t gateway_ip) {
  const ParsedPacket pp = ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()));
  // A fragment is part of a datagram the switch does not reassemble.
  if (pp.verdict != Verdict::kForward || pp.fragment || gateway_ip == 0 ||
      pp.dst_ip != gateway_ip) {
    return std::nullopt;
  }
  // parse checked the IPv4 header: in bounds, checksum right, total length
  // within the frame.
  const pkt::Ipv4Hdr ip = pkt::Load<pkt::Ipv4Hdr>(frame.data() + pp.l3_offset);
  const uint32_t ihl = ip.header_bytes();
  const uint32_t icmp_off = pp.l3_offset + ihl;
  const uint32_t ip_end = pp.l3_offset + ip.total_length.host();
  if (ip.proto != pkt::ipproto::kIcmp || ip_end < icmp_off + sizeof(pkt::IcmpEchoHdr))
    return std::nullopt;
  pkt::IcmpEchoHdr echo = pkt::Load<pkt::IcmpEchoHdr>(frame.data() + icmp_off);
  if (echo.type != pkt::icmp::kEchoRequest) return std::nullopt;
  // The reply is the request up to the IP datagram's end (padding dropped),
  // back to its sender.
  Frame r(frame.begin(), frame.begin() + ip_end);
  pkt::EtherHdr eth = pkt::Load<pkt::EtherHdr>(frame.data());
  Store(r, 0, pkt::EtherHdr{eth.src, port_mac, eth.type});
  pkt::Ipv4Hdr rip = ip;
  std::swap(rip.src, rip.dst);
  rip.ttl = 64;
  rip.checksum = pkt::Be16{};
  Store(r, pp.l3_offset, rip);
  const uint8_t* ip_bytes = r.data() + pp.l3_offset;
  rip.checksum = pkt::Be16::FromHost(pkt::Ipv4Checksum(ip_bytes, ihl));
  Store(r, pp.l3_offset, rip);
  echo.type = pkt::icmp::kEchoReply;
  echo.checksum = pkt::Be16{};
  Store(r, icmp_off, echo);
  echo.checksum = pkt::Be16::FromHost(pkt::Ipv4Checksum(r.data() + icmp_off, ip_end - icmp_off));
  Store(r, icmp_off, echo);
  return r;
}

namespace {

// A source an ICMP error may be sent to (RFC 1812 4.3.2.7, 5.3.7): one host.
bool UnicastSource(uint32_t ip) {
  const uint32_t a = ip >> 24;
  return ip != 0 && a != 127 && a < 224;  // not 0.0.0.0, loopback, multicast, class E / broadcast
}

}  // namespace

std::optional<Frame> IcmpError(std::span<const uint8_t> frame, uint8_t type, uint8_t code,
                               const pkt::MacAddr& port_mac, uint32_t src_ip) {
  const ParsedPacket pp = ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()));
  if (pp.verdict != Verdict::kForward || src_ip == 0) return std::nullopt;
  const pkt::EtherHdr eth = pkt::Load<pkt::EtherHdr>(frame.data());
  // parse checked the IPv4 header: in bounds, checksum right, total length
  // within the frame.
  const pkt::Ipv4Hdr ip = pkt::Load<pkt::Ipv4Hdr>(frame.data() + pp.l3_offset);
  const uint32_t ihl = ip.header_bytes();
  const uint32_t data = ip.total_length.host() - ihl;
  if (eth.dst.is_multicast() || !UnicastSource(pp.src_ip) || pp.dst_ip >= (224u << 24) ||
      (ip.frag.host() & 0x1FFF) != 0) {
    return std::nullopt;
  }
  if (ip.proto == pkt::ipproto::kIcmp) {
    // Never an error about an error; an ICMP message too short to have a
    // type is treated as one.
    if (data < 1 || pkt::icmp::IsError(frame[pp.l3_offset + ihl])) return std::nullopt;
  }
  const uint32_t quoted = ihl + std::min<uint32_t>(data, 8);
  const uint32_t icmp_len = static_cast<uint32_t>(sizeof(pkt::IcmpErrorHdr)) + quoted;
  const uint32_t l3 = pp.l3_offset;
  Frame r(l3 + sizeof(pkt::Ipv4Hdr) + icmp_len);
  // Ethernet (and the VLAN tag, as it came), back to the previous hop.
  std::memcpy(r.data(), frame.data(), l3);
  Store(r, 0, pkt::EtherHdr{eth.src, port_mac, eth.type});
  pkt::Ipv4Hdr rip{};
  rip.version_ihl = 0x45;
  rip.tos = 0xC0;  // precedence 6, internetwork control; Not-ECT
  rip.total_length = pkt::Be16::FromHost(static_cast<uint16_t>(sizeof(pkt::Ipv4Hdr) + icmp_len));
  rip.ttl = 64;
  rip.proto = pkt::ipproto::kIcmp;
  rip.src = pkt::Be32::FromHost(src_ip);
  rip.dst = ip.src;
  Store(r, l3, rip);
  rip.checksum = pkt::Be16::FromHost(pkt::Ipv4Checksum(r.data() + l3, sizeof(pkt::Ipv4Hdr)));
  Store(r, l3, rip);
  const uint32_t icmp_off = l3 + static_cast<uint32_t>(sizeof(pkt::Ipv4Hdr));
  std::memcpy(r.data() + icmp_off + sizeof(pkt::IcmpErrorHdr), frame.data() + l3, quoted);
  pkt::IcmpErrorHdr h{};
  h.type = type;
  h.code = code;
  Store(r, icmp_off, h);
  h.checksum = pkt::Be16::FromHost(pkt::Ipv4Checksum(r.data() + icmp_off, icmp_len));
  Store(r, icmp_off, h);
  return r;
}

bool IcmpRateLimit::Take(uint64_t now_ns) {
  if (last_ns_ != 0 && now_ns > last_ns_) {
    tokens_ = std::min<double>(burst_, tokens_ + static_cast<double>(now_ns - last_ns_) * 1e-9 *
                                                     static_cast<double>(per_s_));
  }
  last_ns_ = now_ns;
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

ExceptionPath::~ExceptionPath() {
  if (!ring_) return;
  rte_mbuf* m;
  while (rte_ring_dequeue(ring_, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
  rte_ring_free(ring_);
}

Status ExceptionPath::Init(Setup s) {
  s_ = std::move(s);
  icmp_limit_.emplace(s_.icmp_per_s, s_.icmp_burst);
  const std::string rn = fmt::format("ofx_{}", s_.name).substr(0, RTE_RING_NAMESIZE - 1);
  ring_ = rte_ring_create(rn.c_str(), kRingSlots, s_.socket, RING_F_SC_DEQ);
  if (!ring_) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("exception ring {}: {}", rn, rte_strerror(rte_errno)));
  }
  return {};
}

void ExceptionPath::Hand(rte_mbuf** frames, uint32_t n, LcoreCounters& ctr) {
  const unsigned q = rte_ring_mp_enqueue_burst(ring_, reinterpret_cast<void**>(frames), n, nullptr);
  ctr.Add(Counter::kException, q);
  if (q && bell_) bell_->Notify();
  if (q < n) {
    ctr.Add(Counter::kDropExceptionFull, n - q);
    rte_pktmbuf_free_bulk(frames + q, n - q);
  }
}

void ExceptionPath::HandExpired(rte_mbuf** frames, uint32_t n, LcoreCounters& ctr) {
  const unsigned q = rte_ring_mp_enqueue_burst(ring_, reinterpret_cast<void**>(frames), n, nullptr);
  if (q && bell_) bell_->Notify();
  if (q < n) {
    ctr.Add(Counter::kIcmpRateLimited, n - q);
    rte_pktmbuf_free_bulk(frames + q, n - q);
  }
}

void ExceptionPath::SendError(uint32_t port, std::span<const uint8_t> frame, uint8_t type,
                              uint8_t code, LcoreCounters& ctr) {
  const auto e = IcmpError(frame, type, code, s_.port_mac[port], s_.switch_ip);
  if (!e) return;
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  if (!icmp_limit_->Take(static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()))) {
    ctr.Add(Counter::kIcmpRateLimited);
    return;
  }
  if (s_.sender.Send(port, *e, ctr)) ctr.Add(Counter::kIcmpErrorSent);
}

uint32_t ExceptionPath::Service(LcoreCounters& ctr) {
  rte_mbuf* ms[kMaxBurst];
  uint32_t done = 0;
  unsigned n;
  while ((n = rte_ring_sc_dequeue_burst(ring_, reinterpret_cast<void**>(ms), kMaxBurst, nullptr)) >
         0) {
    for (unsigned i = 0; i < n; ++i) {
      Handle(ms[i], ctr);
      rte_pktmbuf_free(ms[i]);
    }
    done += n;
  }
  return done;
}

void ExceptionPath::Handle(rte_mbuf* m, LcoreCounters& ctr) {
  const std::span<const uint8_t> f(rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m));
  const auto& map = *s_.port_of_dpdk;
  const int32_t in = m->port < map.size() ? map[m->port] : -1;
  if (in < 0) return;
  const auto port = static_cast<uint32_t>(in);
  const pkt::MacAddr& mac = s_.port_mac[port];
  // With kernel ports, only theirs go to the subscriber (the others, a
  // host's, are answered here as without one).
  const bool kernel = s_.kernel && s_.kernel->has(port) && subscriber_;
  const bool sub = s_.kernel ? kernel : static_cast<bool>(subscriber_);
  if (ArpOf(f)) {
    // Learned from, answered if it asks for us (or the port's kernel
    // interface answers), and done with.
    if (const auto sha = ArpSender(f)) s_.neighbors->Set(port, *sha);
    if (kernel) {
      subscriber_(port, f);
    } else if (const auto reply = ArpReply(f, mac, s_.gateway_ip)) {
      s_.sender.Send(port, *reply, ctr);
    }
    return;
  }
  const ParsedPacket pp = ParseFrame(f.data(), static_cast<uint32_t>(f.size()));
  if (pp.verdict == Verdict::kForward) {
    const uint8_t* ip = f.data() + pp.l3_offset;
    const uint8_t proto = ip[offsetof(pkt::Ipv4Hdr, proto)];
    // The switch reassembles nothing: a fragment addressed to it is dropped
    // (ping -s 5000 to a switch goes unanswered; to a host it works).
    if (pp.fragment && IsOwn(pp.dst_ip)) return;
    if (!IsOwn(pp.dst_ip)) {
      // Not for the switch: handed over because its TTL expired.
      if (ip[offsetof(pkt::Ipv4Hdr, ttl)] <= 1 && s_.switch_ip != 0) {
        SendError(port, f, pkt::icmp::kTimeExceeded, pkt::icmp::kTtlExceededInTransit, ctr);
      }
      return;
    }
    if (proto == pkt::ipproto::kIcmp) {
      if (const auto reply = IcmpEchoReply(f, mac, pp.dst_ip)) s_.sender.Send(port, *reply, ctr);
      return;  // other ICMP to the switch: nothing to answer
    }
    if (proto == pkt::ipproto::kUdp && !sub) {
      // No UDP service here (traceroute's last probe to a switch ends so).
      SendError(port, f, pkt::icmp::kDestUnreachable, pkt::icmp::kPortUnreachable, ctr);
      return;
    }
    if (proto != pkt::ipproto::kUdp && proto != pkt::ipproto::kTcp) {
      SendError(port, f, pkt::icmp::kDestUnreachable, pkt::icmp::kProtocolUnreachable, ctr);
      return;
    }
  }
  // The rest (LLDP, other control frames, TCP and, with a subscriber, UDP
  // to the switch) is the subscriber's.
  if (sub) subscriber_(port, f);
}

}  // namespace ofan::dp
