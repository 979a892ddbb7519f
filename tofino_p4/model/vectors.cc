#include "tofino_p4/model/vectors.h"

#include <fmt/format.h>

#include <sstream>

#include "common/rng.h"
#include "dataplane/packet/builder.h"
#include "tofino_p4/control/bfrt_writer.h"
#include "tofino_p4/model/pofan_model.h"

namespace ofan::p4 {

using lb::FatTree;
using lb::HostId;
using lb::SwitchId;

std::vector<VectorSpec> DefaultVectorSpecs() {
  // Link ids of a k = 8 fat tree (fat_tree.h): edge e's uplink j is 4e + j;
  // aggregation switch a's (pod-major) uplink c is 128 + 4a + c.
  return {
      {"edge_k8", "edge e0-0 of a k=8 fat tree, no failure", 8, 3, "e0-0", {}, 2, 400, 1},
      {"edge_k8_failed",
       "edge e0-0 of a k=8 fat tree; failed: e1-2 uplink 2 (26), every uplink of e2-1 (36-39), "
       "a0-3 to its core 1 (141), every core link of a2-0 (160-163)",
       8,
       3,
       "e0-0",
       {26, 36, 37, 38, 39, 141, 160, 161, 162, 163},
       2,
       400,
       2},
      {"agg_k8",
       "aggregation switch a0-0 of a k=8 fat tree, no failure",
       8,
       3,
       "a0-0",
       {},
       2,
       400,
       3},
      {"agg_k8_failed",
       "aggregation switch a0-0 of a k=8 fat tree; failed: a3-0 core link 0 (176), a4-0 core "
       "links 1 and 3 (193, 195), every core link of a5-0 (208-211)",
       8,
       3,
       "a0-0",
       {176, 193, 195, 208, 209, 210, 211},
       2,
       400,
       4},
  };
}

namespace {

pkt::MacAddr Mac(const lb::MacBytes& b) { return pkt::MacAddr{b}; }

std::string Hex(const std::vector<uint8_t>& b) {
  std::string s;
  s.reserve(b.size() * 2);
  for (uint8_t x : b) s += fmt::format("{:02x}", x);
  return s;
}

// A host below this switch, and the fabric port it comes in through.
struct Below {
  HostId host;
  int port;
};

class FrameMaker {
 public:
  FrameMaker(const FatTree& t, SwitchId s, uint64_t seed) : t_(t), s_(s), rng_(seed) {
    for (int h = 0; h < t.num_hosts(); ++h) {
      const HostId id(static_cast<uint32_t>(h));
      if (t.is_below(s, id)) {
        below_.push_back({id, t.down_port(s, id)});
      } else {
        above_.push_back(id);
      }
    }
  }

  // One frame: its kind (a word for the vector's attributes), the fabric
  // port it enters through, its bytes.
  struct Made {
    std::string kind;
    int in_port = 0;
    std::vector<uint8_t> bytes;
  };

  Made Next() {
    const uint32_t r = rng_.Below(100);
    if (r < 70 && !above_.empty()) return Up();
    if (r < 88) return Down();
    return Special(rng_.Below(9));
  }

 private:
  const Below& AnyBelow() { return below_[rng_.Below(static_cast<uint32_t>(below_.size()))]; }
  HostId AnyAbove() { return above_[rng_.Below(static_cast<uint32_t>(above_.size()))]; }
  int AnyUplinkPort() {
    return t_.w() + static_cast<int>(rng_.Below(static_cast<uint32_t>(t_.w())));
  }

  // The MACs a frame comes in with: the previous hop's, to this switch's port.
  pkt::PacketBuilder Start(int in_port) {
    pkt::PacketBuilder b;
    b.Eth(Mac(lb::SwitchPortMac(s_, in_port)), Mac(lb::PeerMac(t_, s_, in_port)));
    return b;
  }

  // A RoCEv2 packet: data (WRITE or SEND, with a small payload) or the ACK
  // class (ACK, NAK, CNP).
  std::vector<uint8_t> Roce(pkt::PacketBuilder b, uint32_t src, uint32_t dst, bool ack_class,
                            uint8_t ttl = 64) {
    const uint16_t sport = static_cast<uint16_t>(0xC000 | rng_.Below(0x4000));
    const uint32_t qp = 0x100 + rng_.Below(0x1000), psn = rng_.Below(1u << 24);
    const uint8_t tos = static_cast<uint8_t>(rng_.Below(4));  // ECN bits
    b.Ipv4(src, dst, ttl, tos).Udp(sport, pkt::kRoceV2Port);
    if (ack_class) {
      switch (rng_.Below(3)) {
        case 0:
          b.Bth(OFAN_P4_BTH_OPCODE_ACK, qp, psn).Aeth(0x1F, psn);
          break;
        case 1:
          b.Bth(OFAN_P4_BTH_OPCODE_ACK, qp, psn).Aeth(0x60, psn);  // NAK: PSN sequence error
          break;
        default:
          b.Bth(OFAN_P4_BTH_OPCODE_CNP, qp, 0).Payload(16);
          break;
      }
    } else if (rng_.Below(2) == 0) {
      b.Bth(static_cast<uint8_t>(pkt::Opcode::kRdmaWriteOnly), qp, psn)
          .Reth(0x10000 + rng_.Below(1u << 20), 0x1234, 64)
          .Payload(64, static_cast<uint8_t>(rng_.Below(256)));
    } else {
      // One draw per statement: the order in which a call's arguments are
      // evaluated is the compiler's (gcc and clang differ), and the vectors
      // must not depend on it. Drawn in the order the committed files have.
      const auto fill = static_cast<uint8_t>(rng_.Below(256));
      const uint32_t len = 32 + 4 * rng_.Below(8);
      b.Bth(static_cast<uint8_t>(pkt::Opcode::kSendMiddle), qp, psn).Payload(len, fill);
    }
    return b.PadTo(60).Build();
  }

  Made Up() {
    const Below& src = AnyBelow();
    const HostId dst = AnyAbove();
    const bool ack = rng_.Below(3) == 0;
    return {ack ? "up_ack" : "up_data", src.port,
            Roce(Start(src.port), t_.host_addr(src.host), t_.host_addr(dst), ack)};
  }

  Made Down() {
    const Below& dst = AnyBelow();
    const int in = AnyUplinkPort();
    const HostId src = above_.empty() ? dst.host : AnyAbove();
    const bool ack = rng_.Below(3) == 0;
    return {ack ? "down_ack" : "down_data", in,
            Roce(Start(in), t_.host_addr(src), t_.host_addr(dst.host), ack)};
  }

  Made Special(uint32_t which) {
    const Below& src = AnyBelow();
    const uint32_t sa = t_.host_addr(src.host);
    const uint32_t da = above_.empty() ? t_.host_addr(AnyBelow().host) : t_.host_addr(AnyAbove());
    switch (which) {
      case 0:  // TTL 1: dropped before it takes a pointer
        return {"ttl_expired", src.port, Roce(Start(src.port), sa, da, false, 1)};
      case 1: {  // a bad IPv4 checksum
        auto f = Roce(Start(src.port), sa, da, false);
        f[14 + 10] ^= 0x5A;
        return {"bad_checksum", src.port, f};
      }
      case 2:  // no host has this address
        return {"no_route", src.port,
                Roce(Start(src.port), sa, (10u << 24) | (200u << 16) | 2u, false)};
      case 3: {  // a fragment
        auto f = Roce(Start(src.port), sa, da, false);
        f[14 + 6] = 0x20;  // MF
        pkt::SetIpv4Checksum20(&f[14]);
        return {"fragment", src.port, f};
      }
      case 4: {  // ARP: to the CPU
        auto b = Start(src.port);
        b.Arp(1, Mac(lb::HostMac(src.host)), sa, pkt::MacAddr{}, sa & ~0xFFu);
        return {"arp", src.port, b.PadTo(60).Build()};
      }
      case 5: {  // TCP: forwarded, data class
        auto b = Start(src.port);
        b.Ipv4(sa, da, 64, 0, 6).Payload(40, static_cast<uint8_t>(rng_.Below(256)));
        return {"tcp", src.port, b.PadTo(60).Build()};
      }
      case 6: {  // an 802.1Q-tagged RoCE packet
        auto b = Start(src.port);
        b.Vlan(static_cast<uint16_t>(3u << 13 | 100));
        return {"vlan", src.port, Roce(b, sa, da, rng_.Below(2) == 0)};
      }
      case 7: {  // ICMP to the edge's own (gateway) address, or anywhere else
        auto b = Start(src.port);
        const uint32_t gw = (sa & ~0xFFu) | 1u;
        b.Ipv4(sa, gw, 64).Icmp(8, 1, static_cast<uint16_t>(rng_.Below(1000)));
        return {"icmp_gateway", src.port, b.PadTo(60).Build()};
      }
      default: {  // an IPv4 total length too short for the UDP header it has
        auto f = Roce(Start(src.port), sa, da, false);
        f[14 + 2] = 0;
        f[14 + 3] = 24;
        pkt::SetIpv4Checksum20(&f[14]);
        return {"udp_truncated", src.port, f};
      }
    }
  }

  const FatTree& t_;
  SwitchId s_;
  Rng rng_;
  std::vector<Below> below_;
  std::vector<HostId> above_;
};

}  // namespace

Result<VectorSet> MakeVectors(const VectorSpec& spec) {
  auto tree = FatTree::Make(spec.k, spec.levels);
  if (!tree) return tree.error();
  auto sw = lb::ParseSwitchName(*tree, spec.switch_name);
  if (!sw) return sw.error();
  PofanOptions o;
  o.pipe_size = spec.pipe_size;
  o.seed = spec.seed;
  auto tables = ComputePofanTables(*tree, *sw, spec.failed_links, o);
  if (!tables) return tables.error();
  const PofanTables& t = *tables;
  PofanModel model(t);

  std::ostringstream g;
  g << "# pofan.p4 test vectors: " << spec.what << ".\n";
  g << "# Made by `ofan-p4 vectors` (tofino_p4/model/vectors.cc) with the pipeline model over the\n"
       "# tables of "
    << spec.name
    << ".tables.json; do not edit by hand. Frames go in this order: each up-bound\n"
       "# one advances its pipe's pointer. Port numbers are device ports; fabric_port= is the\n"
       "# fat-tree port; the port with cpu=1 is the CPU port (no MACs: frames to it are not\n"
       "# rewritten), and to_cpu=1 marks a frame that leaves there. A ce line is the frame as it\n"
       "# leaves when it finds its queue at the port's ECN threshold (ecn_cells=, in 80-byte\n"
       "# cells); a forwarded frame without one is not ECT.\n";
  g << fmt::format(
      "switch {} k={} levels={} id={} policy=pofan pipe_size={} pipes={} seed={} "
      "salt={} cpu_port={}\n",
      t.switch_name, t.k, t.levels, t.sw.value(), t.options.pipe_size, t.options.num_pipes,
      t.options.seed, t.options.salt, t.cpu_port);
  for (int p = 0; p < t.k; ++p) {
    g << fmt::format("port {} {} mac={} peer={} fabric_port={}\n", t.switch_name,
                     t.options.dev_ports[static_cast<size_t>(p)],
                     lb::FormatMac(lb::SwitchPortMac(t.sw, p)),
                     lb::FormatMac(lb::PeerMac(*tree, t.sw, p)), p);
  }
  g << fmt::format("port {} {} mac=00:00:00:00:00:00 peer=00:00:00:00:00:00 cpu=1\n", t.switch_name,
                   t.cpu_port);
  FrameMaker maker(*tree, t.sw, spec.seed * 0x9E3779B97F4A7C15ull + 7);
  for (uint32_t i = 0; i < spec.frames; ++i) {
    const FrameMaker::Made m = maker.Next();
    const uint16_t dev = t.options.dev_ports[static_cast<size_t>(m.in_port)];
    const auto out = model.Process(dev, m.bytes);
    if (!out) return MakeError(ErrorCode::kInternal, "a vector's port is not on the device");
    g << fmt::format("\nframe f{:04d} switch={} in_port={} pipe={} kind={}", i, t.switch_name, dev,
                     out->pipe, m.kind);
    if (out->dropped()) {
      g << " drop=" << DropReasonName(out->drop_reason);
    } else if (out->to_cpu) {
      g << " to_cpu=1";
    } else if (out->balanced) {
      g << fmt::format(" cls={} dest={} ptr={} rank={}", out->cls, out->dest, out->ptr, out->rank);
    }
    g << "\nin " << Hex(m.bytes) << "\n";
    if (!out->dropped()) {
      g << "out " << out->port << " " << Hex(out->bytes) << "\n";
      // The same frame leaving when its queue is at the port's ECN threshold.
      if (!out->to_cpu && t.options.ecn_bytes != 0) {
        const auto marked = model.Egress(out->bytes, out->port, EcnCells(t.options.ecn_bytes));
        if (marked != out->bytes) g << "ce " << out->port << " " << Hex(marked) << "\n";
      }
    }
  }
  VectorSet v;
  v.golden = g.str();
  v.tables_json = TablesToJson(t).dump(1) + "\n";
  v.tables = t;
  return v;
}

}  // namespace ofan::p4
