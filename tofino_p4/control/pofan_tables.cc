#include "tofino_p4/control/pofan_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "dataplane/lb/ofan_order.h"
#include "dataplane/lb/policies/ofan.h"
#include "dataplane/lb/policy.h"
#include "dataplane/lb/route_plan.h"
#include "dataplane/lb/uplink_table.h"

namespace ofan::p4 {

using lb::FatTree;
using lb::SwitchId;

// ofan-dp's salt for the switch's first worker (lb::SwitchSalt).
uint32_t DefaultSalt(SwitchId s) { return lb::SwitchSalt(s.value(), 0); }

std::vector<uint16_t> DefaultDevPorts(uint32_t k, uint32_t pipe_size) {
  const uint32_t lanes = pipe_size <= 16 ? 4 : pipe_size <= 32 ? 2 : 1;
  std::vector<uint16_t> d(k);
  for (uint32_t p = 0; p < k; ++p) {
    d[p] = static_cast<uint16_t>((p / pipe_size) << OFAN_P4_PIPE_SHIFT | (p % pipe_size) * lanes);
  }
  return d;
}

namespace {

// The device port map: one port per fat-tree port, distinct, on the
// device's pipes, and grouped exactly as lb::Pofan groups ports into pipes
// (a Tofino pipe is fixed by the port; the register copy is the pipe's).
std::optional<Error> CheckDevPorts(const std::vector<uint16_t>& d, uint32_t k,
                                   const PofanOptions& o) {
  if (d.size() != k) {
    return InvalidArgument(
        fmt::format("the port map has {} device ports; the switch has {} ports", d.size(), k));
  }
  std::set<uint16_t> seen;
  std::vector<int> hw_of_lb((k + o.pipe_size - 1) / o.pipe_size, -1);
  std::vector<int> lb_of_hw(OFAN_P4_MAX_PIPES, -1);
  for (uint32_t p = 0; p < k; ++p) {
    if (d[p] >= OFAN_P4_PORT_TABLE_SIZE) {
      return InvalidArgument(
          fmt::format("device port {} (of port {}) is not a 9-bit port", d[p], p));
    }
    if (!seen.insert(d[p]).second) {
      return InvalidArgument(fmt::format("device port {} is given to two ports", d[p]));
    }
    const uint32_t hw = PipeOfDevPort(d[p]), lp = p / o.pipe_size;
    if (hw >= o.num_pipes) {
      return InvalidArgument(
          fmt::format("device port {} (of port {}) is on pipe {}; the device has {}", d[p], p, hw,
                      o.num_pipes));
    }
    if (hw_of_lb[lp] == -1 && lb_of_hw[hw] == -1) {
      hw_of_lb[lp] = static_cast<int>(hw);
      lb_of_hw[hw] = static_cast<int>(lp);
    } else if (hw_of_lb[lp] != static_cast<int>(hw) || lb_of_hw[hw] != static_cast<int>(lp)) {
      return InvalidArgument(fmt::format(
          "port {} (device port {}, pipe {}) breaks the pipe size {}: POfan's pipe of a "
          "port is port / pipe size, so ports {}..{} must share one device pipe, alone",
          p, d[p], hw, o.pipe_size, lp * o.pipe_size, std::min(k, (lp + 1) * o.pipe_size) - 1));
    }
  }
  return std::nullopt;
}

// The options completed (device ports, CPU port, salt) and checked
// against the tree: an error says which and why.
Result<PofanOptions> CompleteOptions(const FatTree& tree, SwitchId sw, PofanOptions o) {
  const uint32_t k = static_cast<uint32_t>(tree.k());
  if (o.policy != lb::PolicyKind::kPofan && o.policy != lb::PolicyKind::kOfan) {
    return InvalidArgument(fmt::format(
        "policy {}: pofan.p4 balances with the Ofan pointer only (policy ofan or pofan); {} would "
        "need a program of its own",
        lb::PolicyName(o.policy), lb::PolicyName(o.policy)));
  }
  if (o.policy == lb::PolicyKind::kOfan && o.pipe_size != k) {
    return InvalidArgument(fmt::format(
        "policy ofan keeps one pointer table for the switch, and a Tofino register lives in "
        "one pipe: every fat-tree port must sit in one pipe (pipe size {}, not {}), or use "
        "policy pofan",
        k, o.pipe_size));
  }
  if (o.num_pipes < 1 || o.num_pipes > OFAN_P4_MAX_PIPES) {
    return InvalidArgument(
        fmt::format("{} pipes: a Tofino has 1 to {}", o.num_pipes, OFAN_P4_MAX_PIPES));
  }
  if (o.pipe_size < 1 || o.pipe_size > k) {
    return InvalidArgument(
        fmt::format("pipe size {}: it must be 1..{} (the switch's ports)", o.pipe_size, k));
  }
  const uint32_t lb_pipes = (k + o.pipe_size - 1) / o.pipe_size;
  if (lb_pipes > o.num_pipes) {
    return InvalidArgument(fmt::format(
        "pipe size {} makes {} pipes of a {}-port switch; the device has {} (use a pipe size of "
        "at least {})",
        o.pipe_size, lb_pipes, k, o.num_pipes, (k + o.num_pipes - 1) / o.num_pipes));
  }
  if (o.dev_ports.empty()) o.dev_ports = DefaultDevPorts(k, o.pipe_size);
  if (auto err = CheckDevPorts(o.dev_ports, k, o)) return *err;
  if (!o.cpu_port) o.cpu_port = static_cast<uint16_t>(o.num_pipes > 2 ? 320 : 192);
  if (*o.cpu_port >= OFAN_P4_PORT_TABLE_SIZE) {
    return InvalidArgument(fmt::format("CPU port {} is not a 9-bit device port", *o.cpu_port));
  }
  if (std::find(o.dev_ports.begin(), o.dev_ports.end(), *o.cpu_port) != o.dev_ports.end()) {
    return InvalidArgument(fmt::format("CPU port {} is also a fabric port", *o.cpu_port));
  }
  if (!o.salt_set) {
    o.salt = DefaultSalt(sw);
    o.salt_set = true;
  }
  return o;
}

// route (ofan-dp's routing of every host address and its gateway),
// port_mac and ecn_threshold: what every switch has, uplinks or not.
Status FillPortTables(const FatTree& tree, SwitchId sw, const PofanOptions& o, PofanTables& t) {
  const uint32_t k = static_cast<uint32_t>(tree.k());
  // The plan ofan-dp's route stage builds its table from.
  const lb::RoutePlan router(tree, sw);
  for (int h = 0; h < tree.num_hosts(); ++h) {
    const uint32_t addr = tree.host_addr(lb::HostId(static_cast<uint32_t>(h)));
    const lb::RouteResult r = router.Route(addr);
    RouteEntry e;
    e.dst_addr = addr;
    switch (r.kind) {
      case lb::RouteKind::kDown:
        e.action = RouteAction::kDown;
        e.port = o.dev_ports[r.port];
        break;
      case lb::RouteKind::kUp:
        e.action = RouteAction::kUp;
        e.dest = r.dest;
        break;
      case lb::RouteKind::kLocal:
        e.action = RouteAction::kLocal;
        break;
      case lb::RouteKind::kNoRoute:
        continue;
    }
    t.route.push_back(e);
  }
  if (router.gateway_ip() != 0) {
    t.route.push_back(RouteEntry{router.gateway_ip(), RouteAction::kLocal, 0, 0});
  }

  // port_mac: every fabric port, with the MAC plan of dataplane/lb/names.h.
  for (uint32_t p = 0; p < k; ++p) {
    t.port_mac.push_back(PortMacEntry{o.dev_ports[p], lb::SwitchPortMac(sw, static_cast<int>(p)),
                                      lb::PeerMac(tree, sw, static_cast<int>(p))});
  }

  // ecn_threshold: every fabric port, none for the CPU.
  if (o.ecn_bytes != 0) {
    if (EcnCells(o.ecn_bytes) >= (1u << 19)) {
      return InvalidArgument(fmt::format(
          "an ECN threshold of {} bytes is past Tofino's 19-bit queue depth", o.ecn_bytes));
    }
    for (uint32_t p = 0; p < k; ++p) {
      t.ecn_threshold.push_back(EcnEntry{o.dev_ports[p], EcnCells(o.ecn_bytes)});
    }
  }

  return {};
}

// f2_xorw, f2_add (the App. F.2 order's parts), pofan_key and uplink_list
// (keys that lost uplinks) from the switch's uplink table.
Status FillOrderTables(const lb::UplinkTable& table, uint32_t w, const PofanOptions& o,
                       PofanTables& t) {
  const lb::OfanOrder& order = table.order();
  const uint32_t id1_values = 1u << lb::CeilLog2(w);
  for (uint32_t r = 0; r < w; ++r) {
    for (uint32_t id1 = 0; id1 < id1_values; ++id1) {
      t.f2_xorw.push_back(
          XorwEntry{static_cast<uint8_t>(r), static_cast<uint8_t>(id1),
                    static_cast<uint8_t>(lb::XorW(order.base_permutation()[r], id1, w))});
    }
  }
  for (uint32_t x = 0; x < w; ++x) {
    for (uint32_t id2 = 0; id2 < w; ++id2) {
      t.f2_add.push_back(AddEntry{static_cast<uint8_t>(x), static_cast<uint8_t>(id2),
                                  o.dev_ports[w + (x + id2) % w]});
    }
  }
  for (uint32_t d = 0; d < table.num_dests(); ++d) {
    for (uint8_t cls = 0; cls < lb::kNumSizeClasses; ++cls) {
      const uint32_t key = table.key(d, static_cast<lb::SizeClass>(cls));
      const lb::UplinkList list = table.list(key);
      KeyEntry e;
      e.dest = static_cast<uint16_t>(d);
      e.cls = cls;
      e.ptr = static_cast<uint16_t>(key);
      if (list.n == 0) {
        e.action = KeyAction::kNoUplink;
      } else if (list.n == w) {
        // All uplinks valid: the list is the key's whole App. F.2 order,
        // which the program computes from P, id1 and id2.
        e.action = KeyAction::kSetKey;
        e.last = static_cast<uint8_t>(w - 1);
        e.id1 = static_cast<uint8_t>(order.Id1(key));
        e.id2 = static_cast<uint8_t>(order.Id2(key));
      } else {
        e.action = KeyAction::kSetKeyDegraded;
        e.last = static_cast<uint8_t>(list.n - 1);
        for (uint32_t r = 0; r < list.n; ++r) {
          t.uplink_list.push_back(
              ListEntry{e.ptr, static_cast<uint8_t>(r), o.dev_ports[w + list.ports[r]]});
        }
      }
      t.pofan_key.push_back(e);
    }
  }
  if (t.f2_xorw.size() > OFAN_P4_F2_TABLE_SIZE || t.f2_add.size() > OFAN_P4_F2_TABLE_SIZE) {
    return InvalidArgument(fmt::format("{} uplinks need {} order entries: pofan.p4 holds {}", w,
                                       std::max(t.f2_xorw.size(), t.f2_add.size()),
                                       OFAN_P4_F2_TABLE_SIZE));
  }
  if (t.uplink_list.size() > OFAN_P4_LIST_TABLE_SIZE) {
    return InvalidArgument(
        fmt::format("{} list entries for keys that lost uplinks: pofan.p4 holds {}",
                    t.uplink_list.size(), OFAN_P4_LIST_TABLE_SIZE));
  }

  return {};
}

// The pointer register of every pipe: the policy's initial pointers (the
// same seed and salt give the same draws), which are the register's state:
// lb::Pofan's per pipe, or lb::Ofan's one table in the one pipe.
void FillPointers(const lb::UplinkTable& table, uint32_t k, const PofanOptions& o, PofanTables& t) {
  lb::PolicyConfig pc;
  pc.kind = o.policy;
  pc.seed = o.seed;
  pc.pipe_size = o.pipe_size;
  const lb::SwitchLbSetup setup{&table, k, o.salt};
  for (auto& regs : t.pointers) regs.assign(table.num_keys(), 0);
  if (o.policy == lb::PolicyKind::kOfan) {
    const lb::Ofan ofan(pc, setup);
    auto& regs = t.pointers[PipeOfDevPort(o.dev_ports[0])];
    for (uint32_t key = 0; key < table.num_keys(); ++key) regs[key] = ofan.last_used(key);
    return;
  }
  const lb::Pofan pofan(pc, setup);
  for (uint32_t lp = 0; lp < pofan.num_pipes(); ++lp) {
    auto& regs = t.pointers[PipeOfDevPort(o.dev_ports[size_t{lp} * o.pipe_size])];
    for (uint32_t key = 0; key < table.num_keys(); ++key) {
      regs[key] = pofan.last_used(lp, key);
    }
  }
}

}  // namespace

Result<PofanTables> ComputePofanTables(const FatTree& tree, SwitchId sw,
                                       const std::vector<uint32_t>& failed_links,
                                       const PofanOptions& options) {
  if (sw.value() >= static_cast<uint32_t>(tree.num_switches())) {
    return InvalidArgument(fmt::format("switch id {} is out of range: the {} has switches 0..{}",
                                       sw.value(), tree.Describe(), tree.num_switches() - 1));
  }
  auto opts = CompleteOptions(tree, sw, options);
  if (!opts) return opts.error();
  const PofanOptions& o = *opts;
  const uint32_t k = static_cast<uint32_t>(tree.k());
  auto failed = tree.FailedLinks(failed_links);
  if (!failed) return failed.error();

  PofanTables t;
  t.k = tree.k();
  t.levels = tree.levels();
  t.sw = sw;
  t.switch_name = lb::SwitchName(tree, sw);
  t.role = tree.role(sw);
  t.failed_links = failed_links;
  std::sort(t.failed_links.begin(), t.failed_links.end());
  t.failed_links.erase(std::unique(t.failed_links.begin(), t.failed_links.end()),
                       t.failed_links.end());
  const uint32_t w = static_cast<uint32_t>(tree.num_uplinks(sw));
  t.w = static_cast<uint8_t>(w);
  t.cpu_port = *o.cpu_port;
  t.options = o;
  if (Status s = FillPortTables(tree, sw, o, t); !s) return s.error();
  t.pointers.assign(o.num_pipes, std::vector<uint8_t>{});
  if (w == 0) return t;  // cores and spines only go down
  const lb::UplinkTable table = lb::UplinkTable::ForSwitch(tree, sw, *failed);
  if (table.num_keys() > OFAN_P4_KEY_TABLE_SIZE || w > OFAN_P4_MAX_UPLINKS) {
    return InvalidArgument(fmt::format("{} keys and {} uplinks: pofan.p4 is sized for {} and {}",
                                       table.num_keys(), w, OFAN_P4_KEY_TABLE_SIZE,
                                       OFAN_P4_MAX_UPLINKS));
  }
  if (Status s = FillOrderTables(table, w, o, t); !s) return s.error();
  FillPointers(table, k, o, t);
  return t;
}

}  // namespace ofan::p4
