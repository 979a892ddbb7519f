"""`ofan-emu mpirun`: an Open MPI job across the fabric's rxe VM hosts, UCX
over rxe on the fabric's links, Open MPI's own wire-up on the management
network beside it.

expects:  a fabric up with VM hosts (up --vm-hosts): rxe0 on each guest's
          fabric link, eth1 on the management network (nodes/rxe_vm.py);
          Open MPI (openmpi-bin) and UCX (libucx0) on this machine, whose
          root the guests mount read-only
modifies: runs mpirun (Open MPI's HNP) in the management namespace; it
          starts one orted per host through emu/mpi/ofan-rsh (`ofan-emu exec`
          of this fabric), which runs the ranks; its session directory goes
          to a temp directory under the fabric's state directory. On every
          exit path: mpirun and its launchers killed, no orted, rank or Open
          MPI session file left in any guest, the temp directory removed
gives:    Job: the job's exit code, its hosts and ranks, seconds, and each
          host's rxe counters over the job (out-of-sequence, NAKs, retries)

Why a management network: the out-of-band traffic of a job (orted's TCP to
mpirun, PMIx's exchange of UCX addresses) is a real cluster's front end's,
not its RoCE fabric's, and would otherwise share the measured links.
"""
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import facts
from .nodes import rxe_vm
from .tools import FabricError

ROOT = Path(__file__).resolve().parents[2]
RSH = ROOT / "emu" / "mpi" / "ofan-rsh"


def ucx_env() -> dict[str, str]:
    """What the ranks' UCX uses: RC on rxe for data; UD on rxe for UCX's own
    wire-up (an RC transport needs one beside it). rxe's UD completions
    carry an IPv4 RoCE v2 packet's header where UCX 1.13 looks for the
    destination GID and finds none it knows: every wire-up packet was
    dropped ("UD endpoint ... unhandled timeout error") until UCX stops
    checking (docs/verbs.md). Its traffic class is the fabric's lossless
    one (what PFC pauses rather than drops), asked of the binaries."""
    return {"UCX_NET_DEVICES": f"{rxe_vm.RXE_DEV}:1",
            "UCX_TLS": "rc_verbs,ud_verbs,self",
            "UCX_UD_VERBS_ETH_DGID_CHECK": "n",
            "UCX_IB_TRAFFIC_CLASS": str(facts.roce_traffic_class())}


# The counters of rxe's port that tell what the fabric did to the job.
RXE_COUNTERS = ("/sys/class/infiniband/" + rxe_vm.RXE_DEV + "/ports/1/hw_counters")
# rxe's counters the one-line summary gives: what reordering and loss cost.
SUMMARY_COUNTERS = ("out_of_seq_request", "rcvd_seq_err", "completer_retry_err",
                    "duplicate_request")
EXIT_TIMEOUT = 124
# Grace for mpirun to end the job after SIGTERM before SIGKILL.
TERM_GRACE_S = 5.0


@dataclass
class Job:
    """One mpirun's result."""
    rc: int
    hosts: list[str]
    ranks: int
    seconds: float
    program: list[str]
    stdout: str = ""
    stderr: str = ""
    rxe: dict[str, dict[str, int]] = field(default_factory=dict)  # host -> counter -> delta
    timed_out: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"rc": self.rc, "hosts": self.hosts, "ranks": self.ranks,
                "seconds": round(self.seconds, 3), "program": self.program,
                "timed_out": self.timed_out, "stdout": self.stdout, "stderr": self.stderr,
                "rxe_counters": self.rxe}


def pick_hosts(vm_hosts: list[str], spec: str) -> list[str]:
    """--hosts: "vm" (every VM host) or names, each a VM host of the fabric."""
    if not vm_hosts:
        raise FabricError("mpirun: the fabric has no VM hosts (ofan-emu up --vm-hosts h0,h8)",
                          code=2)
    if spec == "vm":
        return list(vm_hosts)
    names = [n.strip() for n in spec.split(",")]
    if not names or any(not n for n in names):
        raise FabricError(f"mpirun: --hosts {spec!r}: vm, or VM hosts separated by commas",
                          code=2)
    for n in names:
        if n not in vm_hosts:
            raise FabricError(f"mpirun: --hosts: {n} is not a VM host of the fabric (its VM "
                              f"hosts: {', '.join(vm_hosts)})", code=2)
    if len(set(names)) != len(names):
        raise FabricError("mpirun: --hosts: a host named twice", code=2)
    return names


def ranks_for(hosts: list[str], np: int | None, oversubscribe: bool) -> int:
    """-np: default one rank per host; more than the hosts only with
    --oversubscribe (each VM has one vCPU)."""
    if np is None:
        return len(hosts)
    if np < 1:
        raise FabricError(f"mpirun: -np {np}: at least 1", code=2)
    if np > len(hosts) and not oversubscribe:
        raise FabricError(f"mpirun: -np {np} on {len(hosts)} VM host(s) of one vCPU each: "
                          "--oversubscribe to place more than one rank per host", code=2)
    return np


def mpirun_argv(hosts: list[str], ranks: int, oversubscribe: bool, mca: list[tuple[str, str]],
                env: list[str], program: list[str]) -> list[str]:
    """Open MPI's mpirun for the job: orteds through ofan-rsh, each straight
    back to mpirun (no tree: every launch is one `ofan-emu exec` from here),
    daemonized as over ssh (the launch returns, so the VM's agent channel is
    free for other execs during the job; an orted ends with its connection
    to mpirun, and run() removes what is left), TCP only on the management
    network, UCX over rxe."""
    slots = -(-ranks // len(hosts))
    argv = ["mpirun", "--allow-run-as-root", "-np", str(ranks),
            "--host", ",".join(f"{h}:{slots}" for h in hosts),
            "--mca", "plm_rsh_agent", str(RSH),
            "--mca", "plm_rsh_no_tree_spawn", "1",
            "--mca", "routed", "direct",
            "--mca", "oob_tcp_if_include", rxe_vm.MGMT_NET,
            "--mca", "pml", "ucx", "--mca", "osc", "ucx",
            "--mca", "btl", "^openib,uct,tcp"]
    if oversubscribe:
        argv.append("--oversubscribe")
    for k, v in ucx_env().items():
        argv += ["-x", f"{k}={v}"]
    for k, v in mca:
        argv += ["--mca", k, v]
    for e in env:
        argv += ["-x", e]
    return argv + program


def read_rxe(exec_in: Callable[[str, list[str], float], tuple[int, str, str]],
             host: str) -> dict[str, int]:
    """rxe's port counters in host's guest ({} when it has none)."""
    rc, out, _ = exec_in(host, ["sh", "-c", f"cd {RXE_COUNTERS} && grep -H . *"], 30)
    counters: dict[str, int] = {}
    if rc != 0:
        return counters
    for line in out.splitlines():
        name, _, value = line.partition(":")
        if value.strip().isdigit():
            counters[name] = int(value)
    return counters


def rxe_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Counters over an interval: after less before (a counter new in after
    counts from 0)."""
    return {k: v - before.get(k, 0) for k, v in after.items()}


# Run in each guest after the job, whatever happened: the ranks (children of
# orted) and orted killed, Open MPI's session directories and shared-memory
# segments removed.
CLEANUP = ("for p in $(pgrep -x orted); do pkill -KILL -P $p; done; pkill -KILL -x orted; "
           "rm -rf /tmp/ompi.* /tmp/.ompi* /dev/shm/vader_segment.* /dev/shm/sm_segment.*; "
           "ls -d /tmp/ompi.* 2>/dev/null; pgrep -x orted; true")


def leftovers(exec_in: Callable[[str, list[str], float], tuple[int, str, str]],
              host: str) -> str:
    """What CLEANUP could not remove in host's guest ("" when nothing)."""
    rc, out, err = exec_in(host, ["sh", "-c", CLEANUP], 60)
    return (out + err).strip() if rc == 0 else f"cleanup failed ({rc}): {err.strip()[-200:]}"


# The guests mount this machine's root over 9p with cache=loose (emu/vm/
# initramfs.py: fast, but a file rebuilt on the host after a guest read it
# stays the old one there). Each job starts by dropping the guests' caches,
# so that a program rebuilt while the fabric is up runs as built.
FRESH_VIEW = 'echo 3 > /proc/sys/vm/drop_caches; command -v -- "$1" >/dev/null'


def check_program(exec_in: Callable[[str, list[str], float], tuple[int, str, str]],
                  host: str, program: str) -> None:
    """Drop host's guest's file caches (FRESH_VIEW); FabricError (exit 2)
    when the guest cannot find the program."""
    rc, _, _ = exec_in(host, ["sh", "-c", FRESH_VIEW, "sh", program], 60)
    if rc != 0:
        raise FabricError(f"mpirun: {program} is not found in VM host {host} (the guests see "
                          "this machine's root read-only, but /tmp, /run and /var/tmp are "
                          "their own)", code=2)


def run(fabric_name: str, state_dir: Path, mgmt_ns: str,
        exec_in: Callable[[str, list[str], float], tuple[int, str, str]],
        hosts: list[str], ranks: int, program: list[str], oversubscribe: bool = False,
        mca: list[tuple[str, str]] | None = None, env: list[str] | None = None,
        timeout: float | None = None, capture: bool = False,
        log: Callable[[str], None] = print) -> Job:
    """The job, start to end (the module's docstring)."""
    if not program:
        raise FabricError("mpirun: no program (ofan-emu mpirun [OPTIONS] -- PROGRAM ARGS)",
                          code=2)
    if not shutil.which("mpirun"):
        raise FabricError("mpirun: Open MPI is not installed (bash scripts/setup.sh: "
                          "openmpi-bin)", code=3)
    for h in hosts:
        check_program(exec_in, h, program[0])
    before = {h: read_rxe(exec_in, h) for h in hosts}
    argv = mpirun_argv(hosts, ranks, oversubscribe, mca or [], env or [], program)
    tmp = Path(tempfile.mkdtemp(prefix="mpi-", dir=state_dir))
    child_env = dict(os.environ, TMPDIR=str(tmp), OFAN_EMU_MPI_FABRIC=fabric_name,
                     OFAN_EMU_MPI_TIMEOUT=str(int(timeout) + 30 if timeout else 0))
    log(f"mpirun: {ranks} rank(s) on {', '.join(hosts)}: {shlex.join(program)}")

    def terminated(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # the cleanup below runs, as for Ctrl-C

    old_term = signal.signal(signal.SIGTERM, terminated)
    t0 = time.monotonic()
    timed_out = False
    out = err = ""
    p = subprocess.Popen(["ip", "netns", "exec", mgmt_ns] + argv, env=child_env,
                         stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE if capture else None,
                         stderr=subprocess.PIPE if capture else None,
                         text=True, start_new_session=True)
    try:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            stop(p)
            out, err = p.communicate()
        rc = EXIT_TIMEOUT if timed_out else p.returncode
    finally:
        if p.poll() is None:  # interrupted: the job goes with us
            stop(p)
        seconds = time.monotonic() - t0
        left = {h: leftovers(exec_in, h) for h in hosts}
        shutil.rmtree(tmp, ignore_errors=True)
        signal.signal(signal.SIGTERM, old_term)
    bad = {h: v for h, v in left.items() if v}
    if bad:
        raise FabricError("mpirun: left behind in the guests: "
                          + "; ".join(f"{h}: {v}" for h, v in bad.items()))
    rxe = {h: rxe_delta(before[h], read_rxe(exec_in, h)) for h in hosts}
    return Job(rc=rc if rc >= 0 else 128 - rc, hosts=hosts, ranks=ranks, seconds=seconds,
               program=program, stdout=out or "", stderr=err or "", rxe=rxe,
               timed_out=timed_out)


def stop(p: "subprocess.Popen[str]") -> None:
    """mpirun's session (it, its launchers) ended: SIGTERM first, so that
    mpirun tells its orteds to end the ranks, then SIGKILL."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=TERM_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    except ProcessLookupError:
        pass
