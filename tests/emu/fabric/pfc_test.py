#!/usr/bin/python3
"""A lossless fabric (ofan-emu up --pfc) end to end, on both engines.

    pfc_test.py          (root; Debian's /usr/bin/python3)

Checks: up --pfc refuses what cannot pause (the kernel switch, a priority
outside 0-7, --pfc-priority alone) with exit 2
before anything is made; a k=4 fat tree up with --pfc shows each port's
thresholds (xoff + headroom within its buffer) and PFC counters in ofanctl
ports; a 15-to-1 incast at 256 KiB buffers, under ECMP and Ofan, pauses
(pause frames, paused time in the stages) and drops no lossless frame and
no frame at all, every buffer verified; so does an ECMP permutation, whose
collisions queue pause frames beside CE-marked data; a PFC storm from h0
(fault --pfc-storm) during an incast to it fires e0-0's watchdog, which
drops and then restores, with no lossless drop anywhere and every host
reachable afterwards; the same incast on the
same fabric without --pfc drops at the receiver's edge; on the per-switch
engine (its workers send XOFF as a frame crosses xoff, its control threads
refresh it and send XON, uroce's hosts obey it) the thresholds are there,
the incast pauses, verifies and drops no lossless frame, and a storm from h0's namespace
(uroce pfc-storm) fires e0-0's watchdog as on the shared engine; down
leaves nothing.

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

BUILD = Path(os.environ.get("OFAN_BUILD_DIR", REPO / "build"))
OFANCTL = str(BUILD / "control" / "ofanctl" / "ofanctl")
PID = os.getpid()
LOSSLESS, LOSSY, PER_SWITCH = f"pl{PID}", f"py{PID}", f"pp{PID}"
INCAST = ["--workload", "incast", "--msg", "64KiB"]


def run_json(name, *args):
    p = emu("run", "--name", name, "--json", *args)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, None


def clean_everything():
    for n in (LOSSLESS, LOSSY, PER_SWITCH):
        subprocess.run([EMU, "down", "--name", n], capture_output=True, timeout=120)


def refusals():
    for args, why in ((["--switch", "kernel"], "kernel"),
                      (["--pfc-priority", "9"], "0 to 7")):
        p = emu("up", "--k", "4", "--name", LOSSLESS, "--pfc", *args)
        check(f"up --pfc {' '.join(args)}: exit 2 naming why",
              p.returncode == 2 and why in p.stderr, f"rc={p.returncode} {p.stderr[-300:]}")
    p = emu("up", "--k", "4", "--name", LOSSLESS, "--pfc-priority", "3")
    check("up --pfc-priority without --pfc: exit 2", p.returncode == 2 and "--pfc" in p.stderr,
          p.stderr[-300:])
    for args, why in ((["--pfcwd-detect-ms", "50"], "100 to 5000"),
                      (["--pfcwd-restore-ms", "70000"], "100 to 60000"),
                      (["--pfcwd-action", "explode"], "drop, forward, alert")):
        p = emu("up", "--k", "4", "--name", LOSSLESS, "--pfc", *args)
        check(f"up --pfc {' '.join(args)}: exit 2 naming the range",
              p.returncode == 2 and why in p.stderr, p.stderr[-300:])
    p = emu("up", "--k", "4", "--name", LOSSLESS, "--ecn", "64KiB", "--ecn-kb", "32")
    check("up --ecn and --ecn-kb together: exit 2", p.returncode == 2
          and "give one" in p.stderr, p.stderr[-300:])
    p = emu("run", "--name", LOSSLESS, "--cc", "reno")
    check("run --cc reno: exit 2 naming the choices", p.returncode == 2
          and "dcqcn" in p.stderr, p.stderr[-300:])
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
    p = emu("status", "--name", name, "--json")
    st = json.loads(p.stdout) if p.returncode == 0 else {}
    ports = [q for w in st.get("switches", []) for q in w.get("ports", [])]
    check("status --json: pfc's priority, and every switch port's PFC (20 switches x 4)",
          st.get("pfc") == {"priority": 3} and len(ports) == 80
          and all({"sent", "received", "paused_us", "xoff_events", "headroom_max_bytes"}
                  <= set(q["pfc"]) for q in ports), f"pfc={st.get('pfc')} ports={len(ports)}")
    text = emu("status", "--name", name).stdout
    check("status: a PFC line for people", "PFC on priority 3" in text, text[-300:])


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
        # The receiver's link carries 15 x 64 KiB: 314,573 us of payload at
        # 25 Mb/s, more with headers; a sender's NIC alone, 21 ms.
        payload_us = 15 * 65536 * 8 / 25.0
        check(f"--pfc {r['lb']}: the incast's bound is the receiver's link",
              payload_us < r["cct_lower_bound_us"] < 1.1 * payload_us,
              f"bound {r['cct_lower_bound_us']} us (payload alone {payload_us:.0f} us)")
    # The victim flow (run --victim): h15 -> h1 beside a 13-to-1 incast to h0,
    # through the ports upstream of e0-0 that the incast pauses.
    rc, res = run_json(name, *INCAST, "--lbs", "ecmp", "--victim", "--hosts", "all")
    ok = rc in (0, 3) and res is not None and res["runs"]
    r = res["runs"][0] if ok else {}
    check("--pfc --victim: the incast and the victim flow verified, its rate reported, "
          "nothing dropped", ok and res["victim"] and r["verified"] and r["lossless_drops"] == 0
          and not r["drops"] and (r.get("victim_gbps") or 0) > 0
          and 0 < r["victim_share"] <= 1.0, f"rc={rc} victim={r.get('victim_gbps')}")
    # CTS (run --cts): 15 senders with one 16 KiB slot each at the receiver
    # have 240 KiB in flight, which the receiver's edge holds: no pause
    # frame reaches past the last hop (A->E).
    rc, res = run_json(name, *INCAST, "--lbs", "ecmp", "--cts", "--channels", "1",
                       "--channel-bytes", "16KiB")
    ok = rc in (0, 3) and res is not None and res["runs"]
    r = res["runs"][0] if ok else {}
    beyond = {s: v["pause_frames"] for s, v in r.get("stages", {}).items()
              if s != "A->E" and v["pause_frames"]}
    check("--pfc --cts: verified, the CTS delay and wait reported, no pause beyond the last hop",
          ok and r["verified"] and res["cts"]["channels"] == 1 and not beyond
          and r["lossless_drops"] == 0 and r["cts_delay_us"]["p50"] <= r["cts_delay_us"]["p90"]
          and r["cts_wait_us"]["p90"] >= 0, f"rc={rc} beyond={beyond} cts={r.get('cts_delay_us')}")
    p = emu("run", "--name", name, "--json", "--workload", "incast", "--channels", "2")
    check("run --channels without --cts: exit 2", p.returncode == 2
          and "--cts" in p.stderr, p.stderr[-300:])
    p = emu("run", "--name", name, "--json", "--workload", "perm", "--victim")
    check("run --victim without the incast: exit 2", p.returncode == 2
          and "--victim: with --workload incast" in p.stderr, p.stderr[-300:])


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


def storm(name):
    """fault --pfc-storm h0 while h0 receives an incast: e0-0's watchdog
    fires on port 0 (action drop) and restores once h0 has asked no pause
    for 200 ms; no lossless frame is dropped anywhere (the stormed queue's
    frames are the watchdog's drops); afterwards every host pair reaches
    each other. The
    storm's own incast may fail: its QPs to h0 are the storm's victims."""
    p = subprocess.Popen([EMU, "run", "--name", name, "--json", *INCAST, "--msg", "256KiB",
                          "--lbs", "ofan", "--deadline-s", "30"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 30
    while time.monotonic() < end and not glob.glob(f"/run/ofan-emu/{name}/uroce-*.proc.json"):
        time.sleep(0.05)
    time.sleep(0.1)
    f = emu("fault", "--name", name, "--pfc-storm", "h0", "--for-ms", "400", "--json")
    p.communicate(timeout=300)
    check("fault --pfc-storm h0 --for-ms 400 during an incast to h0",
          f.returncode == 0 and json.loads(f.stdout or "{}").get("edge") == "e0-0", f.stderr)
    # One XOFF at 25 Mb/s asks 1.34 s: restored 200 ms after the last one's end.
    time.sleep(3.0)
    sock = f"/run/ofan-emu/{name}/sock/e0-0.sock"
    q = subprocess.run([OFANCTL, "--socket", sock, "ports", "--json"], capture_output=True,
                       text=True, timeout=30)
    wd = (json.loads(q.stdout)[0]["pfc"] or {}).get("watchdog", {}) if q.returncode == 0 else {}
    check("e0-0 port 0's watchdog fired once (drop), discarded the stormed queue's frames, "
          "restored", wd.get("fired") == 1 and wd.get("restored") == 1 and not wd.get("active")
          and wd.get("action") == "drop" and wd.get("dropped", 0) > 0, str(wd))
    st = json.loads(emu("status", "--name", name, "--json").stdout or "{}")
    lossless = sum(x["pfc"]["lossless_drops"] for w in st.get("switches", [])
                   for x in w.get("ports", []))
    check("... and no lossless frame was dropped anywhere through the storm", lossless == 0,
          f"lossless drops {lossless}")
    p = emu("ping", "--name", name, "--json")
    r = json.loads(p.stdout or "{}")
    check("after the storm, every host pair reaches each other", p.returncode == 0
          and r.get("ok") == r.get("pairs") == 240, str(r.get("failed", []))[:200])


def lossy_incast(name):
    p = emu("fault", "--name", name, "--pfc-storm", "h0")
    check("fault --pfc-storm on a fabric without --pfc: exit 2", p.returncode == 2
          and "no PFC" in p.stderr, p.stderr[-300:])
    rc, res = run_json(name, *INCAST, "--lbs", "ofan")
    ok = rc in (0, 3) and res is not None and res["runs"]
    r = res["runs"][0] if ok else {}
    check("without --pfc: the same incast drops at a full buffer (and recovers, verified)",
          ok and r["verified"] and r["drops"].get("buffer_full", 0) > 0
          and r["pfc_pause_frames"] == 0, f"rc={rc} drops={r.get('drops')}")
    # DCQCN (run --cc dcqcn): the receivers' CNPs reach the senders, which
    # cut their rates; without it none is counted.
    rc, res = run_json(name, *INCAST, "--lbs", "ecmp", "--cc", "dcqcn")
    ok = rc in (0, 3) and res is not None and res["runs"]
    r = res["runs"][0] if ok else {}
    check("run --cc dcqcn: the senders hear CNPs for the CE marks, the run verifies",
          ok and res["cc"] == "dcqcn" and r["cnps"] > 0 and r["ecn_marks"] > 0 and r["verified"],
          f"rc={rc} cnps={r.get('cnps')} ecn={r.get('ecn_marks')}")


def per_switch(name):
    """The per-switch engine: PFC from the switches' workers and control
    threads, obeyed by the switches' queues and uroce's hosts; a storm from
    a host's own namespace."""
    thresholds(name)
    rc, res = run_json(name, *INCAST, "--lbs", "ecmp")
    ok = rc in (0, 3) and res is not None and len(res["runs"]) == 1
    r = res["runs"][0] if ok else {}
    # On the wall clock a peer may answer an XOFF late (the machine's
    # scheduling); a port whose lossless account is full then leaves frames
    # in its device ring rather than take them (stages/rx.h), so even a run
    # flagged CPU-bound drops no lossless frame.
    check("per-switch --pfc: 15-to-1 incast verified, the switches paused, no lossless drop",
          ok and r["verified"] and r["pfc_pause_frames"] > 0 and r["lossless_drops"] == 0,
          f"rc={rc} lossless={r.get('lossless_drops')} drops={r.get('drops')} "
          f"frames={r.get('pfc_pause_frames')}")
    log(f"  per-switch incast: {r.get('drops')} drops, "
        f"{r.get('pfc_pause_frames')} pause frames, CPU-bound {r.get('cpu_bound')}")
    # The storm comes from h0's namespace (uroce pfc-storm): the same
    # watchdog, on the switch's clock.
    storm(name)


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
        storm(LOSSLESS)
        emu("down", "--name", LOSSLESS)
    if check("up --k 4 without --pfc", emu("up", "--k", "4", "--name", LOSSY).returncode == 0):
        lossy_incast(LOSSY)
        emu("down", "--name", LOSSY)
    if check("up --k 4 --pfc --engine per-switch",
             emu("up", "--k", "4", "--name", PER_SWITCH, "--pfc", "--engine",
                 "per-switch").returncode == 0):
        per_switch(PER_SWITCH)
        emu("down", "--name", PER_SWITCH)
    for n in (LOSSLESS, LOSSY, PER_SWITCH):
        left = leftovers(n)
        check(f"down {n}: no namespace, process, EAL file or state left", not any(left.values()),
              str(left))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
