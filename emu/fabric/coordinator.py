"""The coordinator: every server's part of a plan brought up (or down) from
one place, over OpenSSH.

expects:  the plan file here; on every other server, root over SSH without a
          password (BatchMode: a key, never a prompt), the same ofan-emu
          (--remote-emu: this one's path by default) and the built binaries
gives:    up(plan, ...) -> {server: its part's status}; down(plan, ...) ->
          {server: down's report}; CoordinatorError (exit 1) naming each part
          that failed and why, after every part was taken down again;
          everywhere() a verb on every server; leashed() a verb whose parts
          work together (run: one collective), stopped together
modifies: on each other server, the plan's copy (/tmp/ofan-emu-NAME.plan.json)
          and, through `ofan-emu up --plan --server`, its part; here one SSH
          control connection per server (ControlMaster, socket under this
          ofan-emu's run directory), closed at the end

A server whose address is one of this machine's runs its part here, without
SSH. The parts come up at once (threads: each waits for its own ofan-emu);
if one fails, or the coordinator is interrupted (SIGTERM, SIGHUP, Ctrl-C),
`down --name NAME` runs on every server. A coordinator killed with SIGKILL
leaves each part to its own server's `down --all`.
"""
import json
import shlex
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable

from .plan import Plan, Server
from .state import RUN_DIR
from .tools import FabricError, run_json

UP_TIMEOUT_S = 600
DOWN_TIMEOUT_S = 300
LET_GO_S = 60          # a leashed part's time to stop once its stdin closed


class CoordinatorError(FabricError):
    """A part that failed (every part was taken down again)."""


def local_addresses() -> set[str]:
    """This machine's addresses, in its current network namespace."""
    out: set[str] = set()
    for link in run_json(["ip", "-j", "addr", "show"]) or []:
        for a in link.get("addr_info", []):
            if "local" in a:
                out.add(str(a["local"]))
    return out


@dataclass
class Remote:
    """How the coordinator reaches the servers."""
    emu: str                          # the ofan-emu command on the others (a shell prefix)
    local_emu: str                    # this server's (run with this environment)
    ssh_config: str | None = None     # ssh -F FILE
    here: set[str] = field(default_factory=local_addresses)
    masters: dict[str, "subprocess.Popen[str]"] = field(default_factory=dict)

    def control_path(self) -> str:
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        return str(RUN_DIR / "ssh-%C")

    def _ssh(self, master: str) -> list[str]:
        cmd = ["ssh"] + (["-F", self.ssh_config] if self.ssh_config else [])
        return cmd + ["-o", "BatchMode=yes", "-o", f"ControlMaster={master}",
                      "-o", f"ControlPath={self.control_path()}", "-o", "ConnectTimeout=10"]

    def ssh(self, s: Server) -> list[str]:
        """ssh to s, through its control connection when it is open."""
        return self._ssh("auto") + [s.address, "--"]

    def open(self, servers: tuple[Server, ...]) -> tuple[Server, ...]:
        """One control connection per other server, a child of this thread
        (call it from the main one) that dies with the coordinator, even
        killed with SIGKILL (setpriv --pdeathsig), unlike ControlPersist's
        background master; CoordinatorError naming a server it cannot
        reach. Returns the servers it opened one to now (the caller closes
        those)."""
        opened = tuple(s for s in servers if not self.is_here(s) and s.name not in self.masters)
        for s in opened:
            self.masters[s.name] = subprocess.Popen(
                ["setpriv", "--pdeathsig", "TERM", "--"] + self._ssh("yes") + ["-N", s.address],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True)
        end = time.monotonic() + 20
        for s in servers:
            p = self.masters.get(s.name)
            while p is not None:
                check = subprocess.run(self._ssh("no") + ["-O", "check", s.address],
                                       capture_output=True, timeout=20)
                if check.returncode == 0:
                    break
                if p.poll() is not None or time.monotonic() > end:
                    self.close(servers)
                    why = _last_line(p.stderr.read() if p.stderr and p.poll() is not None
                                     else "") or "no connection after 20 s"
                    raise CoordinatorError(f"{s.name} ({s.address}): ssh: {why}")
                time.sleep(0.1)
        return opened

    def is_here(self, s: Server) -> bool:
        return s.address in self.here

    def emu_cmd(self, s: Server, args: list[str]) -> list[str]:
        """The command line of ofan-emu ARGS on server s (here, or over
        SSH), which dies with the coordinator (setpriv --pdeathsig)."""
        if self.is_here(s):
            cmd = [self.local_emu] + args
        else:
            cmd = self.ssh(s) + [" ".join([self.emu] + [shlex.quote(a) for a in args])]
        return ["setpriv", "--pdeathsig", "TERM", "--"] + cmd

    def command(self, s: Server, args: list[str], stdin: str | None = None,
                timeout: float = UP_TIMEOUT_S) -> "subprocess.CompletedProcess[str]":
        """ofan-emu ARGS on server s (here, or over SSH). Either dies with
        the coordinator: the part here rolls itself back, and one over SSH
        loses its connection."""
        cmd = self.emu_cmd(s, args)
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  input=stdin)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(cmd, 124, "", f"timed out after {timeout} s")

    def copy(self, s: Server, text: str, path: str) -> None:
        """The plan's text to `path` on server s (nothing to do here)."""
        if self.is_here(s):
            return
        p = subprocess.run(self.ssh(s) + [f"cat > {shlex.quote(path)}"], input=text,
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise CoordinatorError(f"{s.name} ({s.address}): cannot copy the plan over SSH: "
                                   f"{_last_line(p.stderr) or p.returncode}")

    def close(self, servers: tuple[Server, ...]) -> None:
        """The control connections closed: asked to exit (which removes
        the socket, as SIGTERM does not), then terminated if need be."""
        for s in servers:
            p = self.masters.pop(s.name, None)
            if p is None:
                continue
            subprocess.run(self._ssh("no") + ["-O", "exit", s.address], capture_output=True,
                           timeout=20)
            for stop in (None, p.terminate, p.kill):
                if stop is not None:
                    stop()
                try:
                    p.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    continue


def _last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1] if lines else ""


def copy_path(plan: Plan) -> str:
    """The plan's copy on another server (down --plan removes it)."""
    return f"/tmp/ofan-emu-{plan.name}.plan.json"


def plan_path(plan: Plan, local: Path) -> Callable[[Server, Remote], str]:
    """Where each server reads the plan: this file here, a copy elsewhere."""
    return lambda s, r: str(local) if r.is_here(s) else copy_path(plan)


def _each(plan: Plan, work: Callable[[Server], Any]) -> dict[str, Any]:
    """work(server) for every server at once; {server name: result}."""
    out: dict[str, Any] = {}

    def one(s: Server) -> None:
        try:
            out[s.name] = work(s)
        except Exception as e:  # kept, reported by the caller
            out[s.name] = e

    threads = [threading.Thread(target=one, args=(s,), daemon=True) for s in plan.servers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def up(plan: Plan, plan_file: Path, remote: Remote, up_args: list[str],
       log: Callable[[str], None]) -> dict[str, Any]:
    """Every part up (`up --plan --server S` with up_args); on any failure
    every part down again and CoordinatorError."""
    where = plan_path(plan, plan_file)
    text = plan_file.read_text()
    for s in plan.servers:
        log(f"coordinator: {s.name} ({s.address}) " +
            ("here" if remote.is_here(s) else "over SSH"))
    remote.open(plan.servers)

    def part(s: Server) -> Any:
        remote.copy(s, text, where(s, remote))
        p = remote.command(s, ["up", "--plan", where(s, remote), "--server", s.name, "--json"]
                           + up_args)
        if p.returncode != 0:
            raise CoordinatorError(f"{s.name}: up exited {p.returncode}: "
                                   f"{_last_line(p.stderr) or '(no message)'}")
        log(f"coordinator: {s.name}'s part up")
        return json.loads(p.stdout)

    try:
        try:
            res = _each(plan, part)
        except BaseException:
            down(plan, remote, log)
            raise
        bad = {n: r for n, r in res.items() if isinstance(r, Exception)}
        if bad:
            down(plan, remote, log)
            raise CoordinatorError("up across servers failed, every part taken down again: "
                                   + "; ".join(str(e) for e in bad.values()))
        return res
    finally:
        remote.close(plan.servers)


def down(plan: Plan, remote: Remote, log: Callable[[str], None]) -> dict[str, Any]:
    """`down --name NAME` on every server, and the plan's copies removed;
    {server: report or the error}."""
    opened = remote.open(plan.servers)  # one connection for both commands
    try:
        res = everywhere(plan, remote, ["down", "--name", plan.name, "--json"], log)
        for s in plan.servers:
            if not remote.is_here(s):
                subprocess.run(remote.ssh(s) + [f"rm -f {shlex.quote(copy_path(plan))}"],
                               capture_output=True, timeout=60)
        return res
    finally:
        remote.close(opened)


def part_json(s: Server, verb: str, rc: int, out: str, err: str,
              ok_codes: tuple[int, ...]) -> Any:
    """What a part printed (--json), where it exited with one of ok_codes;
    else CoordinatorError naming the server, with the part's exit code
    where it says bad input (2) or a missing environment (3)."""
    try:
        if rc in ok_codes:
            return json.loads(out)
    except ValueError:
        pass
    raise CoordinatorError(f"{s.name}: {verb} exited {rc}: {_last_line(err) or '(no message)'}",
                           code=rc if rc in (2, 3) else 1)


def everywhere(plan: Plan, remote: Remote, args: list[str], log: Callable[[str], None],
               ok_codes: tuple[int, ...] = (0,)) -> dict[str, Any]:
    """ofan-emu ARGS (ending in --json) on every server at once; {server:
    its JSON (where it exits with one of ok_codes), or the CoordinatorError
    saying why not}."""
    def part(s: Server) -> Any:
        p = remote.command(s, args, timeout=DOWN_TIMEOUT_S)
        res = part_json(s, args[0], p.returncode, p.stdout, p.stderr, ok_codes)
        log(f"coordinator: {s.name}: {args[0]} done")
        return res

    opened = remote.open(plan.servers)
    try:
        return _each(plan, part)
    finally:
        # No connection outlives the command: one made before the underlay
        # changed (its MSS, say) would be reused by the next.
        remote.close(opened)


def leashed(plan: Plan, plan_file: Path, remote: Remote,
            args_of: Callable[[Server, str], list[str]], log: Callable[[str], None],
            timeout: float, ok_codes: tuple[int, ...] = (0,)) -> dict[str, Any]:
    """ofan-emu args_of(server, the plan's path there) (ending in --json
    --part) on every server at once, each part's stdin its leash: a part
    run with --part stops once its stdin closes, which happens to all the
    others as soon as one fails, when `timeout` passes, and when the
    coordinator stops or dies. {server: its JSON}, in the plan's order;
    CoordinatorError naming the part that failed first (its exit code
    where it is 2 or 3)."""
    where = plan_path(plan, plan_file)
    text = plan_file.read_text()
    opened = remote.open(plan.servers)
    procs: dict[str, tuple[Server, "subprocess.Popen[str]", IO[str], IO[str]]] = {}
    try:
        for s in plan.servers:
            remote.copy(s, text, where(s, remote))
        for s in plan.servers:
            out, err = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")
            cmd = remote.emu_cmd(s, args_of(s, where(s, remote)))
            procs[s.name] = (s, subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=out,
                                                 stderr=err, text=True), out, err)
        res: dict[str, Any] = {}
        first: CoordinatorError | None = None
        end = time.monotonic() + timeout
        while len(res) < len(procs):
            for name, (s, p, out, err) in procs.items():
                if name in res or p.poll() is None:
                    continue
                out.seek(0)
                err.seek(0)
                try:
                    res[name] = part_json(s, "run", p.returncode, out.read(), err.read(),
                                          ok_codes)
                    log(f"coordinator: {name}'s part done")
                except CoordinatorError as e:
                    res[name] = e
                    if first is None:
                        first = e
                        log(f"coordinator: {e}; stopping the other parts")
                        _let_go(procs.values())
            if time.monotonic() > end and first is None:
                first = CoordinatorError(f"the parts did not finish in {timeout:.0f} s")
                _let_go(procs.values())
            if time.monotonic() > end + LET_GO_S:  # a part deaf to its leash
                for _, p, _, _ in procs.values():
                    if p.poll() is None:
                        p.kill()
            time.sleep(0.1)
        if first is not None:
            raise first
        # The plan's order, not the order the parts finished in: merged
        # reports list the servers as the plan does.
        return {name: res[name] for name in procs}
    finally:
        _let_go(procs.values())
        for _, p, out, err in procs.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            out.close()
            err.close()
        remote.close(opened)


def _let_go(procs: Iterable[tuple[Server, "subprocess.Popen[str]", IO[str], IO[str]]]) -> None:
    """Every leash closed: the parts' stdin (those still running stop)."""
    for _, p, _, _ in procs:
        if p.stdin is not None and not p.stdin.closed:
            try:
                p.stdin.close()
            except OSError:
                pass
