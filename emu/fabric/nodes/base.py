"""The one interface every switch kind has, and the records it gives.

A kind is made for one fabric (nodes.make) and asks it for what the fabric
keeps: names (ns, sock), the topology, the state file, the log.

    check()          what the kind cannot run in this topology: FabricError
                     (exit 2), before anything is made
    up()             the switches started, once the namespaces and the links
                     (veths) are there
    configure(tabs)  ofan-topo's tables (Fabric.tables()) installed
    set_port(...)    one end of a link told up or down (the fabric sets the
                     veth, if the link has one)
    fail(name)       one switch stopped (the fabric has taken its veths down)
    restore(name)    that switch running again, with the fabric's failed links
                     still down (the fabric has its veths up again)
    status(name)     SwitchStatus, or None where the kind has no process
    dead()           the switches that should run but whose process is gone
    down()           what up() started, stopped (teardown.py removes the rest,
                     and everything after a crash)
"""
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..topology import Link, Topology

if TYPE_CHECKING:  # for the annotations only: fabric.py imports the kinds
    from ..fabric import Fabric


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

    def __init__(self, fab: "Fabric") -> None:
        self.fab = fab

    @property
    def topo(self) -> Topology:
        return self.fab.topo

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

    def fail(self, name: str) -> None:
        """Stops switch `name`."""

    def restore(self, name: str) -> None:
        """Runs switch `name` again."""

    def status(self, name: str) -> SwitchStatus | None:
        return None

    def dead(self) -> list[str]:
        return []

    def down(self) -> list[int]:
        """Stops what up() started; the pids signalled."""
        return []
