#!/usr/bin/python3
"""uroce `pair` between two network namespaces, over AF_XDP and AF_PACKET.

    uroce_netns_test.py PATH/TO/uroce        (root; exits 77 = skipped otherwise)

Topology (names carry this test's PID): host namespaces A and B, each with an
eth0 (MTU 2200: RoCE MTU 2048 fits) joined through a third namespace R that
holds the other ends, pa and pb. The impairments sit in R, because AF_XDP's
copy mode transmits past the sender's own qdisc (__dev_direct_xmit): netem on
A's or B's eth0 would never see uroce's frames. Where the kernel has netem,
R bridges pa and pb and `tc qdisc ... netem` is on both; where it has not
(CONFIG_NET_SCH_NETEM unset, as on the machine this was written on), this
script relays between pa and pb itself (--relay, AF_PACKET in R) applying
the same rules from a seeded RNG: loss p, or "delay D reorder r%" (a frame
goes at once with probability r, else after D; netem's correlation is not
modelled). For each packet I/O: a clean run (no NAK, nothing out of
sequence), loss 2% (retransmissions must be > 0), delay 1ms reorder 25% 50%,
and out-of-order-placement runs under that reordering and under loss; every message must
complete with its data intact (uroce pair checks every byte and says so in
its JSON). Namespaces (and so the veths), the relay and uroce are removed on
every exit path: finally, atexit, SIGINT/SIGTERM.

Skips (77) only when not root, or when AF_XDP cannot bind at all here (then
the AF_PACKET runs still have to pass first, and the reason is printed).
"""
import atexit
import heapq
import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
from checks import SKIP, check, delete_netns, failures, log, run  # noqa: E402

PID = os.getpid()
PID_SEED = 4791  # the relay's RNG: a run's impairments are a function of it
NS = {"a": f"ura{PID}", "b": f"urb{PID}", "r": f"urr{PID}"}
IP = {"a": "10.77.0.2", "b": "10.77.0.3"}
state = {"proc": None, "relay": None, "backend": None, "cleaned": False}


def cleanup():
    if state["cleaned"]:
        return
    state["cleaned"] = True
    for key in ("proc", "relay"):
        p = state[key]
        if p and p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    delete_netns(list(NS.values()))


def on_signal(signum, _frame):
    cleanup()
    sys.exit(128 + signum)


def setup():
    for ns in NS.values():
        run(["ip", "netns", "add", ns])
    r = NS["r"]
    for h in ("a", "b"):
        # Created in R (no name clash with the root namespace), one end moved.
        run(["ip", "-n", r, "link", "add", f"p{h}", "type", "veth", "peer", "name", "eth0",
             "netns", NS[h]])
        run(["ip", "-n", r, "link", "set", f"p{h}", "mtu", "2200", "up"])
        run(["ip", "-n", NS[h], "link", "set", "eth0", "mtu", "2200", "up"])
        run(["ip", "-n", NS[h], "addr", "add", f"{IP[h]}/24", "dev", "eth0"])
    probe = run(["tc", "-n", r, "qdisc", "add", "dev", "pa", "root", "netem", "delay", "1ms"],
                check_rc=False)
    if probe.returncode == 0:
        state["backend"] = "netem"
        run(["tc", "-n", r, "qdisc", "del", "dev", "pa", "root"])
        run(["ip", "-n", r, "link", "add", "br0", "type", "bridge"])
        for h in ("a", "b"):
            run(["ip", "-n", r, "link", "set", f"p{h}", "master", "br0"])
        run(["ip", "-n", r, "link", "set", "br0", "up"])
    else:
        state["backend"] = "relay"
        log(f"note: no netem here ({probe.stderr.strip()}): R relays with the same rules")


def impair(rule):
    """rule: None, ("loss", p) or ("reorder", delay_s, p_now)."""
    if state["backend"] == "netem":
        for h in ("a", "b"):
            run(["tc", "-n", NS["r"], "qdisc", "del", "dev", f"p{h}", "root"], check_rc=False)
            if rule and rule[0] == "loss":
                args = ["loss", f"{rule[1] * 100:g}%"]
            elif rule:
                args = ["delay", f"{rule[1] * 1000:g}ms", "reorder", f"{rule[2] * 100:g}%", "50%"]
            if rule:
                run(["tc", "-n", NS["r"], "qdisc", "add", "dev", f"p{h}", "root", "netem", *args])
        return
    stop_relay()
    args = ["none"] if not rule else [str(x) for x in rule]
    state["relay"] = subprocess.Popen(["ip", "netns", "exec", NS["r"], sys.executable,
                                       os.path.abspath(__file__), "--relay", *args])
    time.sleep(0.3)  # its sockets are bound before traffic starts


def stop_relay():
    p = state["relay"]
    if p and p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)
    state["relay"] = None


def relay(args):
    """Runs in R: forwards pa <-> pb, impaired by args (see impair()), until killed."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    rng = random.Random(PID_SEED)
    socks = {}
    for name in ("pa", "pb"):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind((name, 0))
        s.setblocking(False)
        socks[name] = s
    other = {"pa": socks["pb"], "pb": socks["pa"]}
    by_fd = {s.fileno(): n for n, s in socks.items()}
    heap, seq = [], 0
    while True:
        timeout = max(0.0, heap[0][0] - time.monotonic()) if heap else 1.0
        ready, _, _ = select.select(list(socks.values()), [], [], timeout)
        for s in ready:
            name = by_fd[s.fileno()]
            for _ in range(256):
                try:
                    data, addr = s.recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] == socket.PACKET_OUTGOING:
                    continue  # what this relay sent
                if args[0] == "loss" and rng.random() < float(args[1]):
                    continue
                if args[0] == "reorder" and rng.random() >= float(args[2]):
                    seq += 1
                    heapq.heappush(heap, (time.monotonic() + float(args[1]), seq, name, data))
                    continue
                other[name].send(data)
        now = time.monotonic()
        while heap and heap[0][0] <= now:
            _, _, name, data = heapq.heappop(heap)
            other[name].send(data)


def pair(uroce, io, extra, timeout_s=90):
    cmd = [uroce, "pair", "--a-netns", NS["a"], "--b-netns", NS["b"], "--io", io, "--json",
           "--timeout-s", str(timeout_s - 20), *extra]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    state["proc"] = p
    try:
        out, err = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    state["proc"] = None
    try:
        j = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
    except (json.JSONDecodeError, IndexError):
        j = None
    return p.returncode, j, err


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
    label = f"{io} {name} ({state['backend']})"
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
    if sys.argv[1] == "--relay":
        return relay(sys.argv[2:])
    uroce = sys.argv[1]
    if os.geteuid() != 0:
        log("SKIP: needs root (network namespaces, AF_XDP)")
        return SKIP
    atexit.register(cleanup)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
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
                     ["-m", "30", "-s", "100000", "--op", "send", "--qps", "3", "--rto-us", "50000"],
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
