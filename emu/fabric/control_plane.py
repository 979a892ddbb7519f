"""Who computes the switches' valid-uplink masks (`up --control`).

    tables  ofan-emu computes every switch's masks from the topology and the
            failures it made (ofan-topo) and pushes them (Fabric.push_tables):
            an omniscient control plane, as before the agents
    agent   every switch runs its own control plane in its namespace, as a
            SONiC switch does: lldpd (neighbours), FRR's zebra, bgpd and bfdd
            (BGP unnumbered with BFD, RFC 7938) and ofan-agent, which writes
            FRR's configuration from what lldpd found and turns the routes
            BGP installed into the masks it pushes to ofan-dp
            (control/agent/). ofan-emu only breaks links and watches.

expects:  root; lldpd, lldpcli, FRR (/usr/lib/frr), vtysh, nft and unshare
          (scripts/setup.sh); the switches' ports as kernel interfaces in
          their namespaces: the per-switch engine's veths (with the XDP trap,
          dataplane/xdp/trap.bpf.c, passing control frames to the kernel), the
          shared engine's TAPs (its config's control.kernel_ports)
modifies: per switch SW of fabric NAME: /run/ofan-emu/NAME/cp/SW/ (lldpd's
          socket, pidfile and config, the agent's status file), FRR's
          /etc/frr/ofe-NAME-SW/ and /run/frr/ofe-NAME-SW/ (its pathspace, -N),
          the processes, recorded in the state file as "lldpd:SW",
          "zebra:SW", "bfdd:SW", "bgpd:SW" and "agent:SW" (all inside the
          switch's namespace, where down finds them anyway); teardown.py
          removes the FRR directories by the fabric's prefix
gives:    AgentControl: start and stop one switch's control plane, restart
          its agent, read its status, wait until every switch converged
"""
import json
import os
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable

from . import teardown
from .context import NodeContext
from .state import ProcessRecord, proc_start_time, running
from .tools import FabricError, log_tail, tool


CONTROLS = ("tables", "agent")
DEFAULT_CONTROL = "tables"

FRR_LIB = Path("/usr/lib/frr")
FRR_ETC = Path("/etc/frr")
FRR_RUN = Path("/run/frr")
# zebra first: bgpd and bfdd connect to it (zserv.api) as they start.
FRR_DAEMONS = ("zebra", "bfdd", "bgpd")
LLDP_TX_INTERVAL_S = 1  # lldpd's default is 30 s: a new cable would take that long
AGENT_INTERVAL_MS = 2000  # the poll floor: routing changes wake the agent at once
START_TIMEOUT_S = 30
CONVERGE_TIMEOUT_S = 180
REQUIRED_TOOLS = ("lldpd", "lldpcli", "vtysh", "nft", "unshare")
UP_PARALLEL = 8

# sh -c SCRIPT NAME CMD...: the command in a UTS namespace of its own whose
# hostname is the switch's (FRR reads `hostname` from it, and its peers see
# it: without it every switch would carry the machine's name).
_WITH_HOSTNAME = 'hostname "$0" && exec "$@"'


def check_control(control: str, switch: str) -> None:
    """FabricError (exit 2) for a control plane the switch kind cannot have."""
    if control not in CONTROLS:
        raise FabricError(f"--control {control}: one of {', '.join(CONTROLS)}", code=2)
    if control == "agent" and switch != "ofan":
        raise FabricError("--control agent runs ofan-agent beside ofan-dp switches "
                          "(--switch ofan); a kernel fabric routes with its own tables", code=2)


def frr_dirs(pathspace: str) -> tuple[Path, Path]:
    """FRR's configuration and run directories of a pathspace (-N)."""
    return FRR_ETC / pathspace, FRR_RUN / pathspace


class AgentControl:
    """The agent control plane of one fabric (`--control agent`)."""

    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx
        self._record_lock = threading.Lock()  # up() starts switches' daemons in parallel

    # -- names -------------------------------------------------------------
    def pathspace(self, sw: str) -> str:
        return self.ctx.ns(sw)

    def cp_dir(self, sw: str) -> Path:
        return self.ctx.state.dir / "cp" / sw

    def status_file(self, sw: str) -> Path:
        return self.cp_dir(sw) / "agent.json"

    def lldp_socket(self, sw: str) -> Path:
        return self.cp_dir(sw) / "lldpd.sock"

    def fabric_ports(self, sw: str) -> list[int]:
        """The switch's ports cabled to other switches (LLDP and BGP run there)."""
        t = self.ctx.topo
        return [p.port for p in t.sw_by_name[sw].ports
                if not t.link_at(sw, p.port).host]

    # -- checks --------------------------------------------------------------
    @staticmethod
    def check() -> None:
        """FabricError (exit 3) when a daemon or tool is not installed."""
        missing = [t for t in REQUIRED_TOOLS if shutil.which(t) is None]
        missing += [str(FRR_LIB / d) for d in FRR_DAEMONS if not (FRR_LIB / d).is_file()]
        if missing:
            raise FabricError(f"--control agent needs {', '.join(missing)} "
                              "(bash scripts/setup.sh installs lldpd, frr and nftables)", code=3)

    @staticmethod
    def namespace_sysctls() -> list[str]:
        """IPv6 on (BGP unnumbered runs over link-local addresses, which
        DAD would hold back for a second); no forwarding in the kernel (the
        dataplane forwards; the kernel only hears control frames)."""
        return ["net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.disable_ipv6=0",
                "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0",
                "net.ipv4.ip_forward=0"]

    # -- processes -------------------------------------------------------------
    def _record(self, key: str, kind: str, pid: int) -> None:
        with self._record_lock:
            self.ctx.writer.process(key, ProcessRecord(kind, pid, proc_start_time(pid)))

    def _in_ns(self, sw: str, cmd: list[str], hostname: bool = False) -> list[str]:
        pre = ["ip", "netns", "exec", self.ctx.ns(sw)]
        if hostname:
            pre += ["unshare", "--uts", "sh", "-c", _WITH_HOSTNAME, sw]
        return pre + cmd

    def _log(self, name: str) -> Path:
        return self.ctx.state.dir / "logs" / f"{name}.log"

    def _daemon(self, sw: str, key: str, kind: str, cmd: list[str], pidfile: Path) -> None:
        """Runs a daemon that forks (lldpd, FRR's -d) and records the pid
        its pidfile gives."""
        pidfile.unlink(missing_ok=True)
        with open(self._log(f"{kind}-{sw}"), "ab") as logf:
            p = subprocess.run(cmd, stdout=logf, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, timeout=START_TIMEOUT_S)
        if p.returncode != 0:
            raise FabricError(f"{kind} of {sw} did not start (exit {p.returncode}): "
                              f"{self._tail(f'{kind}-{sw}')}")
        pid = _wait_pidfile(pidfile)
        if pid is None:
            raise FabricError(f"{kind} of {sw} wrote no pidfile {pidfile} in "
                              f"{START_TIMEOUT_S} s: {self._tail(f'{kind}-{sw}')}")
        self._record(key, kind, pid)

    def _tail(self, name: str) -> str:
        return log_tail(self._log(name), 6)

    def start_lldpd(self, sw: str) -> None:
        d = self.cp_dir(sw)
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o755)  # lldpd's unprivileged half opens its socket here
        conf = d / "lldpd.conf"
        # Chassis: the switch's name; port id: the interface's name (p2),
        # which is what the agent reads back (control/agent/lldp_neighbors.h).
        conf.write_text(f"configure system hostname {sw}\n"
                        f"configure lldp tx-interval {LLDP_TX_INTERVAL_S}\n"
                        "configure lldp portidsubtype ifname\n")
        ports = ",".join(f"p{p}" for p in self.fabric_ports(sw))
        self._daemon(sw, f"lldpd:{sw}", "lldpd", self._in_ns(sw, [
            "lldpd", "-u", str(self.lldp_socket(sw)), "-p", str(d / "lldpd.pid"),
            "-O", str(conf), "-I", ports]), d / "lldpd.pid")

    def start_frr(self, sw: str, daemons: Iterable[str] = FRR_DAEMONS) -> None:
        ps = self.pathspace(sw)
        etc, rund = frr_dirs(ps)
        etc.mkdir(parents=True, exist_ok=True)
        rund.mkdir(parents=True, exist_ok=True)
        shutil.chown(rund, "frr", "frr")
        shutil.chown(etc, "frr", "frr")
        if not (etc / "vtysh.conf").exists():
            (etc / "vtysh.conf").write_text("")
        for d in daemons:
            if d == "zebra":
                (rund / "zserv.api").unlink(missing_ok=True)  # a killed zebra's, stale
            self._daemon(sw, f"{d}:{sw}", d, self._in_ns(sw, [
                str(FRR_LIB / d), "-d", "-N", ps, "-F", "datacenter", "-A", "127.0.0.1"],
                hostname=True), rund / f"{d}.pid")
            if d == "zebra" and not _wait(lambda: (rund / "zserv.api").exists()):
                raise FabricError(f"zebra of {sw} opened no {rund / 'zserv.api'} in "
                                  f"{START_TIMEOUT_S} s: {self._tail(f'zebra-{sw}')}")

    def _bfd_args(self) -> list[str]:
        """up --bfd-ms / --bfd-multiplier, for every agent (a restarted one too)."""
        st = self.ctx.state.setup
        out: list[str] = []
        if st is not None and st.bfd_ms is not None:
            out += ["--bfd-interval-ms", str(st.bfd_ms)]
        if st is not None and st.bfd_multiplier is not None:
            out += ["--bfd-multiplier", str(st.bfd_multiplier)]
        return out

    def start_agent(self, sw: str) -> None:
        ctx = self.ctx
        self.status_file(sw).unlink(missing_ok=True)
        cmd = self._in_ns(sw, [
            tool("ofan-agent"), "--config", str(ctx.state.dir / "config" / f"{sw}.json"),
            "--name", sw, "--lldpcli-socket", str(self.lldp_socket(sw)),
            "--frr-dir", str(frr_dirs(self.pathspace(sw))[0]),
            "--vtysh-pathspace", self.pathspace(sw), "--interval-ms", str(AGENT_INTERVAL_MS),
            "--status-file", str(self.status_file(sw))] + self._bfd_args(), hostname=True)
        with open(self._log(f"agent-{sw}"), "ab") as logf:
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=logf,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        self._record(f"agent:{sw}", "ofan-agent", p.pid)
        # `ip netns exec`, unshare and sh exec the agent: the same pid, whose
        # start time is read again once it has written its first status.
        if not _wait(lambda: self.status_file(sw).exists() or p.poll() is not None):
            raise FabricError(f"ofan-agent of {sw} wrote no status in {START_TIMEOUT_S} s: "
                              f"{self._tail(f'agent-{sw}')}")
        if p.poll() is not None:
            raise FabricError(f"ofan-agent of {sw} exited ({p.returncode}): "
                              f"{self._tail(f'agent-{sw}')}")
        self._record(f"agent:{sw}", "ofan-agent", p.pid)

    def up(self, switches: list[str]) -> None:
        """lldpd, FRR and the agent of each switch, in that order (the agent
        configures FRR once lldpd runs), UP_PARALLEL switches at a time: one
        after another, a k=4 fat tree's 120 daemons took ten seconds."""
        steps: list[Callable[[str], None]] = [self.start_lldpd, self.start_frr, self.start_agent]
        with ThreadPoolExecutor(UP_PARALLEL) as pool:
            for step in steps:
                # list(): the first FabricError of a step ends up at once.
                list(pool.map(step, switches))

    def keys(self, sw: str) -> list[str]:
        return [f"agent:{sw}"] + [f"{d}:{sw}" for d in reversed(FRR_DAEMONS)] + [f"lldpd:{sw}"]

    def stop(self, sw: str, only: Iterable[str] | None = None, sig: str = "TERM") -> list[int]:
        """The switch's control-plane processes (`only`: those keys) stopped:
        SIGTERM then SIGKILL (sig "KILL": at once); their pids."""
        pids = []
        for key in (list(only) if only is not None else self.keys(sw)):
            rec = self.ctx.state.processes.get(key)
            if rec is not None and rec.pid is not None and rec.alive():
                pids.append(rec.pid)
        if sig == "KILL":
            for pid in pids:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            _wait(lambda: not any(running(p) for p in pids), 5)
            return pids
        return teardown.kill_processes(pids)

    def start(self, sw: str) -> None:
        """A switch's whole control plane again (a restored switch)."""
        self.up([sw])

    def restart_agent(self, sw: str) -> int | None:
        """SIGKILL to the agent, then a new one; the killed pid."""
        rec = self.ctx.state.processes.get(f"agent:{sw}")
        killed = rec.pid if rec is not None and rec.alive() else None
        self.stop(sw, [f"agent:{sw}"], sig="KILL")
        self.start_agent(sw)
        return killed

    def restart_frr(self, sw: str, daemons: list[str]) -> list[int]:
        """Those FRR daemons of the switch stopped (SIGTERM, then SIGKILL
        after 5 s) and each started again, empty: its agent sees the new
        pid and applies frr.conf again (agent_cycle.h). The stopped pids.
        Not SIGKILL at once: a daemon so killed leaves its crash-log
        directory in /var/tmp/frr, named by a pid ofan-emu never sees
        (the daemon's before it forked), so nothing could remove it."""
        order = [d for d in FRR_DAEMONS if d in daemons]  # zebra first
        killed = self.stop(sw, [f"{d}:{sw}" for d in order])
        self.start_frr(sw, order)
        return killed

    # -- what they say ----------------------------------------------------------
    def agent_status(self, sw: str) -> dict[str, Any] | None:
        """The agent's last cycle (its --status-file), None before the first."""
        try:
            d = json.loads(self.status_file(sw).read_text())
        except (OSError, ValueError):
            return None
        return d if isinstance(d, dict) else None

    def summary(self, sw: str) -> dict[str, Any]:
        """status's "control" of one switch: processes alive, and what its
        agent last said (neighbours, sessions, BFD, masks, miswires)."""
        st = self.ctx.state.processes
        out: dict[str, Any] = {"control": "agent", "processes": {
            key.split(":")[0]: (st[key].alive() if key in st else False)
            for key in self.keys(sw)}}
        a = self.agent_status(sw)
        if a is None:
            out["agent"] = None
            return out
        bgp = a.get("bgp") or []
        bfd = a.get("bfd") or []
        out["agent"] = {
            "cycle": a.get("cycle"), "converged": a.get("converged"),
            # who the neighbours say this switch is ("" until they agree)
            "identity": (a.get("identity") or {}).get("switch", ""),
            "neighbours": sum(1 for p in a.get("ports", []) if p.get("neighbors")),
            "usable_fabric_ports": a.get("usable_fabric_ports", []),
            "miswires": a.get("miswires", []),
            "bgp_established": sum(1 for p in bgp if p.get("state") == "Established"),
            "bgp_sessions": len(bgp),
            "bfd_up": sum(1 for p in bfd if p.get("status") == "up"),
            "masks": (a.get("masks") or {}).get("action"),
            "errors": a.get("errors", [])}
        return out

    def not_converged(self, switches: Iterable[str]) -> list[str]:
        """Those of `switches` whose agent has not converged yet."""
        return [sw for sw in switches
                if not (self.agent_status(sw) or {}).get("converged")]

    def wait_converged(self, switches: list[str], timeout_s: float = CONVERGE_TIMEOUT_S,
                       log: Callable[[str], None] | None = None) -> float:
        """Until every switch's agent says converged; the seconds it took.
        FabricError naming the laggards (and what each says) after timeout_s."""
        t0 = time.monotonic()
        last = -1
        while True:
            left = self.not_converged(switches)
            if not left:
                return time.monotonic() - t0
            if log is not None and len(left) != last:
                last = len(left)
                log(f"control: {len(switches) - len(left)}/{len(switches)} switches converged")
            if time.monotonic() - t0 > timeout_s:
                why = []
                for sw in left[:4]:
                    a = self.agent_status(sw) or {}
                    why.append(f"{sw}: " + str((a.get("masks") or {}).get("reason")
                                               or a.get("errors") or "no status"))
                raise FabricError(f"control plane not converged after {timeout_s:.0f} s: "
                                  f"{', '.join(left)} ({'; '.join(why)})")
            time.sleep(0.2)


def _wait(done: Callable[[], bool], timeout_s: float = START_TIMEOUT_S) -> bool:
    end = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def _wait_pidfile(path: Path) -> int | None:
    pid: list[int] = []

    def read() -> bool:
        try:
            pid.append(int(path.read_text().split()[0]))
            return True
        except (OSError, ValueError, IndexError):
            return False

    return pid[-1] if _wait(read) else None
