#!/usr/bin/python3
"""ofan-emu end to end: fabrics of ofan-dp switches and of Linux routers.

    fabric_test.py [--quick]      (root; Debian's /usr/bin/python3)
    fabric_test.py --shared       only the shared engine's fabric and the crash
    fabric_test.py --netem        only the link with tc netem latency (skips, 77,
                                  on a kernel without the netem qdisc)

Checks, for a k=4 leaf-spine and a k=4 3-level fat tree of ofan-dp switches,
and for a k=4 fat tree of kernel routers (--switch kernel): the fabric comes
up; every host reaches every other (all-pairs ping through the switches);
fail of an edge-agg link, of an agg-core link and of a whole switch keeps
every pair reachable over the remaining paths, and the switches' tables
stop using the failed link; restore brings it back into the tables; status
--json lists what is up; a switch killed with SIGKILL shows as dead; down
leaves no namespace, process, EAL file or state behind. On the 3-level
ofan-dp fabric, traceroute (UDP and ICMP) lists the five switches of the
path under Ofan and ECMP, ping -s 5000 (fragments) and a ping to a core's
address get their replies, a permutation is verified, and failing a link
and a switch under traffic keeps it verified (what the failure cost
reported). The 3-level ofan-dp fabric runs on both engines, per-switch and
shared (--engine shared: status says so, every switch is the one process;
its SIGKILL shows every switch dead). Then `ofan-emu up` killed with SIGKILL
half-way, and `down --all`: nothing left of it, nor of the shared engine's
fabric whose process was killed.

Exit: 0 pass, 1 fail, 77 skip (not root, or no AF_XDP / hugepages).
"""
import atexit
import functools
import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import (  # noqa: E402
    EMU, SKIP, check, emu as checks_emu, failures, has_shared_engine, log, rerun_in_vm)
from leftovers import leftovers  # noqa: E402
from run_test import all_verified, fail_under_traffic, run_json  # noqa: E402
BUILD = Path(os.environ.get("OFAN_BUILD_DIR", REPO / "build"))
PID = os.getpid()
NAMES = [f"fa{PID}", f"fb{PID}", f"fk{PID}", f"fx{PID}", f"fn{PID}", f"fs{PID}"]


# ofan-emu ARGS (checks.emu) with this test's timeout and exit codes.
emu = functools.partial(checks_emu, timeout=180, ok_codes=(0,))


def emu_json(*args, **kw):
    p = emu(*args, "--json", **kw)
    try:
        return p.returncode, json.loads(p.stdout) if p.stdout.strip() else None
    except ValueError:
        return p.returncode, None


def clean_everything():
    for n in NAMES:
        subprocess.run([EMU, "down", "--name", n], capture_output=True, timeout=120)


def all_pairs(name, what, expect_pairs):
    rc, r = emu_json("ping", "--name", name)
    check(f"{what}: all {expect_pairs} host pairs reach each other",
          rc == 0 and r and r["pairs"] == expect_pairs and r["ok"] == expect_pairs,
          f"rc={rc} {r and {'ok': r['ok'], 'failed': r['failed'][:8]}}")


def pointers(name, sw):
    p = subprocess.run([str(BUILD / "control/ofanctl/ofanctl"), "--socket",
                        f"/run/ofan-emu/{name}/sock/{sw}.sock", "--json", "pointers"],
                       capture_output=True, text=True, timeout=20)
    return json.loads(p.stdout) if p.returncode == 0 else None


def uses_uplink(ptr, uplink):
    """Does any data key of the table order include this uplink index?"""
    return any(uplink in k.get("order", []) for k in ptr["keys"])


def down_and_check(name, what):
    rc, _ = emu_json("down", "--name", name)
    left = leftovers(name)
    check(f"{what}: down leaves nothing behind", rc == 0 and not any(left.values()), str(left))


def traceroute_hops(name, src, dst, icmp):
    """traceroute's hops from host src to address dst: [{addresses}], one set
    per TTL; '*' answers are left out."""
    cmd = ["ip", "netns", "exec", f"ofe-{name}-{src}", "traceroute", "-n", "-q", "3", "-w", "2",
           "-m", "8"] + (["-I"] if icmp else []) + [dst]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    hops = []
    for line in r.stdout.splitlines()[1:]:
        words = line.split()
        if words and words[0].isdigit():
            hops.append({w for w in words[1:] if w.count(".") == 3 and w[0].isdigit()})
    return hops, r.stdout.strip()


def router_tools(name, what):
    """traceroute (UDP and ICMP) from h0 to h15 lists the five switches of
    the path in order, under Ofan and under ECMP, and ping -s 5000 (IPv4
    fragments) gets its replies: the switches answer as routers do."""
    rc, st = emu_json("status", "--name", name)
    if not check(f"{what}: status", rc == 0 and st):
        return
    topo = json.loads(subprocess.run([str(BUILD / "emu" / "ofan-topo"), "describe", "--k", "4",
                                      "--levels", "3"], capture_output=True, text=True).stdout)
    addr = {s["name"]: s["addr"] for s in topo["switches"]}
    h15 = next(h["addr"] for h in topo["hosts"] if h["name"] == "h15")
    layer = [{addr["e0-0"]}, {addr["a0-0"], addr["a0-1"]},
             {addr[c] for c in ("c0", "c1", "c2", "c3")}, {addr["a3-0"], addr["a3-1"]},
             {addr["e3-1"]}, {h15}]
    ofanctl = str(BUILD / "control" / "ofanctl" / "ofanctl")
    run_dir = Path(os.environ.get("OFAN_EMU_RUN_DIR", "/run/ofan-emu")) / name
    for policy in ("ofan", "ecmp"):
        for s in topo["switches"]:
            if s["uplinks"]:
                subprocess.run([ofanctl, "--socket", str(run_dir / "sock" / f"{s['name']}.sock"),
                                "set-policy", policy], capture_output=True, timeout=20)
        for icmp in (False, True):
            hops, text = traceroute_hops(name, "h0", h15, icmp)
            ok = len(hops) == 6 and all(h and h <= want for h, want in zip(hops, layer))
            check(f"{what}: {policy}: traceroute{' -I' if icmp else ''} h0 -> h15 lists "
                  "e0-0, a0-*, c*, a3-*, e3-1, h15", ok, text.replace("\n", " | "))
    r = subprocess.run(["ip", "netns", "exec", f"ofe-{name}-h0", "ping", "-n", "-q", "-c", "3",
                        "-i", "0.3", "-W", "3", "-s", "5000", h15],
                       capture_output=True, text=True, timeout=60)
    check(f"{what}: ping -s 5000 h0 -> h15 (IPv4 fragments) gets every reply",
          r.returncode == 0 and " 0% packet loss" in r.stdout, r.stdout.strip()[-200:])
    r = subprocess.run(["ip", "netns", "exec", f"ofe-{name}-h0", "ping", "-n", "-q", "-c", "2",
                        "-i", "0.3", "-W", "3", addr["c2"]], capture_output=True, text=True,
                       timeout=30)
    check(f"{what}: ping h0 -> core c2's address {addr['c2']}", r.returncode == 0,
          r.stdout.strip()[-200:])


def traffic(name, what, full):
    """A permutation verified and a link failed under traffic (full: the
    per-switch engine has those in run_test.py); a switch failed under
    traffic."""
    if full:
        run_and_fail_link(name, what)
    fail_under_traffic(name, what, switch="a2-0")


def run_and_fail_link(name, what):
    rc, res = run_json(name, "--workload", "perm", "--msg", "256KiB", "--lbs", "ecmp,ofan",
                       "--ooo")
    check(f"{what}: a permutation under ECMP and Ofan, every buffer verified",
          rc in (0, 3) and all_verified(res) and len(res["runs"]) == 2, f"rc={rc}")
    if res:
        check(f"{what}: rc 3 exactly when a run is flagged CPU-bound, with its reasons",
              (rc == 3) == any(x["cpu_bound"] for x in res["runs"])
              and all(bool(x["cpu_bound_reasons"]) == x["cpu_bound"] for x in res["runs"]),
              f"rc={rc} reasons={[x['cpu_bound_reasons'] for x in res['runs']]}")
    fail_under_traffic(name, what + " (agg-core)", link="c2:1")


def fabric_ofan(name, levels, engine="per-switch"):
    hosts = 8 if levels == 2 else 16
    nsw = 6 if levels == 2 else 20
    shared = engine == "shared"
    what = f"ofan-dp k=4 levels={levels}" + (" --engine shared" if shared else "")
    rc, st = emu_json("up", "--k", "4", "--levels", str(levels), "--name", name,
                      "--engine", engine)
    if not check(f"{what}: up", rc == 0 and st and len(st["switches"]) == nsw
                 and len(st["hosts"]) == hosts, f"rc={rc}"):
        return
    rc, st = emu_json("status", "--name", name)
    check(f"{what}: status lists {nsw} live switches",
          rc == 0 and all(s["alive"] for s in st["switches"]), str(st and st["switches"][:2]))
    pids = {s["pid"] for s in st["switches"]} if st else set()
    check(f"{what}: status --json says engine {engine}, "
          + ("one process for every switch" if shared else "a process per switch"),
          st and st["engine"] == engine and len(pids) == (1 if shared else nsw),
          f"engine={st and st['engine']} pids={len(pids)}")
    all_pairs(name, what, hosts * (hosts - 1))
    if levels == 3:
        router_tools(name, what)
        traffic(name, what, full=shared)
    edge = "l0" if levels == 2 else "e0-0"
    # An edge-agg link: edge uplink 0 (port 2).
    rc, _ = emu_json("fail", "--name", name, "--link", f"{edge}:2")
    check(f"{what}: fail --link {edge}:2", rc == 0)
    ptr = pointers(name, edge)
    check(f"{what}: {edge}'s table no longer uses the failed uplink",
          ptr is not None and not uses_uplink(ptr, 0) and uses_uplink(ptr, 1))
    all_pairs(name, f"{what} with {edge}:2 failed", hosts * (hosts - 1))
    rc, _ = emu_json("restore", "--name", name, "--link", f"{edge}:2")
    ptr = pointers(name, edge)
    check(f"{what}: restore puts the uplink back in the table",
          rc == 0 and ptr is not None and uses_uplink(ptr, 0))
    if levels == 3:
        # An agg-core link, named by its upper end (core c0 port 0 = a0-0:2).
        rc, st = emu_json("fail", "--name", name, "--link", "c0:0")
        check(f"{what}: fail --link c0:0 (agg-core)",
              rc == 0 and st and st["failed_links"] == ["a0-0:2--c0:0"],
              str(st and st["failed_links"]))
        ptr = pointers(name, "a0-0")
        check(f"{what}: a0-0's table no longer uses core uplink 0",
              ptr is not None and not uses_uplink(ptr, 0))
        all_pairs(name, f"{what} with a0-0:2 failed", hosts * (hosts - 1))
        emu_json("restore", "--name", name, "--link", "c0:0")
    spine = "s1" if levels == 2 else "a1-1"
    rc, st = emu_json("fail", "--name", name, "--switch", spine)
    check(f"{what}: fail --switch {spine}", rc == 0 and st and st["failed_switches"] == [spine])
    all_pairs(name, f"{what} with {spine} down", hosts * (hosts - 1))
    rc, st = emu_json("restore", "--name", name, "--switch", spine)
    check(f"{what}: restore --switch {spine}: alive again",
          rc == 0 and st and all(s["alive"] for s in st["switches"]) and not st["failed_switches"])
    all_pairs(name, f"{what} after restore", hosts * (hosts - 1))
    # A switch killed from outside shows as dead; the shared engine's
    # process, killed, takes every switch with it.
    victim = next(s for s in st["switches"] if s["name"] == edge)
    os.kill(victim["pid"], signal.SIGKILL)
    time.sleep(0.5)
    rc, st = emu_json("status", "--name", name)
    if shared:
        check(f"{what}: the engine SIGKILLed, every switch shows as dead",
              rc == 0 and not any(s["alive"] for s in st["switches"]))
        return  # left for down --all (crash_then_down_all)
    check(f"{what}: a SIGKILLed switch shows as dead",
          rc == 0 and not next(s for s in st["switches"] if s["name"] == edge)["alive"])
    down_and_check(name, what)


def fabric_kernel(name):
    what = "kernel k=4 levels=3"
    rc, st = emu_json("up", "--k", "4", "--levels", "3", "--name", name, "--switch", "kernel")
    if not check(f"{what}: up", rc == 0 and st and st["switch"] == "kernel"
                 and st["engine"] == "kernel", f"rc={rc}"):
        return
    rc, _ = emu_json("up", "--k", "4", "--levels", "3", "--name", name, "--switch", "kernel",
                     ok_codes=(1,))
    rc2, st = emu_json("status", "--name", name)
    check(f"{what}: up of a name that is up fails (1) and leaves that fabric as it was",
          rc == 1 and rc2 == 0 and st and st["phase"] == "ready", f"rc={rc} status rc={rc2}")
    all_pairs(name, what, 240)
    rc, _ = emu_json("fail", "--name", name, "--link", "e1-1:3")
    check(f"{what}: fail --link e1-1:3", rc == 0)
    r = subprocess.run(["ip", "netns", "exec", f"ofe-{name}-e1-1", "ip", "route", "show",
                        "10.0.0.0/24"], capture_output=True, text=True)
    check(f"{what}: e1-1's route no longer uses p3", rc == 0 and "p3" not in r.stdout
          and "p2" in r.stdout, r.stdout.strip())
    all_pairs(name, f"{what} with e1-1:3 failed", 240)
    rc, _ = emu_json("restore", "--name", name, "--link", "e1-1:3")
    r = subprocess.run(["ip", "netns", "exec", f"ofe-{name}-e1-1", "ip", "route", "show",
                        "10.0.0.0/24"], capture_output=True, text=True)
    check(f"{what}: restore: the route uses p2 and p3 again",
          rc == 0 and "p2" in r.stdout and "p3" in r.stdout, r.stdout.strip())
    down_and_check(name, what)


def fabric_netem(name):
    """A topology file giving one host link 20 ms of latency: it runs through
    a wire namespace with tc netem, and ping sees it (a lower bound on the
    round trip, which no scheduling delay can undercut). No all-pairs ping:
    under TCG it took ~25 s for what emu-fabric checks on the host kernel."""
    what = "topology file with a 20 ms link"
    import tempfile
    base = (REPO / "emu" / "topologies" / "leafspine-k4.yaml").read_text()
    text = base.replace("- endpoints: [h0, 'l0:0']",
                        "- endpoints: [h0, 'l0:0']\n    latency_us: 20000")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    try:
        rc, st = emu_json("up", "--topology", f.name, "--name", name)
    finally:
        os.unlink(f.name)
    if not check(f"{what}: up", rc == 0 and st and st["wires"] == 1, f"rc={rc}"):
        return
    r = subprocess.run(["ip", "netns", "exec", f"ofe-{name}-h0", "ping", "-n", "-c", "3", "-i",
                        "0.2", "10.0.0.3"], capture_output=True, text=True, timeout=30)
    rtts = [float(x.split("time=")[1].split()[0]) for x in r.stdout.splitlines() if "time=" in x]
    check(f"{what}: h0's round trips take at least 2 x 20 ms",
          len(rtts) == 3 and min(rtts) >= 40.0, str(rtts))
    down_and_check(name, what)


def crash_then_down_all(name, killed=()):
    """ofan-emu up killed half-way; down --all removes it, and the fabrics
    `killed` (whose processes were SIGKILLed) with it."""
    what = "SIGKILL of ofan-emu up half-way"
    p = subprocess.Popen([EMU, "up", "--k", "4", "--levels", "3", "--name", name],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # Wait until switches are being started, then kill it without warning.
    end = time.monotonic() + 60
    while time.monotonic() < end and p.poll() is None:
        if glob.glob(f"/run/ofan-emu/{name}/logs/*.log"):
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    before = leftovers(name)
    check(f"{what}: it left something to clean", any(before.values()), str(before))
    rc, st = emu_json("status")
    check(f"{what}: status names it", rc == 0 and st and
          (name in st.get("fabrics", []) or name in st.get("leftovers", [])
           or st.get("name") == name), str(st)[:300])
    rc, _ = emu_json("down", "--all")
    left = leftovers(name)
    check(f"{what}: down --all leaves nothing", rc == 0 and not any(left.values()), str(left))
    for other in killed:
        left = leftovers(other)
        check(f"fabric {other}, its processes SIGKILLed: down --all leaves nothing of it "
              "(namespaces, processes, sockets, EAL and hugepage files, state)",
              rc == 0 and not any(left.values()), str(left))


def main():
    if os.geteuid() != 0:
        log("SKIP: needs root (namespaces, veths, AF_XDP, hugepages)")
        return SKIP
    for b in ("dataplane/ofan-dp", "control/ofanctl/ofanctl", "emu/ofan-topo", "emu/uroce/uroce"):
        if not (BUILD / b).exists():
            log(f"FAIL: {b} is not built")
            return 1
    atexit.register(clean_everything)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, lambda *_: sys.exit(1))
    if "--netem" in sys.argv:
        sys.path.insert(0, str(REPO / "emu"))
        from fabric import netns
        if not netns.has_netem():
            return rerun_in_vm("this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM)",
                               [os.path.abspath(__file__), *sys.argv[1:]], mem_mb=3072)
        fabric_netem(NAMES[4])
    elif "--shared" in sys.argv:
        fabric_ofan(NAMES[5], 3, "shared")
        crash_then_down_all(NAMES[3], killed=[NAMES[5]])
    else:
        quick = "--quick" in sys.argv
        shared = not quick and has_shared_engine(BUILD)
        fabric_ofan(NAMES[0], 2)
        if not quick:
            fabric_ofan(NAMES[1], 3)
            fabric_kernel(NAMES[2])
        if shared:
            fabric_ofan(NAMES[5], 3, "shared")
        crash_then_down_all(NAMES[3], killed=[NAMES[5]] if shared else [])
    log(f"{len(failures)} failure(s)" + (": " + "; ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
