// DpConfig: everything one ofan-dp switch needs, built and validated on the
// control path (YAML file + command line) before any lcore starts (docs/design.md, rule 9).
//
//   name: e0                        # used for the default socket path
//   fabric: {k: 4, levels: 3, switch: 0}      # or {role: edge, pod: 0, index: 0}
//   ports:                          # fat-tree port index -> DPDK device
//     - {port: 0, dev: "net_af_xdp0,iface=h0-e0", peer_mac: "02:00:00:00:00:01"}
//     - {port: 2, dev: "net_ring_up2"}            # unlisted ports are absent
//     - {port: 3, dev: "...", egress: {rate_gbps: 1, buffer: 256KiB, ecn: 64KiB}}
//   pipe_size: 4                    # ports per pipe (= per worker lcore, POfan table)
//   lb: {policy: ofan, ofan_mode: combined, seed: 1}
//   egress: {rate_gbps: 10, buffer: 1MiB, ecn: 100KiB, priority: [ack, control]}
//   netns: ofe-f1-e0-0            # shared engine: where the device ports are
//   (a port's dev "mem:SWITCH:PORT": the shared engine's in-memory link to
//   port PORT of the switch named SWITCH; egress.latency_us: its latency)
//   pfc: {enabled: false, priority: 3, dscp: 26, xoff: 0, xon: 0, quanta: 65535,
//         response_quanta: 394,      # xoff/xon 0: derived per port
//         watchdog: {detect_ms: 200, restore_ms: 200, action: drop}}
//   reorder: {enabled: false, buffer: 256KiB, timeout_us: 10000, flows: 1024}
//                                  # an edge's host ports, shared engine
//   control: {socket: /run/ofan/e0.sock}
//   idle: {max_sleep_us: 1000, max_wait_us: 100000}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/units.h"
#include "dataplane/fabric/pfc.h"
#include "dataplane/fabric/reorder.h"
#include "dataplane/lb/fat_tree.h"
#include "dataplane/lb/policy.h"
#include "dataplane/lb_choice.h"
#include "dataplane/packet/headers.h"

namespace ofan::dp {

struct PortConfig {
  uint32_t port = 0;  // fat-tree port index (0..k-1)
  std::string dev;    // DPDK vdev/devargs ("net_af_xdp0,iface=veth0"), or "ring:<name>" for tests
  // The two kinds of dev that are not a vdev, named in one place: the
  // shared engine's in-memory link ("mem:SWITCH:PORT"), and a test's ring
  // port ("ring:NAME", the DPDK device rte_eth_from_rings named
  // net_ring_NAME).
  bool in_memory() const { return dev.starts_with("mem:"); }
  bool ring() const { return dev.starts_with("ring:"); }
  std::string ring_device() const { return "net_ring_" + dev.substr(5); }
  std::optional<pkt::MacAddr> mac;       // default: the device's
  std::optional<pkt::MacAddr> peer_mac;  // next hop; otherwise learned from ARP
  bool admin_up = true;
  // This port's egress, where it differs from the switch's (an emulated
  // fabric's links need not all be alike).
  std::optional<double> rate_gbps;
  std::optional<uint64_t> buffer_bytes, ecn_bytes;
  // One-way propagation of the link leaving this port: the shared engine
  // emulates it (the per-switch engine's links are veths: ofan-emu puts
  // netem on them).
  std::optional<double> latency_us;
  // The shared engine's in-memory link leaving this port loses this share
  // of its frames, and sends this share with no latency (so they overtake
  // the frames before them), as tc netem's loss and reorder do on the
  // per-switch engine's veths. Percent.
  double loss_pct = 0, reorder_pct = 0;
};

struct EgressConfig {
  double rate_gbps = 0;             // emulated line rate; 0 = as fast as the device
  uint64_t buffer_bytes = kMiB;     // per port; tail drop above
  uint64_t ecn_bytes = 100 * kKiB;  // CE-mark ECT packets above; 0 = off
  bool priority_ack = true;         // ACK/NAK/CNP to the strict-priority queue
  bool priority_control = true;     // ARP/LLDP/ICMP to the strict-priority queue
  uint32_t ring_slots = 1024;       // per queue, power of two
  double latency_us = 0;            // one-way link latency (shared engine)
};

// PFC (802.1Qbb): one lossless priority, the normal queue's frames whose
// DSCP maps to it; thresholds per ingress port (fabric/pfc.h): xoff and
// xon where given, else derived from the port's buffer and the headroom
// its link needs.
struct PfcConfig {
  bool enabled = false;  // generate PAUSE at xoff; received PFC is always honoured
  uint8_t priority = fabric::kDefaultPfcPriority;         // the class our normal queue belongs to
  uint8_t dscp = fabric::kRoceDscp;                       // the DSCP that maps to it
  uint64_t xoff_bytes = 0;                                // 0: buffer - headroom
  uint64_t xon_bytes = 0;                                 // 0: xoff - 2 data frames
  uint16_t quanta = fabric::kPfcMaxQuanta;                // what XOFF asks
  uint32_t response_quanta = fabric::kPfcResponseQuanta;  // the peer's, in the headroom
  // The watchdog (fabric/pfc.h's PfcWatchdog, shared engine): detection and
  // restoration times, and what a stormed queue does.
  uint32_t wd_detect_ms = fabric::kPfcWdDetectMs;
  uint32_t wd_restore_ms = fabric::kPfcWdRestoreMs;
  fabric::PfcWdAction wd_action = fabric::PfcWdAction::kDrop;
};

// Resequencing at an edge switch's host ports (egress/reorder.h, the shared
// engine): RoCE data frames leave in PSN order per QP, each waiting at most
// timeout_us (0: the buffer's drain time at the port's rate,
// fabric::ReorderDrainTimeoutUs), in a buffer of buffer_bytes per port with
// a table of max_flows flows (defaults: fabric/reorder.h).
struct ReorderConfig {
  bool enabled = false;
  uint64_t buffer_bytes = fabric::kReorderDefaultBytes;
  uint32_t timeout_us = 0;
  uint32_t max_flows = fabric::kReorderDefaultFlows;
  // A port's limits at its emulated rate (0: the device's speed).
  fabric::ReorderLimits Limits(double rate_gbps) const {
    fabric::ReorderLimits l;
    l.buffer_bytes = buffer_bytes;
    const uint32_t us =
        timeout_us ? timeout_us : fabric::ReorderDrainTimeoutUs(buffer_bytes, rate_gbps);
    l.timeout = fabric::TimePs{us} * 1'000'000;
    l.max_flows = max_flows;
    return l;
  }
};

// pfc.watchdog.action: "drop" | "forward" | "alert" (fabric/pfc.h's
// PfcWdActionName and back).
Result<fabric::PfcWdAction> ParsePfcWdAction(std::string_view s);

// Where a port without a rate still needs one (PFC's quanta and
// thresholds on a per-switch engine's unshaped veth): 10 Gb/s.
inline constexpr LinkRate kUnshapedPortRate = LinkRate::Gbps(10);

struct DpConfig {
  std::string name = "ofan-dp";
  int k = 4;
  int levels = 3;
  uint32_t switch_id = 0;
  std::vector<PortConfig> ports;
  uint32_t pipe_size = 4;
  lb::PolicyConfig policy;  // kind, seed, AR quanta, flowlet gap...
  OfanMode ofan_mode = OfanMode::kCombined;
  EgressConfig egress;
  PfcConfig pfc;
  ReorderConfig reorder;
  std::string socket_path;  // default /run/ofan/<name>.sock
  // A kernel interface per port that has none of its own (the shared
  // engine's in-memory links): a TAP named p<port> in `netns`, to which the
  // exception path hands LLDP, ARP, IPv6 and TCP/UDP to the switch, and
  // whose frames go out of the port (exception/kernel_ports.h). For the
  // daemons of the switch's control plane (lldpd, FRR).
  bool kernel_ports = false;
  // The network namespace whose interfaces the device ports name (the
  // shared engine opens them there); empty: the process's own.
  std::string netns;
  uint32_t max_sleep_us = 1000;
  // A worker whose ports all have pollable sockets (AF_XDP) blocks on them
  // when idle, for at most this long (a frame or a kick ends it sooner).
  uint32_t max_wait_us = 100000;
  uint32_t burst = 32;

  // Derived, after Validate().
  lb::FatTree tree() const { return *lb::FatTree::Make(k, levels); }
  lb::SwitchId self() const { return lb::SwitchId(switch_id); }
  LbChoice lb() const { return {policy.kind, ofan_mode}; }
  void set_lb(const LbChoice& c) {
    policy.kind = c.kind;
    ofan_mode = c.mode;
  }
  uint32_t pipe_of(uint32_t port) const { return port / pipe_size; }
  uint32_t num_pipes() const { return (static_cast<uint32_t>(k) + pipe_size - 1) / pipe_size; }
  Status Validate() const;
  // A port's emulated line rate (its own, else egress's); nullopt: none,
  // as fast as the device. Validate() has checked it.
  std::optional<LinkRate> PortRate(const PortConfig& pc) const;
  // The same as a number, 0 for none (what ReorderConfig::Limits takes).
  double PortGbps(const PortConfig& pc) const { return pc.rate_gbps.value_or(egress.rate_gbps); }
};

Result<DpConfig> ParseConfigYaml(const std::string& text);
Result<DpConfig> LoadConfigFile(const std::string& path);

Result<pkt::MacAddr> ParseMac(std::string_view s);
std::string FormatMac(const pkt::MacAddr& m);

}  // namespace ofan::dp
