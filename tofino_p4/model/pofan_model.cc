#include "tofino_p4/model/pofan_model.h"

#include <cstring>

#include "dataplane/packet/headers.h"
#include "dataplane/packet/roce.h"

namespace ofan::p4 {

// The wire values pofan.p4 matches on are ofan-dp's (one list each, checked).
static_assert(OFAN_P4_ETHERTYPE_IPV4 == pkt::ethertype::kIpv4);
static_assert(OFAN_P4_ETHERTYPE_ARP == pkt::ethertype::kArp);
static_assert(OFAN_P4_ETHERTYPE_VLAN == pkt::ethertype::kVlan);
static_assert(OFAN_P4_ETHERTYPE_MAC_CONTROL == pkt::ethertype::kMacControl);
static_assert(OFAN_P4_ETHERTYPE_LLDP == pkt::ethertype::kLldp);
static_assert(OFAN_P4_ETHERTYPE_IPV6 == pkt::ethertype::kIpv6);
static_assert(OFAN_P4_IPPROTO_UDP == pkt::ipproto::kUdp);
static_assert(OFAN_P4_ROCEV2_UDP_PORT == pkt::kRoceV2Port);
static_assert(OFAN_P4_CLASS_DATA == static_cast<int>(lb::SizeClass::kData));
static_assert(OFAN_P4_CLASS_ACK == static_cast<int>(lb::SizeClass::kAck));
static_assert(OFAN_P4_MAX_UPLINKS <= lb::kMaxUplinks);
// The ACK class is exactly the three opcodes pofan.p4 compares with.
static_assert([] {
  for (int op = 0; op < 256; ++op) {
    const bool p4 = op == OFAN_P4_BTH_OPCODE_ACK || op == OFAN_P4_BTH_OPCODE_ATOMIC_ACK ||
                    op == OFAN_P4_BTH_OPCODE_CNP;
    if (p4 != pkt::IsAckClass(static_cast<uint8_t>(op))) return false;
  }
  return true;
}());

std::string_view DropReasonName(uint8_t reason) {
  static constexpr std::array<std::string_view, OFAN_P4_NUM_DROP_REASONS> kNames = {
      "none",          "parser_error",       "unknown_ethertype", "mac_control",
      "ipv4_version",  "ipv4_header_length", "ipv4_options",      "ipv4_total_length",
      "ipv4_checksum", "ipv4_fragment",      "udp_truncated",     "bth_truncated",
      "no_route",      "ttl_expired",        "no_uplink",         "no_port_mac",
  };
  static_assert(OFAN_P4_DROP_NO_PORT_MAC == OFAN_P4_NUM_DROP_REASONS - 1);
  return reason < kNames.size() ? kNames[reason] : "?";
}

namespace {

// The program's headers, field by field (pofan.p4's header types).
struct Ethernet {
  bool valid = false;
  lb::MacBytes dst{}, src{};
  uint16_t ether_type = 0;
};
struct Vlan {
  bool valid = false;
  uint16_t tci = 0, ether_type = 0;
};
struct Ipv4 {
  bool valid = false;
  uint8_t version = 0, ihl = 0, dscp = 0, ecn = 0;
  uint16_t total_len = 0, identification = 0;
  uint8_t flags = 0;
  uint16_t frag_offset = 0;
  uint8_t ttl = 0, protocol = 0;
  uint16_t hdr_checksum = 0;
  uint32_t src_addr = 0, dst_addr = 0;
};
struct Udp {
  bool valid = false;
  std::array<uint8_t, 8> raw{};
  uint16_t dst_port() const { return static_cast<uint16_t>(raw[2] << 8 | raw[3]); }
};
struct Bth {
  bool valid = false;
  std::array<uint8_t, 12> raw{};
  uint8_t opcode() const { return raw[0]; }
};
struct Headers {
  Ethernet ethernet;
  Vlan vlan;
  Ipv4 ipv4;
  Udp udp;
  Bth bth;
};

struct Metadata {  // ig_metadata_t
  uint8_t checksum_err = 0, drop_reason = OFAN_P4_DROP_NONE, cls = OFAN_P4_CLASS_DATA;
  uint16_t dest = 0;
  uint16_t cpu_port = 0;
  uint16_t ptr = 0;
  uint8_t last = 0, id1 = 0, id2 = 0, degraded = 0;
  uint8_t rank = 0, x = 0;
  uint16_t short_len = 0;  // 40 - total_len, 0 at 40 or more (len_check)
};

uint16_t Be16At(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t Be32At(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | p[3];
}
void PutBe16(std::vector<uint8_t>& o, uint16_t v) {
  o.push_back(static_cast<uint8_t>(v >> 8));
  o.push_back(static_cast<uint8_t>(v));
}
void PutBe32(std::vector<uint8_t>& o, uint32_t v) {
  PutBe16(o, static_cast<uint16_t>(v >> 16));
  PutBe16(o, static_cast<uint16_t>(v));
}

// The ones' complement sum of 16-bit words, folded (TNA's Checksum).
uint16_t OnesSum(const std::vector<uint16_t>& words) {
  uint32_t s = 0;
  for (uint16_t wd : words) s += wd;
  while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
  return static_cast<uint16_t>(s);
}
std::vector<uint16_t> Ipv4Words(const Ipv4& h, bool with_checksum) {
  std::vector<uint16_t> w = {
      static_cast<uint16_t>(h.version << 12 | h.ihl << 8 | h.dscp << 2 | h.ecn),
      h.total_len,
      h.identification,
      static_cast<uint16_t>(h.flags << 13 | h.frag_offset),
      static_cast<uint16_t>(h.ttl << 8 | h.protocol),
      static_cast<uint16_t>(h.src_addr >> 16),
      static_cast<uint16_t>(h.src_addr),
      static_cast<uint16_t>(h.dst_addr >> 16),
      static_cast<uint16_t>(h.dst_addr),
  };
  if (with_checksum) w.push_back(h.hdr_checksum);
  return w;
}

// pkt.extract(hdr.X) for the headers both parsers take: X's fields from the
// frame at off, which moves past it; false (nothing taken) when the frame is
// too short.
bool ExtractEthernet(std::span<const uint8_t> f, size_t& off, Ethernet& e) {
  if (off + 14 > f.size()) return false;
  e.valid = true;
  std::memcpy(e.dst.data(), &f[off], 6);
  std::memcpy(e.src.data(), &f[off + 6], 6);
  e.ether_type = Be16At(&f[off + 12]);
  off += 14;
  return true;
}

bool ExtractVlan(std::span<const uint8_t> f, size_t& off, Vlan& v) {
  if (off + 4 > f.size()) return false;
  v.valid = true;
  v.tci = Be16At(&f[off]);
  v.ether_type = Be16At(&f[off + 2]);
  off += 4;
  return true;
}

bool ExtractIpv4(std::span<const uint8_t> f, size_t& off, Ipv4& v4) {
  if (off + 20 > f.size()) return false;
  const uint8_t* ip = &f[off];
  v4.valid = true;
  v4.version = ip[0] >> 4;
  v4.ihl = ip[0] & 0xF;
  v4.dscp = ip[1] >> 2;
  v4.ecn = ip[1] & 3;
  v4.total_len = Be16At(ip + 2);
  v4.identification = Be16At(ip + 4);
  v4.flags = ip[6] >> 5;
  v4.frag_offset = Be16At(ip + 6) & 0x1FFF;
  v4.ttl = ip[8];
  v4.protocol = ip[9];
  v4.hdr_checksum = Be16At(ip + 10);
  v4.src_addr = Be32At(ip + 12);
  v4.dst_addr = Be32At(ip + 16);
  off += 20;
  return true;
}

// IngressParser. Returns the offset where the payload starts; sets
// parser_err when an extract runs past the frame (Tofino's "packet too
// short"), which ingress drops.
struct ParseResult {
  Headers hdr;
  Metadata md;
  size_t payload = 0;
  bool parser_err = false;
};

ParseResult IngressParser(std::span<const uint8_t> f) {
  ParseResult r;
  Headers& h = r.hdr;
  size_t off = 0;
  // state start: ig_intr_md and the port metadata are not in the frame.
  auto extracted = [&](bool ok) {
    if (!ok) r.parser_err = true;
    return ok;
  };
  // state parse_ethernet
  if (!extracted(ExtractEthernet(f, off, h.ethernet))) return r;
  uint16_t next = h.ethernet.ether_type;
  if (next == OFAN_P4_ETHERTYPE_VLAN) {  // state parse_vlan
    if (!extracted(ExtractVlan(f, off, h.vlan))) return r;
    next = h.vlan.ether_type;
  }
  if (next != OFAN_P4_ETHERTYPE_IPV4) {
    r.payload = off;
    return r;
  }
  // state parse_ipv4
  if (!extracted(ExtractIpv4(f, off, h.ipv4))) return r;
  const Ipv4& v4 = h.ipv4;
  // ipv4_checksum.add(hdr.ipv4); verify(): the sum with the checksum is 0xFFFF.
  r.md.checksum_err = OnesSum(Ipv4Words(v4, true)) == 0xFFFF ? 0 : 1;
  if (!(v4.ihl == 5 && (v4.flags & 1) == 0 && v4.frag_offset == 0 &&
        v4.protocol == OFAN_P4_IPPROTO_UDP)) {
    r.payload = off;
    return r;
  }
  // state parse_udp
  if (!extracted(off + 8 <= f.size())) return r;
  h.udp.valid = true;
  std::memcpy(h.udp.raw.data(), &f[off], 8);
  off += 8;
  if (h.udp.dst_port() == OFAN_P4_ROCEV2_UDP_PORT) {  // state parse_bth
    if (!extracted(off + 12 <= f.size())) return r;
    h.bth.valid = true;
    std::memcpy(h.bth.raw.data(), &f[off], 12);
    off += 12;
  }
  r.payload = off;
  return r;
}

// IngressDeparser (and EgressDeparser, whose headers are a subset): the
// checksum update, then emit every valid header, then the rest of the packet
// as it came.
std::vector<uint8_t> IngressDeparser(Headers& h, std::span<const uint8_t> f, size_t payload) {
  std::vector<uint8_t> o;
  o.reserve(f.size());
  if (h.ipv4.valid) {
    h.ipv4.hdr_checksum = static_cast<uint16_t>(~OnesSum(Ipv4Words(h.ipv4, false)));
  }
  if (h.ethernet.valid) {
    o.insert(o.end(), h.ethernet.dst.begin(), h.ethernet.dst.end());
    o.insert(o.end(), h.ethernet.src.begin(), h.ethernet.src.end());
    PutBe16(o, h.ethernet.ether_type);
  }
  if (h.vlan.valid) {
    PutBe16(o, h.vlan.tci);
    PutBe16(o, h.vlan.ether_type);
  }
  if (h.ipv4.valid) {
    const Ipv4& v = h.ipv4;
    o.push_back(static_cast<uint8_t>(v.version << 4 | v.ihl));
    o.push_back(static_cast<uint8_t>(v.dscp << 2 | v.ecn));
    PutBe16(o, v.total_len);
    PutBe16(o, v.identification);
    PutBe16(o, static_cast<uint16_t>(v.flags << 13 | v.frag_offset));
    o.push_back(v.ttl);
    o.push_back(v.protocol);
    PutBe16(o, v.hdr_checksum);
    PutBe32(o, v.src_addr);
    PutBe32(o, v.dst_addr);
  }
  if (h.udp.valid) o.insert(o.end(), h.udp.raw.begin(), h.udp.raw.end());
  if (h.bth.valid) o.insert(o.end(), h.bth.raw.begin(), h.bth.raw.end());
  o.insert(o.end(), f.begin() + static_cast<std::ptrdiff_t>(payload), f.end());
  return o;
}

}  // namespace

PofanModel::PofanModel(const PofanTables& t) {
  // A small product of pofan_defs.h, which the P4 program shares (no C++
  // types there). NOLINTNEXTLINE(bugprone-implicit-widening-of-multiplication-result)
  const size_t registers = OFAN_P4_POINTER_REGISTER_SIZE;
  pointers_.assign(t.options.num_pipes, std::vector<uint8_t>(registers, 0));
  for (size_t p = 0; p < t.pointers.size() && p < pointers_.size(); ++p) {
    std::copy(t.pointers[p].begin(), t.pointers[p].end(), pointers_[p].begin());
  }
  UpdateTables(t);
}

void PofanModel::UpdateTables(const PofanTables& t) {
  cpu_port_ = t.cpu_port;
  route_.clear();
  for (const RouteEntry& e : t.route) route_[e.dst_addr] = e;
  key_.clear();
  for (const KeyEntry& e : t.pofan_key) key_[static_cast<uint32_t>(e.dest) << 1 | e.cls] = e;
  xorw_.clear();
  for (const XorwEntry& e : t.f2_xorw) xorw_[static_cast<uint32_t>(e.rank) << 8 | e.id1] = e.x;
  add_.clear();
  for (const AddEntry& e : t.f2_add) add_[static_cast<uint32_t>(e.x) << 8 | e.id2] = e.port;
  list_.clear();
  for (const ListEntry& e : t.uplink_list)
    list_[static_cast<uint32_t>(e.ptr) << 8 | e.rank] = e.port;
  port_mac_.clear();
  for (const PortMacEntry& e : t.port_mac) port_mac_[e.port] = e;
  ecn_cells_.clear();
  for (const EcnEntry& e : t.ecn_threshold) ecn_cells_[e.port] = e.cells;
}

std::vector<uint8_t> PofanModel::Egress(std::span<const uint8_t> frame, uint16_t egress_port,
                                        uint32_t enq_qdepth) const {
  // EgressParser: Ethernet, the tag, IPv4; the rest is payload. (Its input
  // is the ingress deparser's output, so no extract runs short.)
  Headers h;
  size_t off = 0;
  if (ExtractEthernet(frame, off, h.ethernet)) {
    uint16_t next = h.ethernet.ether_type;
    if (next == OFAN_P4_ETHERTYPE_VLAN && ExtractVlan(frame, off, h.vlan)) {
      next = h.vlan.ether_type;
    }
    if (next == OFAN_P4_ETHERTYPE_IPV4) ExtractIpv4(frame, off, h.ipv4);
  }
  // Egress.apply
  if (h.ipv4.valid && (h.ipv4.ecn == 1 || h.ipv4.ecn == 2)) {
    const auto e = ecn_cells_.find(egress_port);
    const uint32_t cells = e == ecn_cells_.end() ? 0 : e->second;  // no_marking
    if (cells != 0 && (cells > enq_qdepth ? cells - enq_qdepth : 0) == 0) h.ipv4.ecn = 3;
  }
  return IngressDeparser(h, frame, off);  // the same checksum update and emits
}

// Long on purpose: Ingress.apply of tofino_p4/pofan.p4 statement for
// statement, one if-chain as the program has it, so the two read side by
// side; splitting it would hide the correspondence the tests rely on.
std::optional<ModelOutput> PofanModel::Process(uint16_t ingress_port,
                                               std::span<const uint8_t> frame,
                                               uint32_t enq_qdepth) {
  if (ingress_port >= OFAN_P4_PORT_TABLE_SIZE || PipeOfDevPort(ingress_port) >= num_pipes()) {
    return std::nullopt;
  }
  ModelOutput out;
  out.pipe = PipeOfDevPort(ingress_port);
  ParseResult pr = IngressParser(frame);
  Headers& hdr = pr.hdr;
  Metadata& md = pr.md;
  uint16_t egress_port = 0;  // ig_tm_md.ucast_egress_port

  // Ingress.apply, statement for statement.
  auto drop = [&](uint8_t why) { md.drop_reason = why; };
  auto switch_config = [&] { md.cpu_port = cpu_port_; };
  auto to_cpu = [&] { egress_port = md.cpu_port; };
  auto no_uplink = [&] { drop(OFAN_P4_DROP_NO_UPLINK); };

  const uint16_t ether_type = hdr.vlan.valid ? hdr.vlan.ether_type : hdr.ethernet.ether_type;
  const Ipv4& ip = hdr.ipv4;
  switch_config();
  // len_check: 16w40 |-| total_len (saturating).
  md.short_len = ip.total_len < 40 ? static_cast<uint16_t>(40 - ip.total_len) : 0;
  if (pr.parser_err) {
    drop(OFAN_P4_DROP_PARSER_ERROR);
  } else if (!ip.valid) {
    if (ether_type == OFAN_P4_ETHERTYPE_ARP || ether_type == OFAN_P4_ETHERTYPE_LLDP ||
        ether_type == OFAN_P4_ETHERTYPE_IPV6) {
      to_cpu();
    } else if (ether_type == OFAN_P4_ETHERTYPE_MAC_CONTROL) {
      drop(OFAN_P4_DROP_MAC_CONTROL);
    } else {
      drop(OFAN_P4_DROP_UNKNOWN_ETHERTYPE);
    }
  } else if (ip.version != 4) {
    drop(OFAN_P4_DROP_IPV4_VERSION);
  } else if (ip.ihl < 5) {
    drop(OFAN_P4_DROP_IPV4_HEADER_LENGTH);
  } else if (ip.ihl != 5) {
    drop(OFAN_P4_DROP_IPV4_OPTIONS);
  } else if ((md.short_len & 0x3f) > 20) {  // short_len[5:0]: total_len < 20
    drop(OFAN_P4_DROP_IPV4_TOTAL_LENGTH);
  } else if (md.checksum_err == 1) {
    drop(OFAN_P4_DROP_IPV4_CHECKSUM);
  } else if ((ip.flags & 1) == 1 || ip.frag_offset != 0) {
    drop(OFAN_P4_DROP_IPV4_FRAGMENT);
  } else if (hdr.udp.valid && (md.short_len & 0x3f) > 12) {  // < 28
    drop(OFAN_P4_DROP_UDP_TRUNCATED);
  } else if (hdr.bth.valid && (md.short_len & 0x3f) != 0) {  // < 40
    drop(OFAN_P4_DROP_BTH_TRUNCATED);
  } else {
    if (hdr.bth.valid) {
      const uint8_t op = hdr.bth.opcode();
      if (op == OFAN_P4_BTH_OPCODE_ACK || op == OFAN_P4_BTH_OPCODE_ATOMIC_ACK ||
          op == OFAN_P4_BTH_OPCODE_CNP) {
        md.cls = OFAN_P4_CLASS_ACK;
      }
    }
    const auto r = route_.find(ip.dst_addr);
    if (r == route_.end()) {
      drop(OFAN_P4_DROP_NO_ROUTE);
    } else if (r->second.action == RouteAction::kLocal) {
      to_cpu();
    } else if (r->second.action == RouteAction::kDown) {
      egress_port = r->second.port;
      if (ip.ttl <= 1) drop(OFAN_P4_DROP_TTL_EXPIRED);
    } else {  // route_up
      md.dest = r->second.dest;
      if (ip.ttl <= 1) {
        drop(OFAN_P4_DROP_TTL_EXPIRED);
      } else {
        const auto k = key_.find(static_cast<uint32_t>(md.dest) << 1 | md.cls);
        if (k == key_.end()) {
          no_uplink();  // the table's default action
        } else {
          const KeyEntry& e = k->second;
          switch (e.action) {
            case KeyAction::kSetKey:
              md.ptr = e.ptr;
              md.last = e.last;
              md.id1 = e.id1;
              md.id2 = e.id2;
              md.degraded = 0;
              break;
            case KeyAction::kSetKeyDegraded:
              md.ptr = e.ptr;
              md.last = e.last;
              md.degraded = 1;
              break;
            case KeyAction::kNoUplink:
              no_uplink();
              break;
          }
          if (md.drop_reason == OFAN_P4_DROP_NONE) {
            // advance.execute(md.ptr): the pipe's stateful ALU.
            uint8_t& used = pointers_[out.pipe][md.ptr % OFAN_P4_POINTER_REGISTER_SIZE];
            if (used >= md.last) {
              used = 0;
            } else {
              used = static_cast<uint8_t>(used + 1);
            }
            md.rank = used;
            out.balanced = true;
            // set_uplink, from the key's list or from its App. F.2 order.
            auto lookup = [&](const auto& table, uint32_t key, auto&& hit) {
              const auto it = table.find(key);
              if (it == table.end()) {
                no_uplink();
                return;
              }
              hit(it->second);
            };
            auto set_uplink = [&](uint16_t port) { egress_port = port; };
            if (md.degraded == 1) {
              lookup(list_, static_cast<uint32_t>(md.ptr) << 8 | md.rank, set_uplink);
            } else {
              lookup(xorw_, static_cast<uint32_t>(md.rank) << 8 | md.id1, [&](uint8_t x) {
                md.x = x;
                lookup(add_, static_cast<uint32_t>(md.x) << 8 | md.id2, set_uplink);
              });
            }
          }
        }
      }
    }
    if (md.drop_reason == OFAN_P4_DROP_NONE && egress_port != md.cpu_port) {
      hdr.ipv4.ttl = static_cast<uint8_t>(hdr.ipv4.ttl - 1);
      const auto m = port_mac_.find(egress_port);
      if (m == port_mac_.end()) {
        drop(OFAN_P4_DROP_NO_PORT_MAC);
      } else {
        hdr.ethernet.src = m->second.src;
        hdr.ethernet.dst = m->second.dst;
      }
    }
  }

  out.cls = md.cls;
  out.dest = md.dest;
  out.ptr = md.ptr;
  out.rank = md.rank;
  if (md.drop_reason != OFAN_P4_DROP_NONE) {
    ++drops_[md.drop_reason];
    out.drop_reason = md.drop_reason;
    return out;
  }
  out.port = egress_port;
  out.to_cpu = egress_port == md.cpu_port;
  out.bytes = Egress(IngressDeparser(hdr, frame, pr.payload), egress_port, enq_qdepth);
  return out;
}

}  // namespace ofan::p4
