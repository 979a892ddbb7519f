#!/usr/bin/python3
"""Writes the golden frame fixtures of tests/golden/ (format: golden.h).

How they were made: every frame is built here with Debian's scapy
(python3-scapy 2.5, /usr/bin/python3), never by ofan's own code, so the tests
that read them check ofan against an independent implementation:

  roce.golden    RoCEv2 frames of every RC header shape (BTH flags, RETH,
                 AETH ACK/NAK/RNR, ImmDt, CNP, VLAN, IP options, Ethernet
                 padding). scapy.contrib.roce.BTH computes each ICRC (its own
                 masking of TOS, TTL, checksums, FECN/BECN/reserved over a
                 pseudo-LRH; zlib's CRC-32 underneath). Each frame line names
                 every field, so a test can read them back with the typed
                 headers and rebuild the frame with PacketBuilder
                 (builder=1). One frame has a payload byte changed after its
                 ICRC was computed (icrc_ok=0).

  pfc.golden     IEEE 802.1Qbb PFC frames (and one 802.3x PAUSE) as
                 scapy.contrib.mac_control builds them, padded to Ethernet's
                 60-byte minimum: the frames ofan-dp sends (build=1: the
                 source MAC, priority and quanta BuildPfcFrame takes) and
                 what a switch with PFC on priority 3 reads from each
                 (read=ours|notours|malformed, quanta), malformed ones among
                 them: cut short, a class-enable vector with no class or
                 only classes without PFC.

  stages.golden  whole frames through the DPDK-free stages (parse, route,
                 rewrite; the ring tests take the same entries through a whole
                 switch): for three switches of a k=4, 3-level fat tree (an
                 edge, an aggregation and a core switch), each frame's input
                 port and bytes, its route, and the bytes it must leave with on
                 each port it may leave by. The route is written by hand from
                 the address plan of dataplane/lb/fat_tree.h (10.pod.edge.slot+2;
                 an edge's key d = pod * 2 + edge, an agg's d = pod; uplinks are
                 ports 2 and 3), in each frame's comment. The expected bytes are
                 what a router sends (RFC 1812): the same packet built again by
                 scapy with TTL - 1, the port's MAC as source and its
                 neighbour's as destination, so scapy recomputes the IPv4
                 checksum (and, for RoCE, the ICRC: it must come out
                 unchanged); the ce lines are built once more with ECN CE
                 (TOS | 3). Two frames' IP ids are chosen so that the
                 checksum is 0x0000 before or after the TTL decrement (the
                 corner of RFC 1624). What the switch answers itself (reply
                 lines) is built by scapy too, as RFC 792 / RFC 1812 describe
                 it: ICMP Time Exceeded for an expired TTL and port or
                 protocol unreachable for what it does not serve, from the
                 switch's own address 10.255.0.(id + 1), TTL 64, precedence 6
                 (TOS 0xc0), quoting the IPv4 header and 8 bytes of data;
                 echo replies as the request, addresses swapped, TTL 64. IPv4
                 fragments are forwarded like any packet.

Run it from anywhere: /usr/bin/python3 tests/golden/make_golden.py [--check]
(--check writes nothing and fails if a committed file differs from what it
would write: the 'golden-fixtures' meson test).
"""
import os
import struct
import sys

from scapy.compat import raw
from scapy.contrib.mac_control import MACControlClassBasedFlowControl, MACControlPause
from scapy.contrib.roce import AETH, BTH, CNPPadding, cnp, opcode
from scapy.layers.inet import ICMP, IP, UDP, IPOption_NOP, IPOption_EOL
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

HERE = os.path.dirname(os.path.abspath(__file__))


def rc(op):
    return opcode("RC", op)[0]


def pattern(n, seed=0):
    """PacketBuilder::Payload's bytes, so that the builder can remake a frame."""
    return bytes((seed + 7 * i) & 0xFF for i in range(n))


def ip_num(dotted):
    return struct.unpack("!I", bytes(int(x) for x in dotted.split(".")))[0]


# Keys written in hex (fields that are bit patterns or addresses); the rest
# (lengths, counts, flags) in decimal.
HEX_KEYS = {"opcode", "pkey", "dqpn", "psn", "va", "rkey", "syndrome", "msn", "imm", "ip_src",
            "ip_dst", "tos", "sport", "vlan"}


def attr_text(attrs):
    return " ".join(f"{k}={v:#x}" if k in HEX_KEYS else f"{k}={v}" for k, v in attrs.items())


class Writer:
    def __init__(self, title):
        self.lines = [f"# {title}",
                      "# Made by tests/golden/make_golden.py (scapy); do not edit by hand.", ""]

    def comment(self, text):
        self.lines.append(f"# {text}")

    def line(self, text):
        self.lines.append(text)

    def text(self):
        return "\n".join(self.lines) + "\n"


# The Ethernet, IPv4 and UDP fields every RoCE fixture frame shares unless it
# says otherwise (IP id 0 and UDP checksum 0, as PacketBuilder leaves them).
ROCE_BASE = dict(mac_dst="02:00:00:00:00:01", mac_src="02:00:00:00:00:02",
                 ip_src="10.0.0.2", ip_dst="10.3.1.3", tos=2, ttl=64, sport=0xC000)


def roce_frame(w, name, what, op, dqpn, psn, se=0, m=0, pad=0, pkey=0xFFFF, fecn=0, becn=0,
               ackreq=0, reth=None, aeth=None, imm=None, payload=0, zeros=0, vlan=None,
               ip_options=None, eth_pad=0, corrupt=False, **base):
    b = dict(ROCE_BASE, **base)
    bth = BTH(opcode=op, solicited=se, migreq=m, padcount=pad, version=0, pkey=pkey, fecn=fecn,
              becn=becn, dqpn=dqpn, ackreq=ackreq, psn=psn)
    ext = b""
    attrs = dict(opcode=op, se=se, m=m, pad=pad, tver=0, pkey=pkey, fecn=fecn, becn=becn,
                 dqpn=dqpn, ackreq=ackreq, psn=psn)
    if reth is not None:
        va, rkey, dmalen = reth
        ext += struct.pack("!QII", va, rkey, dmalen)  # scapy has no RETH class
        attrs.update(va=va, rkey=rkey, dmalen=dmalen)
    if aeth is not None:
        syndrome, msn = aeth
        ext += raw(AETH(syndrome=syndrome, msn=msn))
        attrs.update(syndrome=syndrome, msn=msn)
    if imm is not None:
        ext += struct.pack("!I", imm)
        attrs.update(imm=imm)
    body = ext + pattern(payload) + b"\0" * zeros
    ip = IP(src=b["ip_src"], dst=b["ip_dst"], tos=b["tos"], ttl=b["ttl"], id=0)
    if ip_options is not None:
        ip.options = ip_options
    l2 = Ether(dst=b["mac_dst"], src=b["mac_src"])
    if vlan is not None:
        l2 = l2 / Dot1Q(prio=vlan >> 13, id=(vlan >> 12) & 1, vlan=vlan & 0xFFF)
    pkt = l2 / ip / UDP(sport=b["sport"], dport=4791, chksum=0) / bth / Raw(body)
    frame = bytearray(raw(pkt))
    if eth_pad:
        frame += b"\0" * eth_pad
    if corrupt:
        frame[-4 - eth_pad - 1] ^= 0x01  # last payload byte, after the ICRC was computed
    attrs.update(payload=payload, zeros=zeros, mac_dst=b["mac_dst"], mac_src=b["mac_src"],
                 ip_src=ip_num(b["ip_src"]), ip_dst=ip_num(b["ip_dst"]), tos=b["tos"],
                 ttl=b["ttl"], sport=b["sport"])
    if vlan is not None:
        attrs.update(vlan=vlan)
    if ip_options is not None:
        attrs.update(ihl=Ether(bytes(frame))[IP].ihl)
    if eth_pad:
        attrs.update(eth_pad=eth_pad)
    attrs.update(icrc_ok=int(not corrupt), builder=int(ip_options is None and not corrupt))
    w.comment(what)
    w.line(f"frame {name} {attr_text(attrs)}")
    w.line(f"in {bytes(frame).hex()}")
    w.line("")


def roce_golden():
    w = Writer("RoCEv2 frames of every RC header shape, with correct ICRCs (roce_test.cc)")
    roce_frame(w, "rc_send_only", "RC SEND ONLY, AckReq, 64 B payload", rc("SEND_ONLY"), 0x11, 0,
               ackreq=1, payload=64)
    roce_frame(w, "rc_send_first_psn_max", "RC SEND FIRST at PSN 0xFFFFFF (the wrap)",
               rc("SEND_FIRST"), 0xABCDEF, 0xFFFFFF, payload=256)
    roce_frame(w, "rc_send_last_imm_pad", "RC SEND LAST with immediate, solicited, 3 pad bytes",
               rc("SEND_LAST_WITH_IMMEDIATE"), 0x000123, 0x000100, se=1, pad=3,
               imm=0xDEADBEEF, payload=61, zeros=3)
    roce_frame(w, "rc_rdma_write_first", "RC RDMA WRITE FIRST: RETH, MigReq, P_Key 0x8001",
               rc("RDMA_WRITE_FIRST"), 0x00BEEF, 0x000010, m=1, pkey=0x8001,
               reth=(0x00007F00DEADBEEF, 0x1234ABCD, 8192), payload=1024)
    roce_frame(w, "rc_rdma_write_middle", "RC RDMA WRITE MIDDLE at PSN 0",
               rc("RDMA_WRITE_MIDDLE"), 0x00BEEF, 0, payload=1024)
    roce_frame(w, "rc_rdma_write_only_imm", "RC RDMA WRITE ONLY with immediate: RETH + ImmDt",
               rc("RDMA_WRITE_ONLY_WITH_IMMEDIATE"), 0x000042, 0x7FFFFF, ackreq=1,
               reth=(0x1000, 0x00000777, 32), imm=0x01020304, payload=32)
    roce_frame(w, "rc_rdma_read_request", "RC RDMA READ REQUEST: RETH, no payload",
               rc("RDMA_READ_REQUEST"), 0x000042, 0x800000, ackreq=1,
               reth=(0xFFFFFFFFFFFF0000, 0xCAFEF00D, 65536))
    roce_frame(w, "rc_rdma_read_response_first", "RC RDMA READ RESPONSE FIRST: AETH",
               rc("RDMA_READ_RESPONSE_FIRST"), 0x000043, 0x800000, aeth=(0x1F, 5), payload=1024)
    roce_frame(w, "rc_rdma_read_response_middle", "RC RDMA READ RESPONSE MIDDLE: no AETH",
               rc("RDMA_READ_RESPONSE_MIDDLE"), 0x000043, 0x800001, payload=1024)
    roce_frame(w, "rc_ack", "RC ACKNOWLEDGE: ACK with 31 credits, MSN 0x102, Not-ECT",
               rc("ACKNOWLEDGE"), 0x000011, 0x000040, aeth=(0x1F, 0x000102), tos=0)
    roce_frame(w, "rc_nak_psn_sequence_error", "RC ACKNOWLEDGE: NAK, PSN sequence error",
               rc("ACKNOWLEDGE"), 0x000011, 0x000041, aeth=(0x60, 7), tos=0)
    roce_frame(w, "rc_rnr_nak", "RC ACKNOWLEDGE: RNR NAK, timer 14", rc("ACKNOWLEDGE"), 0x000011,
               0x000042, aeth=(0x2E, 7), tos=0)
    # scapy's own CNP: BECN set, 16 reserved zero bytes.
    roce_frame(w, "cnp", "CNP (0x81): BECN, 16 reserved bytes", 0x81, 0x000123, 0, becn=1,
               zeros=len(raw(CNPPadding())))
    roce_frame(w, "rc_write_only_ce_ttl1_fecn",
               "RC RDMA WRITE ONLY, CE-marked, TTL 1, FECN: masked fields set",
               rc("RDMA_WRITE_ONLY"), 0x000099, 0x000001, fecn=1, reth=(0x2000, 0x10, 16),
               payload=16, tos=0x03, ttl=1)
    roce_frame(w, "vlan_rc_send_only", "RC SEND ONLY behind an 802.1Q tag (PCP 3, VID 5)",
               rc("SEND_ONLY"), 0x000011, 0x000002, payload=64, vlan=0x6005)
    roce_frame(w, "ip_options_rc_send_only", "RC SEND ONLY, IPv4 with 4 bytes of options (IHL 6)",
               rc("SEND_ONLY"), 0x000011, 0x000003, payload=64,
               ip_options=[IPOption_NOP(), IPOption_NOP(), IPOption_NOP(), IPOption_EOL()])
    roce_frame(w, "eth_padded_rc_ack", "RC ACKNOWLEDGE with 6 bytes of Ethernet padding after it",
               rc("ACKNOWLEDGE"), 0x000011, 0x000043, aeth=(0x00, 1), tos=0, eth_pad=6)
    roce_frame(w, "rc_send_only_corrupt", "RC SEND ONLY whose last payload byte changed after"
               " the ICRC was computed: the ICRC is wrong", rc("SEND_ONLY"), 0x11, 4, payload=64,
               corrupt=True)
    return w.text()


# The switches of stages.golden: (name, fat-tree id, role) in a k=4, 3-level
# tree, whose ids are 8 edges (pod * 2 + index), then 8 aggs, then 4 cores.
K, LEVELS = 4, 3
SWITCHES = [("edge0", 0), ("agg1_0", 8 + 1 * 2 + 0), ("core0", 16)]
UPLINKS = [2, 3]


def port_mac(sw_id, port):
    return f"02:0f:00:00:{sw_id:02x}:{port:02x}"


def peer_mac(sw_id, port):
    return f"02:ee:00:00:{sw_id:02x}:{port:02x}"


HOST_MAC, IN_MAC = "02:aa:00:00:00:01", "02:0f:00:00:ff:01"


def switch_addr(sw_id):
    """A switch's own address (FatTree::switch_addr): 10.255.0.0 + id + 1."""
    n = sw_id + 1
    return f"10.255.{n >> 8}.{n & 0xFF}"


def l3_packet(kind, src, dst, ttl, tos, vlan=None, ip_id=0, chksum=None, mac_dst=IN_MAC,
              mac_src=HOST_MAC, frag=0):
    """One frame of a kind; called again with the router's changes for the
    expected output, so scapy computes every checksum and ICRC afresh. frag:
    the IPv4 flags and offset word (0x2000 = MF)."""
    ip = IP(src=src, dst=dst, ttl=ttl, tos=tos, id=ip_id, chksum=chksum,
            flags=frag >> 13, frag=frag & 0x1FFF)
    if kind == "roce_write":
        l4 = (UDP(sport=0xC000, dport=4791, chksum=0) /
              BTH(opcode=rc("RDMA_WRITE_ONLY"), dqpn=0x000123, psn=7, ackreq=1) /
              Raw(struct.pack("!QII", 0x1000, 0x77, 256) + pattern(256)))
    elif kind == "roce_send":
        l4 = (UDP(sport=0xC001, dport=4791, chksum=0) /
              BTH(opcode=rc("SEND_ONLY"), dqpn=0x000456, psn=8) / Raw(pattern(64)))
    elif kind == "roce_ack":
        l4 = (UDP(sport=0xC000, dport=4791, chksum=0) /
              BTH(opcode=rc("ACKNOWLEDGE"), dqpn=0x000123, psn=7) / AETH(syndrome=0x1F, msn=1))
    elif kind == "cnp":
        l4 = UDP(sport=0xC002, dport=4791, chksum=0) / cnp(0x000123)
    elif kind == "icmp_echo":
        l4 = ICMP(type=8, id=1, seq=1) / Raw(b"ofan")
    elif kind == "udp":
        l4 = UDP(sport=5000, dport=9000) / Raw(pattern(32))
    elif kind == "udp_traceroute":  # traceroute's probe: UDP to port 33434 and up
        l4 = UDP(sport=40000, dport=33435) / Raw(pattern(32))
    elif kind == "gre":  # a protocol no switch speaks (47)
        ip.proto = 47
        l4 = Raw(pattern(24))
    elif kind == "frag_data":  # the data of a fragment past the first: no L4 header
        l4 = Raw(pattern(64, 3))
    elif kind == "time_exceeded":  # an ICMP error (never answered with another)
        l4 = ICMP(type=11, code=0) / Raw(pattern(28))
    else:
        raise ValueError(kind)
    l2 = Ether(dst=mac_dst, src=mac_src)
    if vlan is not None:
        l2 = l2 / Dot1Q(prio=vlan >> 13, vlan=vlan & 0xFFF)
    frame = raw(l2 / ip / l4)
    return frame + b"\0" * max(0, 60 - len(frame))  # Ethernet's minimum, as a NIC pads


def ip_id_for_checksum(want_zero_after, kind, src, dst, ttl, tos):
    """The IP id that makes the IPv4 checksum 0x0000 on arrival or, with
    want_zero_after, after the TTL decrement. With id 0 the checksum is c =
    ~S (S: the one's-complement sum of the other words); id = c makes the sum
    S + ~S = 0xFFFF, whose complement is 0x0000. scapy confirms it."""
    ttl_then = ttl - 1 if want_zero_after else ttl
    ip_id = IP(l3_packet(kind, src, dst, ttl_then, tos)[14:]).chksum
    assert IP(l3_packet(kind, src, dst, ttl_then, tos, ip_id=ip_id)[14:]).chksum == 0
    return ip_id


def icmp_reply(sw_id, in_port, frame, icmp):
    """What the switch sends back on in_port about `frame` (Ether bytes):
    `icmp` (scapy ICMP) from its own address; an error quotes the frame's
    IPv4 header and 8 bytes of its data (RFC 792)."""
    eth = Ether(frame)
    vlan = eth[Dot1Q] if Dot1Q in eth else None
    ip = eth[IP]
    orig = raw(ip)[:ip.ihl * 4 + 8]
    l2 = Ether(dst=eth.src, src=port_mac(sw_id, in_port))
    if vlan is not None:
        l2 = l2 / Dot1Q(prio=vlan.prio, vlan=vlan.vlan)
    f = raw(l2 / IP(src=switch_addr(sw_id), dst=ip.src, ttl=64, tos=0xC0, id=0) / icmp /
            Raw(orig))
    return f + b"\0" * max(0, 60 - len(f))


def echo_reply(sw_id, in_port, frame):
    """The echo reply to an echo request: the request, addresses swapped,
    TTL 64, type 0, Ethernet back to its sender; padded as sent."""
    eth = Ether(frame)
    ip = eth[IP]
    f = raw(Ether(dst=eth.src, src=port_mac(sw_id, in_port)) /
            IP(src=ip.dst, dst=ip.src, ttl=64, tos=ip.tos, id=ip.id, flags=ip.flags) /
            ICMP(type=0, id=ip[ICMP].id, seq=ip[ICMP].seq) / Raw(ip[ICMP].load))
    return f + b"\0" * max(0, 60 - len(f))


def stage_frame(w, name, what, sw, in_port, kind, src, dst, route, ttl=64, tos=0x02, vlan=None,
                ip_id=0, chksum=None, drop=None, frag=0, reply=None):
    """reply: what the switch answers on in_port ("time_exceeded",
    "port_unreachable", "protocol_unreachable", "echo"), or None."""
    sw_name, sw_id = sw
    attrs = {"switch": sw_name, "in_port": in_port}
    out_ports = []
    if route is not None:
        attrs["route"] = route[0]
        if route[0] == "down":
            attrs["port"] = route[1]
            out_ports = [route[1]]
        elif route[0] == "up":
            attrs["dest"] = route[1]
            out_ports = UPLINKS
        else:
            assert len(route) == 1
    if drop is not None:
        attrs["drop"] = drop
        out_ports = []
    if route is not None and route[0] == "local":
        out_ports = []
    w.comment(what)
    w.line(f"frame {name} " + " ".join(f"{k}={v}" for k, v in attrs.items()))
    frame = l3_packet(kind, src, dst, ttl, tos, vlan, ip_id, chksum, frag=frag)
    w.line("in " + frame.hex())
    ect = tos & 3 in (1, 2)
    for tag, new_tos in [("out", tos)] + ([("ce", tos | 3)] if ect else []):
        for p in out_ports:
            f = l3_packet(kind, src, dst, ttl - 1, new_tos, vlan, ip_id,
                          mac_dst=peer_mac(sw_id, p), mac_src=port_mac(sw_id, p), frag=frag)
            w.line(f"{tag} {p} {f.hex()}")
    if reply == "echo":
        w.line(f"reply {in_port} {echo_reply(sw_id, in_port, frame).hex()}")
    elif reply is not None:
        icmp = {"time_exceeded": ICMP(type=11, code=0),
                "port_unreachable": ICMP(type=3, code=3),
                "protocol_unreachable": ICMP(type=3, code=2)}[reply]
        w.line(f"reply {in_port} {icmp_reply(sw_id, in_port, frame, icmp).hex()}")
    w.line("")


def stages_golden():
    w = Writer("Whole frames through parse, route and rewrite (route_test.cc, rewrite_test.cc,"
               " and the ring tests)")
    w.comment(f"k={K} levels={LEVELS}: hosts 10.pod.edge.(slot+2); ports 0,1 down, 2,3 up")
    for name, sw_id in SWITCHES:
        w.line(f"switch {name} k={K} levels={LEVELS} id={sw_id} policy=ecmp")
        for p in range(K):
            w.line(f"port {name} {p} mac={port_mac(sw_id, p)} peer={peer_mac(sw_id, p)}")
    w.line("")
    edge, agg, core = SWITCHES
    roce = "roce_write"
    stage_frame(w, "edge_up_roce_write", "edge0: RDMA WRITE ONLY to 10.3.1.3 (pod 3, edge 1):"
                " up, d = 3*2+1 = 7; ECT(0)", edge, 0, roce, "10.0.0.2", "10.3.1.3", ("up", 7))
    stage_frame(w, "edge_up_roce_ack", "edge0: ACK to 10.1.0.2 (pod 1, edge 0): up, d = 2;"
                " Not-ECT (no CE)", edge, 1, "roce_ack", "10.0.0.3", "10.1.0.2", ("up", 2), tos=0)
    stage_frame(w, "edge_down_roce_send", "edge0: SEND ONLY from an uplink to 10.0.0.3 (slot 1):"
                " down port 1; ECT(1)", edge, 2, "roce_send", "10.2.0.2", "10.0.0.3",
                ("down", 1), tos=0x01)
    stage_frame(w, "edge_down_cnp_dscp", "edge0: CNP to 10.0.0.2 (slot 0): down port 0; DSCP 48"
                " ECT(0), CE keeps the DSCP", edge, 3, "cnp", "10.2.1.2", "10.0.0.2", ("down", 0),
                tos=0xC2)
    stage_frame(w, "edge_up_vlan_roce_write", "edge0: behind an 802.1Q tag (PCP 3, VID 5), to"
                " 10.3.0.2: up, d = 6; the IPv4 header at 18", edge, 0, roce, "10.0.0.2",
                "10.3.0.2", ("up", 6), vlan=0x6005)
    stage_frame(w, "edge_up_icmp_ttl2", "edge0: ICMP echo, TTL 2, padded to 60 bytes, to"
                " 10.2.1.3: up, d = 5; leaves with TTL 1", edge, 1, "icmp_echo", "10.0.0.3",
                "10.2.1.3", ("up", 5), ttl=2, tos=0)
    stage_frame(w, "edge_down_udp_hairpin", "edge0: plain UDP between its own hosts:"
                " down port 1", edge, 0, "udp", "10.0.0.2", "10.0.0.3", ("down", 1))
    stage_frame(w, "edge_up_roce_already_ce", "edge0: already CE: forwarded, marking changes"
                " nothing; 10.1.1.2: d = 3", edge, 0, roce, "10.0.0.2", "10.1.1.2", ("up", 3),
                tos=0x03)
    args = (roce, "10.0.0.2", "10.3.1.3", 64, 0x02)
    stage_frame(w, "edge_up_checksum_zero_before", "edge0: IPv4 checksum 0x0000 on arrival",
                edge, 0, *args[:3], ("up", 7), ip_id=ip_id_for_checksum(False, *args))
    stage_frame(w, "edge_up_checksum_zero_after", "edge0: IPv4 checksum 0x0000 after TTL - 1",
                edge, 0, *args[:3], ("up", 7), ip_id=ip_id_for_checksum(True, *args))
    stage_frame(w, "edge_ttl1_expires", "edge0: TTL 1 to an up destination: not forwarded,"
                " counted; ICMP Time Exceeded from 10.255.0.1 back on port 0", edge, 0, roce,
                "10.0.0.2", "10.3.1.3", ("up", 7), ttl=1, drop="drop_ttl_exceeded",
                reply="time_exceeded")
    stage_frame(w, "agg_ttl1_traceroute", "agg1_0: traceroute's UDP probe with TTL 1 from a core:"
                " Time Exceeded from 10.255.0.11 back to the core", agg, 3, "udp_traceroute",
                "10.3.0.2", "10.1.0.3", ("down", 0), ttl=1, tos=0, drop="drop_ttl_exceeded",
                reply="time_exceeded")
    stage_frame(w, "edge_ttl1_vlan", "edge0: TTL 1 behind an 802.1Q tag: the Time Exceeded keeps"
                " the tag", edge, 1, "icmp_echo", "10.0.0.3", "10.2.1.3", ("up", 5), ttl=1,
                tos=0, vlan=0x6005, drop="drop_ttl_exceeded", reply="time_exceeded")
    stage_frame(w, "edge_ttl1_icmp_error", "edge0: an ICMP error whose TTL expires: dropped,"
                " never answered with another error (RFC 1812 4.3.2.7)", edge, 0, "time_exceeded",
                "10.0.0.2", "10.3.1.3", ("up", 7), ttl=1, tos=0, drop="drop_ttl_exceeded")
    stage_frame(w, "edge_local_gateway_ping", "edge0: ICMP echo to its gateway address 10.0.0.1:"
                " local, answered, nothing forwarded", edge, 0,
                "icmp_echo", "10.0.0.2", "10.0.0.1", ("local",), tos=0, reply="echo")
    stage_frame(w, "edge_local_switch_ping", "edge0: ICMP echo to its own switch address"
                " 10.255.0.1: local, answered", edge, 1, "icmp_echo", "10.0.0.3", "10.255.0.1",
                ("local",), tos=0, reply="echo")
    stage_frame(w, "edge_local_udp_port_unreachable", "edge0: traceroute's last probe, UDP to"
                " 10.0.0.1: no UDP service, port unreachable", edge, 0, "udp_traceroute",
                "10.0.0.2", "10.0.0.1", ("local",), tos=0, reply="port_unreachable")
    stage_frame(w, "core_local_protocol_unreachable", "core0: GRE to its own 10.255.0.17:"
                " protocol unreachable", core, 1, "gre", "10.1.0.2", "10.255.0.17", ("local",),
                tos=0, reply="protocol_unreachable")
    stage_frame(w, "edge_to_core_address", "edge0: ping to core0's address 10.255.0.17: the"
                " first port of a shortest path, uplink 2 (agg0_0 reaches core0)", edge, 0,
                "icmp_echo", "10.0.0.2", "10.255.0.17", ("down", 2), tos=0)
    stage_frame(w, "core_to_edge_address", "core0: to edge 1 of pod 3's address 10.255.0.8:"
                " down port 3 (pod 3)", core, 0, "icmp_echo", "10.0.0.2", "10.255.0.8",
                ("down", 3), tos=0)
    stage_frame(w, "edge_up_udp_first_fragment", "edge0: the first fragment of a UDP datagram"
                " (MF, id 0x77) to 10.3.1.3: forwarded up, d = 7", edge, 0, "udp", "10.0.0.2",
                "10.3.1.3", ("up", 7), tos=0, ip_id=0x77, frag=0x2000)
    stage_frame(w, "edge_up_udp_last_fragment", "edge0: its last fragment (offset 1480, no L4"
                " header): forwarded up, d = 7", edge, 0, "frag_data", "10.0.0.2", "10.3.1.3",
                ("up", 7), tos=0, ip_id=0x77, frag=185)
    stage_frame(w, "agg_down_fragment", "agg1_0: a middle fragment from a core to 10.1.1.3:"
                " down port 1", agg, 2, "frag_data", "10.0.0.2", "10.1.1.3", ("down", 1), tos=0,
                ip_id=0x1234, frag=0x2000 | 370)
    stage_frame(w, "edge_no_route_outside", "edge0: to 11.0.0.2, outside the fabric: no route",
                edge, 0, roce, "10.0.0.2", "11.0.0.2", ("none",), drop="drop_no_route")
    stage_frame(w, "edge_no_route_slot", "edge0: to 10.0.0.4, a slot past the edge's 2 hosts:"
                " no route", edge, 0, roce, "10.0.0.2", "10.0.0.4", ("none",),
                drop="drop_no_route")
    stage_frame(w, "edge_bad_ipv4_checksum", "edge0: IPv4 checksum wrong: dropped by parse",
                edge, 0, roce, "10.0.0.2", "10.3.1.3", None, chksum=0x1234,
                drop="drop_ipv4_checksum")
    stage_frame(w, "agg_down_from_core", "agg1_0 (pod 1): from a core to 10.1.1.3 (edge 1):"
                " down port 1", agg, 2, roce, "10.0.0.2", "10.1.1.3", ("down", 1))
    stage_frame(w, "agg_up_other_pod", "agg1_0: from edge 0 to 10.3.0.2 (pod 3): up, d = 3",
                agg, 0, roce, "10.1.0.2", "10.3.0.2", ("up", 3))
    stage_frame(w, "agg_down_same_pod", "agg1_0: from edge 1 to 10.1.0.3 (edge 0): down port 0",
                agg, 1, "roce_ack", "10.1.1.2", "10.1.0.3", ("down", 0), tos=0)
    stage_frame(w, "core_down", "core0: to 10.2.1.3 (pod 2): down port 2", core, 0, roce,
                "10.0.0.2", "10.2.1.3", ("down", 2))
    stage_frame(w, "core_no_route_pod", "core0: to 10.9.1.3, no pod 9 in k=4: no route", core, 3,
                roce, "10.3.0.2", "10.9.1.3", ("none",), drop="drop_no_route")
    return w.text()


PFC_SRC = "02:00:00:00:0a:03"


def pfc_frame(w, name, what, frame, **attrs):
    w.comment(what)
    w.line(f"frame {name} " + " ".join(f"{k}={v}" for k, v in attrs.items()))
    w.line("in " + frame.hex())
    w.line("")


def pfc_golden():
    w = Writer("PFC (IEEE 802.1Qbb) and PAUSE frames, read for priority 3 (egress/pfc_test.cc)")
    w.comment("strict: a port with PFC on priority 3 only (a vector naming another priority is")
    w.comment("malformed there); lenient: a port without PFC, that only honours what it receives")
    w.line("")
    eth = Ether(dst="01:80:c2:00:00:01", src=PFC_SRC)

    def pfc(**classes):
        return raw(eth / MACControlClassBasedFlowControl(**classes))

    pfc_frame(w, "xoff_p3", "XOFF of priority 3 for the longest pause, as a switch sends it",
              pfc(c3_enabled=1, c3_pause_time=0xFFFF), build=1, src=PFC_SRC, priority=3,
              quanta=65535, strict="ours", lenient="ours")
    pfc_frame(w, "xon_p3", "XON of priority 3 (time 0)", pfc(c3_enabled=1, c3_pause_time=0),
              build=1, src=PFC_SRC, priority=3, quanta=0, strict="ours", lenient="ours")
    pfc_frame(w, "xoff_p5", "XOFF of priority 5, 394 quanta: another class's",
              pfc(c5_enabled=1, c5_pause_time=394), build=1, src=PFC_SRC, priority=5,
              quanta=394, strict="malformed", lenient="notours")
    pfc_frame(w, "xoff_p3_and_p4", "priorities 3 and 4 at once",
              pfc(c3_enabled=1, c3_pause_time=1000, c4_enabled=1, c4_pause_time=7),
              quanta=1000, strict="malformed", lenient="ours")
    pfc_frame(w, "pfc_no_class", "a class-enable vector naming no class",
              pfc(), strict="malformed", lenient="notours")
    pfc_frame(w, "pfc_short", "cut after the class-enable vector",
              pfc(c3_enabled=1, c3_pause_time=5)[:18], strict="malformed", lenient="malformed")
    pfc_frame(w, "pause_8023x", "802.3x PAUSE (opcode 1): every class, ours included",
              raw(eth / MACControlPause(pause_time=300)), quanta=300, strict="ours",
              lenient="ours")
    return w.text()


FIXTURES = {"roce.golden": roce_golden, "stages.golden": stages_golden, "pfc.golden": pfc_golden}


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for name, make in FIXTURES.items():
        path = os.path.join(HERE, name)
        text = make()
        if check:
            with open(path) as f:
                if f.read() != text:
                    stale.append(name)
        else:
            with open(path, "w") as f:
                f.write(text)
    if stale:
        print("stale fixtures (run tests/golden/make_golden.py):", " ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
