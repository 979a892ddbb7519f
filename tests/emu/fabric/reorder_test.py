#!/usr/bin/python3
"""Resequencing at the edges (ofan-emu up --reorder) end to end, both engines.

    reorder_test.py          (root; Debian's /usr/bin/python3)

Checks: up --reorder refuses what cannot resequence (the kernel switch, a
buffer of 0, a timeout out of range, --reorder-kb alone) with exit 2 before
anything is made; on each engine (shared: emulated time; per-switch: the
TSC), a k=4 fat tree up with --pfc --reorder shows each edge host port's
reorder stage in status --json (and none elsewhere), waiting by default its
buffer's drain time; a permutation of uroce hosts without out-of-order
placement (go-back-N, as rxe) under RPS and under Ofan verifies with no
out-of-sequence packet and no retransmission at any host, while the edges
held frames that came early (RPS sprays per packet: some always do) and no
wait timed out, and --with-sim sets ofan-sim's depth beside it; down leaves
nothing.

Exit: 0 pass, 1 fail, 77 skip (not root).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import SKIP, check, down_at_exit, emu, failures, log  # noqa: E402
from leftovers import leftovers  # noqa: E402

BUILD = Path(os.environ.get("OFAN_BUILD_DIR", REPO / "build"))
OFANCTL = str(BUILD / "control" / "ofanctl" / "ofanctl")
NAME = f"ro{os.getpid() % 100000}"


def refusals():
    for args, why in ((["--reorder", "--switch", "kernel"], "kernel"),
                      (["--reorder", "--reorder-kb", "0"], "--reorder-kb 0"),
                      (["--reorder", "--reorder-timeout-us", "0"], "--reorder-timeout-us 0"),
                      (["--reorder-kb", "64"], "need --reorder")):
        p = emu("up", "--k", "4", "--name", NAME, *args)
        check(f"up {' '.join(args)}: exit 2 naming why", p.returncode == 2 and why in p.stderr,
              f"rc={p.returncode} {p.stderr[-300:]}")
    check("... and nothing was made", not any(leftovers(NAME).values()), str(leftovers(NAME)))


def status():
    p = emu("status", "--name", NAME, "--json")
    st = json.loads(p.stdout) if p.returncode == 0 else {}
    ports = {(w["name"], q["port"]): q for w in st.get("switches", [])
             for q in w.get("ports", [])}
    edge_hosts = [q for (sw, port), q in ports.items() if sw.startswith("e") and port < 2]
    others = [q for (sw, port), q in ports.items() if not (sw.startswith("e") and port < 2)]
    # No --reorder-timeout-us: each port waits its buffer's drain time, 256
    # KiB at the default 25 Mb/s = 83,887 us (dataplane/fabric/reorder.h).
    check("status --json: reorder's buffer and default timeout; a reorder stage on each of the "
          "16 edge host ports, none elsewhere, each waiting the buffer's drain time",
          st.get("reorder") == {"buffer_kb": 256, "timeout_us": None} and len(edge_hosts) == 16
          and all(isinstance(q.get("reorder"), dict) and "max_hold_us" in q["reorder"]
                  and q["reorder"].get("timeout_us") == 83887 for q in edge_hosts)
          and all(q.get("reorder") is None for q in others),
          f"reorder={st.get('reorder')} edge host ports={len(edge_hosts)} "
          "timeouts="
          f"{sorted({str((q.get('reorder') or {}).get('timeout_us')) for q in edge_hosts})}")
    text = emu("status", "--name", NAME).stdout
    check("status: a reorder line for people",
          "reorder at 16 edge host ports (256 KiB, waits up to 83887 us)" in text,
          text[-300:])
    table = subprocess.run([OFANCTL, "--socket", f"/run/ofan-emu/{NAME}/sock/e0-0.sock", "ports"],
                           capture_output=True, text=True, timeout=30).stdout
    check("ofanctl ports: a reorder table for people, e0-0's two host ports",
          "reorder (RoCE data" in table and "max_hold_us" in table, table[-400:])


def resequenced(lb, engine):
    p = emu("run", "--name", NAME, "--json", "--workload", "perm", "--msg", "1MiB", "--lbs", lb,
            "--with-sim")
    res = json.loads(p.stdout) if p.stdout.strip() else {}
    r = (res.get("runs") or [{}])[0]
    cmp_ = res.get("reorder_comparison") or [{}]
    check(f"{engine}: {lb} --with-sim: ofan-sim resequenced beside it (go-back-N receivers), "
          "the depths side by side per seed",
          len(cmp_) == 1 and cmp_[0].get("lb") == lb and cmp_[0].get("seed") == 1
          and isinstance(cmp_[0].get("within"), bool)
          and (r.get("sim") or {}).get("out_of_seq") == 0
          and (lb != "rps" or cmp_[0].get("sim_max_bytes", 0) > 0),
          f"{cmp_} sim={r.get('sim')}")
    check(f"{engine}: {lb} permutation, go-back-N hosts: verified, no out-of-sequence packet, no "
          "retransmission, no wait timed out",
          p.returncode in (0, 3) and r.get("verified") is True and r.get("out_of_sequence") == 0
          and r.get("retransmissions") == 0 and r.get("reorder_timeouts") == 0,
          f"rc={p.returncode} oos={r.get('out_of_sequence')} retx={r.get('retransmissions')} "
          f"timeouts={r.get('reorder_timeouts')}")
    log(f"  {engine} {lb}: {r.get('reorder_held')} frames held, at most "
        f"{r.get('reorder_max_bytes')} B, {r.get('reorder_max_hold_us')} us")
    return r


def main():
    if os.geteuid() != 0:
        log("SKIP: needs root (namespaces, veths, AF_XDP, hugepages)")
        return SKIP
    down_at_exit(NAME)
    refusals()
    for engine in ("shared", "per-switch"):
        if check(f"up --k 4 --pfc --reorder --engine {engine}",
                 emu("up", "--k", "4", "--name", NAME, "--pfc", "--reorder", "--engine",
                     engine).returncode == 0):
            status()
            r = resequenced("rps", engine)
            check(f"... {engine}: the edges held RPS's early frames",
                  (r.get("reorder_held") or 0) > 0 and (r.get("reorder_max_bytes") or 0) > 0,
                  str(r.get("reorder_held")))
            resequenced("ofan", engine)
        emu("down", "--name", NAME)
    left = leftovers(NAME)
    check("down: no namespace, process, EAL file or state left", not any(left.values()), str(left))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
