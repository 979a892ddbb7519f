"""Where ofan-emu finds its binaries, and how it runs commands.

expects:  a build tree next to the sources (meson's build/, as
          scripts/build.sh makes it), or the binaries on PATH, or
          OFAN_<TOOL> (e.g. OFAN_OFAN_DP=/path/ofan-dp) naming one
gives:    tool(name) -> absolute path, or FabricError saying where it looked;
          run() / run_ns() that raise FabricError with the command's stderr;
          rt_prefix(), the command prefix that runs switches and hosts
          SCHED_FIFO when OFAN_EMU_RT_PRIORITY asks for it
"""
import functools
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Sequence

REPO = Path(__file__).resolve().parents[2]

# name -> its place in the build tree (meson mirrors the source tree).
_BUILD_PATH = {
    "ofan-dp": "dataplane/ofan-dp",
    "ofanctl": "control/ofanctl/ofanctl",
    "ofan-topo": "emu/ofan-topo",
    "uroce": "emu/uroce/uroce",
    "ofan-sim": "sim/ofan-sim",
    "ofan-coll": "emu/collective/ofan-coll",
    "ofan-verbs": "emu/verbs/ofan-verbs",
    "ofan-agent": "control/agent/ofan-agent",
}


class FabricError(Exception):
    """A failure ofan-emu reports to its user (exit code in .code)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def build_dir() -> Path:
    return Path(os.environ.get("OFAN_BUILD_DIR", REPO / "build"))


def tool(name: str) -> str:
    env = os.environ.get("OFAN_" + name.upper().replace("-", "_"))
    if env:
        if not os.access(env, os.X_OK):
            raise FabricError(f"{name}: OFAN_{name.upper().replace('-', '_')}={env} "
                              "is not an executable")
        return env
    built = build_dir() / _BUILD_PATH.get(name, name)
    if built.is_file() and os.access(built, os.X_OK):
        return str(built)
    found = shutil.which(name)
    if found:
        return found
    raise FabricError(f"{name} not found (looked in {built} and on PATH); build first: "
                      "bash scripts/build.sh")


def log_tail(path: Path, lines: int = 8) -> str:
    """The last lines of a process's log, on one line (for an error)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return " | ".join(text.strip().splitlines()[-lines:]) or "(empty log)"


def trap_bpf() -> str:
    """The per-switch engine's XDP trap (dataplane/xdp/trap.bpf.c, built by
    meson), or OFAN_TRAP_BPF naming one."""
    path = os.environ.get("OFAN_TRAP_BPF") or str(build_dir() / "dataplane/xdp/trap.bpf.o")
    if not os.path.isfile(path):
        raise FabricError(f"the XDP trap {path} is not built (bash scripts/build.sh)", code=3)
    return path


def run(cmd: Sequence[str], check: bool = True, timeout: float = 60,
        input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Runs cmd (a list); returns CompletedProcess with text output."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=input)
    except FileNotFoundError:
        raise FabricError(f"{cmd[0]}: not installed (bash scripts/setup.sh)")
    except subprocess.TimeoutExpired:
        raise FabricError(f"timed out after {timeout} s: {' '.join(cmd)}")
    if check and p.returncode != 0:
        raise FabricError(f"{' '.join(cmd)} failed ({p.returncode}): "
                          f"{(p.stderr or p.stdout).strip()}")
    return p


def run_json(cmd: Sequence[str]) -> Any:
    """The JSON a command printed (ip -j, tc -j, ...), or None when it
    failed or printed none."""
    p = run(cmd, check=False)
    if p.returncode != 0:
        return None
    try:
        return json.loads(p.stdout or "null")
    except ValueError:
        return None


def run_ns(ns: str, cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    """Runs cmd inside network namespace ns (ip netns exec)."""
    return run(["ip", "netns", "exec", ns] + cmd, **kw)


# With OFAN_EMU_RT_PRIORITY=N (1..99), switches and hosts run SCHED_FIFO N:
# a woken one runs at once, so a small fabric (a k=4 leaf-spine) keeps its
# links at 100 Mb/s. Off by default: with twenty switches the kernel's
# softirq threads, which carry the veths' frames, starve behind them and
# the fabric stalls (bench/RESULTS.md, "ofan-emu").
RT_PRIORITY = int(os.environ.get("OFAN_EMU_RT_PRIORITY", "0"))


@functools.lru_cache(maxsize=None)
def _rt_allowed() -> bool:
    try:
        return subprocess.run(["chrt", "-f", str(RT_PRIORITY), "true"],
                              capture_output=True).returncode == 0
    except OSError:
        return False


def rt_prefix() -> list[str]:
    """The command prefix that runs a switch or the hosts SCHED_FIFO, or []."""
    return ["chrt", "-f", str(RT_PRIORITY)] if RT_PRIORITY > 0 and _rt_allowed() else []
