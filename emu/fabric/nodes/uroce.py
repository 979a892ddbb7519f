"""The uroce host kind: a host is its network namespace (eth0 on the link to
its edge switch, the plan's address) and one `uroce collective` process,
started per run in the root namespace, drives every host of the run (one
AF_XDP socket per host, opened inside its namespace).

expects:  the hosts' namespaces and links made (fabric.py)
modifies: in each host namespace: the address /32, a permanent neighbour
          entry for the gateway, the default route, checksum offloads off;
          per run, one uroce process, recorded while it lasts in
          /run/ofan-emu/NAME/uroce-PID.proc.json (not the state file, which
          fail and restore may rewrite meanwhile; teardown.py kills what
          these name), its spec and its stderr beside it; a storm (the
          per-switch engine's fault --pfc-storm): one `uroce pfc-storm` in
          the host's namespace, recorded as uroce-storm-HOST.proc.json
gives:    collective(spec, timeout, poll) -> uroce's exit code and output;
          storm(name, for_ms, priority) -> the sender's pid (0: ended)
"""
import json
import os
import subprocess
import tempfile
import time
from typing import IO, Any, Callable

from .. import netns, teardown
from ..state import ProcessRecord, proc_start_time
from ..tools import FabricError, rt_prefix, run, tool
from .base import HostKind, host_if

# Every 0.2 s the caller looks at the run (its progress, the switches).
POLL_S = 0.2


def _die_with_parent() -> None:
    """The hosts' engine stops when ofan-emu does (PR_SET_PDEATHSIG), even
    killed with SIGKILL; down --all removes what is left in any case."""
    import ctypes
    import signal as sig
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(sig.SIGTERM), 0, 0, 0)


class UroceHosts(HostKind):
    kind = "uroce"

    def configure(self) -> None:
        for name in self.names:
            h, ns = self.host(name), self.ctx.ns(name)
            netns.add_addr(ns, host_if(), h.addr, 32)
            netns.add_neighbor(ns, host_if(), h.gateway, h.edge_mac)
            netns.add_default_route(ns, host_if(), h.gateway)
            netns.ethtool_off(ns, host_if())

    def shell(self, name: str, script: str, timeout: float) -> str:
        return run(["ip", "netns", "exec", self.ctx.ns(name), "sh", "-c", script],
                   check=False, timeout=timeout).stdout

    def records(self) -> dict[str, ProcessRecord]:
        """The runs' uroce processes on record (path -> record)."""
        out = {}
        for path in self.ctx.state.dir.glob("uroce-*.proc.json"):
            try:
                out[str(path)] = ProcessRecord.parse(path.read_bytes(), path.name)
            except (OSError, ValueError):
                continue  # torn: teardown.py finds the process in no other way, nor need it
        return out

    def down(self) -> list[int]:
        return teardown.kill_processes(rec.pid for rec in self.records().values()
                                       if rec.pid is not None and rec.alive())

    def storm(self, name: str, for_ms: int, priority: int) -> int:
        """Host `name`'s NIC sends continuous pause for `for_ms` ms (0: a
        storm it is sending ends now), from a process of its own that
        outlives this one (down kills it): its pid, or 0."""
        rec_path = self.ctx.state.dir / f"uroce-storm-{name}.proc.json"
        try:
            old = ProcessRecord.parse(rec_path.read_bytes(), rec_path.name)
        except (OSError, ValueError):
            old = None
        if old is not None and old.pid is not None and old.alive():
            teardown.kill_processes([old.pid])
        rec_path.unlink(missing_ok=True)
        if for_ms == 0:
            return 0
        log_path = self.ctx.state.dir / f"uroce-storm-{name}.log"
        with open(log_path, "w") as log_f:
            p = subprocess.Popen([tool("uroce"), "pfc-storm", "--netns", self.ctx.ns(name),
                                  "--iface", host_if(), "--for-ms", str(for_ms),
                                  "--priority", str(priority), "--json"],
                                 stdin=subprocess.DEVNULL, stdout=log_f, stderr=log_f,
                                 start_new_session=True)
        rec_path.write_text(json.dumps(ProcessRecord("uroce", p.pid, proc_start_time(p.pid))
                                       .to_doc()))
        time.sleep(0.05)
        if p.poll() is not None and p.returncode != 0:
            why = log_path.read_text(errors="replace").strip().splitlines()
            raise FabricError(f"uroce pfc-storm on {name}: {why[-1] if why else p.returncode}")
        return p.pid

    def collective(self, spec: dict[str, Any], timeout: float,
                   poll: Callable[[IO[bytes]], None]) -> tuple[int, str, str]:
        """One `uroce collective --spec` over the hosts the spec names. While
        it runs, poll(its stderr, opened in binary) every POLL_S; an
        exception from poll stops it and goes on up, as does running past
        `timeout`. Returns its exit code, stdout and stderr."""
        d = self.ctx.state.dir
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=d, delete=False) as f:
            json.dump(spec, f)
        cmd = rt_prefix() + [tool("uroce"), "collective", "--spec", f.name, "--json"]
        out_f = tempfile.TemporaryFile("w+")
        # stderr goes to a file the child owns; ofan-emu reads it through a
        # descriptor of its own (a shared one would move the child's offset).
        err_path = d / f"uroce-{os.getpid()}-{time.monotonic_ns()}.err"
        err_w = open(err_path, "w")
        err_f = open(err_path, "rb")
        p = subprocess.Popen(cmd, stdout=out_f, stderr=err_w, text=True,
                             start_new_session=True, preexec_fn=_die_with_parent)
        err_w.close()
        # Its own record, not the state file: fail/restore may rewrite that
        # while the run goes on.
        rec = d / f"uroce-{p.pid}.proc.json"
        rec.write_text(json.dumps(ProcessRecord("uroce", p.pid, proc_start_time(p.pid))
                                  .to_doc()))
        try:
            end = time.monotonic() + timeout
            while p.poll() is None:
                poll(err_f)
                if time.monotonic() > end:
                    raise FabricError(f"uroce did not finish in {timeout} s")
                time.sleep(POLL_S)
            out_f.seek(0)
            err_f.seek(0)
            return p.returncode, out_f.read(), err_f.read().decode("utf-8", "replace")
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            out_f.close()
            err_f.close()
            err_path.unlink(missing_ok=True)
            rec.unlink(missing_ok=True)
            os.unlink(f.name)
