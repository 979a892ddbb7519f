#!/usr/bin/python3
"""`uroce collective --spec` with four hosts behind a Linux router.

    uroce_collective_test.py PATH/TO/uroce        (root; exits 77 = skipped otherwise)

Four host namespaces H0..H3 (names carry this test's PID), each with an eth0
(MTU 2200) to its own port of a router namespace R (kernel forwarding, one
/24 per port): like a fat tree's edge switch, the router is every host's
gateway (the spec's gateway_mac is R's port MAC) and ARPs for the hosts,
which uroce answers itself (on AF_XDP the kernel never sees the frames).
One uroce process drives all four hosts through ofan_collective: each
workload (perm, a2a, allgather, reducescatter) must complete and verify, over
AF_XDP and over AF_PACKET. Then with the QPs connected by ofan-rc-1 (the spec's
"exchange", TCP through the hosts' kernels and the router): one process, and
the ranks split over two processes (each one's others "external"). The spec has
the fields emu/fabric/run.py writes.
Namespaces and the uroce process are removed on every exit path.
"""
import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
from checks import SKIP, check, delete_netns, log, run, verdict  # noqa: E402

PID = os.getpid()
N = 4
R = f"ucr{PID}"
HOSTS = [f"uch{i}x{PID}" for i in range(N)]
state: dict[str, Any] = {"proc": None, "procs": [], "cleaned": False}


def cleanup():
    if state["cleaned"]:
        return
    state["cleaned"] = True
    for p in [state["proc"]] + state["procs"]:
        if p and p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    delete_netns([R] + HOSTS)


def on_signal(signum, _frame):
    cleanup()
    sys.exit(128 + signum)


def mac_of(ns, ifname):
    return json.loads(run(["ip", "-n", ns, "-j", "link", "show", ifname]).stdout)[0]["address"]


def setup():
    run(["ip", "netns", "add", R])
    run(["ip", "netns", "exec", R, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
    hosts = []
    for i, ns in enumerate(HOSTS):
        run(["ip", "netns", "add", ns])
        run(["ip", "-n", R, "link", "add", f"p{i}", "type", "veth", "peer", "name", "eth0",
             "netns", ns])
        run(["ip", "-n", R, "link", "set", f"p{i}", "mtu", "2200", "up"])
        run(["ip", "-n", R, "addr", "add", f"10.78.{i}.1/24", "dev", f"p{i}"])
        run(["ip", "-n", ns, "link", "set", "eth0", "mtu", "2200", "up"])
        run(["ip", "-n", ns, "addr", "add", f"10.78.{i}.2/24", "dev", "eth0"])
        run(["ip", "-n", ns, "route", "add", "default", "via", f"10.78.{i}.1"])
        hosts.append({"rank": i, "host": i, "name": f"h{i}", "netns": ns, "ifname": "eth0",
                      "mac": mac_of(ns, "eth0"), "ip": f"10.78.{i}.2",
                      "gateway_mac": mac_of(R, f"p{i}"), "line_rate_gbps": 1.0})
    return hosts


def collective(uroce, hosts, workload, io, tmp):
    spec = {"workload": workload, "msg_bytes": 256 * 1024, "seed": 3, "qps_per_peer": 2,
            "entropy": "qp", "ooo": False, "pace_fraction": 0.8, "mtu": 2048, "deadline_s": 60,
            "io": io, "hosts": hosts}
    path = os.path.join(tmp, f"{workload}-{io}.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    p = subprocess.Popen([uroce, "collective", "--spec", path, "--json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    state["proc"] = p
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    state["proc"] = None
    label = f"{io} {workload}"
    try:
        j = json.loads(out)
    except ValueError:
        check(f"{label}: uroce collective prints JSON", False, f"rc {p.returncode}: {err[-400:]}")
        return
    res, tot = j["result"], j["totals"]
    check(f"{label}: completes and verifies (exit 0)",
          p.returncode == 0 and res.get("verified") and not res.get("error"),
          f"rc {p.returncode} error {res.get('error')!r}")
    check(f"{label}: every host on {io}",
          all(h["io"] == io.replace("afxdp", "af_xdp").replace("afpacket", "af_packet")
              for h in j["hosts"]))
    log(f"  {label}: cct {res.get('cct_us', 0):.0f} us, algbw {res.get('algbw_gbps', 0):.3f} "
        f"Gb/s, bound {res.get('cct_lower_bound_us')}, retransmissions "
        f"{tot['retransmissions']}, NAKs {tot['naks_received']}, timeouts {tot['timeouts']}")
    return j


def exchanged(uroce, hosts, workload, io, tmp, parts):
    """The same collective connected by ofan-rc-1 (spec "exchange"), its
    ranks split over `parts` uroce processes (each one's other ranks are
    "external"): every process must verify its own ranks."""
    per = (len(hosts) + parts - 1) // parts
    procs = []
    for k in range(parts):
        mine = range(k * per, (k + 1) * per)
        spec = {"workload": workload, "msg_bytes": 256 * 1024, "seed": 5, "qps_per_peer": 2,
                "pace_fraction": 0.8, "mtu": 2048, "deadline_s": 60, "io": io,
                "exchange": True, "rc_port": 18600 + PID % 1000,
                "hosts": [dict(h, external=h["rank"] not in mine) for h in hosts]}
        path = os.path.join(tmp, f"x{parts}-{k}-{workload}-{io}.json")
        with open(path, "w") as f:
            json.dump(spec, f)
        procs.append(subprocess.Popen([uroce, "collective", "--spec", path, "--json"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    state["procs"] = procs
    label = f"{io} {workload} exchanged, {parts} process(es)"
    for k, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        try:
            res = json.loads(out)["result"]
        except (ValueError, KeyError):
            check(f"{label}: process {k} prints JSON", False, f"rc {p.returncode}: {err[-400:]}")
            continue
        want = list(range(k * per, min((k + 1) * per, len(hosts))))
        check(f"{label}: process {k} verifies its ranks {want} (exit 0)",
              p.returncode == 0 and res.get("verified") and not res.get("error") and
              res.get("local_ranks") == want,
              f"rc {p.returncode} error {res.get('error')!r} ranks {res.get('local_ranks')}")
    state["procs"] = []


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    uroce = sys.argv[1]
    if os.geteuid() != 0:
        log("SKIP: needs root (network namespaces, AF_XDP)")
        return SKIP
    atexit.register(cleanup)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        hosts = setup()
        with tempfile.TemporaryDirectory(prefix="uroce-coll-") as tmp:
            for io in ("afxdp", "afpacket"):
                for w in ("perm", "a2a", "allgather", "reducescatter"):
                    j = collective(uroce, hosts, w, io, tmp)
                    if io == "afxdp" and w == "perm" and j:
                        # The router learned every host by ARP: uroce answered.
                        check("afxdp: uroce answered the router's ARP requests",
                              all(h["arp_replies"] > 0 for h in j["hosts"]),
                              str([h["arp_replies"] for h in j["hosts"]]))
            exchanged(uroce, hosts, "a2a", "afxdp", tmp, 1)
            for io in ("afxdp", "afpacket"):
                exchanged(uroce, hosts, "allgather", io, tmp, 2)
            # A spec that cannot run is refused with exit 2.
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                json.dump({"workload": "nope", "msg_bytes": 1, "hosts": hosts}, f)
            r = run([uroce, "collective", "--spec", bad], check_rc=False)
            check("a bad spec exits 2 and says why", r.returncode == 2 and "nope" in r.stderr,
                  r.stderr.strip())
            with open(bad, "w") as f:
                json.dump({"workload": "perm", "msg_bytes": 1,
                           "hosts": [dict(hosts[0], external=True)] + hosts[1:]}, f)
            r = run([uroce, "collective", "--spec", bad], check_rc=False)
            check("an external rank without exchange exits 2 and says why",
                  r.returncode == 2 and "exchange" in r.stderr, r.stderr.strip())
    except Exception as e:
        check("setup and runs", False, str(e))
    finally:
        cleanup()
    return verdict("collective")


if __name__ == "__main__":
    sys.exit(main())
