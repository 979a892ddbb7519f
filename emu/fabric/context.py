"""What a node kind may know of its fabric: the narrow context every kind
(nodes/) and the agents' control plane (control_plane.py) are made with,
in place of the whole Fabric, as Containerlab hands each of its node kinds
the node's own settings and not the lab.

expects:  the fabric's name and prefix, its Topology, its StateWriter, its
          log, and (on a server's part of a plan) the nodes this server
          runs
gives:    NodeContext: names (ns, sock, wire_ns), the state as last written
          and the writer that changes it, which nodes run here, where a
          cable really goes (up --miswire), the switches' own addresses and
          the ports out of service
next:     fabric.py makes one per fabric (Fabric.ctx) and owns everything
          else: up, the failures, the tables, status

It imports nothing of nodes/ or fabric.py, which is what keeps emu/fabric
free of circles: the kinds sit above it, the fabric above the kinds.
"""
from typing import AbstractSet, Callable

from .state import Setup, State, StateWriter
from .tools import FabricError
from .topology import Endpoint, HostInfo, Link, SwitchInfo, Topology


class NodeContext:
    def __init__(self, name: str, prefix: str, topo: Topology, writer: StateWriter,
                 log: Callable[[str], None], here: AbstractSet[str] | None = None) -> None:
        """here: the nodes this server runs (a server's part of a plan), or
        None for every node."""
        self.name = name
        self.prefix = prefix
        self.topo = topo
        self.writer = writer
        self.log = log
        self._here = here

    @property
    def state(self) -> State:
        """The state as last written (read it here; change it through
        self.writer)."""
        return self.writer.state

    @property
    def setup(self) -> Setup:
        """What up was asked for (a loaded fabric always has it)."""
        if self.state.setup is None:
            raise FabricError(f"fabric {self.name} has no setup on record (ofan-emu down "
                              f"--name {self.name})")
        return self.state.setup

    # -- names ---------------------------------------------------------
    def ns(self, node: str) -> str:
        return self.prefix + node

    def wire_ns(self, link: Link) -> str:
        return f"{self.prefix}w{link.id}"

    def sock(self, sw: str) -> str:
        return str(self.state.dir / "sock" / f"{sw}.sock")

    def sock_dir(self) -> str:
        """The folder of every switch's control socket (ofanctl --fabric)."""
        return str(self.state.dir / "sock")

    # -- this server's part ----------------------------------------------
    def here(self, node: str) -> bool:
        """Does this server run `node` (every node, without a plan)?"""
        return self._here is None or node in self._here

    def crosses(self, link: Link) -> bool:
        """Is one end of `link` on this server and the other elsewhere?"""
        return self.here(link.a[0]) != self.here(link.b[0])

    @property
    def switches(self) -> list[SwitchInfo]:
        """The switches this server runs."""
        return [s for s in self.topo.switches if self.here(s.name)]

    @property
    def hosts(self) -> list[HostInfo]:
        """The hosts this server runs."""
        return [h for h in self.topo.hosts if self.here(h.name)]

    # -- cabling -----------------------------------------------------------
    def miswire(self) -> tuple[Endpoint, Endpoint] | None:
        """The two ports whose cables up swapped (up --miswire), or None."""
        m = self.setup.miswire if self.state.setup is not None else ()
        return self.topo.parse_miswire(",".join(m)) if m else None

    def cabling(self) -> dict[Endpoint, Endpoint]:
        """Far ends that differ from the plan (Topology.cabling)."""
        return self.topo.cabling(self.miswire())

    def far_end(self, end: Endpoint) -> Endpoint:
        """Where the cable at a port really goes."""
        return self.cabling().get(end) or self.topo.peer_of(end)

    def router_addr(self, sid: int) -> str:
        """The switch's own address, ofan-topo's (FatTree::switch_addr): an
        ofan-dp switch answers on it and sends ICMP errors from it; a kernel
        router holds it on lo."""
        addr: str = self.topo.switches[sid].addr
        return addr

    # -- out of service ----------------------------------------------------
    def links_out_of_service(self) -> list[Link]:
        """Failed links, every inter-switch link of a failed switch, and the
        two planned links a miswire broke (a control plane never uses them)."""
        out = {lid: self.topo.links[lid] for lid in self.state.failed_links}
        for end in self.miswire() or ():
            link = self.topo.link_at(*end)
            out[link.id] = link
        for name in self.state.failed_switches:
            for p in self.topo.sw_by_name[name].ports:
                link = self.topo.link_at(name, p.port)
                if not link.host:
                    out[link.id] = link
        return list(out.values())

    def failed_switch_links(self) -> set[int]:
        """ofan-topo's ids of the inter-switch links out of service (a failed
        host link has none: ofan-topo's tables do not route over it anyway)."""
        return {link.switch_link_id for link in self.links_out_of_service()
                if link.switch_link_id is not None}

    def dead_ports(self) -> set[Endpoint]:
        """(switch, port) ends of the links out of service."""
        return {(end[0], end[1]) for link in self.links_out_of_service()
                for end in (link.a, link.b)}
