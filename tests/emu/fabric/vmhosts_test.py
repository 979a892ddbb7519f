#!/usr/bin/python3
"""Soft-RoCE VM hosts in a fabric: `ofan-emu up --vm-hosts`, `exec`, rxe
traffic through ofan-dp switches.

    vmhosts_test.py            (root; 77 = skipped where VMs cannot run, and why)

A k=4 fat tree of ofan-dp switches with rxe VMs on h0 (pod 0) and h8 (pod 2),
the other 14 hosts uroce hosts, its edges resequencing (up --reorder). Checks:
status lists the two as VMs with their boot time and rxe's active MTU (2048:
the fabric's RoCE MTU); `exec` returns a command's output and exit code, and
refuses a host that is no VM; every host reaches every other (all-pairs ping,
from inside the VMs for theirs); perftest's ib_write_bw from h0 to h8
completes under ECMP and under Ofan, and rxe's hw_counters are logged
(out-of-sequence requests at the receiver, retries at the sender: rxe places
nothing out of order); ib_send_lat completes under ECMP; a ring all-gather of
ofan-coll ranks over libibverbs in the two VMs (`run --hosts vm`) verifies
every buffer under ECMP, Ofan and RPS and reports rxe's counters, with no
out-of-sequence request at rxe under any (the edges hand it each QP's packets
in order; two hosts on an idle fabric see little reordering even under RPS:
bench/run-mixed measures the stage under load); with --cts too (its
clear-to-sends on a priority QP), which a run over both stacks refuses; a
mixed all-gather over rxe and uroce ranks verifies too; Open MPI across the
two VMs (`ofan-emu mpirun`, UCX over rxe, its launch on the management
network) computes MPI_Allreduce and MPI_Alltoall right under ECMP and Ofan,
refuses more ranks than hosts, a missing program and a uroce host (exit 2),
passes the job's exit code on, and, killed mid-run, leaves no orted, rank
or session directory in either guest; `ofan-emu app` runs ib_write_bw,
rping and ucx_perftest between them; the same two VMs on
the per-switch engine with --reorder: the all-gather under Ofan verifies
with no out-of-sequence request at rxe; down leaves no namespace, process
(qemu included) or file behind.
"""
import atexit
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import SKIP, check, emu as checks_emu, failures, log  # noqa: E402
from leftovers import leftovers  # noqa: E402

NAME = f"fv{os.getpid() % 100000}"
VMS = ("h0", "h8")
ADDR = {"h0": "10.0.0.2", "h8": "10.2.0.2"}


# ofan-emu ARGS (checks.emu) with this test's timeout; ok_codes None: no log
# of a failing exit (the test checks it).
emu = functools.partial(checks_emu, timeout=600, ok_codes=None)


def exec_json(host, *cmd, timeout=300):
    p = emu("exec", "--name", NAME, host, "--json", "--timeout", str(timeout), "--", *cmd,
            timeout=timeout + 60)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr}


def counters(host):
    r = exec_json(host, "sh", "-c", "cd /sys/class/infiniband/rxe0/ports/1/hw_counters && "
                  "for f in *; do echo $f $(cat $f); done")
    return {k: int(v) for k, v in (line.split() for line in r["stdout"].splitlines()
                                   if line.strip())}


def set_policy(lb):
    sys.path.insert(0, str(REPO / "emu"))
    from fabric.fabric import load
    load(NAME).set_policy(lb)  # every live switch, the fabric's Ofan mode (combined)


def write_bw(lb):
    """ib_write_bw h0 -> h8 under lb; returns (ok, Gb/s, counter deltas)."""
    set_policy(lb)
    before = {h: counters(h) for h in VMS}
    args = ["ib_write_bw", "-d", "rxe0", "-x", "1", "-F", "--report_gbits", "-s", "65536",
            "-n", "40"]
    server = {}
    t = threading.Thread(target=lambda: server.update(exec_json("h8", *args, timeout=240)))
    t.start()
    client = exec_json("h0", "sh", "-c", "sleep 3; exec " + " ".join(args) + " " + ADDR["h8"],
                       timeout=240)
    t.join()
    after = {h: counters(h) for h in VMS}
    delta = {h: {k: after[h][k] - before[h].get(k, 0) for k in after[h]
                 if after[h][k] != before[h].get(k, 0)} for h in VMS}
    gbps = None
    for line in client.get("stdout", "").splitlines():
        f = line.split()
        if len(f) == 5 and f[0] == "65536":
            gbps = float(f[3])
    ok = client.get("rc") == 0 and server.get("rc") == 0 and gbps is not None
    if not ok:
        log(f"  client: {client.get('stdout', '')[-600:]} {client.get('stderr', '')[-400:]}")
        log(f"  server: {server.get('stdout', '')[-300:]} {server.get('stderr', '')[-400:]}")
    return ok, gbps, delta


def guest_leftovers():
    """Open MPI's processes and session files in the two guests."""
    out = {}
    for h in VMS:
        r = exec_json(h, "sh", "-c", "pgrep -l -x 'orted|sleep|ofan-mpi-bench'; "
                      "ls -d /tmp/ompi.* 2>/dev/null; true", timeout=60)
        out[h] = r.get("stdout", "").strip()
    return out


def calls_ordered(row: dict) -> bool:
    """ofan-mpi-bench's per-call times: min <= median, mean <= max."""
    t = [row.get(k, -1) for k in ("time_us_min", "time_us_median", "time_us", "time_us_max")]
    return 0 < t[0] <= t[1] <= t[3] and t[0] <= t[2] <= t[3]


def mpi_and_apps():
    """Open MPI over UCX over rxe (ofan-emu mpirun), its bad input, a job
    killed mid-run, and the pairwise tools (ofan-emu app)."""
    bench = Path(os.environ.get("OFAN_BUILD_DIR", REPO / "build")) / "emu" / "mpi" / \
        "ofan-mpi-bench"
    if not check("ofan-mpi-bench is built (Open MPI: libopenmpi-dev)", bench.exists(),
                 str(bench)):
        return
    p = emu("mpirun", "--name", NAME, "-np", "2", "--lbs", "ecmp,ofan", "--timeout", "600",
            "--json", "--", str(bench), "--ops", "allreduce,alltoall", "--sizes", "64KiB",
            "--iters", "2", "--json", timeout=1500)
    res = json.loads(p.stdout) if p.stdout.strip() else {}
    for lb in ("ecmp", "ofan"):
        x = next((r for r in res.get("runs", []) if r.get("lb") == lb), {})
        try:
            out = json.loads(x.get("stdout", "").strip().splitlines()[-1])
        except (ValueError, IndexError):
            out = {}
        rows = {r["op"]: r for r in out.get("rows", [])}
        check(f"mpirun -np 2 under {lb}: MPI_Allreduce and MPI_Alltoall over UCX on rxe, "
              "every element checked right",
              x.get("rc") == 0 and out.get("verified") is True and out.get("ranks") == 2 and
              all(rows.get(op, {}).get("busbw_gbps", 0) > 0 and calls_ordered(rows[op])
                  for op in ("allreduce", "alltoall")),
              f"rc {p.returncode} {x.get('rc')} {x.get('stderr', '')[-400:]} "
              f"{p.stderr.strip()[-400:]}")
        log(f"  {lb}: {rows}; rxe h8: {x.get('rxe_counters', {}).get('h8')}")
    p = emu("mpirun", "--name", NAME, "-np", "3", "--", str(bench))
    check("mpirun -np 3 on 2 VM hosts: exit 2, --oversubscribe named",
          p.returncode == 2 and "--oversubscribe" in p.stderr, p.stderr.strip()[-300:])
    p = emu("mpirun", "--name", NAME, "--", "/nonexistent/program")
    check("mpirun of a program the guests cannot find: exit 2",
          p.returncode == 2 and "not found" in p.stderr, p.stderr.strip()[-300:])
    p = emu("mpirun", "--name", NAME, "--hosts", "h1", "--", str(bench))
    check("mpirun --hosts h1 (a uroce host): exit 2", p.returncode == 2 and
          "not a VM host" in p.stderr, p.stderr.strip()[-300:])
    p = emu("mpirun", "--name", NAME, "--", "sh", "-c", "exit 7", timeout=600)
    check("mpirun's exit code is the job's (7)", p.returncode == 7, p.stderr.strip()[-300:])
    # A program rewritten on this machine between two jobs runs as rewritten
    # (the guests' 9p caches would keep the first: mpi.FRESH_VIEW).
    with tempfile.TemporaryDirectory(dir=bench.parent) as d:
        prog = Path(d) / "says.sh"
        said = []
        for word in ("first", "again"):
            prog.write_text(f"#!/bin/sh\necho {word}\n")
            prog.chmod(0o755)
            p = emu("mpirun", "--name", NAME, "-np", "1", "--hosts", VMS[0], "--", str(prog),
                    timeout=600)
            said.append(p.stdout.strip())
    check("mpirun runs a program rewritten since the last job as it is now",
          said == ["first", "again"], str(said))
    # A job killed mid-run (SIGTERM to ofan-emu): nothing left in the guests.
    job = subprocess.Popen([str(REPO / "emu" / "ofan-emu"), "mpirun", "--name", NAME, "--",
                            "sleep", "600"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    end = time.monotonic() + 300
    running = False
    while time.monotonic() < end and job.poll() is None and not running:
        time.sleep(2)
        running = all("sleep" in v for v in guest_leftovers().values())
    job.send_signal(signal.SIGTERM)
    try:
        _, err = job.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        job.kill()
        _, err = job.communicate()
    left = guest_leftovers()
    check("mpirun killed mid-run (its ranks were running): no orted, rank or session dir "
          "left in any guest", running and not any(left.values()),
          f"running {running}, left {left}, {err.strip()[-300:]}")
    for app, key in (("ib_write_bw", "bw_avg_gbps"), ("rping", "pings"),
                     ("ucx_tag_bw", "bw_avg_gbps")):
        p = emu("app", "--name", NAME, app, "--iters", "20", "--lbs", "ecmp", "--json",
                timeout=900)
        res = json.loads(p.stdout) if p.stdout.strip() else {}
        x = (res.get("runs") or [{}])[0]
        check(f"app {app} h0 -> h8: completes, {key} parsed",
              p.returncode == 0 and (x.get("result") or {}).get(key, 0) > 0,
              f"rc {p.returncode} {x.get('error')} {p.stderr.strip()[-300:]}")
        log(f"  {app}: {x.get('result')}")


def main():
    if os.geteuid() != 0:
        log("SKIP: needs root")
        return SKIP
    c = emu("vm", "check")
    if c.returncode != 0:
        log(f"SKIP: VMs cannot run here: {c.stdout.strip()}")
        return SKIP
    atexit.register(lambda: emu("down", "--name", NAME, timeout=120))
    p = emu("up", "--k", "4", "--levels", "3", "--name", NAME, "--vm-hosts", ",".join(VMS),
            "--reorder", "--json", timeout=900)
    st = json.loads(p.stdout) if p.returncode == 0 else {}
    if not check("up --vm-hosts h0,h8 --reorder", p.returncode == 0, p.stderr.strip()[-800:]):
        return 1
    log("  " + "; ".join(line for line in p.stderr.splitlines() if "VM host" in line))
    vms = {h["name"]: h for h in st["hosts"] if h.get("kind") == "vm"}
    check("status lists h0 and h8 as VMs, running, rxe active MTU 2048",
          sorted(vms) == sorted(VMS) and all(v["alive"] and v["active_mtu"] == 2048 and
                                             v["boot_s"] > 0 for v in vms.values()), str(vms))
    r = exec_json("h0", "sh", "-c", "echo out; echo err >&2; exit 3")
    check("exec: output and exit code", r.get("rc") == 3 and r.get("stdout") == "out\n" and
          r.get("stderr") == "err\n", str(r))
    r = emu("exec", "--name", NAME, "h1", "--", "true")
    check("exec on a uroce host: refused, exit 2", r.returncode == 2 and
          "not a VM host" in r.stderr, r.stderr.strip())
    r = emu("ping", "--name", NAME, "--json")
    pr = json.loads(r.stdout) if r.stdout.strip() else {}
    check("all 240 host pairs reach each other, VMs included",
          r.returncode == 0 and pr.get("ok") == 240, str(pr)[:300])
    for lb in ("ecmp", "ofan"):
        ok, gbps, delta = write_bw(lb)
        check(f"ib_write_bw h0 -> h8 under {lb}", ok, f"{gbps} Gb/s")
        log(f"  rxe counters under {lb}: h0 {delta['h0']}; h8 {delta['h8']}")
    # perftest's latency check, SEND-based, across the fabric (ECMP here).
    set_policy("ecmp")
    lat_args = ["ib_send_lat", "-d", "rxe0", "-x", "1", "-F", "-n", "50"]
    server = {}
    t = threading.Thread(target=lambda: server.update(exec_json("h8", *lat_args, timeout=180)))
    t.start()
    client = exec_json("h0", "sh", "-c", "sleep 3; exec " + " ".join(lat_args) + " " +
                       ADDR["h8"], timeout=180)
    t.join()
    lat = [line.split() for line in client.get("stdout", "").splitlines()
           if line.split()[:1] == ["2"] and len(line.split()) >= 5]
    check("ib_send_lat h0 -> h8: completes, with a latency line",
          client.get("rc") == 0 and server.get("rc") == 0 and bool(lat),
          f"{lat[0] if lat else client.get('stdout', '')[-300:]}")
    # The collective engine over libibverbs: one ofan-coll rank per VM.
    p = emu("run", "--name", NAME, "--workload", "allgather", "--msg", "128KiB", "--hosts", "vm",
            "--lbs", "ecmp,ofan,rps", "--qps", "2", "--json", timeout=900)
    res = json.loads(p.stdout) if p.stdout.strip() else {}
    runs = {x["lb"]: x for x in res.get("runs", [])}
    for lb in ("ecmp", "ofan", "rps"):
        x = runs.get(lb, {})
        check(f"verbs all-gather over h0 and h8 under {lb}: every buffer verified",
              x.get("verified") is True and x.get("hosts") == "vm" and not x.get("error"),
              f"rc {p.returncode} {x.get('error')} {p.stderr.strip()[-400:]}")
        check("  ... with rxe's counters (names found at run time) and busbw",
              isinstance(x.get("rxe_counters"), dict) and "rcvd_pkts" in x["rxe_counters"]
              and (x.get("busbw_gbps") or 0) > 0, str(x.get("rxe_counters"))[:300])
        check("  ... and, resequenced at the edges, no out-of-sequence request at rxe",
              x.get("out_of_sequence") == 0,
              f"out of sequence {x.get('out_of_sequence')}, go-back-N {x.get('retransmissions')}"
              f", reorder held {x.get('reorder_held')}, timeouts {x.get('reorder_timeouts')}")
        log(f"  {lb}: cct {x.get('cct_us')} us, go-back-N {x.get('retransmissions')}, "
            f"reorder held {x.get('reorder_held')}")
    # Receiver-driven admission over rxe: the clear-to-sends are zero-length
    # writes on a QP of their own in the strict-priority class.
    p = emu("run", "--name", NAME, "--workload", "perm", "--msg", "128KiB", "--hosts", "vm",
            "--lbs", "ecmp", "--cts", "--channels", "1", "--channel-bytes", "16KiB", "--json",
            timeout=900)
    res = json.loads(p.stdout) if p.stdout.strip() else {}
    x = (res.get("runs") or [{}])[0]
    check("run --cts over h0 and h8 (rxe): verified, with the chunks' waits for a slot",
          x.get("verified") is True and not x.get("error") and
          (x.get("cts_wait_us") or {}).get("n", 0) > 0,
          f"rc {p.returncode} {x.get('error')} {x.get('cts_wait_us')} {p.stderr.strip()[-400:]}")
    p = emu("run", "--name", NAME, "--workload", "perm", "--msg", "64KiB", "--hosts",
            "h0,h1,h8,h9", "--lbs", "ecmp", "--cts")
    check("run --cts over rxe and uroce ranks together: refused, exit 2", p.returncode == 2 and
          "not both" in p.stderr, p.stderr.strip()[-300:])
    # Both stacks in one collective: uroce connects by ofan-rc-1 too.
    p = emu("run", "--name", NAME, "--workload", "allgather", "--msg", "128KiB",
            "--hosts", "h0,h1,h8,h9", "--lbs", "ecmp", "--json", timeout=900)
    res = json.loads(p.stdout) if p.stdout.strip() else {}
    x = (res.get("runs") or [{}])[0]
    check("a mixed all-gather (rxe h0, h8 and uroce h1, h9): every buffer verified",
          res.get("host_kind") == "mixed" and x.get("verified") is True and not x.get("error"),
          f"rc {p.returncode} {x.get('error')} {p.stderr.strip()[-400:]}")
    mpi_and_apps()
    # The per-switch engine resequences too, on its ports' TSC.
    emu("down", "--name", NAME, timeout=120)
    p = emu("up", "--k", "4", "--levels", "3", "--name", NAME, "--vm-hosts", ",".join(VMS),
            "--reorder", "--engine", "per-switch", timeout=900)
    if check("up --engine per-switch --vm-hosts h0,h8 --reorder", p.returncode == 0,
             p.stderr.strip()[-800:]):
        p = emu("run", "--name", NAME, "--workload", "allgather", "--msg", "128KiB", "--hosts",
                "vm", "--lbs", "ofan", "--qps", "2", "--json", timeout=900)
        res = json.loads(p.stdout) if p.stdout.strip() else {}
        x = (res.get("runs") or [{}])[0]
        check("per-switch engine: verbs all-gather over h0 and h8 under ofan, every buffer "
              "verified, no out-of-sequence request at rxe",
              x.get("verified") is True and not x.get("error") and x.get("out_of_sequence") == 0
              and x.get("reorder_held") is not None,
              f"rc {p.returncode} {x.get('error')} oos {x.get('out_of_sequence')} "
              f"held {x.get('reorder_held')} {p.stderr.strip()[-400:]}")
    r = emu("down", "--name", NAME, "--json", timeout=120)
    left = leftovers(NAME)
    check("down leaves nothing (qemu included)", r.returncode == 0 and not any(left.values()),
          str(left))
    log(f"{len(failures)} failure(s)" + (": " + "; ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
