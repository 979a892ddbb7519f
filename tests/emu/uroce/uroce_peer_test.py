#!/usr/bin/python3
"""Two `uroce peer` processes run ofan-rc-1's pair check (docs/rc-exchange.md)
against each other, each driving a host in its own network namespace.

    uroce_peer_test.py PATH/TO/uroce        (root; exits 77 = skipped otherwise)

Topology (names carry this test's PID): host namespaces A (10.79.0.2) and B
(10.79.0.3), each with an eth0 (MTU 2200: RoCE MTU 2048) bridged in a third
namespace R. No static neighbour entries: the exchange's TCP resolves them
through the hosts' kernels, and uroce reads the next hop from the table, so
on AF_XDP the kernel must still get its ARP and TCP (uroce's XDP program
passes all but RoCEv2).

For AF_XDP and AF_PACKET: WRITE WITH IMMEDIATE and SEND, both directions at
once on several QPs, every byte checked by both sides, the peer's done
agreeing; one one-way run (A tx, B rx); a QP-count mismatch that both sides
refuse naming the counts. Clean links: no NAK, nothing out of sequence.
After each AF_XDP run the XDP program is gone from the interface.
Namespaces and processes are removed on every exit path.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
from checks import SKIP, Cleanup, bridge_hosts, check, last_json, log, run, verdict  # noqa: E402

PID = os.getpid()
NS = {"a": f"upa{PID}", "b": f"upb{PID}", "r": f"upr{PID}"}
IP = {"a": "10.79.0.2", "b": "10.79.0.3"}
cleanup = None


def setup():
    for ns in NS.values():
        run(["ip", "netns", "add", ns])
    bridge_hosts(NS["r"], {NS[h]: f"{IP[h]}/24" for h in ("a", "b")})


def peers(uroce, io, args_a, args_b, timeout_s=60):
    """A listens, B connects; returns [(rc, json, stderr)] for A and B."""
    base = [uroce, "peer", "--io", io, "--json", "--timeout-s", str(timeout_s - 20)]
    cmds = [base + ["--netns", NS["a"], "--listen"] + args_a,
            base + ["--netns", NS["b"], "--connect", IP["a"]] + args_b]
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in cmds]
    cleanup.procs = procs
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
        out.append((p.returncode, last_json(o), e))
    cleanup.procs = []
    return out


def totals(j, key):
    return j["totals"][key]


def scenario(uroce, io, name, args, args_b=None, count=60, one_way=False):
    label = f"{io} {name}"
    res = peers(uroce, io, args, args_b or args)
    ok = True
    for side, (rc, j, err) in zip("AB", res):
        ok &= check(f"{label}: {side} exits 0", rc == 0 and j is not None and j["ok"],
                    f"rc {rc} {err.strip()[-300:]} {j and j.get('error')}")
    if not ok:
        return
    (_, ja, _), (_, jb, _) = res
    want_a = (count, 0 if one_way else count)  # (sent, received) by A
    want_b = (0 if one_way else count, count)
    for side, j, (sent, received) in (("A", ja, want_a), ("B", jb, want_b)):
        check(f"{label}: {side} sent {sent} acknowledged, received {received} intact",
              j["sent"] == sent and j["received"] == received and j["bad"] == 0 and
              j["peer_done"] == {"received": sent, "bad": 0},
              f"sent {j['sent']} received {j['received']} bad {j['bad']} "
              f"peer_done {j.get('peer_done')} {j['bad_notes']}")
        check(f"{label}: {side} ran on {io}", j["counters"]["io"] == io.replace("af", "af_"),
              j["counters"]["io"])
        detail = (f"retransmits {totals(j, 'retransmits')}, timeouts {totals(j, 'timeouts')}, "
                  f"{j['seconds']:.3f} s, {j['gbps']:.3f} Gb/s, mtu {j['mtu']}")
        check(f"{label}: {side} no NAK, nothing out of sequence on a clean link",
              totals(j, "naks_tx") == 0 and totals(j, "out_of_sequence") == 0, detail)
        check(f"{label}: {side} no bad ICRC", j["counters"]["bad_icrc"] == 0)
    if io == "afxdp":
        links = run(["ip", "-n", NS["a"], "-d", "link", "show", "eth0"]).stdout
        left = [w for w in links.split() if "xdp" in w]
        check(f"{label}: the XDP program is gone after the run", not left, " ".join(left))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    uroce = sys.argv[1]
    if os.geteuid() != 0:
        log("SKIP: needs root (network namespaces, AF_XDP)")
        return SKIP
    global cleanup
    cleanup = Cleanup(NS.values())
    try:
        setup()
        for io in ("afxdp", "afpacket"):
            scenario(uroce, io, "WRITE both ways on 2 QPs",
                     ["--op", "write", "--count", "60", "--size", "64KiB", "--qps", "2"])
            scenario(uroce, io, "SEND both ways on 3 QPs",
                     ["--op", "send", "--count", "60", "--size", "100000", "--qps", "3",
                      "--psn", "16777200"])  # PSNs wrap at 2^24 within the run
        scenario(uroce, "afxdp", "WRITE A to B only",
                 ["--op", "write", "--count", "60", "--size", "5000", "--direction", "tx"],
                 ["--op", "write", "--count", "60", "--size", "5000", "--direction", "rx"],
                 one_way=True)
        res = peers(uroce, "afxdp", ["--qps", "2"], ["--qps", "3"], timeout_s=30)
        check("another --qps on each side: both exit 1 naming the counts",
              [r[0] for r in res] == [1, 1] and all("lists" in r[2] and "QPs" in r[2]
                                                    for r in res),
              " | ".join(r[2].strip()[-160:] for r in res))
    except Exception as e:  # a failed setup step is a failure, after cleanup
        check("setup and runs", False, str(e))
    finally:
        cleanup()
    return verdict("uroce peer")


if __name__ == "__main__":
    sys.exit(main())
