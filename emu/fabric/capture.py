"""`ofan-emu capture`: pcapng of both directions of one link of a fabric.

    point = capture_point(fab.topo, "e0-0:2")     # or a host: "h3"
    result = run(fab.kind, fab.state, point, Limits(count=20), out="-", log=print)

expects:  a fabric that is up; the link named by one switch end
          (SWITCH:PORT) or by a host (its host link, at its edge switch)
modifies: one file under the fabric's state directory while it runs
          (captures/), which becomes the output: moved to -w FILE, or
          streamed to stdout as it grows (-w -, for `tshark -i -`); removed
          on every exit path
next:     the fabric's switch kind captures (SwitchKind.capture): ofan-dp
          switches write the pcapng themselves (capture_start over the
          control socket; AF_XDP at both ends of a veth hides the frames
          from tcpdump); a kernel fabric's router port is captured by
          dumpcap (Wireshark's capture engine, installed with tshark). Either
          way one interface is the switch's port: its received and sent
          frames are the link's two directions.
"""
import os
import shutil
import signal
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Protocol

from .state import State
from .tools import FabricError
from .topology import Topology, TopologyError

POLL_S = 0.1


@dataclass
class Captured:
    """What a switch kind's capture of one port got."""
    frames: int
    dropped: int     # copies the switch could not keep up with (ofan-dp)
    stopped_by: str  # count | duration | interrupt | reader


# A kind's capture()'s wait: until done() (or a limit, a signal, the reader
# leaving); returns which.
Wait = Callable[[Callable[[], bool]], str]


class Capturer(Protocol):
    """What captures a port: a switch kind (nodes/base.py SwitchKind)."""

    def capture(self, name: str, port: int, count: int, snaplen: int, file: Path,
                wait: Wait) -> Captured: ...


@dataclass
class CapturePoint:
    switch: str
    port: int

    def label(self) -> str:
        return f"{self.switch}:{self.port}"


@dataclass
class Limits:
    count: int = 0         # frames; 0: no limit
    duration_s: float = 0  # 0: no limit
    snaplen: int = 4096


@dataclass
class CaptureResult:
    point: CapturePoint
    file: str       # where the capture went ("-": stdout)
    frames: int
    dropped: int    # copies the switch could not keep up with (ofan-dp)
    stopped_by: str  # count | duration | interrupt | reader


def capture_point(topo: Topology, text: str) -> CapturePoint:
    """SWITCH:PORT -> that port; HOST -> its edge switch's port towards it."""
    if text in topo.host_by_name:
        h = topo.host_by_name[text]
        return CapturePoint(h.edge_name, int(h.edge_port))
    if ":" not in text:
        raise TopologyError(f"--link {text}: give SWITCH:PORT (one end of the link) or a host")
    end = topo.parse_endpoint(text, "--link")
    return CapturePoint(end[0], end[1])


def count_packets(path: Path) -> int:
    """Enhanced packet blocks in a pcapng file (a block cut short at its end,
    as a file still being written may have, is not counted)."""
    try:
        data = path.read_bytes()
    except OSError:
        return 0
    n, off = 0, 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        if blen < 12 or off + blen > len(data):
            break
        n += btype == 6
        off += blen
    return n


class _Follower:
    """Copies what a growing file gains to a stream (stdout for -w -)."""

    def __init__(self, path: Path, out: IO[bytes] | None) -> None:
        self.path, self.out, self.pos = path, out, 0

    def step(self) -> bool:
        """False once the reader has gone (a closed pipe)."""
        if self.out is None:
            return True
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                chunk = f.read()
        except OSError:
            return True
        if chunk:
            try:
                self.out.write(chunk)
                self.out.flush()
            except (BrokenPipeError, ValueError):
                return False
            self.pos += len(chunk)
        return True


def run(kind: Capturer, state: State, point: CapturePoint, limits: Limits, out: str,
        log: Callable[[str], None]) -> CaptureResult:
    """Captures at `point` with the fabric's switch kind until limits.count
    frames, limits.duration_s seconds, SIGINT/SIGTERM, or (-w -) the reader
    leaving."""
    if point.switch in state.failed_switches:
        raise FabricError(f"capture: {point.switch} is failed (ofan-emu restore --switch "
                          f"{point.switch} first)")
    if out != "-":
        parent = Path(out).resolve().parent
        if not parent.is_dir():
            raise FabricError(f"capture: -w {out}: no directory {parent}", code=2)
    d = state.dir / "captures"
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f"{point.switch}-p{point.port}-{os.getpid()}.pcapng"
    follower = _Follower(tmp, sys.stdout.buffer if out == "-" else None)
    stop = {"why": ""}

    def on_signal(signum: int, _frame: object) -> None:
        stop["why"] = "interrupt"

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    log(f"capture: {point.label()} (both directions) -> {tmp.name}"
        + (f", {limits.count} frames" if limits.count else "")
        + (f", {limits.duration_s:g} s" if limits.duration_s else ""))
    try:
        # The kind calls wait once its capture runs: the duration counts from there.
        got = kind.capture(point.switch, point.port, limits.count, limits.snaplen, tmp,
                           lambda done: _wait(limits, time.monotonic(), follower, stop, done))
        result = CaptureResult(point, str(tmp), got.frames, got.dropped, got.stopped_by)
        follower.step()
        if out != "-":
            shutil.move(str(tmp), out)
        result.file = out
        return result
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        tmp.unlink(missing_ok=True)


def _wait(limits: Limits, t0: float, follower: _Follower, stop: dict[str, str],
          done: Callable[[], bool]) -> str:
    """Until done(), a signal, the reader's leaving or the duration: which."""
    while True:
        if done():
            return "count"
        if stop["why"]:
            return stop["why"]
        if not follower.step():
            return "reader"
        if limits.duration_s and time.monotonic() - t0 >= limits.duration_s:
            return "duration"
        time.sleep(POLL_S)
