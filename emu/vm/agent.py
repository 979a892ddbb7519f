"""The guest agent: PID 1 of an ofan-emu VM, after the initramfs's /init.

Runs in the guest on the host's own python3 (the root is the host's, over 9p).
Speaks line-delimited JSON on the virtio-serial port qemu.py opens
(initramfs.AGENT_PORT); every message is one object:

  host -> guest  {"id": N, "op": "exec", "argv": [...], "env": {...}, "cwd": DIR,
                  "timeout": S}        run a program; output streams back
                 {"id": N, "op": "poweroff"}
  guest -> host  {"event": "ready", "kernel": ..., "uptime_s": ..., "boot": [...]}
                 {"id": N, "fd": 1|2, "data": TEXT}    output, as it comes
                 {"id": N, "rc": RC, "seconds": S}     the end (rc -9 on timeout)
                 {"id": N, "error": TEXT}              could not start it

Several execs may run at once. As PID 1 it also reaps orphans, without
taking the exit status of a program it started itself (waitid WNOWAIT).
Both sides read the other's lines with this file's parsers: parse_request
here, parse_message in qemu.py's reader. A line that is not JSON is skipped;
a request of the wrong shape gets an error reply, never the end of PID 1.
"""
import json
import math
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, BinaryIO, IO

PORT_NAME = "ofan.agent"  # initramfs.AGENT_PORT
# Modules the hosts need past boot, loaded from the host's /lib/modules: the
# RDMA stack (rxe and the CM for librdmacm), netem, veth, AF_XDP's needs.
MODULES = ["virtio_net", "crc32_generic", "rdma_rxe", "ib_uverbs", "rdma_ucm", "sch_netem",
           "sch_tbf", "veth", "tun", "bridge", "act_mirred", "cls_u32", "sch_ingress"]

write_lock = threading.Lock()
ours = set()
ours_lock = threading.Lock()


@dataclass
class Request:
    """One host -> guest message."""
    id: int
    op: str                                   # exec | poweroff
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = "/"
    timeout: float | None = None


class BadRequest(ValueError):
    """A JSON line that is no request; rid: its id when it has one."""

    def __init__(self, rid: int | None, why: str) -> None:
        super().__init__(why)
        self.rid = rid


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_request(line: bytes) -> Request | None:
    """A host -> guest line -> Request; None for a line that is not JSON
    (noise on the channel); BadRequest for JSON that is not a request."""
    try:
        d = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(d, dict):
        raise BadRequest(None, "a request is a JSON object")
    rid = d.get("id")
    if not isinstance(rid, int) or isinstance(rid, bool):
        raise BadRequest(None, f"id {rid!r}: an integer")
    op = d.get("op")
    if op == "poweroff":
        return Request(rid, op)
    if op != "exec":
        raise BadRequest(rid, f"unknown op {op!r}")
    argv, env, cwd, timeout = d.get("argv"), d.get("env") or {}, d.get("cwd") or "/", \
        d.get("timeout")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise BadRequest(rid, "argv: a non-empty list of strings")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                            for k, v in env.items()):
        raise BadRequest(rid, "env: a map of strings")
    if not isinstance(cwd, str):
        raise BadRequest(rid, "cwd: a string")
    if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(
            timeout, bool) or not math.isfinite(timeout) or timeout <= 0):
        raise BadRequest(rid, "timeout: a number of seconds > 0, or null")
    return Request(rid, op, argv, env, cwd, None if timeout is None else float(timeout))


def parse_message(line: bytes | str) -> dict[str, Any] | None:
    """A guest -> host line (what this agent sends) -> the message; None for
    anything else: an event {"event": str, ...}, output {"id", "fd": 1|2,
    "data": str}, the end {"id", "rc": int}, or {"id", "error": str}."""
    try:
        d = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(d, dict):
        return None
    if isinstance(d.get("event"), str):
        return d
    if not _is_int(d.get("id")):
        return None
    if d.get("fd") in (1, 2) and not isinstance(d["fd"], bool) and isinstance(d.get("data"), str):
        return d
    if "fd" not in d and _is_int(d.get("rc")):
        return d
    if "fd" not in d and "rc" not in d and isinstance(d.get("error"), str):
        return d
    return None


def send(port: BinaryIO, obj: dict[str, Any]) -> None:
    line = (json.dumps(obj) + "\n").encode()
    with write_lock:
        port.write(line)
        port.flush()


def find_port() -> str:
    for d in sorted(os.listdir("/sys/class/virtio-ports")):
        try:
            with open(f"/sys/class/virtio-ports/{d}/name") as f:
                if f.read().strip() == PORT_NAME:
                    return f"/dev/{d}"
        except OSError:
            continue
    raise SystemExit(f"agent: no virtio-serial port named {PORT_NAME}")


def boot() -> list[str]:
    """What the guest needs before the host's programs run: modules, lo, the
    hugepage and bpf mounts. Returns notes for the ready event."""
    notes = []
    # One modprobe for all (every process start costs under TCG); one by one
    # only to name what failed.
    if subprocess.run(["modprobe", "-a", *MODULES], capture_output=True).returncode != 0:
        for m in MODULES:
            r = subprocess.run(["modprobe", m], capture_output=True, text=True)
            if r.returncode != 0:
                notes.append(f"modprobe {m}: {r.stderr.strip()}")
    subprocess.run(["ip", "link", "set", "lo", "up"])
    for fs, where in (("bpf", "/sys/fs/bpf"), ("hugetlbfs", "/dev/hugepages"),
                      ("debugfs", "/sys/kernel/debug")):
        try:
            os.makedirs(where, exist_ok=True)
        except OSError:
            pass
        subprocess.run(["mount", "-t", fs, fs, where], capture_output=True)
    return notes


def reaper() -> None:
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None
        if info is None:
            time.sleep(0.2)
            continue
        with ours_lock:
            mine = info.si_pid in ours
        if mine:
            time.sleep(0.05)  # its own thread collects it
        else:
            try:
                os.waitpid(info.si_pid, 0)
            except ChildProcessError:
                pass


def pump(port: BinaryIO, rid: int, fd: int, stream: IO[bytes]) -> None:
    while True:
        chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
        if not chunk:
            return
        send(port, {"id": rid, "fd": fd, "data": chunk.decode(errors="replace")})


def execute(port: BinaryIO, req: Request) -> None:
    rid = req.id
    t0 = time.monotonic()
    env = dict(os.environ)
    env.update(req.env)
    try:
        with ours_lock:
            p = subprocess.Popen(req.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, cwd=req.cwd, env=env,
                                 start_new_session=True)
            ours.add(p.pid)
    except (OSError, ValueError) as e:
        send(port, {"id": rid, "error": f"cannot run {req.argv}: {e}"})
        return
    assert p.stdout is not None and p.stderr is not None  # both are PIPE
    pumps = [threading.Thread(target=pump, args=(port, rid, 1, p.stdout), daemon=True),
             threading.Thread(target=pump, args=(port, rid, 2, p.stderr), daemon=True)]
    for t in pumps:
        t.start()
    try:
        rc = p.wait(timeout=req.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.wait()
        rc = -9
    for t in pumps:
        t.join(timeout=5)
    with ours_lock:
        ours.discard(p.pid)
    send(port, {"id": rid, "rc": rc, "seconds": round(time.monotonic() - t0, 3)})


def main() -> int:
    os.environ.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    os.environ["HOME"] = "/tmp"  # the root is read-only
    notes = boot()
    threading.Thread(target=reaper, daemon=True).start()
    port = open(find_port(), "r+b", buffering=0)
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    send(port, {"event": "ready", "kernel": os.uname().release, "uptime_s": uptime,
                "notes": notes})
    buf = b""
    while True:
        chunk = port.read(65536)
        if not chunk:
            time.sleep(0.05)  # the host end is not connected (yet or any more)
            continue
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            try:
                req = parse_request(line)
            except BadRequest as e:
                send(port, {"id": e.rid, "error": str(e)})
                continue
            if req is None:
                continue
            if req.op == "poweroff":
                os.sync()  # the shares; the root is read-only
                with open("/proc/sysrq-trigger", "w") as f:
                    f.write("o")
            else:
                threading.Thread(target=execute, args=(port, req), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
