#!/usr/bin/python3
"""The frames uroce builds, judged by independent implementations.

    uroce_wire_test.py PATH/TO/uroce        (/usr/bin/python3: scapy; tshark)

`uroce loopback --pcap` runs two hosts in one process over the in-process
wire (every RC opcode uroce sends, a dropped packet and so a NAK, CE-marked
packets and so a CNP) and writes both directions' frames. scapy's RoCE layer
recomputes every ICRC and IPv4 checksum; tshark's InfiniBand dissector
(-d udp.port==4791,infiniband) reads the opcodes and the BTH / RETH / AETH /
ImmDt fields, which are compared with what the scenario must produce.
Exit 0 pass, 1 fail (no root needed; nothing to clean up but a temp dir).
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
from checks import check, failures  # noqa: E402


# The scenario of `uroce loopback` (emu/uroce/main.cc, RunLoopback).
SIZES = [5001, 4097, 10, 3, 6000, 100, 7, 3000, 40 * 1024]
WRITE_SIZES = [5001, 4097, 10, 3, 40 * 1024]
VA0, RKEY, START_PSN, ACK_EVERY = 0x7F0000001000, 0x1234, 0xFFFFF8, 16
DATA_OPS = set(range(0x00, 0x0C))
LAST_OPS = {0x02, 0x03, 0x04, 0x05, 0x08, 0x09, 0x0A, 0x0B}
RETH_OPS = {0x06, 0x0A, 0x0B}
IMM_OPS = {0x03, 0x05, 0x09, 0x0B}
# Heuristic dissectors of InfiniBand payloads that would read our pattern
# bytes as their own protocols (RPC-over-RDMA calls a 7-byte SEND malformed).
HEURISTICS = ["smc", "smb_direct", "rpcordma", "nvme-rdma", "lnet", "iser", "eoib",
              "infiniband_sdp", "fcoib"]


def tshark(pcap, fields):
    cmd = ["tshark", "-n", "-r", pcap, "-d", "udp.port==4791,infiniband", "-T", "fields",
           "-E", "occurrence=f"]
    for h in HEURISTICS:
        cmd += ["--disable-protocol", h]
    for f in fields:
        cmd += ["-e", f]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"tshark failed: {r.stderr}")
    return [dict(zip(fields, line.split("\t"))) for line in r.stdout.splitlines()]


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    uroce = sys.argv[1]
    from scapy.all import IP, UDP, Ether, raw, rdpcap
    from scapy.contrib.roce import BTH

    with tempfile.TemporaryDirectory(prefix="uroce-wire-") as tmp:
        pcap = os.path.join(tmp, "loopback.pcap")
        r = subprocess.run([uroce, "loopback", "--pcap", pcap], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        if not check("uroce loopback runs clean", r.returncode == 0, r.stdout + r.stderr):
            return 1
        frames = [raw(p) for p in rdpcap(pcap)]
        check("frames captured", len(frames) > 40, f"{len(frames)} frames")

        # scapy: ICRC, IPv4 checksum, UDP and IP fields of every frame.
        bad_icrc, bad_csum, bad_hdr, ecn_data, ecn_cnp, dscp = [], [], [], set(), set(), set()
        for i, f in enumerate(frames, 1):
            q = Ether(f)
            if BTH not in q:
                bad_hdr.append(i)
                continue
            wire = f[-4:]
            q2 = Ether(f)
            q2[BTH].icrc = None  # recomputed by scapy's post_build
            if raw(q2)[-4:] != wire:
                bad_icrc.append(i)
            q3 = Ether(f)
            del q3[IP].chksum
            if Ether(raw(q3))[IP].chksum != q[IP].chksum:
                bad_csum.append(i)
            u = q[UDP]
            if (u.dport != 4791 or u.chksum != 0 or not 0xC000 <= u.sport <= 0xFFFF or
                    q[IP].ttl != 64 or "DF" not in str(q[IP].flags)):
                bad_hdr.append(i)
            op = q[BTH].opcode
            dscp.add(q[IP].tos >> 2)
            if op in DATA_OPS:
                ecn_data.add(q[IP].tos & 3)
            elif op == 0x81:
                ecn_cnp.add(q[IP].tos & 3)
                if not check("CNP: BECN set, 16 reserved bytes", q[BTH].becn == 1 and
                             len(f) == 14 + 20 + 8 + 12 + 16 + 4, f"frame {i}"):
                    pass
        check("scapy recomputes every ICRC", not bad_icrc, f"frames {bad_icrc[:10]}")
        check("IPv4 checksums right", not bad_csum, f"frames {bad_csum[:10]}")
        check("UDP 4791, checksum 0, sport 0xC000.., TTL 64, DF", not bad_hdr,
              f"frames {bad_hdr[:10]}")
        check("data is ECT(0) (CE where the scenario marked it)", ecn_data == {2, 3},
              f"{sorted(ecn_data)}")
        check("DSCP 26 (the default) on every frame", dscp == {26}, f"{sorted(dscp)}")
        check("one CNP, not ECN-capable", ecn_cnp == {0}, f"{sorted(ecn_cnp)}")

        # tshark: the transport fields.
        fields = ["frame.number", "ip.src", "ip.len", "infiniband.bth.opcode",
                  "infiniband.bth.psn", "infiniband.bth.a", "infiniband.bth.padcnt",
                  "infiniband.bth.destqp", "infiniband.aeth.syndrome", "infiniband.aeth.msn",
                  "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
                  "infiniband.immdt", "_ws.malformed"]
        rows = tshark(pcap, fields)
        check("tshark dissects every frame as InfiniBand",
              len(rows) == len(frames) and all(x["infiniband.bth.opcode"] for x in rows))
        malformed = [x["frame.number"] for x in rows if x["_ws.malformed"]]
        check("no malformed frame", not malformed, f"frames {malformed[:10]}")
        ops = {int(x["infiniband.bth.opcode"]) for x in rows}
        want = DATA_OPS | {0x11, 0x81}
        check("every RC opcode uroce sends appears", want <= ops, f"missing {sorted(want - ops)}")
        data = [x for x in rows if int(x["infiniband.bth.opcode"]) in DATA_OPS]
        # Payload + pad is a multiple of 4; every pad count appears.
        pads = set()
        bad_pad = []
        for x in data:
            op, pad = int(x["infiniband.bth.opcode"]), int(x["infiniband.bth.padcnt"])
            ext = (16 if op in RETH_OPS else 0) + (4 if op in IMM_OPS else 0)
            body = int(x["ip.len"]) - 20 - 8 - 12 - ext - 4
            pads.add(pad)
            if body % 4 or (pad and op not in LAST_OPS):
                bad_pad.append(x["frame.number"])
        check("pad counts fill to 4 bytes, only on last packets",
              not bad_pad and pads == {0, 1, 2, 3},
              f"pads {sorted(pads)} bad {bad_pad[:5]}")
        # AckReq on every last packet and at least every ACK_EVERY packets.
        run, worst, missing = 0, 0, []
        for x in data:
            a = x["infiniband.bth.a"] in ("1", "True")
            run = 0 if a else run + 1
            worst = max(worst, run)
            if int(x["infiniband.bth.opcode"]) in LAST_OPS and not a:
                missing.append(x["frame.number"])
        check("AckReq on every last/only packet", not missing, f"frames {missing[:5]}")
        check(f"AckReq at least every {ACK_EVERY} packets", worst < ACK_EVERY,
              f"longest run {worst}")
        # PSNs: the first pass is consecutive from START_PSN through the wrap.
        seen, first_pass = set(), []
        for x in data:
            p = int(x["infiniband.bth.psn"])
            if p not in seen:
                seen.add(p)
                first_pass.append(p)
        expect = [(START_PSN + i) & 0xFFFFFF for i in range(len(first_pass))]
        check("PSNs consecutive modulo 2^24", first_pass == expect, f"{first_pass[:12]}")
        # RETH: base, rkey and length of every WRITE.
        reths = [(int(x["infiniband.reth.va"], 0), int(x["infiniband.reth.r_key"], 0),
                  int(x["infiniband.reth.dmalen"])) for x in data
                 if int(x["infiniband.bth.opcode"]) in RETH_OPS]
        offs, want_reth = 0, []
        for s in SIZES:
            if s in WRITE_SIZES:
                want_reth.append((VA0 + offs, RKEY, s))
            offs += s
        check("RETH va / rkey / length of each WRITE", sorted(set(reths)) == sorted(want_reth),
              f"{reths}")
        imms = {x["infiniband.immdt"].lower() for x in data
                if int(x["infiniband.bth.opcode"]) in IMM_OPS}
        check("ImmDt of each *_WITH_IMMEDIATE", imms == {"0xc0de0001", "0xc0de0003", "0xc0de0006",
                                                         "0xc0de0008"} or
              imms == {"c0de0001", "c0de0003", "c0de0006", "c0de0008"}, f"{sorted(imms)}")
        # ACKs and the NAK (AETH syndromes as rxe sends them).
        acks = [x for x in rows if int(x["infiniband.bth.opcode"]) == 0x11]
        syn = [int(x["infiniband.aeth.syndrome"], 0) for x in acks]
        check("ACK syndrome 0x1f, exactly one NAK 0x60", set(syn) == {0x1F, 0x60} and
              syn.count(0x60) == 1, f"{sorted(set(syn))} x{syn.count(0x60)}")
        nak = next(x for x in acks if int(x["infiniband.aeth.syndrome"], 0) == 0x60)
        nak_psn = int(nak["infiniband.bth.psn"])
        # The pcap has what A sent, the lost copy included: once before the
        # NAK, and again (go-back-N from that PSN) after it.
        at = [int(x["frame.number"]) for x in data if int(x["infiniband.bth.psn"]) == nak_psn]
        n_at = int(nak["frame.number"])
        check("the NAK names the lost PSN, which is then resent",
              len(at) == 2 and at[0] < n_at < at[1], f"psn {nak_psn} in frames {at}, NAK {n_at}")
        msns = [int(x["infiniband.aeth.msn"]) for x in acks]
        check("MSN never goes back", msns == sorted(msns) and msns[-1] == len(SIZES), f"{msns}")
        qps = {x["infiniband.bth.destqp"] for x in rows}
        check("destination QPs are the two ends'", qps <= {"0x000022", "0x000011", "0x22", "0x11"},
              f"{qps}")
    print(f"{len(failures)} failure(s)" if failures else "all wire checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
