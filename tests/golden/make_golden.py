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

Run it from anywhere: /usr/bin/python3 tests/golden/make_golden.py [--check]
(--check writes nothing and fails if a committed file differs from what it
would write: the 'golden-fixtures' meson test).
"""
import os
import struct
import sys

from scapy.compat import raw
from scapy.contrib.roce import AETH, BTH, CNPPadding, opcode
from scapy.layers.inet import IP, UDP, IPOption_NOP, IPOption_EOL
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
        self.lines = [f"# {title}", "# Made by tests/golden/make_golden.py (scapy); do not edit by hand.", ""]

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


FIXTURES = {"roce.golden": roce_golden}


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
