/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The classes trap.bpf.c counts each frame of a port in: the one list, read
 * by the BPF program (C) and by ofan-dp (C++, trap_stats.h), so that the
 * counter indices and their names live in one place.
 *
 * X(enumerator, name, to the kernel?) -- the order is the index in the
 * program's per-CPU array "trap_stats". */
#ifndef OFAN_DATAPLANE_XDP_TRAP_CLASSES_H
#define OFAN_DATAPLANE_XDP_TRAP_CLASSES_H

#define OFAN_TRAP_CLASSES(X)                                                          \
  X(OFAN_TRAP_ARP, "arp", 1)             /* ARP: the kernel answers and learns */     \
  X(OFAN_TRAP_LLDP, "lldp", 1)           /* ethertype 0x88CC: lldpd */                \
  X(OFAN_TRAP_ND, "nd", 1)               /* ICMPv6 133-137: BGP unnumbered's peers */ \
  X(OFAN_TRAP_BGP, "bgp", 1)             /* TCP port 179 */                           \
  X(OFAN_TRAP_BFD, "bfd", 1)             /* UDP 3784 / 4784 */                        \
  X(OFAN_TRAP_DATAPLANE, "dataplane", 0) /* redirected to ofan-dp's AF_XDP socket */  \
  X(OFAN_TRAP_NO_SOCKET, "no_socket", 0) /* for ofan-dp, but its queue had no socket */

#define OFAN_TRAP_ENUMERATOR(id, name, kernel) id,
enum ofan_trap_class { OFAN_TRAP_CLASSES(OFAN_TRAP_ENUMERATOR) OFAN_TRAP_NUM_CLASSES };
#undef OFAN_TRAP_ENUMERATOR

#endif /* OFAN_DATAPLANE_XDP_TRAP_CLASSES_H */
