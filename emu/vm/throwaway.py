"""`ofan-emu vm run -- CMD`: a VM that lives for one command.

Boots Debian's kernel with the host's root read-only (qemu.Vm), runs CMD in
the guest with the caller's working directory and OFAN_* environment, streams
its output, powers off. What it is for: programs that need a kernel feature
the host's lacks (tc netem, rdma_rxe) while using the host's own binaries.

modifies: RUN_DIR/_vm/ID/ (state.json first, then the agent socket and the
          console log) and one qemu process named ofe-vm-ID; both removed on
          every exit path, and by `ofan-emu down --all` after a crash
"""
import json
import os
import shutil
import signal
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Iterable, NoReturn

from fabric.state import proc_start_time as _start_time  # one reading of /proc/PID/stat

from . import qemu

# Not a valid fabric name (state.NAME_RE): never taken for a fabric.
RUN_DIR = Path(os.environ.get("OFAN_EMU_RUN_DIR", "/run/ofan-emu")) / "_vm"
EXIT_VM = 125      # the VM failed (or cannot run here), not the command
EXIT_TIMEOUT = 124  # the command ran past --timeout (as timeout(1) says it)


def run(argv: list[str], mem_mb: int = 1024, cpus: int = 2, shares: Iterable[str | Path] = (),
        timeout: float | None = None, on_output: Callable[[int, str], None] | None = None,
        log: Callable[[str], None] | None = None) -> tuple[int, dict[str, Any]]:
    """Returns (rc, vm facts). rc is the command's, or EXIT_TIMEOUT."""
    vid = str(os.getpid())
    d = RUN_DIR / vid
    d.mkdir(parents=True, exist_ok=True)
    state = d / "state.json"
    vm = qemu.Vm(f"ofe-vm-{vid}", d, mem_mb=mem_mb, cpus=cpus, shares=shares)
    old = {s: signal.signal(s, _raise) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        state.write_text(json.dumps({"pid": os.getpid(), "start": _start_time(os.getpid())}))

        def record(v: qemu.Vm) -> None:
            state.write_text(json.dumps({"pid": os.getpid(), "start": _start_time(os.getpid()),
                                         "qemu": {"pid": v.pid, "start": _start_time(v.pid)}}))

        def restarted(v: qemu.Vm) -> None:
            record(v)
            if log:
                log("vm: no progress under KVM; restarted under TCG")

        vm.start()
        record(vm)
        if log:
            log(f"vm: booting {vm.kernel} ({vm.accel}, {cpus} vCPU, {mem_mb} MiB)")
        ready = vm.wait_ready(on_restart=restarted)
        if log:
            log(f"vm: up in {vm.boot_s:.1f} s"
                + (f"; notes: {ready['notes']}" if ready.get("notes") else ""))
        env = {k: v for k, v in os.environ.items() if k.startswith("OFAN_")}
        env["OFAN_IN_VM"] = "1"
        rc, _, _ = vm.exec(argv, timeout=timeout, env=env, cwd=os.getcwd(), on_output=on_output)
        facts = {"kernel": vm.kernel, "accel": vm.accel, "boot_s": vm.boot_s,
                 "cpus": cpus, "mem_mb": mem_mb}
        return (EXIT_TIMEOUT if rc == -9 and timeout else rc), facts
    finally:
        vm.stop()
        for s, h in old.items():
            signal.signal(s, h)
        shutil.rmtree(d, ignore_errors=True)


def _raise(signum: int, _frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _named_qemus() -> dict[str, list[int]]:
    """{VM id: [pids]} of processes named ofe-vm-ID (qemu's -name process=)
    whose agent socket is in this RUN_DIR: another run directory's VMs (a
    second server's part on the same machine, OFAN_EMU_RUN_DIR) are not
    this one's to kill, even when it has no record of them."""
    out: dict[str, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        comm = stat.split("(", 1)[1].rsplit(")", 1)[0]
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            continue  # gone already; only its parent can reap it
        if not (comm.startswith("ofe-vm-") and comm[7:].isdigit()):
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        mine = os.fsencode(RUN_DIR / comm[7:]) + b"/"
        if any(mine in a for a in argv):
            out.setdefault(comm[7:], []).append(int(d.name))
    return out


def leftovers() -> list[str]:
    """Kills the qemu of every throwaway VM whose caller is gone (found by its
    record and by its process name, which holds even when a kill landed
    between qemu's start and the record); removes its directory. Returns
    what it removed."""
    removed: list[str] = []
    named = _named_qemus()
    ids = set(named) | (set(d.name for d in RUN_DIR.iterdir()) if RUN_DIR.is_dir() else set())
    for vid in sorted(ids):
        d = RUN_DIR / vid
        try:
            st = json.loads((d / "state.json").read_text())
        except (OSError, ValueError):
            st = {}
        if not isinstance(st, dict):
            st = {}  # not a record of ours: the process name decides
        caller = st.get("pid")
        if caller and caller != os.getpid() and _start_time(caller) == st.get("start"):
            continue  # still running its command
        pids = set(named.get(vid, []))
        q = st.get("qemu")
        if isinstance(q, dict) and isinstance(q.get("pid"), int) and \
                _start_time(q["pid"]) == q.get("start"):
            pids.add(q["pid"])
        for pid in sorted(pids):
            try:
                os.kill(pid, signal.SIGKILL)
                removed.append(f"qemu {pid}")
            except ProcessLookupError:
                pass
        if d.exists():
            shutil.rmtree(d, ignore_errors=True)
            removed.append(str(d))
    return removed
