/* Constants that tofino_p4/pofan.p4 and the C++ next to it (the control
 * plane in control/, the pipeline model in model/) both include: one place
 * for the wire values the program matches on, its table sizes, its drop
 * reasons and the names the runtime knows it by. Preprocessor only, so that
 * p4c's preprocessor and a C++ compiler read the same file. The C++ side
 * checks the wire values against dataplane/packet/ (model/pofan_model.cc,
 * static_asserts), so they cannot drift from what ofan-dp matches on.
 */
#ifndef OFAN_TOFINO_P4_POFAN_DEFS_H_
#define OFAN_TOFINO_P4_POFAN_DEFS_H_

/* The program's name (bfrt.<name>, the PTF test's p4_name). */
#define OFAN_P4_PROGRAM_NAME "pofan"

/* Ethernet, IPv4, UDP, RoCEv2. */
#define OFAN_P4_ETHERTYPE_IPV4 0x0800
#define OFAN_P4_ETHERTYPE_ARP 0x0806
#define OFAN_P4_ETHERTYPE_VLAN 0x8100
#define OFAN_P4_ETHERTYPE_MAC_CONTROL 0x8808
#define OFAN_P4_ETHERTYPE_LLDP 0x88CC
#define OFAN_P4_ETHERTYPE_IPV6 0x86DD
#define OFAN_P4_IPPROTO_UDP 17
#define OFAN_P4_ROCEV2_UDP_PORT 4791

/* BTH opcodes of the ACK size class (§4.1 "ACKs"): ACK/NAK, atomic ACK, CNP. */
#define OFAN_P4_BTH_OPCODE_ACK 0x11
#define OFAN_P4_BTH_OPCODE_ATOMIC_ACK 0x12
#define OFAN_P4_BTH_OPCODE_CNP 0x81

/* Size classes: the t of App. F.2, Eq. (16). */
#define OFAN_P4_CLASS_DATA 0
#define OFAN_P4_CLASS_ACK 1

/* Table and register sizes. Three grow with the network: for a fat tree of
 * OFAN_P4_EDGE_SWITCHES edge switches of OFAN_P4_MAX_UPLINKS uplinks and a
 * host per down port, a route per host and one for the switch's gateway
 * address, and a key and a pointer per (destination edge, class) at an edge switch. The
 * default, 2,048, is a k = 64 fat tree (65,536 hosts): 65,537 routes, 4,096
 * keys and pointers. The P4 compiler can be given another count
 * (-DOFAN_P4_EDGE_SWITCHES=64: check.sh compiles the program for Table 2's
 * 64 edge switches that way: 2,049, 128, 128); the C++ side always uses the
 * default. */
#define OFAN_P4_MAX_UPLINKS 32
#ifndef OFAN_P4_EDGE_SWITCHES
#define OFAN_P4_EDGE_SWITCHES 2048
#endif
#define OFAN_P4_ROUTE_TABLE_SIZE (OFAN_P4_EDGE_SWITCHES * OFAN_P4_MAX_UPLINKS + 1)
#define OFAN_P4_KEY_TABLE_SIZE (OFAN_P4_EDGE_SWITCHES * 2)        /* (destination, class) */
#define OFAN_P4_POINTER_REGISTER_SIZE (OFAN_P4_EDGE_SWITCHES * 2) /* per key, per pipe */
#define OFAN_P4_LIST_TABLE_SIZE 16384 /* ranks of keys that lost uplinks */
#define OFAN_P4_F2_TABLE_SIZE 1024    /* w * 2^ceil(log2 w), and w * w */
#define OFAN_P4_PORT_TABLE_SIZE 512   /* device ports (9 bits) */

/* The traffic manager counts queues in cells of this many bytes (Tofino 1). */
#define OFAN_P4_QUEUE_CELL_BYTES 80

/* Tofino device ports: the pipe is bits 8:7 (so POfan's pipe of a packet is
 * its ingress port >> 7). */
#define OFAN_P4_PIPE_SHIFT 7
#define OFAN_P4_MAX_PIPES 4

/* Drop reasons, the index of the program's drop counter. 0 is "not dropped". */
#define OFAN_P4_DROP_NONE 0
#define OFAN_P4_DROP_PARSER_ERROR 1
#define OFAN_P4_DROP_UNKNOWN_ETHERTYPE 2
#define OFAN_P4_DROP_MAC_CONTROL 3
#define OFAN_P4_DROP_IPV4_VERSION 4
#define OFAN_P4_DROP_IPV4_HEADER_LENGTH 5
#define OFAN_P4_DROP_IPV4_OPTIONS 6
#define OFAN_P4_DROP_IPV4_TOTAL_LENGTH 7
#define OFAN_P4_DROP_IPV4_CHECKSUM 8
#define OFAN_P4_DROP_IPV4_FRAGMENT 9
#define OFAN_P4_DROP_UDP_TRUNCATED 10
#define OFAN_P4_DROP_BTH_TRUNCATED 11
#define OFAN_P4_DROP_NO_ROUTE 12
#define OFAN_P4_DROP_TTL_EXPIRED 13
#define OFAN_P4_DROP_NO_UPLINK 14
#define OFAN_P4_DROP_NO_PORT_MAC 15
#define OFAN_P4_NUM_DROP_REASONS 16

#endif /* OFAN_TOFINO_P4_POFAN_DEFS_H_ */
