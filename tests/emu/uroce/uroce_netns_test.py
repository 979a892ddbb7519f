#!/usr/bin/python3
"""uroce `pair` between two network namespaces, over AF_XDP and AF_PACKET,
clean and under tc netem loss and reordering.

    uroce_netns_test.py PATH/TO/uroce        (root; exits 77 = skipped otherwise)

Topology (names carry this test's PID): host namespaces A and B, each with an
eth0 (MTU 2200: RoCE MTU 2048 fits) joined through a third namespace R that
bridges the other ends, pa and pb. The impairments are netem qdiscs on pa and
pb, in R, because AF_XDP's copy mode transmits past the sender's own qdisc
(__dev_direct_xmit): netem on A's or B's eth0 would never see uroce's frames.
Where this kernel has no netem (CONFIG_NET_SCH_NETEM unset, as on the
machines this was written on), the whole test runs again inside a VM with
Debian's kernel and the host's own root and binaries (`ofan-emu vm run`,
emu/vm/); where VMs cannot run either, it skips and says why.

For each packet I/O: a clean run (no NAK, nothing out of sequence), loss 2%
(retransmissions must be > 0), delay 1ms reorder 25% 50%, and
out-of-order-placement runs under that reordering and under loss; every
message must complete with its data intact (uroce pair checks every byte and
says so in its JSON). Namespaces (and so the veths) and uroce are removed on
every exit path: finally, atexit, SIGINT/SIGTERM.

Skips (77) only when not root, when neither this kernel nor a VM has netem,
or when AF_XDP cannot bind at all (then the AF_PACKET runs still have to
pass first, and the reason is printed).
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
from checks import (SKIP, Cleanup, bridge_hosts, check, failures, has_netem, last_json,  # noqa
                    log, rerun_in_vm, run)

PID = os.getpid()
NS = {"a": f"ura{PID}", "b": f"urb{PID}", "r": f"urr{PID}"}
IP = {"a": "10.77.0.2", "b": "10.77.0.3"}
PORTS = ["p0", "p1"]  # R's ends of A's and B's eth0 (checks.bridge_hosts)
cleanup = None


def setup():
    for ns in NS.values():
        run(["ip", "netns", "add", ns])
    bridge_hosts(NS["r"], {NS[h]: f"{IP[h]}/24" for h in ("a", "b")})


def impair(rule):
    """rule: None, ("loss", p) or ("reorder", delay_s, p_now): netem on both
    of R's ports, so each direction is impaired once."""
    for port in PORTS:
        run(["tc", "-n", NS["r"], "qdisc", "del", "dev", port, "root"], check_rc=False)
        if rule and rule[0] == "loss":
            args = ["loss", f"{rule[1] * 100:g}%"]
        elif rule:
            args = ["delay", f"{rule[1] * 1000:g}ms", "reorder", f"{rule[2] * 100:g}%", "50%"]
        if rule:
            run(["tc", "-n", NS["r"], "qdisc", "add", "dev", port, "root", "netem", *args])


def pair(uroce, io, extra, timeout_s=90):
    cmd = [uroce, "pair", "--a-netns", NS["a"], "--b-netns", NS["b"], "--io", io, "--json",
           "--timeout-s", str(timeout_s - 20), *extra]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cleanup.procs = [p]
    try:
        out, err = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    cleanup.procs = []
    return p.returncode, last_json(out), err


def icmp_unreachables(ns):
    """Icmp OutDestUnreachs of a namespace (/proc/net/snmp there)."""
    lines = [x.split() for x in run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"]).stdout
             .splitlines() if x.startswith("Icmp:")]
    return int(dict(zip(lines[0], lines[1]))["OutDestUnreachs"])


def totals(j, key):
    return sum(q[key] for side in ("a", "b") for q in j[side]["qps"])


def scenario(uroce, io, name, rule, extra, want_retransmits=False, want_clean=False,
             want_ooo=False):
    impair(rule)
    rc, j, err = pair(uroce, io, extra)
    label = f"{io} {name}"
    if not check(f"{label}: uroce pair exits 0", rc == 0 and j is not None,
                 f"rc {rc} {err.strip()[-300:]} {j and j.get('error')}"):
        return
    check(f"{label}: every message acknowledged and arrived, data intact",
          j["ok"] and j["acknowledged"] == j["messages"] == j["arrived"] and j["bad"] == 0,
          f"{j['acknowledged']}/{j['arrived']}/{j['messages']} bad {j['bad']}")
    check(f"{label}: ran on {io}", j["a"]["io"] == io.replace("afxdp", "af_xdp")
          .replace("afpacket", "af_packet"), j["a"]["io"])
    rtx, naks, dups = totals(j, "retransmits"), totals(j, "naks_tx"), totals(j, "duplicates")
    detail = (f"retransmits {rtx}, NAKs {naks}, timeouts {totals(j, 'timeouts')}, "
              f"out of sequence {totals(j, 'out_of_sequence')}, duplicates {dups}, "
              f"{j['seconds']:.2f} s")
    if want_retransmits:
        check(f"{label}: retransmissions under loss", rtx > 0, detail)
    elif want_clean:
        # Retransmissions may still come from timeouts when the machine's
        # cores are busy (the process is not run for longer than the RTO);
        # a NAK or a packet out of sequence may not.
        check(f"{label}: no NAK, nothing out of sequence on a clean link",
              naks == 0 and totals(j, "out_of_sequence") == 0, detail)
    elif want_ooo:
        # Reordered, placed where they belong: no NAK (a gap is not an error
        # in this mode), and the reordering did happen.
        check(f"{label}: reordered packets placed without NAKs",
              naks == 0 and totals(j, "out_of_sequence") > 0, detail)
    else:
        log(f"  {label}: {detail}")
    check(f"{label}: no bad ICRC", j["a"]["bad_icrc"] == 0 and j["b"]["bad_icrc"] == 0)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    uroce = sys.argv[1]
    if os.geteuid() != 0:
        log("SKIP: needs root (network namespaces, AF_XDP)")
        return SKIP
    if not has_netem():
        return rerun_in_vm("this kernel has no netem qdisc",
                           [os.path.abspath(__file__), os.path.abspath(uroce)])
    global cleanup
    cleanup = Cleanup(NS.values())
    xdp_why = None
    try:
        setup()
        impair(None)
        # Does AF_XDP bind here at all? (A tiny run; its error names the cause.)
        rc, j, err = pair(uroce, "afxdp", ["-m", "1", "-s", "64"], timeout_s=40)
        if rc != 0 and "xsk_socket__create" in err + str(j and j.get("error")):
            xdp_why = (err.strip() or str(j.get("error")))[-300:]
        ios = ["afpacket"] + ([] if xdp_why else ["afxdp"])
        base = ["-m", "40", "-s", "256KiB", "--window", "8", "--qps", "2", "--rto-us", "50000"]
        reorder = ("reorder", 0.001, 0.25)
        for io in ios:
            scenario(uroce, io, "clean", None, base, want_clean=True)
            scenario(uroce, io, "SEND on 3 QPs, clean", None,
                     ["-m", "30", "-s", "100000", "--op", "send", "--qps", "3",
                      "--rto-us", "50000"],
                     want_clean=True)
            scenario(uroce, io, "loss 2%", ("loss", 0.02), base, want_retransmits=True)
            scenario(uroce, io, "delay 1ms reorder 25% 50%", reorder, base)
            scenario(uroce, io, "ooo placement under reordering", reorder,
                     ["-m", "40", "-s", "64KiB", "--window", "4", "--ooo", "--rto-us", "50000"],
                     want_ooo=True)
            scenario(uroce, io, "ooo placement under loss 2%", ("loss", 0.02),
                     ["-m", "40", "-s", "64KiB", "--window", "4", "--ooo", "--rto-us", "20000"],
                     want_retransmits=True)
            if io == "afpacket":
                # The kernel sees AF_PACKET's RoCE datagrams too; uroce's
                # socket bound to 4791 keeps it from answering each with an
                # ICMP port unreachable.
                n = [icmp_unreachables(NS[h]) for h in ("a", "b")]
                check("afpacket: the hosts' kernels sent no ICMP unreachable", n == [0, 0], str(n))
    except Exception as e:  # a failed setup step is a failure, after cleanup
        check("setup and runs", False, str(e))
    finally:
        cleanup()
    if failures:
        log(f"{len(failures)} failure(s): {failures}")
        return 1
    if xdp_why:
        log(f"SKIP: AF_PACKET runs passed, but AF_XDP cannot bind here: {xdp_why}")
        return SKIP
    log("all netns checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
