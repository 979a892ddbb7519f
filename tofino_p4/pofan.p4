/* POfan for Intel Tofino (TNA): destination-based rotation with one pointer
 * per (destination, size class) in every pipe (paper §5.1, §5.2, App. H).
 *
 * expects:   tables filled by the control plane of tofino_p4/control/ (from
 *            the fat tree, this switch and its failed links, by the LB
 *            library that ofan-dp and ofan-sim use) and the pointer register
 *            written once per pipe at load time (ofan-p4 tables)
 * modifies:  Ethernet destination and source (the next hop's and the output
 *            port's), IPv4 TTL - 1, ECN CE on ECT packets that find their
 *            queue at or above its threshold, and the header checksum; nothing
 *            else, so a RoCEv2 packet keeps its ICRC (which masks TTL, ECN
 *            and checksum)
 * next:      one output port per packet, the CPU port for ARP, LLDP, IPv6 and
 *            the gateway address, or a drop counted under its reason
 *
 * What a packet goes through (tofino_p4/model/ executes the same, step by
 * step, and the tests hold it to dataplane/lb's POfan and to ofan-dp):
 *  1. parse Ethernet, one optional 802.1Q tag, IPv4, UDP, and the BTH when the
 *     UDP destination port is RoCEv2's; the IPv4 checksum is verified here;
 *  2. the size class: ACK for ACK/NAK, atomic ACK and CNP opcodes, data for
 *     every other packet (§4.1 "ACKs"; ofan-dp's parse stage does the same);
 *  3. route: an exact table on the destination address. Down gives the port;
 *     up gives d, the destination in this switch's key space (destination
 *     edge switch at an edge, destination pod at an aggregation switch);
 *  4. the key: an exact table (d, class) -> the pointer's index, the last
 *     rank of its valid-uplink list, and its App. F.2 parameters id1, id2;
 *  5. the pointer: one Register of bit<8>, read and advanced by one
 *     RegisterAction per packet (below);
 *  6. the uplink: for a key with all w uplinks valid, the App. F.2 order
 *     pi(r) = (xorw(P[r], id1) + id2) mod w in two lookups, f2_xorw (r, id1)
 *     -> xorw(P[r], id1) and f2_add (x, id2) -> the port of uplink
 *     (x + id2) mod w: w * 2^ceil(log2 w) and w * w entries that every key
 *     shares, in place of a compare-and-select per step (each a stage of its
 *     own on Tofino); for a key that lost uplinks to failures, the r-th entry
 *     of its valid-uplink list (uplink_list, filled only for such keys);
 *  7. the rewrite: TTL - 1 (checked first: a packet whose TTL expires takes
 *     no pointer), the MACs of the output port, the checksum in the deparser;
 *  8. egress: CE on an ECT packet whose queue held at least the port's
 *     threshold when it was enqueued (ofan-dp marks at enqueue above its
 *     threshold too; Tofino counts the queue in 80-byte cells).
 *
 * Per-pipe pointers (App. H). `pipe` below is instanced once and given to
 * Switch for every pipe, so each pipe holds its own copy of the register:
 * a packet advances the pointer of the pipe it entered through, which is
 * exactly POfan. The stateful ALU of a pipe does one read-modify-write per
 * packet at line rate with no lock, and no pipe sees another's register.
 *
 * The register arithmetic. The stateful ALU has no modulo, so the pointer
 * wraps by compare-and-reset. It holds the rank of the list entry the key
 * used last (not the next one): the action compares it with `last` (the
 * list's length - 1, from the key table), resets it to 0 or adds 1, and
 * returns the new value. One condition, two updates, the output taken from
 * the update: one stateful ALU. dataplane/lb keeps the same state and takes
 * the same step (OfanStep in dataplane/lb/policies/ofan.h), so the two agree
 * packet for packet, also while failures change lists under live pointers:
 * one past the end of a shortened list restarts the round at 0, one inside
 * a lengthened list carries on. No register write is needed when tables
 * change: link failures change table entries, never the program or the
 * registers.
 *
 * Full Ofan (one pointer per key for the whole switch, §4) cannot be written
 * in TNA. A Register belongs to one pipe's stage: TNA has no extern, and
 * Tofino no path, by which a packet of pipe 0 can read-modify-write a
 * register of pipe 1, and several pipes' packets of the same key arrive in
 * the same cycle. Exact Ofan needs App. I's combining stage in front of a
 * shared register file: sort the packets of a cycle by key, combine those
 * with the same key, advance each key's pointer once by its group's count,
 * and give the values back in the original order. That is fixed-function
 * hardware (about 10^5 gates, App. I), not something P4 on a pipe expresses.
 * ofan-dp's Ofan-combined mode (dataplane/lb/policies/ofan_shared.h) runs the
 * same algorithm in software over a vector of packets.
 */

#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#include "include/pofan_defs.h"

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16> ether_type;
}

header vlan_tag_h {
    bit<3> pcp;
    bit<1> dei;
    bit<12> vid;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4> version;
    bit<4> ihl;
    bit<6> dscp;
    bit<2> ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;          /* reserved, DF, MF */
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* InfiniBand base transport header (IBA vol. 1, 9.2). */
header bth_h {
    bit<8> opcode;
    bit<1> solicited;
    bit<1> mig_req;
    bit<2> pad_count;
    bit<4> tver;
    bit<16> pkey;
    bit<1> fecn;
    bit<1> becn;
    bit<6> reserved0;
    bit<24> dst_qp;
    bit<1> ack_req;
    bit<7> reserved1;
    bit<24> psn;
}

struct headers_t {
    ethernet_h ethernet;
    vlan_tag_h vlan;
    ipv4_h ipv4;
    udp_h udp;
    bth_h bth;
}

struct ig_metadata_t {
    bit<1> checksum_err;
    bit<8> drop_reason;     /* OFAN_P4_DROP_* */
    bit<1> cls;             /* OFAN_P4_CLASS_* */
    bit<16> dest;           /* d: destination edge switch or pod */
    PortId_t cpu_port;
    bit<16> ptr;            /* the key's pointer index */
    bit<8> last;            /* rank of the last entry of the key's list */
    bit<8> id1;             /* App. F.2, Eq. (17) */
    bit<8> id2;
    bit<1> degraded;        /* the key lost uplinks: read its list */
    bit<8> rank;            /* the pointer after this packet */
    bit<8> x;               /* xorw(P[rank], id1) */
    bit<16> short_len;      /* 40 - total_len, 0 at 40 or more: see len_check */
}

struct eg_headers_t {
    ethernet_h ethernet;
    vlan_tag_h vlan;
    ipv4_h ipv4;
}

struct eg_metadata_t {
    bit<19> ecn_cells;      /* mark at or above this queue depth; 0: never */
    bit<19> room;
}

/* ------------------------------------------------------------------ ingress */

parser IngressParser(packet_in pkt,
                     out headers_t hdr,
                     out ig_metadata_t md,
                     out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_checksum;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        md.checksum_err = 0;
        md.drop_reason = OFAN_P4_DROP_NONE;
        md.cls = OFAN_P4_CLASS_DATA;
        md.dest = 0;
        md.cpu_port = 0;
        md.ptr = 0;
        md.last = 0;
        md.id1 = 0;
        md.id2 = 0;
        md.degraded = 0;
        md.rank = 0;
        md.x = 0;
        md.short_len = 0;
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            OFAN_P4_ETHERTYPE_VLAN: parse_vlan;
            OFAN_P4_ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            OFAN_P4_ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        ipv4_checksum.add(hdr.ipv4);
        md.checksum_err = (bit<1>)ipv4_checksum.verify();
        /* Past IPv4 only for a plain header, not a fragment, carrying UDP;
         * ingress drops options and fragments (counted). */
        transition select(hdr.ipv4.ihl, hdr.ipv4.flags, hdr.ipv4.frag_offset,
                          hdr.ipv4.protocol) {
            (5, 3w0 &&& 3w1, 0, OFAN_P4_IPPROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            OFAN_P4_ROCEV2_UDP_PORT: parse_bth;
            default: accept;
        }
    }

    state parse_bth {
        pkt.extract(hdr.bth);
        transition accept;
    }
}

control Ingress(inout headers_t hdr,
                inout ig_metadata_t md,
                in ingress_intrinsic_metadata_t ig_intr_md,
                in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    Counter<bit<32>, bit<8>>(OFAN_P4_NUM_DROP_REASONS, CounterType_t.PACKETS) drops;

    /* The pointers of this pipe (App. H): see the file's comment. */
    Register<bit<8>, bit<16>>(OFAN_P4_POINTER_REGISTER_SIZE, 0) pointers;
    RegisterAction<bit<8>, bit<16>, bit<8>>(pointers) advance = {
        void apply(inout bit<8> used, out bit<8> rank) {
            if (used >= md.last) {
                used = 0;
            } else {
                used = used + 1;
            }
            rank = used;
        }
    };

    action drop(bit<8> why) {
        md.drop_reason = why;
    }

    action to_cpu() {
        ig_tm_md.ucast_egress_port = md.cpu_port;
    }

    /* This switch's CPU port. */
    action set_switch(PortId_t cpu_port) {
        md.cpu_port = cpu_port;
    }
    table switch_config {
        actions = { set_switch; }
        default_action = set_switch(0);
        size = 1;
    }

    /* The IPv4 total length checks, as one saturating subtraction: how far
     * total_len falls short of IPv4 + UDP + BTH (40 bytes), 0 when it does
     * not, so at most 40 and held in its low 6 bits. Then total_len < 20,
     * < 28 and < 40 are short_len[5:0] > 20, > 12 and != 0. A gateway
     * compares for less or greater through its 12 hash bits, so it cannot
     * take total_len's 16 (bf-p4c: "condition too complex, limit of 4
     * bytes + 12 bits of PHV input exceeded"); 6 bits it can. */
    action len_check() {
        md.short_len = 16w40 |-| hdr.ipv4.total_len;
    }

    action route_down(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
    }
    action route_up(bit<16> dest) {
        md.dest = dest;
    }
    action route_local() {
        to_cpu();
    }
    action no_route() {
        drop(OFAN_P4_DROP_NO_ROUTE);
    }
    table route {
        key = { hdr.ipv4.dst_addr : exact @name("dst_addr"); }
        actions = { route_down; route_up; route_local; @defaultonly no_route; }
        const default_action = no_route();
        size = OFAN_P4_ROUTE_TABLE_SIZE;
    }

    action set_key(bit<16> ptr, bit<8> last, bit<8> id1, bit<8> id2) {
        md.ptr = ptr;
        md.last = last;
        md.id1 = id1;
        md.id2 = id2;
        md.degraded = 0;
    }
    action set_key_degraded(bit<16> ptr, bit<8> last) {
        md.ptr = ptr;
        md.last = last;
        md.degraded = 1;
    }
    action no_uplink() {
        drop(OFAN_P4_DROP_NO_UPLINK);
    }
    table pofan_key {
        key = {
            md.dest : exact @name("dest");
            md.cls : exact @name("cls");
        }
        actions = { set_key; set_key_degraded; no_uplink; }
        const default_action = no_uplink();
        size = OFAN_P4_KEY_TABLE_SIZE;
    }

    /* The key's order, App. F.2, shared by every key: P (the one
     * permutation all switches share) and xorw folded into one table, the
     * addition mod w and the uplink's port into another. */
    action set_xorw(bit<8> x) {
        md.x = x;
    }
    table f2_xorw {
        key = {
            md.rank : exact @name("rank");
            md.id1 : exact @name("id1");
        }
        actions = { set_xorw; @defaultonly no_uplink; }
        const default_action = no_uplink();
        size = OFAN_P4_F2_TABLE_SIZE;
    }

    action set_uplink(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
    }
    table f2_add {
        key = {
            md.x : exact @name("x");
            md.id2 : exact @name("id2");
        }
        actions = { set_uplink; @defaultonly no_uplink; }
        const default_action = no_uplink();
        size = OFAN_P4_F2_TABLE_SIZE;
    }

    /* The valid uplinks of a key that lost some, in its App. F.2 order. */
    table uplink_list {
        key = {
            md.ptr : exact @name("ptr");
            md.rank : exact @name("rank");
        }
        actions = { set_uplink; @defaultonly no_uplink; }
        const default_action = no_uplink();
        size = OFAN_P4_LIST_TABLE_SIZE;
    }

    action set_macs(mac_addr_t src, mac_addr_t dst) {
        hdr.ethernet.src_addr = src;
        hdr.ethernet.dst_addr = dst;
    }
    action no_port_mac() {
        drop(OFAN_P4_DROP_NO_PORT_MAC);
    }
    table port_mac {
        key = { ig_tm_md.ucast_egress_port : exact @name("port"); }
        actions = { set_macs; @defaultonly no_port_mac; }
        const default_action = no_port_mac();
        size = OFAN_P4_PORT_TABLE_SIZE;
    }

    apply {
        bit<16> ether_type = hdr.ethernet.ether_type;
        if (hdr.vlan.isValid()) {
            ether_type = hdr.vlan.ether_type;
        }
        /* Applied once, for every packet: bf-p4c refuses a table applied in
         * two places (the next-table chain cannot follow both). */
        switch_config.apply();
        len_check();

        if (ig_prsr_md.parser_err != 0) {
            drop(OFAN_P4_DROP_PARSER_ERROR);
        } else if (!hdr.ipv4.isValid()) {
            /* IPv6 is the control plane's: ND, BGP unnumbered and BFD. */
            if (ether_type == OFAN_P4_ETHERTYPE_ARP || ether_type == OFAN_P4_ETHERTYPE_LLDP ||
                ether_type == OFAN_P4_ETHERTYPE_IPV6) {
                to_cpu();
            } else if (ether_type == OFAN_P4_ETHERTYPE_MAC_CONTROL) {
                /* PFC and PAUSE are the MAC's to act on. */
                drop(OFAN_P4_DROP_MAC_CONTROL);
            } else {
                drop(OFAN_P4_DROP_UNKNOWN_ETHERTYPE);
            }
        } else if (hdr.ipv4.version != 4) {
            drop(OFAN_P4_DROP_IPV4_VERSION);
        } else if (hdr.ipv4.ihl < 5) {
            drop(OFAN_P4_DROP_IPV4_HEADER_LENGTH);
        } else if (hdr.ipv4.ihl != 5) {
            drop(OFAN_P4_DROP_IPV4_OPTIONS);
        } else if (md.short_len[5:0] > 20) {                 /* total_len < 20 */
            drop(OFAN_P4_DROP_IPV4_TOTAL_LENGTH);
        } else if (md.checksum_err == 1) {
            drop(OFAN_P4_DROP_IPV4_CHECKSUM);
        } else if (hdr.ipv4.flags[0:0] == 1 || hdr.ipv4.frag_offset != 0) {
            /* ofan-dp forwards fragments (one path per datagram); this
             * program drops them: tofino_p4/README.md, "Where it differs". */
            drop(OFAN_P4_DROP_IPV4_FRAGMENT);
        } else if (hdr.udp.isValid() && md.short_len[5:0] > 12) {   /* < 28 */
            drop(OFAN_P4_DROP_UDP_TRUNCATED);
        } else if (hdr.bth.isValid() && md.short_len[5:0] != 0) {   /* < 40 */
            drop(OFAN_P4_DROP_BTH_TRUNCATED);
        } else {
            if (hdr.bth.isValid()) {
                if (hdr.bth.opcode == OFAN_P4_BTH_OPCODE_ACK ||
                    hdr.bth.opcode == OFAN_P4_BTH_OPCODE_ATOMIC_ACK ||
                    hdr.bth.opcode == OFAN_P4_BTH_OPCODE_CNP) {
                    md.cls = OFAN_P4_CLASS_ACK;
                }
            }
            switch (route.apply().action_run) {
                route_down: {
                    /* ofan-dp answers an expired TTL with ICMP Time Exceeded
                     * from its exception path; here it is dropped (see the
                     * README's "Where it differs"). */
                    if (hdr.ipv4.ttl <= 1) {
                        drop(OFAN_P4_DROP_TTL_EXPIRED);
                    }
                }
                route_up: {
                    if (hdr.ipv4.ttl <= 1) {
                        drop(OFAN_P4_DROP_TTL_EXPIRED);
                    } else if (pofan_key.apply().hit) {
                        if (md.drop_reason == OFAN_P4_DROP_NONE) {
                            md.rank = advance.execute(md.ptr);
                            if (md.degraded == 1) {
                                uplink_list.apply();
                            } else if (f2_xorw.apply().hit) {
                                f2_add.apply();
                            }
                        }
                    }
                }
            }
            /* Forwarded (not to the CPU, not dropped): the router's rewrite. */
            if (md.drop_reason == OFAN_P4_DROP_NONE &&
                ig_tm_md.ucast_egress_port != md.cpu_port) {
                hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                port_mac.apply();
            }
        }

        if (md.drop_reason != OFAN_P4_DROP_NONE) {
            ig_dprsr_md.drop_ctl = 1;
            drops.count(md.drop_reason);
        }
    }
}

control IngressDeparser(packet_out pkt,
                        inout headers_t hdr,
                        in ig_metadata_t md,
                        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        pkt.emit(hdr);
    }
}

/* ------------------------------------------------------------------- egress */

parser EgressParser(packet_in pkt,
                    out eg_headers_t hdr,
                    out eg_metadata_t md,
                    out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        md.ecn_cells = 0;
        md.room = 0;
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            OFAN_P4_ETHERTYPE_VLAN: parse_vlan;
            OFAN_P4_ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            OFAN_P4_ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control Egress(inout eg_headers_t hdr,
               inout eg_metadata_t md,
               in egress_intrinsic_metadata_t eg_intr_md,
               in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
               inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
               inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    /* The port's ECN threshold in queue cells (fabric ports only: nothing
     * to the CPU is marked). */
    action set_ecn_threshold(bit<19> cells) {
        md.ecn_cells = cells;
    }
    action no_marking() {
        md.ecn_cells = 0;
    }
    table ecn_threshold {
        key = { eg_intr_md.egress_port : exact @name("port"); }
        actions = { set_ecn_threshold; @defaultonly no_marking; }
        const default_action = no_marking();
        size = OFAN_P4_PORT_TABLE_SIZE;
    }

    /* depth >= cells, as `cells |-| depth == 0` (saturating subtraction). */
    action ecn_room() {
        md.room = md.ecn_cells |-| eg_intr_md.enq_qdepth;
    }

    apply {
        if (hdr.ipv4.isValid() && (hdr.ipv4.ecn == 1 || hdr.ipv4.ecn == 2)) {
            ecn_threshold.apply();
            if (md.ecn_cells != 0) {
                ecn_room();
                if (md.room == 0) {
                    hdr.ipv4.ecn = 3;
                }
            }
        }
    }
}

control EgressDeparser(packet_out pkt,
                       inout eg_headers_t hdr,
                       in eg_metadata_t md,
                       in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        pkt.emit(hdr);
    }
}

/* One Pipeline for every pipe: each pipe gets its own `pointers` (App. H). */
Pipeline(IngressParser(), Ingress(), IngressDeparser(),
         EgressParser(), Egress(), EgressDeparser()) pipe;

Switch(pipe) main;
