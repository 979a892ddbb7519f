// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// trap.bpf.c: the XDP program of a per-switch ofan-dp port (a veth in the
// switch's namespace), loaded by DPDK's af_xdp PMD in place of its default
// (devarg xdp_prog=PATH/trap.bpf.o). It splits the port's frames the way
// SONiC's control-plane traps do: the switch's control plane, run by the
// kernel's daemons on the veth itself (lldpd, FRR's bgpd and bfdd), gets
//   - ARP (the kernel answers for its addresses; ofan-dp knows its fabric
//     neighbours' MACs from its config, and host ports have no trap),
//   - LLDP (ethertype 0x88CC),
//   - IPv6 neighbour discovery (ICMPv6 133-137), the link-local sessions of
//     BGP unnumbered (TCP port 179) and BFD (UDP 3784 single hop, 4784
//     multihop), and the same over IPv4,
// and everything else goes to the AF_XDP socket of ofan-dp: data, and ICMP
// to the switch and TTL expiries, which its exception path answers (as the
// shared engine's does: exception/kernel_ports.h).
//
// expects:  an XSKMAP named xsks_map (the PMD puts its socket at the RX
//           queue's index); one optional 802.1Q tag
// gives:    XDP_PASS for the frames above, a redirect to the queue's socket
//           for the rest (XDP_PASS when the queue has no socket yet); each
//           frame counted in the per-CPU array trap_stats at its class
//           (trap_classes.h), which ofan-dp reads (trap_stats.h) for
//           `ofanctl ports`
// build:    clang -target bpf (dataplane/xdp/meson.build)
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
// libbpf's helpers need the kernel's types above: not sorted with them.
// clang-format off
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
// clang-format on

#include "trap_classes.h"

#define ETH_P_LLDP_ 0x88CC
#define ETH_P_ARP_ 0x0806
#define BGP_PORT 179
#define BFD_PORT 3784
#define BFD_MULTIHOP_PORT 4784

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, __u32);
} xsks_map SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, OFAN_TRAP_NUM_CLASSES);
  __type(key, __u32);
  __type(value, __u64);
} trap_stats SEC(".maps");

struct vlan_tag {
  __be16 tci;
  __be16 type;
};

// The L4 ports of a TCP or UDP header at `l4`: the control plane's class,
// or OFAN_TRAP_DATAPLANE.
static __always_inline int control_ports(void* l4, void* end, __u8 proto) {
  if (proto == IPPROTO_TCP) {
    struct tcphdr* t = l4;
    if ((void*)(t + 1) > end) return OFAN_TRAP_DATAPLANE;
    if (t->source == bpf_htons(BGP_PORT) || t->dest == bpf_htons(BGP_PORT)) return OFAN_TRAP_BGP;
    return OFAN_TRAP_DATAPLANE;
  }
  if (proto == IPPROTO_UDP) {
    struct udphdr* u = l4;
    if ((void*)(u + 1) > end) return OFAN_TRAP_DATAPLANE;
    if (u->dest == bpf_htons(BFD_PORT) || u->dest == bpf_htons(BFD_MULTIHOP_PORT))
      return OFAN_TRAP_BFD;
  }
  return OFAN_TRAP_DATAPLANE;
}

// The frame's class (trap_classes.h): one of the kernel's, or
// OFAN_TRAP_DATAPLANE (also for what is too short to tell: ofan-dp's parser
// counts and drops it).
static __always_inline int classify(struct xdp_md* ctx) {
  void* data = (void*)(long)ctx->data;
  void* end = (void*)(long)ctx->data_end;
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > end) return OFAN_TRAP_DATAPLANE;
  __be16 type = eth->h_proto;
  void* l3 = eth + 1;
  if (type == bpf_htons(ETH_P_8021Q)) {
    struct vlan_tag* v = l3;
    if ((void*)(v + 1) > end) return OFAN_TRAP_DATAPLANE;
    type = v->type;
    l3 = v + 1;
  }
  if (type == bpf_htons(ETH_P_ARP_)) return OFAN_TRAP_ARP;
  if (type == bpf_htons(ETH_P_LLDP_)) return OFAN_TRAP_LLDP;
  if (type == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr* ip6 = l3;
    if ((void*)(ip6 + 1) > end) return OFAN_TRAP_DATAPLANE;
    if (ip6->nexthdr == IPPROTO_ICMPV6) {
      __u8* icmp_type = (void*)(ip6 + 1);
      if ((void*)(icmp_type + 1) > end) return OFAN_TRAP_DATAPLANE;
      // RS, RA, NS, NA, redirect
      return *icmp_type >= 133 && *icmp_type <= 137 ? OFAN_TRAP_ND : OFAN_TRAP_DATAPLANE;
    }
    return control_ports(ip6 + 1, end, ip6->nexthdr);
  }
  if (type == bpf_htons(ETH_P_IP)) {
    struct iphdr* ip = l3;
    if ((void*)(ip + 1) > end || ip->ihl < 5) return OFAN_TRAP_DATAPLANE;
    // not a first fragment: no ports
    if (ip->frag_off & bpf_htons(0x1FFF)) return OFAN_TRAP_DATAPLANE;
    return control_ports((__u8*)ip + ip->ihl * 4, end, ip->protocol);
  }
  return OFAN_TRAP_DATAPLANE;
}

static __always_inline void count(__u32 c) {
  __u64* n = bpf_map_lookup_elem(&trap_stats, &c);
  if (n) *n += 1;  // per CPU: no atomics needed
}

SEC("xdp")
int ofan_trap(struct xdp_md* ctx) {
  const int c = classify(ctx);
  if (c != OFAN_TRAP_DATAPLANE) {
    count(c);
    return XDP_PASS;
  }
  __u32 q = ctx->rx_queue_index;
  if (!bpf_map_lookup_elem(&xsks_map, &q)) {
    count(OFAN_TRAP_NO_SOCKET);
    return XDP_PASS;
  }
  count(OFAN_TRAP_DATAPLANE);
  return bpf_redirect_map(&xsks_map, q, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
