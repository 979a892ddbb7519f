#!/usr/bin/python3
"""ofan-emu run end to end: real RoCEv2 traffic from uroce hosts through
emulated fabrics, every buffer verified.

    run_test.py          (root; Debian's /usr/bin/python3)

Checks: on a k=4 leaf-spine and a k=4 3-level fat tree of ofan-dp switches
with ample buffers, a permutation, an all-to-all, a ring all-gather and a
ring reduce-scatter complete with every buffer verified and no switch drop;
the --json report has the documented members (with --with-sim, the
simulator's); failing an edge-agg link and an agg-core link under traffic
keeps the run going on the remaining paths with every buffer intact, and what
the change cost (switch drops, retransmissions) is reported; a run after
restore is clean; a switch killed with SIGKILL under traffic ends the run
with its name long before the hosts' deadline; ofan-emu killed with SIGKILL
in the middle of a run leaves nothing after down --all (the hosts' engine
stops with it); the kernel-router fabric carries the same permutation.

Exit: 0 pass, 1 fail, 77 skip (not root).
"""
import atexit
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
from checks import EMU, SKIP, check, emu, failures, log  # noqa: E402
from leftovers import leftovers  # noqa: E402

PID = os.getpid()
NAMES = [f"ra{PID}", f"rb{PID}", f"rk{PID}", f"rx{PID}"]
REPORT_KEYS = ("lb", "cct_us", "cct_lower_bound_us", "queue_max_pkts", "verified",
               "retransmissions", "cpu_bound", "algbw_gbps", "busbw_gbps")


def run_json(name, *args, timeout=300):
    p = emu("run", "--name", name, "--json", *args, timeout=timeout)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, None


def clean_everything():
    for n in NAMES:
        subprocess.run([EMU, "down", "--name", n], capture_output=True, timeout=120)


def all_verified(res):
    return res is not None and res["runs"] and all(r["verified"] and not r.get("error")
                                                   for r in res["runs"])


def collectives(name, what):
    rc, res = run_json(name, "--workload", "perm", "--msg", "256KiB", "--lbs", "ecmp,ofan",
                       "--ooo", "--with-sim")
    check(f"{what}: permutation under ECMP and Ofan, every buffer verified",
          rc in (0, 3) and all_verified(res), f"rc={rc}")
    if res:
        r = res["runs"][0]
        check(f"{what}: the report has {', '.join(REPORT_KEYS)}",
              all(k in r for k in REPORT_KEYS)
              and [x["lb"] for x in res["runs"]] == ["ecmp", "ofan"],
              str(sorted(r)))
        check(f"{what}: --with-sim adds the simulator's queue_max_pkts and cct_inflation",
              all(isinstance(x.get("sim"), dict) and "queue_max_pkts" in x["sim"]
                  and "cct_inflation" in x["sim"] for x in res["runs"]))
        check(f"{what}: rc 3 exactly when a run is flagged CPU-bound",
              (rc == 3) == any(x["cpu_bound"] for x in res["runs"]),
              f"rc={rc} reasons={[x['cpu_bound_reasons'] for x in res['runs']]}")
        check(f"{what}: busbw = algbw for a permutation",
              all(abs(x["busbw_gbps"] - x["algbw_gbps"]) < 1e-9 for x in res["runs"]))
    for wl in ("a2a", "allgather", "reducescatter"):
        rc, res = run_json(name, "--workload", wl, "--msg", "256KiB", "--lbs", "ofan", "--ooo")
        ok = rc in (0, 3) and all_verified(res)
        check(f"{what}: {wl} verified with no switch drop (ample buffers)",
              ok and not res["runs"][0]["drops"],
              f"rc={rc} drops={res and res['runs'][0]['drops']}")
        if ok and wl != "a2a":
            n = res["hosts"]
            r = res["runs"][0]
            check(f"{what}: {wl} busbw = algbw x (n-1)/n",
                  abs(r["busbw_gbps"] - r["algbw_gbps"] * (n - 1) / n) < 1e-9)


def uroce_running(name, timeout=30):
    """Until the hosts' engine of a run on fabric `name` is up."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if glob.glob(f"/run/ofan-emu/{name}/uroce-*.proc.json"):
            return True
        time.sleep(0.05)
    return False


def fail_under_traffic(name, what, link=None, switch=None, restore_check=True):
    """fail --link LINK (or --switch SWITCH) while a permutation runs: it
    completes over the remaining paths, every buffer intact, with what the
    failure cost reported; restored, a run is clean again."""
    target = ["--link", link] if link else ["--switch", switch]
    cmd = [EMU, "run", "--name", name, "--json", "--workload", "perm", "--msg", "4MiB",
           "--lbs", "ofan", "--ooo"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = uroce_running(name)
    time.sleep(0.5)
    f = emu("fail", "--name", name, *target)
    out, err = p.communicate(timeout=300)
    check(f"{what}: fail {' '.join(target)} while the run goes on",
          started and f.returncode == 0, f.stderr[-300:])
    try:
        res = json.loads(out)
    except ValueError:
        res = None
    check(f"{what}: the run completes over the remaining paths, every buffer intact",
          p.returncode in (0, 3) and all_verified(res), f"rc={p.returncode} {err[-600:]}")
    if res:
        r = res["runs"][0]
        check(f"{what}: what the change cost is reported (drops, retransmissions)",
              isinstance(r["drops"], dict) and isinstance(r["retransmissions"], int),
              f"drops={r['drops']} retx={r['retransmissions']}")
    if restore_check:
        g = emu("restore", "--name", name, *target)
        rc, res = run_json(name, "--workload", "perm", "--msg", "256KiB", "--lbs", "ofan", "--ooo")
        check(f"{what}: after restore a run is clean again",
              g.returncode == 0 and rc in (0, 3) and all_verified(res)
              and not res["runs"][0]["drops"], f"rc={rc}")


def switch_killed_under_traffic(name, what, victim):
    st = json.loads(emu("status", "--name", name, "--json").stdout)
    pid = next(s["pid"] for s in st["switches"] if s["name"] == victim)
    t0 = time.monotonic()
    p = subprocess.Popen([EMU, "run", "--name", name, "--workload", "perm", "--msg", "4MiB",
                          "--lbs", "ofan", "--ooo", "--deadline-s", "240"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    os.kill(pid, signal.SIGKILL)
    out, err = p.communicate(timeout=300)
    took = time.monotonic() - t0
    check(f"{what}: a switch killed under traffic fails the run, naming it",
          p.returncode == 1 and victim in err and "died" in err, f"rc={p.returncode} {err[-400:]}")
    check(f"{what}: ... long before the hosts' 240 s deadline", took < 120, f"{took:.0f} s")


def crash_during_run(name):
    what = "SIGKILL of ofan-emu during a run"
    rc = emu("up", "--k", "4", "--levels", "2", "--name", name).returncode
    if not check(f"{what}: up", rc == 0):
        return
    p = subprocess.Popen([EMU, "run", "--name", name, "--workload", "perm", "--msg", "8MiB",
                          "--lbs", "ofan", "--ooo"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    check(f"{what}: the hosts' engine was running", uroce_running(name))
    time.sleep(0.5)
    p.send_signal(signal.SIGKILL)
    p.wait()
    rc = emu("down", "--all").returncode
    time.sleep(0.5)
    left = leftovers(name)
    check(f"{what}: down --all leaves no namespace, process, EAL file or state",
          rc == 0 and not any(left.values()), str(left))


def main():
    if os.geteuid() != 0:
        log("SKIP: needs root (namespaces, veths, AF_XDP, hugepages)")
        return SKIP
    atexit.register(clean_everything)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, lambda *_: sys.exit(1))

    a = NAMES[0]
    what = "ofan-dp k=4 levels=2"
    if check(f"{what}: up with 4 MiB buffers",
             emu("up", "--k", "4", "--levels", "2", "--name", a,
                 "--buffer", "4MiB").returncode == 0):
        collectives(a, what)
        fail_under_traffic(a, what, link="l1:2")
        switch_killed_under_traffic(a, what, "s1")
        emu("down", "--name", a)

    b = NAMES[1]
    what = "ofan-dp k=4 levels=3"
    if check(f"{what}: up with 4 MiB buffers",
             emu("up", "--k", "4", "--levels", "3", "--name", b,
                 "--buffer", "4MiB").returncode == 0):
        rc, res = run_json(b, "--workload", "perm", "--msg", "256KiB",
                           "--lbs", "ecmp,rps,ofan,pofan", "--ooo")
        check(f"{what}: permutation under ECMP, RPS, Ofan and POfan verified",
              rc in (0, 3) and all_verified(res) and len(res["runs"]) == 4, f"rc={rc}")
        rc, res = run_json(b, "--workload", "a2a", "--msg", "256KiB", "--lbs", "ofan", "--ooo")
        check(f"{what}: all-to-all verified, no switch drop",
              rc in (0, 3) and all_verified(res) and not res["runs"][0]["drops"], f"rc={rc}")
        fail_under_traffic(b, what + " (edge-agg)", link="e1-0:3", restore_check=False)
        fail_under_traffic(b, what + " (agg-core)", link="c2:1")
        emu("down", "--name", b)

    k = NAMES[2]
    what = "kernel k=4 levels=2"
    if check(f"{what}: up", emu("up", "--k", "4", "--levels", "2", "--name", k,
                                "--switch", "kernel", "--buffer", "4MiB").returncode == 0):
        rc, res = run_json(k, "--workload", "perm", "--msg", "256KiB", "--lbs", "ecmp")
        check(f"{what}: permutation under Linux ECMP verified", rc in (0, 3) and all_verified(res),
              f"rc={rc}")
        p = emu("run", "--name", k, "--lbs", "ofan")
        check(f"{what}: --lbs ofan on a kernel fabric is refused (exit 2)",
              p.returncode == 2 and "kernel" in p.stderr, p.stderr[-200:])
        emu("down", "--name", k)

    crash_during_run(NAMES[3])
    left = {n: leftovers(n) for n in NAMES}
    check("nothing left of any fabric", not any(any(v.values()) for v in left.values()), str(left))
    log(f"{len(failures)} failure(s)" + (": " + "; ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
