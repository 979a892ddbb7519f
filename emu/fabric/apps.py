"""`ofan-emu app NAME`: a pairwise RDMA tool between two VM hosts (perftest,
qperf, rping, ucx_perftest), its server started and stopped for you, its
result parsed.

expects:  a fabric up with VM hosts (nodes/rxe_vm.py: rxe0 on the fabric
          link, eth1 on the management network); the tools installed on
          this machine (scripts/setup.sh), whose root the guests mount
modifies: runs the server in one guest and the client in the other; the
          server stopped on every exit path
gives:    AppResult: the client's exit code, the parsed figures, both hosts'
          rxe counters over the run, the client's output

Where a tool can, its out-of-band exchange (perftest's and ucx_perftest's
TCP handshake) uses the management network; qperf and rping connect through
the RDMA connection manager, which resolves the fabric address, so their
few control packets cross the fabric too.
"""
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from .mpi import read_rxe, rxe_delta, ucx_env
from .nodes import rxe_vm
from .tools import FabricError

ExecIn = Callable[[str, list[str], float], tuple[int, str, str]]


class Guest(Protocol):
    """What an app needs of the server's VM: several commands at once on
    one connection (qemu.Vm)."""

    def exec(self, argv: list[Any], timeout: float | None = None,
             env: dict[str, str] | None = None, cwd: str | None = None,
             on_output: Callable[[int, str], None] | None = None) -> tuple[int, str, str]: ...


@dataclass(frozen=True)
class Ends:
    """What a recipe needs to know of the two hosts."""
    server_addr: str      # the server's fabric address
    server_mgmt: str      # its management address
    gid_index: int        # the RoCE v2 GID of the hosts' fabric addresses
    tclass: int           # the GRH's traffic class: the fabric's lossless one
    size: int             # bytes per message
    iters: int
    seconds: float


@dataclass(frozen=True)
class App:
    name: str
    help: str
    tool: str                                # the program, for pkill and the missing check
    server: Callable[[Ends], list[str]]
    client: Callable[[Ends], list[str]]
    parse: Callable[[str], dict[str, float]]
    port: int | None                         # the server's TCP port, waited for; None: a delay
    default_size: int
    ucx: bool = False                        # runs on UCX: ucx_env() for both ends

    def env(self) -> dict[str, str]:
        return ucx_env() if self.ucx else {}


def _perftest_bw(out: str) -> dict[str, float]:
    """perftest's bandwidth row after its '#bytes' header (--report_gbits)."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("#bytes") and i + 1 < len(lines):
            f = lines[i + 1].split()
            if len(f) >= 5:
                return {"bytes": float(f[0]), "iterations": float(f[1]),
                        "bw_peak_gbps": float(f[2]), "bw_avg_gbps": float(f[3]),
                        "msg_rate_mpps": float(f[4])}
    raise ValueError("no bandwidth row")


def _perftest_lat(out: str) -> dict[str, float]:
    """perftest's latency row: #bytes #iterations t_min t_max t_typical t_avg
    t_stdev 99% 99.9% (microseconds)."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("#bytes") and i + 1 < len(lines):
            f = lines[i + 1].split()
            if len(f) >= 9:
                keys = ("bytes", "iterations", "t_min_us", "t_max_us", "t_typical_us",
                        "t_avg_us", "t_stdev_us", "p99_us", "p999_us")
                return {k: float(v) for k, v in zip(keys, f)}
    raise ValueError("no latency row")


_QPERF_BW = {"bytes/sec": 8e-9, "KB/sec": 8e-6, "MB/sec": 8e-3, "GB/sec": 8.0}
_QPERF_LAT = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "sec": 1e6}


def _qperf(out: str) -> dict[str, float]:
    """qperf's 'bw = 2.99 MB/sec' (decimal units) and 'latency = 1.24 ms'."""
    r: dict[str, float] = {}
    if m := re.search(r"\bbw\s*=\s*([\d.]+)\s*(\S+)", out):
        if m.group(2) not in _QPERF_BW:
            raise ValueError(f"bandwidth unit {m.group(2)!r}")
        r["bw_gbps"] = float(m.group(1)) * _QPERF_BW[m.group(2)]
    if m := re.search(r"\blatency\s*=\s*([\d.]+)\s*(\S+)", out):
        if m.group(2) not in _QPERF_LAT:
            raise ValueError(f"latency unit {m.group(2)!r}")
        r["latency_us"] = float(m.group(1)) * _QPERF_LAT[m.group(2)]
    if not r:
        raise ValueError("no 'bw =' or 'latency =' line")
    return r


def _rping(out: str) -> dict[str, float]:
    n = sum(1 for line in out.splitlines() if line.startswith("ping data:"))
    if n == 0:
        raise ValueError("no 'ping data:' line")
    return {"pings": float(n)}


def _ucx_perftest(out: str) -> dict[str, float]:
    """ucx_perftest's 'Final:' row: iterations, typical/average/overall
    time per message (us: overhead for a bandwidth test, latency for a
    latency test), average/overall bandwidth (MB/s, binary), message rates."""
    for line in out.splitlines():
        if line.startswith("Final:"):
            f = line.split()[1:]
            if len(f) >= 8:
                return {"iterations": float(f[0]), "t_typical_us": float(f[1]),
                        "t_avg_us": float(f[2]), "t_overall_us": float(f[3]),
                        "bw_avg_gbps": float(f[4]) * 8 * 2**20 / 1e9,
                        "bw_overall_gbps": float(f[5]) * 8 * 2**20 / 1e9,
                        "msg_rate_avg": float(f[6]), "msg_rate_overall": float(f[7])}
    raise ValueError("no 'Final:' row")


PERFTEST_PORT = 18515   # perftest's default (-p)
QPERF_PORT = 19765      # qperf's listen port
UCX_PERFTEST_PORT = 13337


def _perftest(tool: str, ends: Ends, to: str | None) -> list[str]:
    argv = [tool, "-d", rxe_vm.RXE_DEV, "-x", str(ends.gid_index), "-s", str(ends.size),
            "-n", str(ends.iters), "-F", "-p", str(PERFTEST_PORT), f"--tclass={ends.tclass}"]
    if tool.endswith("_bw"):
        argv.append("--report_gbits")
    return argv + ([to] if to else [])


def _qperf_client(test: str) -> Callable[[Ends], list[str]]:
    return lambda e: ["qperf", "-cm1", "-t", f"{max(1, round(e.seconds))}", "-m", str(e.size),
                      e.server_addr, test]


def _ucx_client(test: str) -> Callable[[Ends], list[str]]:
    return lambda e: ["ucx_perftest", e.server_mgmt, "-p", str(UCX_PERFTEST_PORT), "-t", test,
                      "-s", str(e.size), "-n", str(e.iters)]


APPS = {a.name: a for a in (
    App("ib_write_bw", "perftest RDMA WRITE bandwidth", "ib_write_bw",
        lambda e: _perftest("ib_write_bw", e, None),
        lambda e: _perftest("ib_write_bw", e, e.server_mgmt), _perftest_bw, PERFTEST_PORT,
        65536),
    App("ib_send_lat", "perftest SEND latency", "ib_send_lat",
        lambda e: _perftest("ib_send_lat", e, None),
        lambda e: _perftest("ib_send_lat", e, e.server_mgmt), _perftest_lat, PERFTEST_PORT, 2),
    App("qperf_rc_bw", "qperf RC bandwidth (rdma_cm)", "qperf", lambda e: ["qperf"],
        _qperf_client("rc_bw"), _qperf, QPERF_PORT, 65536),
    App("qperf_rc_lat", "qperf RC latency (rdma_cm)", "qperf", lambda e: ["qperf"],
        _qperf_client("rc_lat"), _qperf, QPERF_PORT, 64),
    App("rping", "librdmacm's rping: connect, ping --iters times, verify", "rping",
        lambda e: ["rping", "-s", "-a", e.server_addr, "-C", str(e.iters)],
        lambda e: ["rping", "-c", "-a", e.server_addr, "-C", str(e.iters), "-v"], _rping, None,
        64),
    App("ucx_tag_bw", "ucx_perftest UCP tag-matching bandwidth", "ucx_perftest",
        lambda e: ["ucx_perftest", "-p", str(UCX_PERFTEST_PORT)], _ucx_client("tag_bw"),
        _ucx_perftest, UCX_PERFTEST_PORT, 65536, ucx=True),
    App("ucx_put_bw", "ucx_perftest UCP put bandwidth", "ucx_perftest",
        lambda e: ["ucx_perftest", "-p", str(UCX_PERFTEST_PORT)], _ucx_client("ucp_put_bw"),
        _ucx_perftest, UCX_PERFTEST_PORT, 65536, ucx=True),
)}


@dataclass
class AppResult:
    app: str
    server: str
    client: str
    rc: int
    seconds: float
    result: dict[str, float]
    error: str | None
    rxe: dict[str, dict[str, int]]
    stdout: str

    def to_json(self) -> dict[str, Any]:
        return {"app": self.app, "server": self.server, "client": self.client, "rc": self.rc,
                "seconds": round(self.seconds, 3), "result": self.result, "error": self.error,
                "rxe_counters": self.rxe, "stdout": self.stdout}


def gid_index_script(addr: str) -> str:
    """Prints the index of rxe0's RoCE v2 GID of addr (::ffff:a.b.c.d)."""
    hexes = "".join(f"{int(x):02x}" for x in addr.split("."))
    want = f"0000:0000:0000:0000:0000:ffff:{hexes[:4]}:{hexes[4:]}"
    port = f"/sys/class/infiniband/{rxe_vm.RXE_DEV}/ports/1"
    return (f"for g in {port}/gids/*; do i=${{g##*/}}; "
            f"[ \"$(cat $g)\" = {want} ] && [ \"$(cat {port}/gid_attrs/types/$i 2>/dev/null)\" "
            f"= 'RoCE v2' ] && echo $i && exit 0; done; exit 1")


def wait_listening(srv: Guest, port: int, alive: Callable[[], bool], timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        rc, _, _ = srv.exec(["sh", "-c", f"ss -Hltn 'sport = :{port}' | grep -q ."], timeout=10)
        if rc == 0:
            return
        if not alive():
            return  # it ended already: the client's error will say why
        time.sleep(0.2)
    raise FabricError(f"app: the server did not listen on TCP port {port} in {timeout:.0f} s")


def run(app: App, server: str, client: str, server_guest: Guest, exec_in: ExecIn,
        ends: Ends, extra: list[str], timeout: float,
        log: Callable[[str], None] = print) -> AppResult:
    """Server in server_guest (attached by the caller), client through
    exec_in, the server stopped however the client ends."""
    rc, _, _ = server_guest.exec(["sh", "-c", f"command -v {app.tool} >/dev/null"], timeout=30)
    if rc != 0:
        raise FabricError(f"app {app.name}: {app.tool} is not installed (bash scripts/setup.sh)",
                          code=3)
    before = {client: read_rxe(exec_in, client), server: _rxe_of(server_guest)}
    env = app.env()

    def serve() -> None:
        try:
            server_guest.exec(app.server(ends) + extra, timeout=timeout, env=env)
        except Exception:  # not lost: the client's failure says what went wrong
            pass

    t = threading.Thread(target=serve, daemon=True)
    log(f"app {app.name}: server on {server}, client on {client}")
    t.start()
    t0 = time.monotonic()
    try:
        if app.port is not None:
            wait_listening(server_guest, app.port, t.is_alive, min(timeout, 60))
        else:
            time.sleep(1.5)  # an rdma_cm listener: nothing to probe from outside
        crc, out, err = exec_in(client, ["env", *(f"{k}={v}" for k, v in env.items()),
                                         *app.client(ends), *extra], timeout)
    finally:
        seconds = time.monotonic() - t0
        if t.is_alive():
            server_guest.exec(["pkill", "-KILL", "-x", app.tool], timeout=30)
        t.join(timeout=30)
    result: dict[str, float] = {}
    error = None
    if crc != 0:
        error = (err or out).strip()[-400:] or f"{app.tool} exited {crc}"
    else:
        try:
            result = app.parse(out)
        except ValueError as e:
            error = f"{app.tool}'s output: {e}"
            crc = 1
    rxe = {client: rxe_delta(before[client], read_rxe(exec_in, client)),
           server: rxe_delta(before[server], _rxe_of(server_guest))}
    return AppResult(app.name, server, client, crc if crc >= 0 else 124, seconds, result, error,
                     rxe, out)


def _rxe_of(g: Guest) -> dict[str, int]:
    return read_rxe(lambda _h, argv, t: g.exec(argv, timeout=t), "")
