#!/usr/bin/python3
"""A lossless fabric (ofan-emu up --pfc) end to end on the shared engine.

    pfc_test.py          (root; Debian's /usr/bin/python3)

Checks: up --pfc refuses what cannot pause (the kernel switch, the
per-switch engine, a priority outside 0-7, --pfc-priority alone) with exit 2
before anything is made; a k=4 fat tree up with --pfc shows each port's
thresholds (xoff + headroom within its buffer) and PFC counters in ofanctl
ports; a 15-to-1 incast at 256 KiB buffers, under ECMP and Ofan, pauses
(pause frames, paused time in the stages) and drops no lossless frame and
no frame at all, every buffer verified; so does an ECMP permutation, whose
collisions queue pause frames beside CE-marked data; the same incast on the
same fabric without --pfc drops at the receiver's edge; down leaves nothing.

Exit: 0 pass, 1 fail, 77 skip (not root).
"""
import atexit
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import SKIP, check, failures, log  # noqa: E402
from leftovers import leftovers  # noqa: E402

EMU = str(REPO / "emu" / "ofan-emu")
BUILD = Path(os.environ.get("OFAN_BUILD_DIR", REPO / "build"))
OFANCTL = str(BUILD / "control" / "ofanctl" / "ofanctl")
PID = os.getpid()
LOSSLESS, LOSSY = f"pl{PID}", f"py{PID}"
INCAST = ["--workload", "incast", "--msg", "64KiB"]


def emu(*args, timeout=300):
    p = subprocess.run([EMU] + list(args), capture_output=True, text=True, timeout=timeout)
    if p.returncode not in (0, 3):
        log(f"  ofan-emu {' '.join(args)} -> {p.returncode}\n  stderr: {p.stderr[-2500:]}")
    return p


def run_json(name, *args):
    p = emu("run", "--name", name, "--json", *args)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, None


def clean_everything():
    for n in (LOSSLESS, LOSSY):
        subprocess.run([EMU, "down", "--name", n], capture_output=True, timeout=120)


def refusals():
    for args, why in ((["--switch", "kernel"], "kernel"),
                      (["--engine", "per-switch"], "shared engine"),
                      (["--pfc-priority", "9"], "0 to 7")):
        p = emu("up", "--k", "4", "--name", LOSSLESS, "--pfc", *args)
        check(f"up --pfc {' '.join(args)}: exit 2 naming why",
              p.returncode == 2 and why in p.stderr, f"rc={p.returncode} {p.stderr[-300:]}")
    p = emu("up", "--k", "4", "--name", LOSSLESS, "--pfc-priority", "3")
    check("up --pfc-priority without --pfc: exit 2", p.returncode == 2 and "--pfc" in p.stderr,
          p.stderr[-300:])
    check("... and nothing was made", not any(leftovers(LOSSLESS).values()),
          str(leftovers(LOSSLESS)))


def thresholds(name):
    sock = f"/run/ofan-emu/{name}/sock/e0-0.sock"
    p = subprocess.run([OFANCTL, "--socket", sock, "ports", "--json"], capture_output=True,
                       text=True, timeout=30)
    ports = json.loads(p.stdout) if p.returncode == 0 else []
    pfc = [x.get("pfc") for x in ports]
    check("ofanctl ports: every port of e0-0 has its PFC thresholds and counters",
          len(pfc) == 4 and all(isinstance(f, dict) and f["xoff_bytes"] > f["xon_bytes"] > 0
                                and 0 < f["headroom_bytes"]
                                and f["xoff_bytes"] + f["headroom_bytes"] <= 256 * 1024
                                for f in pfc), str(pfc)[:400])
    table = subprocess.run([OFANCTL, "--socket", sock, "ports"], capture_output=True, text=True,
                           timeout=30).stdout
    check("ofanctl ports: a PFC table for people", "PFC" in table and "headroom" in table,
          table[-400:])


def lossless_incast(name):
    rc, res = run_json(name, *INCAST, "--lbs", "ecmp,ofan")
    ok = rc in (0, 3) and res is not None and len(res["runs"]) == 2
    check("--pfc: 15-to-1 incast under ECMP and Ofan, every buffer verified",
          ok and all(r["verified"] and not r.get("error") for r in res["runs"]),
          f"rc={rc}")
    if not ok:
        return
    for r in res["runs"]:
        check(f"--pfc {r['lb']}: no lossless drop, no drop at all",
              r["lossless_drops"] == 0 and not r["drops"], f"drops={r['drops']}")
        check(f"--pfc {r['lb']}: the switches paused (pause frames, paused time per stage)",
              r["pfc_pause_frames"] > 0 and r["pfc_paused_us"] > 0
              and any(s["paused_us"] > 0 for s in r["stages"].values()),
              f"frames={r['pfc_pause_frames']} paused_us={r['pfc_paused_us']:.0f} "
              f"stages={ {k: round(s['paused_us']) for k, s in r['stages'].items()} }")
        check(f"--pfc {r['lb']}: the incast's bound is the receiver's link",
              r["cct_us"] >= r["cct_lower_bound_us"] > 0,
              f"cct {r['cct_us']} bound {r['cct_lower_bound_us']}")


def lossless_permutation(name):
    """ECMP's collisions under PFC: queues past the ECN threshold, where pause
    frames wait beside CE-marked data (a mark on a pause frame once rewrote
    its opcode: the peer ignored it and the headroom overflowed)."""
    rc, res = run_json(name, "--workload", "perm", "--msg", "1MiB", "--lbs", "ecmp", "--ooo")
    ok = rc in (0, 3) and res is not None and res["runs"]
    r = res["runs"][0] if ok else {}
    check("--pfc: an ECMP permutation pauses, verified, with no lossless drop and no malformed "
          "pause frame", ok and r["verified"] and r["pfc_pause_frames"] > 0
          and r["lossless_drops"] == 0 and not r["drops"], f"rc={rc} drops={r.get('drops')}")


def lossy_incast(name):
    rc, res = run_json(name, *INCAST, "--lbs", "ofan")
    ok = rc in (0, 3) and res is not None and res["runs"]
    r = res["runs"][0] if ok else {}
    check("without --pfc: the same incast drops at a full buffer (and recovers, verified)",
          ok and r["verified"] and r["drops"].get("buffer_full", 0) > 0
          and r["pfc_pause_frames"] == 0, f"rc={rc} drops={r.get('drops')}")


def main():
    if os.geteuid() != 0:
        log("SKIP: needs root (namespaces, veths, AF_XDP, hugepages)")
        return SKIP
    atexit.register(clean_everything)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, lambda *_: sys.exit(1))
    refusals()
    if check("up --k 4 --pfc (shared engine, 256 KiB buffers)",
             emu("up", "--k", "4", "--name", LOSSLESS, "--pfc").returncode == 0):
        thresholds(LOSSLESS)
        lossless_incast(LOSSLESS)
        lossless_permutation(LOSSLESS)
        emu("down", "--name", LOSSLESS)
    if check("up --k 4 without --pfc", emu("up", "--k", "4", "--name", LOSSY).returncode == 0):
        lossy_incast(LOSSY)
        emu("down", "--name", LOSSY)
    for n in (LOSSLESS, LOSSY):
        left = leftovers(n)
        check(f"down {n}: no namespace, process, EAL file or state left", not any(left.values()),
              str(left))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
