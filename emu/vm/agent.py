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
"""
import json
import os
import subprocess
import sys
import threading
import time

PORT_NAME = "ofan.agent"  # initramfs.AGENT_PORT
# Modules the hosts need past boot, loaded from the host's /lib/modules: the
# RDMA stack (rxe and the CM for librdmacm), netem, veth, AF_XDP's needs.
MODULES = ["virtio_net", "crc32_generic", "rdma_rxe", "ib_uverbs", "rdma_ucm", "sch_netem",
           "sch_tbf", "veth", "tun", "bridge", "act_mirred", "cls_u32", "sch_ingress"]

write_lock = threading.Lock()
ours = set()
ours_lock = threading.Lock()


def send(port, obj):
    line = (json.dumps(obj) + "\n").encode()
    with write_lock:
        port.write(line)
        port.flush()


def find_port():
    for d in sorted(os.listdir("/sys/class/virtio-ports")):
        try:
            with open(f"/sys/class/virtio-ports/{d}/name") as f:
                if f.read().strip() == PORT_NAME:
                    return f"/dev/{d}"
        except OSError:
            continue
    raise SystemExit(f"agent: no virtio-serial port named {PORT_NAME}")


def boot():
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


def reaper():
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


def pump(port, rid, fd, stream):
    while True:
        chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
        if not chunk:
            return
        send(port, {"id": rid, "fd": fd, "data": chunk.decode(errors="replace")})


def execute(port, req):
    rid = req["id"]
    t0 = time.monotonic()
    env = dict(os.environ)
    env.update(req.get("env") or {})
    try:
        with ours_lock:
            p = subprocess.Popen(req["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, cwd=req.get("cwd") or "/", env=env,
                                 start_new_session=True)
            ours.add(p.pid)
    except (OSError, ValueError, KeyError, TypeError) as e:
        send(port, {"id": rid, "error": f"cannot run {req.get('argv')}: {e}"})
        return
    pumps = [threading.Thread(target=pump, args=(port, rid, 1, p.stdout), daemon=True),
             threading.Thread(target=pump, args=(port, rid, 2, p.stderr), daemon=True)]
    for t in pumps:
        t.start()
    try:
        rc = p.wait(timeout=req.get("timeout"))
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.wait()
        rc = -9
    for t in pumps:
        t.join(timeout=5)
    with ours_lock:
        ours.discard(p.pid)
    send(port, {"id": rid, "rc": rc, "seconds": round(time.monotonic() - t0, 3)})


def main():
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
                req = json.loads(line)
            except json.JSONDecodeError:
                continue
            if req.get("op") == "poweroff":
                os.sync()  # the shares; the root is read-only
                with open("/proc/sysrq-trigger", "w") as f:
                    f.write("o")
            elif req.get("op") == "exec":
                threading.Thread(target=execute, args=(port, req), daemon=True).start()
            else:
                send(port, {"id": req.get("id"), "error": f"unknown op {req.get('op')!r}"})


if __name__ == "__main__":
    sys.exit(main())
