"""The one interface every switch kind has, the one every host kind has,
and the records they give.

A kind is made for one fabric (nodes.make) with that fabric's NodeContext
(context.py): names (ns, sock), the topology, the state and its writer, the
log, which nodes run here; never the Fabric, whose up, failures and tables
call the kinds and are not theirs to call.

    check()          what the kind cannot run in this topology: FabricError
                     (exit 2), before anything is made
    up()             the switches started, once the namespaces and the links
                     (veths) are there
    configure(tabs)  ofan-topo's tables (Fabric.tables()) installed
    set_port(...)    one end of a link told up or down (the fabric sets the
                     veth, if the link has one)
    set_wire(...)    one end of a link cut silently (the fabric drops at the
                     veth's kernel, if the link has one)
    fail(name)       one switch stopped (the fabric has taken its veths down)
    restore(name)    that switch running again, with the fabric's failed links
                     still down (the fabric has its veths up again)
    status(name)     SwitchStatus, or None where the kind has no process
    dead()           the switches that should run but whose process is gone
    capture(...)     pcapng of both directions of one port (capture.py)
    down()           what up() started, stopped (teardown.py removes the rest,
                     and everything after a crash)

A host kind is made for the hosts of one fabric that it runs (nodes.hosts):

    namespace_sysctls()  settings of its hosts' namespaces
    up()             what runs for the fabric's life started, once the
                     switches forward (a VM booted); nothing for uroce, whose
                     engine runs per collective
    configure()      each host given the plan's address, gateway neighbour
                     and default route (in its namespace, or in its VM)
    status(name)     HostStatus
    shell(name, sh)  a shell script run as the host, its output (ping)
    down()           what the kind started, stopped; the pids signalled
"""
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..capture import Captured, Wait
from ..context import NodeContext
from ..state import VmBoot
from ..topology import HostInfo, Link, Topology


def host_if() -> str:
    return "eth0"


def port_if(port: int) -> str:
    return f"p{port}"


@dataclass
class SwitchStatus:
    """What `ofan-emu status` says of one switch's process."""
    pid: int | None
    alive: bool
    socket: str


class SwitchKind(ABC):
    switch = ""  # the state file's "switch": ofan | kernel
    engine = ""  # the state file's and status's "engine": per-switch | shared | kernel
    # Hugepages the kind needs per switch (fabric.py reserves them first).
    hugepage_bytes_per_switch = 0

    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx

    @property
    def topo(self) -> Topology:
        return self.ctx.topo

    def check(self) -> None:
        """FabricError (exit 2) for what this kind cannot run."""

    def namespace_sysctls(self) -> list[str]:
        """Settings of a switch's namespace."""
        return []

    def in_memory(self, link: Link) -> bool:
        """Does the kind carry this link itself (no veth, no wire)?"""
        return False

    @abstractmethod
    def up(self) -> None: ...

    @abstractmethod
    def configure(self, tables: dict[str, Any]) -> None: ...

    def set_port(self, name: str, port: int, up: bool) -> None:
        """Tells switch `name` (running) that its port is up or down."""

    def set_wire(self, name: str, port: int, cut: bool) -> None:
        """Tells switch `name`'s dataplane to lose (cut) or send (not cut)
        what leaves the port, the switch none the wiser: a silent failure.
        Kinds whose frames leave through a kernel netdev need nothing: the
        fabric drops at the netdev (netns.silent_drop)."""

    def fail(self, name: str) -> None:
        """Stops switch `name`."""

    def restore(self, name: str) -> None:
        """Runs switch `name` again."""

    def status(self, name: str) -> SwitchStatus | None:
        return None

    def dead(self) -> list[str]:
        return []

    @abstractmethod
    def capture(self, name: str, port: int, count: int, snaplen: int, file: Path,
                wait: Wait) -> Captured:
        """pcapng of both directions of switch `name`'s port into `file`,
        until `count` frames (0: no limit) or wait() returns."""

    def down(self) -> list[int]:
        """Stops what up() started; the pids signalled."""
        return []


@dataclass
class HostStatus:
    """What `ofan-emu status` says of one host: uroce hosts name, address,
    namespace and edge switch; a VM host its qemu too."""
    name: str
    addr: str
    ns: str
    edge: str
    kind: str                   # uroce | vm
    alive: bool | None = None   # a VM host's qemu
    pid: int | None = None
    cpu_s: float | None = None  # what its qemu has used (the VM's cost), while alive
    boot: VmBoot | None = None
    mgmt: str | None = None     # a VM host's address on the management network

    def to_json(self) -> dict[str, Any]:
        """status --json's host entry (members only where the kind has them)."""
        d: dict[str, Any] = {"name": self.name, "addr": self.addr, "ns": self.ns,
                             "edge": self.edge, "kind": self.kind}
        if self.alive is not None:
            d["alive"] = self.alive
            if self.alive:
                d["cpu_s"] = self.cpu_s
        if self.pid is not None:
            d["pid"] = self.pid
        if self.mgmt is not None:
            d["mgmt"] = self.mgmt
        if self.boot is not None:
            d.update(boot_s=self.boot.boot_s, mem_mb=self.boot.mem_mb, accel=self.boot.accel,
                     active_mtu=self.boot.active_mtu)
        return d


class HostKind(ABC):
    kind = ""  # status's "kind" of its hosts: uroce | vm

    def __init__(self, ctx: NodeContext, names: Sequence[str]) -> None:
        self.ctx = ctx
        self.names = list(names)

    @property
    def topo(self) -> Topology:
        return self.ctx.topo

    def host(self, name: str) -> HostInfo:
        return self.topo.host_by_name[name]

    def namespace_sysctls(self) -> list[str]:
        """Settings of a host's namespace. icmp_ratelimit 0: a host answers
        every traceroute probe (Linux sends a destination 6 ICMP errors,
        then one a second)."""
        return ["net.ipv4.conf.all.rp_filter=0", "net.ipv4.icmp_ratelimit=0"]

    def up(self) -> None:
        """Starts what runs for the fabric's life."""

    @abstractmethod
    def configure(self) -> None: ...

    def base_status(self, name: str) -> HostStatus:
        h = self.host(name)
        return HostStatus(name=name, addr=h.addr, ns=self.ctx.ns(name), edge=h.edge_name,
                          kind=self.kind)

    def status(self, name: str) -> HostStatus:
        return self.base_status(name)

    @abstractmethod
    def shell(self, name: str, script: str, timeout: float) -> str:
        """Runs `sh -c script` as host `name`; its output."""

    def down(self) -> list[int]:
        """Stops what the kind started; the pids signalled."""
        return []
