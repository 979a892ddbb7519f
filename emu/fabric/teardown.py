"""Tearing a fabric down: from its state file when there is one, and from the
naming convention (state.py) when a crash left none or a torn one.

modifies: only what carries the fabric's prefix: namespaces "ofe-NAME-*" and
          the processes inside them, the processes the state file lists (if
          they are still those very processes), a shared engine whose command
          line names the fabric's file (one started by an `up` killed before
          it recorded it), EAL runtime directories, hugepage files and FRR
          pathspaces (/etc/frr/, /run/frr/) "ofe-NAME-*", /run/ofan-emu/NAME/;
          on a server's part of a plan (up --plan --server), only what
          carries "ofe-NAME-SERVER-", and the stitches' interfaces its state
          file names in this namespace (stitch.py); and the hugepage
          reservation back to what it was (state.HUGEPAGES_MARK), once no
          fabric is left here and no hugepage is in use on the machine
gives:    a report {namespaces, processes, files} of what was removed
"""
import glob
import os
import shutil
import signal
import time
from typing import Any, Iterable

from pathlib import Path

from . import netns, stitch
from .state import (HUGEPAGES_MARK, NS_PREFIX, RUN_DIR, ProcessRecord, State, part_prefix_re,
                    prefix, running, valid_name)


def kill_processes(pids: Iterable[int], timeout: float = 5.0) -> list[int]:
    """SIGTERM, then SIGKILL for what is still running after `timeout`;
    returns the pids that were signalled."""
    killed = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
            killed.append(pid)
        except ProcessLookupError:
            pass
    end = time.monotonic() + timeout
    while time.monotonic() < end and any(running(p) for p in killed):
        time.sleep(0.05)
    for pid in killed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    # Reap our own children (a switch started by this very process).
    for pid in killed:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    return killed


def engine_pids(name: str) -> list[int]:
    """Processes run with `--fabric FILE`, FILE fabric NAME's fabric file
    (nodes/ofan_shared.py): its shared engine, recorded or not."""
    want = str(RUN_DIR / name / "config" / "fabric.json").encode()
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a == b"--fabric" and b == want for a, b in zip(argv, argv[1:])) and \
                running(int(d.name)):
            out.append(int(d.name))
    return out


def down(name: str) -> dict[str, Any]:
    st = State.load(name)
    pre = st.prefix if st is not None else prefix(name)
    report: dict[str, Any] = {"name": name, "namespaces": [], "processes": [], "files": []}
    # A fabric that is no server's part leaves the parts' namespaces alone:
    # their server's state file names them (it is written before they are
    # made), and another server's down takes them.
    parts = part_prefix_re(name)
    namespaces = set(n for n in netns.list_ns() if n.startswith(pre)
                     and (st is not None and st.server is not None or not parts.match(n)))
    if st is not None:
        namespaces |= set(n for n in st.namespaces if n.startswith(pre))
    # Processes: the recorded ones that are still themselves, and whatever
    # runs inside the fabric's namespaces (a switch the record missed).
    pids: set[int] = set()
    if st is not None:
        for rec in st.processes.values():
            if rec.pid is not None and rec.alive():
                pids.add(rec.pid)
    for ns in namespaces:
        pids |= set(netns.pids_in(ns))
    pids |= set(engine_pids(name))
    # Hosts' engines run in the root namespace with sockets in the hosts'
    # (uroce); each run leaves a record while it lasts (nodes/uroce.py).
    for rec_path in (RUN_DIR / name).glob("*.proc.json"):
        try:
            rec = ProcessRecord.parse(rec_path.read_bytes(), rec_path.name)
        except (OSError, ValueError):
            continue
        if rec.pid is not None and rec.alive():
            pids.add(rec.pid)
    pids.discard(os.getpid())

    report["processes"] = sorted(kill_processes(sorted(pids)))
    if st is not None and st.stitches:
        report["stitches"] = stitch.delete(st.stitches)
    for ns in sorted(namespaces):
        if netns.delete(ns):
            report["namespaces"].append(ns)
    # FRR's per-switch pathspaces (control_plane.py) carry the prefix too.
    for pattern in (f"/var/run/dpdk/{pre}*", f"/dev/hugepages/{pre}*", f"/etc/frr/{pre}*",
                    f"/run/frr/{pre}*"):
        for path in glob.glob(pattern):
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    continue
            report["files"].append(path)
    d = RUN_DIR / name
    if d.exists():
        shutil.rmtree(d, ignore_errors=True)
        report["files"].append(str(d))
    if HUGEPAGES_MARK.exists() and not State.names() and hugepages_idle():
        try:
            before = int(HUGEPAGES_MARK.read_text())
            with open("/proc/sys/vm/nr_hugepages", "w") as f:
                f.write(str(before))
            report["hugepages_restored"] = before
            HUGEPAGES_MARK.unlink()
        except (OSError, ValueError):
            pass
    return report


def hugepages_idle() -> bool:
    """No hugepage in use on the machine (another run directory's fabric,
    a part of the same plan, may still hold some: it restores them)."""
    try:
        info = dict(line.split(":", 1) for line in open("/proc/meminfo"))
        return int(info["HugePages_Free"]) >= int(info["HugePages_Total"])
    except (OSError, KeyError, ValueError):
        return False


def all_names() -> list[str]:
    """Every fabric with a state file or a namespace of ours."""
    names = set(State.names())
    for ns in netns.list_ns():
        if ns.startswith(NS_PREFIX):
            rest = ns[len(NS_PREFIX):]
            name = rest.split("-", 1)[0]
            if valid_name(name) and "-" in rest:
                names.add(name)
    return sorted(names)
