#!/usr/bin/python3
"""rdma-core (rxe) hosts end to end, in one VM: ofan-verbs peer and
ofan-coll --transport verbs between rxe devices of one kernel.

    verbs_vm_test.py OFAN_VERBS OFAN_COLL     (root; reruns itself in a VM
                                               where this kernel has no rdma_rxe;
                                               77 = skipped where VMs cannot run)

Three rxe devices on veths in the VM's initial namespace (emu/verbs/rxe-local.sh:
policy routing makes what each address sends leave by its own veth). Checks:
the pair check with write and send, both directions, and tx/rx, every byte
verified by both sides, the packets on the veths; ofan-coll --transport verbs
with 3 ranks (one process each) for allgather, perm, a2a and reducescatter,
their partial results merged by `ofan-coll merge`, with rxe counters; a --qps
mismatch (pair and collective), a connect to a port nobody listens on and a
receiver killed mid-run fail with exit 1 and a clear message, none at a
deadline.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
from checks import SKIP, check, failures, log, rerun_in_vm  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
RXE_LOCAL = os.path.join(REPO, "emu", "verbs", "rxe-local.sh")
ADDRS = ["10.9.0.1", "10.9.0.2", "10.9.0.3"]


def start(argv):
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p, timeout=90):
    """(rc, parsed stdout JSON or {}, stderr) of a started process."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return -9, {}, err + " (killed: it hung)"
    try:
        j = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    except ValueError:
        j = {}
    return p.returncode, j, err.strip()


def veth_tx(i):
    with open(f"/sys/class/net/va{i}/statistics/tx_packets") as f:
        return int(f.read())


def pair(verbs, listen_extra, connect_extra, common):
    """Runs ofan-verbs peer on rxe0 (listening) and rxe1; returns both results."""
    lp = start([verbs, "peer", "--listen", ADDRS[0], "--device", "rxe0", "--json", *common,
                *listen_extra])
    time.sleep(0.2)  # not needed (the connector retries), but keeps the retries out of the log
    cp = start([verbs, "peer", "--connect", ADDRS[0], "--device", "rxe1", "--json", *common,
                *connect_extra])
    return finish(lp), finish(cp)


def pair_checks(verbs):
    common = ["--count", "300", "--size", "4096", "--qps", "3", "--setup-timeout-s", "30",
              "--timeout-s", "60"]
    for op in ("write", "send"):
        before = veth_tx(0), veth_tx(1)
        (lrc, lj, lerr), (crc, cj, cerr) = pair(verbs, [], [], ["--op", op, *common])
        ok = lrc == 0 and crc == 0
        check(f"peer --op {op} both ways: both exit 0", ok, f"{lrc} {lerr} / {crc} {cerr}")
        for side, j in (("listener", lj), ("connector", cj)):
            check(f"peer --op {op}: {side} sent 300, received 300 intact, the peer too",
                  j.get("ok") is True and j.get("sent") == 300 and j.get("received") == 300 and
                  j.get("bad") == 0 and j.get("peer_done") == {"received": 300, "bad": 0} and
                  j.get("op") == op, json.dumps(j)[:400])
        c = lj.get("rxe_counters", {})
        check(f"peer --op {op}: rxe counters by name, packets sent and received",
              c.get("sent_pkts", 0) >= 300 and c.get("rcvd_pkts", 0) >= 300, str(c))
        tx = veth_tx(0) - before[0], veth_tx(1) - before[1]
        check(f"peer --op {op}: the packets crossed the veths (not lo)",
              tx[0] >= c.get("sent_pkts", 1) and tx[1] >= cj.get("rxe_counters", {}).get(
                  "sent_pkts", 1), f"veth tx {tx}, rxe sent {c.get('sent_pkts')}")
        log(f"  {op}: {lj.get('gbps', 0):.3f} Gb/s over {lj.get('seconds', 0):.2f} s, "
            f"MTU {lj.get('mtu')}")
    # One way: rxe1 sends, rxe0 only receives.
    (lrc, lj, lerr), (crc, cj, cerr) = pair(verbs, ["--direction", "rx"], ["--direction", "tx"],
                                            ["--op", "write", *common])
    check("peer --direction rx / tx: exit 0, 300 arrived at the listener, none back",
          lrc == 0 and crc == 0 and lj.get("received") == 300 and lj.get("sent") == 0 and
          cj.get("sent") == 300 and cj.get("received") == 0, f"{lerr} {cerr} {lj} {cj}")


def bad_cases(verbs):
    t0 = time.monotonic()
    (lrc, lj, lerr), (crc, cj, cerr) = pair(verbs, ["--qps", "2"], ["--qps", "1"],
                                            ["--count", "10", "--setup-timeout-s", "10"])
    check("peer with --qps 2 against --qps 1: both exit 1 naming the QP counts",
          lrc == 1 and crc == 1 and "lists 1 QPs" in lerr and "lists 2 QPs" in cerr and
          lj.get("ok") is False, f"{lrc} {lerr} / {crc} {cerr}")
    r = subprocess.run([verbs, "peer", "--connect", ADDRS[2], "--rc-port", "18999", "--device",
                        "rxe1", "--setup-timeout-s", "2", "--json"], capture_output=True,
                       text=True, timeout=60)
    j = json.loads(r.stdout) if r.stdout.strip() else {}
    check("peer --connect to a port nobody listens on: exit 1 after --setup-timeout-s 2",
          r.returncode == 1 and "nobody answered" in r.stderr and "10.9.0.3:18999" in r.stderr
          and j.get("ok") is False, f"{r.returncode} {r.stderr.strip()}")
    r = subprocess.run([verbs, "peer", "--listen", "--connect", ADDRS[0]], capture_output=True,
                       text=True, timeout=30)
    check("peer --listen with --connect: exit 2", r.returncode == 2, r.stderr.strip())
    peer_dies(verbs)
    log(f"  bad cases: {time.monotonic() - t0:.1f} s")


def rcvd_pkts(dev):
    with open(f"/sys/class/infiniband/{dev}/ports/1/hw_counters/rcvd_pkts") as f:
        return int(f.read())


def peer_dies(verbs):
    """The receiver is killed mid-run: were the sender's writes unanswered,
    rxe would retry them for ever (retry_cnt 7), yet the sender fails at once,
    from the closed ofan-rc-1 connection, rather than at its --timeout-s."""
    common = ["--op", "write", "--count", "100000", "--size", "1024", "--qps", "2",
              "--setup-timeout-s", "30", "--timeout-s", "120", "--json"]
    start_pkts = rcvd_pkts("rxe0")
    lp = start([verbs, "peer", "--listen", ADDRS[0], "--device", "rxe0", "--direction", "rx",
                *common])
    cp = start([verbs, "peer", "--connect", ADDRS[0], "--device", "rxe1", "--direction", "tx",
                *common])
    end = time.monotonic() + 60
    while time.monotonic() < end and cp.poll() is None and rcvd_pkts("rxe0") < start_pkts + 500:
        time.sleep(0.05)
    lp.kill()
    finish(lp)
    rc, j, err = finish(cp, timeout=150)
    if rc == 0:
        log("note: the transfer ended before the receiver could be killed; not checked")
        return
    # Which comes first depends on the teardown's order in the dead process:
    # the closed connection, or a NAK (remote access error) while its QP
    # outlived its memory registration. Either way, not the deadline.
    check("peer whose receiver is killed mid-run: exit 1 at once (closed connection or a NAK), "
          "not at the deadline", rc == 1 and ("closed its connection" in err or
                                              "remote access error" in err) and
          "no progress" not in err and j.get("ok") is False and 0 < j.get("sent", 0) < 100000,
          f"{rc} {err}")


def collective(coll, workload, msg, qps):
    procs = []
    for r in range(3):
        procs.append(start([coll, "--transport", "verbs", "--rank", str(r), "--addrs",
                            ",".join(ADDRS), "--device", f"rxe{r}", "--workload", workload,
                            "--msg", msg, "--qps", str(qps), "--chunk", "16KiB",
                            "--deadline-ms", "60000", "--setup-timeout-s", "30", "--json"]))
    outs = [finish(p) for p in procs]
    ok = all(rc == 0 for rc, _, _ in outs)
    check(f"coll verbs {workload} {msg} 3 ranks x {qps} QPs: every rank exits 0", ok,
          "; ".join(f"rank {i}: rc {rc} {err[-300:]}" for i, (rc, _, err) in enumerate(outs)))
    parts = [j for _, j, _ in outs]
    fields = ("partial", "local_ranks", "verified", "transport", "error")
    wrong = [f"rank {i}: {json.dumps({k: j.get(k) for k in fields})} "
             f"rxe_counters {j.get('rxe_counters')}"
             for i, j in enumerate(parts)
             if not (j.get("partial") is True and j.get("local_ranks") == [i] and
                     j.get("verified") and j.get("transport") == "verbs" and
                     j.get("rxe_counters", {}).get("sent_pkts", 0) > 0)]
    check(f"coll verbs {workload}: partial results, verified, with rxe counters", not wrong,
          "; ".join(wrong))
    m = subprocess.run([coll, "merge"], input="\n".join(json.dumps(j) for j in parts),
                       capture_output=True, text=True, timeout=30)
    mj = json.loads(m.stdout) if m.stdout.strip() else {}
    check(f"coll verbs {workload}: ofan-coll merge gives one verified 3-rank result",
          m.returncode == 0 and mj.get("verified") and mj.get("partial") is False and
          mj.get("local_ranks") == [0, 1, 2] and len(mj.get("rank_us", [])) == 3 and
          mj.get("cct_us", 0) > 0 and mj.get("parts") == 3 and
          mj.get("rxe_counters", {}).get("sent_pkts") == sum(
              j["rxe_counters"]["sent_pkts"] for j in parts),
          f"{m.returncode} {m.stderr.strip()} {m.stdout[:300]}")
    log(f"  {workload}: cct {mj.get('cct_us', 0) / 1e3:.1f} ms, algbw "
        f"{mj.get('algbw_gbps', 0):.3f} Gb/s")


def collective_bad(coll):
    # Rank 1 runs another QP count: the rendezvous names it, every rank exits 1.
    procs = [start([coll, "--transport", "verbs", "--rank", str(r), "--addrs", ",".join(ADDRS[:2]),
                    "--device", f"rxe{r}", "--workload", "perm", "--msg", "64KiB", "--qps",
                    str(1 + r), "--setup-timeout-s", "10", "--json"]) for r in range(2)]
    outs = [finish(p, timeout=60) for p in procs]
    check("coll verbs with --qps 1 and 2: both ranks exit 1 naming the QP counts",
          all(rc == 1 and "QPs" in err for rc, _, err in outs) and
          all(j.get("error") for _, j, _ in outs), str([(rc, err[-200:]) for rc, _, err in outs]))


def in_vm(verbs, coll):
    r = subprocess.run(["sh", RXE_LOCAL, "3"], capture_output=True, text=True, timeout=60)
    if not check("rxe-local.sh 3: rxe0..rxe2 on veths", r.returncode == 0, r.stderr.strip()):
        return
    t0 = time.monotonic()
    pair_checks(verbs)
    log(f"  pair checks: {time.monotonic() - t0:.1f} s")
    bad_cases(verbs)
    t0 = time.monotonic()
    for workload, msg, qps in (("allgather", "192KiB", 2), ("perm", "256KiB", 2),
                               ("a2a", "96KiB", 1), ("reducescatter", "96KiB", 1)):
        collective(coll, workload, msg, qps)
    collective_bad(coll)
    log(f"  collectives: {time.monotonic() - t0:.1f} s")


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    verbs, coll = (os.path.abspath(a) for a in sys.argv[1:])
    if os.geteuid() != 0:
        log("SKIP: needs root (veths, rxe devices)")
        return SKIP
    if not os.path.isdir("/sys/module/rdma_rxe"):
        return rerun_in_vm("this kernel has no rdma_rxe", [os.path.abspath(__file__), verbs, coll])
    in_vm(verbs, coll)
    log(f"{len(failures)} failure(s)" + (": " + "; ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
