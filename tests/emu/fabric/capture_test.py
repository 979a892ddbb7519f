#!/usr/bin/python3
"""`ofan-emu capture`: pcapng of any link of a fabric, read back by tshark.

    capture_test.py      (root; Debian's /usr/bin/python3 and tshark)

On a k=4 leaf-spine of ofan-dp switches, on both engines (the shared
engine's links between switches are in memory): a capture of a host's link
during a uroce permutation holds RoCEv2 frames that tshark decodes (BTH opcode,
destination QP, PSN), in both directions, with each QP's PSNs in sequence;
two captures of one switch run at once (on the shared engine, the uplink's
timestamps are emulated: frames it sent one after another are at least a
serialisation apart at the link's rate); -w - streams into `tshark -i -`;
--duration ends a capture; bad requests exit 2 with one line. On a kernel
leaf-spine the same verb captures with dumpcap. Nothing is left behind.

Exit: 0 pass, 1 fail, 77 skip (not root, no AF_XDP / hugepages, no tshark).
"""
import atexit
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import (  # noqa: E402
    EMU, SKIP, check, emu as checks_emu, failures, has_shared_engine, log)

BUILD = Path(os.environ.get("OFAN_BUILD_DIR", REPO / "build"))
PID = os.getpid()
NAMES = [f"ca{PID}", f"ck{PID}", f"cs{PID}"]
LINK_MBPS = 100
TMP = Path(tempfile.mkdtemp(prefix="ofan-capture-test-"))
RC_ACK = 17  # the BTH opcode of an RC ACK (IBTA Table 38); RC opcodes are 0..31
# RoCEv2's CNP (Annex A17): a receiver owes one per CE-marked frame, so h0
# sends them whenever the fabric marks ECN, which a loaded run does.
CNP = 0x81


# ofan-emu ARGS (checks.emu) with this test's timeout; ok_codes None: no log
# of a failing exit (the test checks it).
emu = functools.partial(checks_emu, timeout=180, ok_codes=None)


def cleanup() -> None:
    for n in NAMES:
        subprocess.run([EMU, "down", "--name", n], capture_output=True, timeout=120)
    shutil.rmtree(TMP, ignore_errors=True)


def tshark_fields(path: Path, *fields: str, display: str = "") -> list[list[str]]:
    cmd = ["tshark", "-r", str(path), "-T", "fields"]
    if display:
        cmd += ["-Y", display]
    for f in fields:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return [line.split("\t") for line in r.stdout.splitlines() if line.strip()]


def psns_in_sequence(rows: list[list[str]]) -> tuple[bool, str]:
    """Per destination QP, no data PSN beyond one past the highest sent
    before: new data goes out in sequence, and everything else is a
    retransmission (go-back-N rewinds, and a late ACK may then move the
    requester forward again, within what it had sent: the CI's loaded run
    showed that). Seen on h0's own link, before any load balancer could
    reorder it. ACKs and CNPs are the responder's and carry no data PSN of
    h0's. The first violation, if any, with the rows before it."""
    top: dict[str, int] = {}
    for i, (_direction, opcode, qp, psn) in enumerate(rows):
        if int(opcode) in (RC_ACK, CNP):
            continue
        p = int(psn)
        if qp in top and p > top[qp] + 1:
            return False, (f"QP {qp}: PSN {p} after at most {top[qp]}; "
                           f"rows {rows[max(0, i - 6):i + 2]}")
        top[qp] = max(top.get(qp, p), p)
    return True, f"{len(top)} QPs"


def serialised(rows: list[list[str]], mbps: float) -> tuple[bool, str]:
    """Rows (time_epoch, frame.len) of frames one port sent: each is at least
    its own serialisation after the one before (1 ns of rounding allowed)."""
    from decimal import Decimal
    slacks = [(Decimal(t1) - Decimal(t0)) * 10**9 - Decimal(int(n1) * 8) * 1000 / Decimal(mbps)
              for (t0, _), (t1, n1) in zip(rows, rows[1:])]
    worst = min(slacks) if slacks else None
    return (worst is not None and worst >= -1), f"{len(rows)} frames, least slack {worst} ns"


def ofan_fabric(name: str, engine: str) -> None:
    what = "ofan-dp leaf-spine k=4" + (" --engine shared" if engine == "shared" else "")
    r = emu("up", "--k", "4", "--levels", "2", "--name", name, "--engine", engine,
            "--link-mbps", str(LINK_MBPS))
    if not check(f"{what}: up", r.returncode == 0, r.stderr[-400:]):
        return
    # Bad requests: one line, exit 2.
    for args, why in ((["--link", "nosuch:1"], "no node"), (["--link", "l0"], "SWITCH:PORT"),
                      (["--link", "l0:9"], "ports 0..3"),
                      (["--link", "h0", "--snaplen", "10"], "snaplen"),
                      (["--link", "h0", "--count", "-1"], "--count")):
        p = emu("capture", "--name", name, *args, "-w", str(TMP / "x.pcapng"))
        check(f"{what}: capture {' '.join(args)}: exit 2, one line naming the problem",
              p.returncode == 2 and why in p.stderr and len(p.stderr.strip().splitlines()) == 1
              and "Traceback" not in p.stderr, p.stderr.strip()[-300:])
    p = emu("capture", "--name", name, "--link", "h0", "-w", "/nonexistent/dir/x.pcapng")
    check(f"{what}: -w into a missing directory: exit 2", p.returncode == 2, p.stderr.strip())
    p = emu("run", "--name", name, "--workload", "perm", "--msg", "4KiB", "--lbs", "ecmp",
            "--send-log", "/proc/no-such-folder")
    check(f"{what}: run --send-log where no folder can be made: exit 2, one line",
          p.returncode == 2 and "--send-log" in p.stderr and "Traceback" not in p.stderr,
          p.stderr.strip()[-300:])

    # A capture of h0's link (at l0:0) and of l0's first uplink at once,
    # during a uroce permutation.
    host_file, up_file = TMP / "h0.pcapng", TMP / "up.pcapng"
    caps = [subprocess.Popen([EMU, "capture", "--name", name, "--link", link, "--count",
                              str(count), "--duration", "60", "--json", "-w", str(f)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for link, count, f in (("h0", 200, host_file), ("l0:2", 100, up_file))]
    time.sleep(1.5)
    r = emu("run", "--name", name, "--workload", "perm", "--msg", "256KiB", "--lbs", "ofan",
            "--send-log", str(TMP / f"sent-{engine}"), "--json", timeout=300)
    try:
        verified = all(x["verified"] for x in json.loads(r.stdout)["runs"])
    except (ValueError, KeyError, TypeError):
        verified = False
    check(f"{what}: the permutation ran and verified", r.returncode in (0, 3) and verified,
          r.stderr[-300:])
    summaries = []
    for c in caps:
        try:
            _, err = c.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            c.send_signal(signal.SIGINT)
            _, err = c.communicate(timeout=30)
        lines = [ln for ln in err.splitlines() if ln.startswith("{")]
        summaries.append(json.loads(lines[-1]) if lines else {})
        check(f"{what}: capture exits 0", c.returncode == 0, err.strip()[-300:])
    check(f"{what}: two captures of one switch at once, each to its count",
          summaries[0].get("frames") == 200 and summaries[1].get("frames") == 100
          and summaries[0].get("stopped_by") == "count", str(summaries))
    rows = [r for r in tshark_fields(host_file, "frame.p2p_dir", "infiniband.bth.opcode",
                                     "infiniband.bth.destqp", "infiniband.bth.psn",
                                     display="infiniband") if len(r) == 4]
    ops = {int(r[1]) for r in rows}
    dirs = {r[0] for r in rows}
    check(f"{what}: tshark decodes RoCEv2 in h0's capture, both directions",
          len(rows) >= 150 and dirs == {"0", "1"}, f"{len(rows)} RoCE frames, directions {dirs}")
    check(f"{what}: BTH opcodes are RC ones (or CNP), ACKs among them",
          bool(ops) and max(ops - {CNP}, default=32) < 32 and RC_ACK in ops, str(sorted(ops)))
    # Direction 1: received by the switch, i.e. sent by h0.
    ok, detail = psns_in_sequence([r for r in rows if r[0] == "1"])
    check(f"{what}: h0's new data PSNs per QP in sequence (none past the highest sent + 1)",
          ok, detail)
    # run --send-log: h0's log holds every frame the capture saw h0 send,
    # each logged once per copy at least (a retransmission is a new line).
    logged: dict[tuple[int, int], int] = {}
    log_file = TMP / f"sent-{engine}" / "ofan-s1" / "h0.tsv"
    if log_file.exists():
        for line in log_file.read_text().splitlines()[1:]:
            _t, q, p, _op, _n = line.split("\t")
            logged[(int(q), int(p))] = logged.get((int(q), int(p)), 0) + 1
    seen: dict[tuple[int, int], int] = {}
    for r in rows:
        if r[0] == "1":
            key = (int(r[2], 0), int(r[3]))
            seen[key] = seen.get(key, 0) + 1
    missing = [k for k, n in seen.items() if logged.get(k, 0) < n]
    check(f"{what}: run --send-log: every frame h0 sent in the capture is in h0's send log",
          bool(seen) and not missing, f"{len(seen)} captured, {len(logged)} logged, "
          f"missing {missing[:5]}")
    names = {r[0] for r in tshark_fields(up_file, "frame.interface_name")}
    check(f"{what}: the uplink capture names its interface", names == {f"{name}-l0:p2"},
          str(names))
    if engine == "shared":
        # Direction 0: sent by the switch on that port (pcapng's outbound).
        sent = [r for r in tshark_fields(up_file, "frame.p2p_dir", "frame.time_epoch",
                                         "frame.len") if len(r) == 3 and r[0] == "0"]
        ok, detail = serialised([r[1:] for r in sent], LINK_MBPS)
        check(f"{what}: emulated timestamps: frames sent on the in-memory uplink are a "
              "serialisation apart at the link's rate", ok and len(sent) >= 10, detail)

    # -w - into tshark -i -, ended by --duration. The pings run from before
    # the capture starts until after it ends (10 a second), so that a loaded
    # machine's slow start of either cannot leave the window empty.
    pinger = subprocess.Popen(["ip", "netns", "exec", f"ofe-{name}-h1", "ping", "-i", "0.1",
                               "-w", "30", "10.0.1.2"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    reader = subprocess.Popen(["tshark", "-i", "-", "-T", "fields", "-e", "ip.dst"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    cap = subprocess.Popen([EMU, "capture", "--name", name, "--link", "h1", "--duration", "3",
                            "-w", "-"], stdout=reader.stdin, stderr=subprocess.PIPE, text=True)
    assert reader.stdin is not None
    reader.stdin.close()
    try:
        _, err = cap.communicate(timeout=60)
    finally:
        pinger.terminate()
        pinger.wait(timeout=30)
    assert reader.stdout is not None
    out = reader.stdout.read()  # tshark ends when the capture closes the pipe
    reader.wait(timeout=30)
    check(f"{what}: -w - streams into tshark -i -, ended by --duration",
          cap.returncode == 0 and out.count("10.0.1.2") >= 5, f"{out.strip()[:200]} {err[-200:]}")
    r = emu("down", "--name", name)
    left = list((Path(os.environ.get("OFAN_EMU_RUN_DIR", "/run/ofan-emu")) / name).glob("*"))
    check(f"{what}: down leaves no capture file", r.returncode == 0 and not left, str(left))


def kernel_fabric(name: str) -> None:
    what = "kernel leaf-spine k=4"
    r = emu("up", "--k", "4", "--levels", "2", "--name", name, "--switch", "kernel")
    if not check(f"{what}: up", r.returncode == 0, r.stderr[-400:]):
        return
    f = TMP / "k.pcapng"
    cap = subprocess.Popen([EMU, "capture", "--name", name, "--link", "h0", "--count", "6",
                            "--duration", "30", "-w", str(f)], stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    subprocess.run(["ip", "netns", "exec", f"ofe-{name}-h0", "ping", "-c", "3", "-i", "0.2",
                    "10.0.1.2"], capture_output=True, timeout=30)
    _, err = cap.communicate(timeout=60)
    rows = tshark_fields(f, "ip.src", "ip.dst", display="icmp")
    check(f"{what}: dumpcap captures both directions of h0's link",
          cap.returncode == 0 and len(rows) >= 6
          and {tuple(r) for r in rows} >= {("10.0.0.2", "10.0.1.2"), ("10.0.1.2", "10.0.0.2")},
          f"{rows[:4]} {err[-200:]}")
    emu("down", "--name", name)


def main() -> int:
    if os.geteuid() != 0:
        log("SKIP: needs root (namespaces, AF_XDP, hugepages)")
        return SKIP
    if not shutil.which("tshark"):
        log("SKIP: no tshark (bash scripts/setup.sh)")
        return SKIP
    for b in ("dataplane/ofan-dp", "control/ofanctl/ofanctl", "emu/ofan-topo", "emu/uroce/uroce"):
        if not (BUILD / b).exists():
            log(f"FAIL: {b} is not built")
            return 1
    atexit.register(cleanup)
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, lambda *_: sys.exit(1))
    ofan_fabric(NAMES[0], "per-switch")
    if has_shared_engine(BUILD):
        ofan_fabric(NAMES[2], "shared")
    kernel_fabric(NAMES[1])
    log(f"{len(failures)} failure(s)" + (": " + "; ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
