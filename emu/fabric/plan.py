"""One fabric across several servers: the plan every server follows.

expects:  a Topology (topology.py: the same object `up` builds, from --k and
          --levels or a topology file), the servers' underlay addresses
          (IPv4, IPv6 or host names), a placement, and the fabric's MTU
          (facts.netdev_mtu(): ofan-dp's, never typed here)
gives:    compute() -> Plan: every node's server, every link whose ends are
          on two servers (a crossing link) with its VNI, UDP port, both
          ends' servers, ports and MACs, and the underlay MTU it needs;
          Plan.to_json() / from_json() (a `version`ed document), load()
          (a plan file, checked against the topology it names); Plan.part()
          -> ServerPart, what one server brings up
errors:   PlanError (exit code 2), one line naming the file or argument and
          what is wrong; never another exception for any bytes in a file

Computed once, by `ofan-emu plan`, so that no server allocates anything on
its own: `up --plan FILE --server S` (fabric.py, stitch.py) reads every
name, number and address from the file.

Placement (`--placement`):
  pod   (default) Whole pods on one server (a fat tree's pod: its edge and
        aggregation switches and their hosts; a leaf-spine's "pod": a leaf
        and its hosts), in contiguous runs, as many per server as an even
        split allows; then each core (leaf-spine: spine) to the least loaded
        server, lowest first (round-robin when the pods split evenly). Only
        aggregation-core (leaf-spine: leaf-spine) links cross. Needs at
        least as many pods (leaves) as servers.
  auto  Greedy graph growing, as METIS's initial partitioning does: a unit
        is a switch with its hosts (a host stays with its edge switch, so no
        host link crosses). Each server in turn but the last starts from the
        lowest-numbered unit left and adds, while it is below its share (the
        nodes left over the servers left, rounded up), the unit left that
        has the most links into it and still fits (ties: lowest number; none
        linked: the lowest-numbered that fits), leaving a unit at least for
        each server after it; the last server takes the rest. No refinement
        pass: for fat trees `pod` cuts fewer links (k=4 over 2 servers: 8
        against 10); `auto` balances where whole pods cannot (3 servers:
        12 nodes each against 10, 10, 16).

Link ids are Topology's (Link.id: host links first, then ofan-topo's
inter-switch links, the ids state.json's failed_links use); VNI = the base
(--vni-base) + the link id. MACs: each end's switch (or host) port keeps
ofan-topo's MAC (what its peer's ofan-dp has as peer_mac); the other side
of the veth on each server, which the VXLAN device is stitched to, gets
stitch_mac(): 02:0f:VNI(3 bytes):00|01, locally administered, unicast, and
apart from ofan-topo's 02:00 (switch ports) and 02:01 (hosts).
"""
import ipaddress
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import shapes
from .shapes import OneOf, Optional
from .state import valid_name
from .topology import (LINK_ATTRS, LinkAttrs, Topology, TopologyError, read_file,
                       utf8_text)

PLAN_VERSION = 1
DEFAULT_VNI_BASE = 10000
DEFAULT_VXLAN_PORT = 4789           # IANA's VXLAN port
MAX_VNI = 2**24 - 1
PLACEMENTS = ("pod", "auto")
DEFAULT_PLACEMENT = "pod"
# Outer Ethernet 14 + IP + UDP 8 + VXLAN 8 on top of the inner frame.
VXLAN_OVERHEAD = {4: 50, 6: 70}
SERVER_PREFIX = "srv"               # srv0, srv1, ... (s0, s1 are a leaf-spine's spines)
STITCH_MAC_PREFIX = "02:0f"
ROLES = ("edge", "agg", "core", "host")

_MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
_LABEL_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


class PlanError(TopologyError):
    """A plan that cannot be (arguments or file): exit code 2."""


# -- the records ---------------------------------------------------------------
@dataclass(frozen=True)
class Server:
    name: str      # srv0, srv1, ...: the prefix of what the plan names on it
    address: str   # its underlay address, as given (IP addresses canonical)

    @property
    def family(self) -> int:
        """4 or 6 for an address, 0 for a host name (resolved at up)."""
        try:
            return ipaddress.ip_address(self.address).version
        except ValueError:
            return 0


@dataclass(frozen=True)
class NodePlacement:
    name: str
    role: str             # edge | agg | core | host (a leaf-spine's leaves: edge, spines: agg)
    pod: int | None       # None for cores
    server: str


@dataclass(frozen=True)
class LinkEnd:
    node: str
    port: int             # the switch's port (a host's: 0)
    server: str
    mac: str              # the port's own MAC (ofan-topo's)
    stitch_mac: str       # the veth's other side on that server, and its VXLAN device

    def label(self) -> str:
        return f"{self.node}:{self.port}"


@dataclass(frozen=True)
class CrossingLink:
    id: int               # Topology's link id
    vni: int
    a: LinkEnd
    b: LinkEnd

    def ends_from(self, server: str) -> tuple[LinkEnd, LinkEnd]:
        """(the end on `server`, the far end)."""
        return (self.a, self.b) if self.a.server == server else (self.b, self.a)


@dataclass(frozen=True)
class LinkSpec:
    """A link whose attributes differ from the topology's defaults."""
    endpoints: tuple[str, str]
    attrs: LinkAttrs


@dataclass(frozen=True)
class TopologySpec:
    """The shape and link attributes, enough to build the same Topology on
    every server (a topology file's path on one server means nothing on
    another)."""
    kind: str                         # fattree | leafspine
    k: int
    defaults: LinkAttrs
    links: tuple[LinkSpec, ...] = ()

    @property
    def levels(self) -> int:
        return 3 if self.kind == "fattree" else 2

    @classmethod
    def of(cls, topo: Topology) -> "TopologySpec":
        defaults = topo.defaults
        links = tuple(LinkSpec((li.endpoints()[0], li.endpoints()[1]), li.attrs)
                      for li in topo.links if li.attrs != defaults)
        return cls("fattree" if topo.levels == 3 else "leafspine", topo.k, defaults, links)

    def build(self, where: str) -> Topology:
        """The Topology (runs ofan-topo); PlanError if it cannot be."""
        if self.k % 2 or not 4 <= self.k <= 64:
            raise PlanError(f"{where}: topology.k {self.k}: an even number from 4 to 64")
        try:
            topo = Topology(self.k, self.levels, self.defaults.to_doc(), source=where)
            for i, ls in enumerate(self.links):
                at = f"{where}: topology.links[{i}]"
                a, b = (topo.parse_endpoint(e, at) for e in ls.endpoints)
                link = topo.link_at(*a)
                if link is not topo.link_at(*b):
                    raise PlanError(f"{at}: {ls.endpoints[0]} and {ls.endpoints[1]} are not "
                                    "linked")
                link.attrs = ls.attrs
        except PlanError:
            raise
        except TopologyError as e:
            raise PlanError(str(e)) from None
        return topo

    def to_doc(self) -> dict[str, Any]:
        return {"kind": self.kind, "k": self.k, "defaults": self.defaults.to_doc(),
                "links": [{"endpoints": list(ls.endpoints), **ls.attrs.to_doc()}
                          for ls in self.links]}


@dataclass(frozen=True)
class ServerPart:
    """What one server brings up: its nodes, and the crossing links with
    an end there (the far end's server and address from the plan)."""
    server: Server
    nodes: tuple[NodePlacement, ...]
    crossing: tuple[CrossingLink, ...]


@dataclass(frozen=True)
class Plan:
    name: str                          # the fabric's (namespaces ofe-NAME-*)
    topology: TopologySpec
    placement: str
    vni_base: int
    udp_port: int
    fabric_mtu: int                    # every fabric link's netdev MTU (ofan-dp's)
    underlay_mtu: int                  # what the servers' network must carry
    servers: tuple[Server, ...]
    nodes: tuple[NodePlacement, ...]
    crossing: tuple[CrossingLink, ...]
    version: int = PLAN_VERSION

    def server_of(self) -> dict[str, str]:
        return {n.name: n.server for n in self.nodes}

    def server(self, which: str) -> Server:
        """A server by its name (srv0) or its address; PlanError if none."""
        for s in self.servers:
            if which in (s.name, s.address):
                return s
        raise PlanError(f"--server {which}: the plan's servers are "
                        + ", ".join(f"{s.name} ({s.address})" for s in self.servers))

    def part(self, which: str) -> ServerPart:
        s = self.server(which)
        return ServerPart(s, tuple(n for n in self.nodes if n.server == s.name),
                          tuple(c for c in self.crossing if s.name in (c.a.server, c.b.server)))

    def to_doc(self) -> dict[str, Any]:
        return {
            "version": self.version, "name": self.name, "topology": self.topology.to_doc(),
            "placement": self.placement,
            "vxlan": {"vni_base": self.vni_base, "udp_port": self.udp_port},
            "fabric_mtu": self.fabric_mtu, "underlay_mtu": self.underlay_mtu,
            "servers": [{"name": s.name, "address": s.address} for s in self.servers],
            "nodes": [{"name": n.name, "role": n.role, "pod": n.pod, "server": n.server}
                      for n in self.nodes],
            "crossing_links": [{"id": c.id, "vni": c.vni, "a": _end_doc(c.a), "b": _end_doc(c.b)}
                               for c in self.crossing],
        }

    def to_json(self) -> str:
        """The document, one line per node and per link (reads and diffs
        well at any size)."""
        rows = []
        for key, val in self.to_doc().items():
            if isinstance(val, list) and val:
                items = ",\n".join(f"  {json.dumps(x)}" for x in val)
                rows.append(f" {json.dumps(key)}: [\n{items}\n ]")
            else:
                rows.append(f" {json.dumps(key)}: {json.dumps(val)}")
        return "{\n" + ",\n".join(rows) + "\n}\n"


def _what(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _end_doc(e: LinkEnd) -> dict[str, Any]:
    return {"node": e.node, "port": e.port, "server": e.server, "mac": e.mac,
            "stitch_mac": e.stitch_mac}


# -- arguments -----------------------------------------------------------------
def parse_address(text: str, where: str) -> str:
    """An underlay address: an IPv4 or IPv6 address (canonical form) or a
    host name (lower case); PlanError for anything else."""
    t = text.strip()
    try:
        ip = ipaddress.ip_address(t[1:-1] if t.startswith("[") and t.endswith("]") else t)
    except ValueError:
        ip = None
    if ip is not None:
        if ip.is_unspecified or ip.is_multicast or \
                (ip.version == 4 and ip == ipaddress.IPv4Address("255.255.255.255")):
            raise PlanError(f"{where}: {t}: not a server's unicast address")
        return str(ip)
    name = t.lower().rstrip(".")
    labels = name.split(".")
    if not name or len(name) > 253 or not all(_LABEL_RE.match(x) for x in labels) \
            or labels[-1].isdigit():
        raise PlanError(f"{where}: {text!r} is neither an IPv4 or IPv6 address nor a host name")
    return name


def parse_servers(text: str) -> tuple[Server, ...]:
    """--servers ADDR,ADDR,...: one or more, each once, of one address family."""
    parts = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in parts):
        raise PlanError(f"--servers {text!r}: give ADDR,ADDR,... (IPv4, IPv6 or host names), "
                        "none empty")
    addrs = [parse_address(x, "--servers") for x in parts]
    seen: dict[str, str] = {}
    for raw, a in zip(parts, addrs):
        if a in seen:
            raise PlanError(f"--servers: {raw} is named twice" +
                            (f" (as {seen[a]})" if seen[a] != raw else ""))
        seen[a] = raw
    servers = tuple(Server(f"{SERVER_PREFIX}{i}", a) for i, a in enumerate(addrs))
    _check_families(servers, "--servers")
    return servers


def _check_families(servers: tuple[Server, ...], where: str) -> None:
    fams = {s.family for s in servers} - {0}
    if len(fams) > 1:
        raise PlanError(f"{where}: IPv4 and IPv6 addresses mixed (a VXLAN tunnel has one "
                        "family at both ends)")


def overhead(servers: tuple[Server, ...]) -> int:
    """VXLAN's bytes on top of a fabric frame: IPv6 underlays 70, IPv4 50
    (host names are taken as IPv4; up checks the family they resolve to)."""
    return VXLAN_OVERHEAD[6 if any(s.family == 6 for s in servers) else 4]


def stitch_mac(vni: int, side: int) -> str:
    """The MAC of the stitch side of a crossing link's end on its server."""
    return f"{STITCH_MAC_PREFIX}:{vni >> 16 & 255:02x}:{vni >> 8 & 255:02x}:" \
           f"{vni & 255:02x}:{side:02x}"


# -- placement -----------------------------------------------------------------
def _hosts_on(topo: Topology) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for h in topo.hosts:
        out.setdefault(h.edge_name, []).append(h.name)
    return out


def place_pod(topo: Topology, nservers: int) -> dict[str, int]:
    """--placement pod: node -> server index (see the module's doc)."""
    hosts_on = _hosts_on(topo)
    groups: list[list[str]] = []
    if topo.levels == 3:
        by_pod: dict[int, list[str]] = {}
        for s in topo.switches:
            if s.role != "core":
                by_pod.setdefault(s.pod, []).append(s.name)
        for pod in sorted(by_pod):
            sws = by_pod[pod]
            groups.append(sws + [h for sw in sws for h in hosts_on.get(sw, [])])
        spread = [s.name for s in topo.switches if s.role == "core"]
        unit = "pods"
    else:
        groups = [[s.name] + hosts_on.get(s.name, [])
                  for s in topo.switches if s.role == "edge"]
        spread = [s.name for s in topo.switches if s.role != "edge"]
        unit = "leaves"
    n = len(groups)
    if nservers > n:
        raise PlanError(f"--placement pod keeps whole {unit} together: a k={topo.k} "
                        f"{topo.kind()} has {n}, fewer than {nservers} servers (--placement "
                        "auto spreads single switches)")
    where: dict[str, int] = {}
    load = [0] * nservers
    for i in range(nservers):
        for g in groups[i * n // nservers:(i + 1) * n // nservers]:
            for node in g:
                where[node] = i
            load[i] += len(g)
    for sw in spread:  # cores (spines): each to the least loaded server
        i = min(range(nservers), key=lambda j: (load[j], j))
        where[sw] = i
        load[i] += 1
    return where


def place_auto(topo: Topology, nservers: int) -> dict[str, int]:
    """--placement auto: node -> server index (see the module's doc)."""
    hosts_on = _hosts_on(topo)
    order = [s.name for s in topo.switches]  # by ofan-topo's id
    rank = {name: i for i, name in enumerate(order)}
    weight = {name: 1 + len(hosts_on.get(name, [])) for name in order}
    if nservers > len(order):
        raise PlanError(f"--placement auto: {nservers} servers for the {len(order)} switches of "
                        f"a k={topo.k} {topo.kind()} (each server holds a switch at least)")
    adj: dict[str, dict[str, int]] = {name: {} for name in order}
    for li in topo.links:
        if not li.host:
            x, y = li.a[0], li.b[0]
            adj[x][y] = adj[x].get(y, 0) + 1
            adj[y][x] = adj[y].get(x, 0) + 1
    left_weight = sum(weight.values())
    server: dict[str, int] = {}
    for i in range(nservers - 1):
        # This server's share of what is left (rounded up), leaving a unit
        # at least for each server after it.
        share = -(-left_weight // (nservers - i))
        reserve = nservers - 1 - i
        load = 0
        frontier: dict[str, int] = {}  # unit left -> its links into server i
        while load < share and len(order) - len(server) > reserve:
            fits = [u for u in frontier if load + weight[u] <= share]
            if fits:
                pick = max(fits, key=lambda u: (frontier[u], -rank[u]))
            else:
                left = [u for u in order if u not in server]
                fit_left = [u for u in left if load + weight[u] <= share]
                if fit_left:
                    pick = fit_left[0]
                elif load == 0:
                    pick = left[0]
                else:
                    break
            server[pick] = i
            left_weight -= weight[pick]
            load += weight[pick]
            frontier.pop(pick, None)
            for v, n in adj[pick].items():
                if v not in server:
                    frontier[v] = frontier.get(v, 0) + n
    for u in order:
        server.setdefault(u, nservers - 1)
    where = dict(server)
    for sw, hs in hosts_on.items():
        for h in hs:
            where[h] = server[sw]
    return where


def port_mac(topo: Topology, node: str, port: int) -> str:
    """ofan-topo's MAC of a switch port or a host."""
    if node in topo.host_by_name:
        return str(topo.host_by_name[node].mac)
    return str(topo.sw_by_name[node].ports[port].mac)


def crossing_links(topo: Topology, server_of: dict[str, str], vni_base: int) \
        -> tuple[CrossingLink, ...]:
    """Every link whose ends are on two servers, in link id order."""
    out = []
    for li in topo.links:
        sa, sb = server_of[li.a[0]], server_of[li.b[0]]
        if sa != sb:
            vni = vni_base + li.id
            ends = [LinkEnd(n, p, s, port_mac(topo, n, p), stitch_mac(vni, side))
                    for side, ((n, p), s) in enumerate(((li.a, sa), (li.b, sb)))]
            out.append(CrossingLink(li.id, vni, ends[0], ends[1]))
    return tuple(out)


def _check_vxlan(vni_base: int, udp_port: int, nlinks: int, where: str) -> None:
    if not 1 <= vni_base or vni_base + max(nlinks - 1, 0) > MAX_VNI:
        raise PlanError(f"{where}: VNI base {vni_base}: the VNIs base + link id (0.."
                        f"{nlinks - 1}) must be 1..{MAX_VNI}")
    if not 1 <= udp_port <= 65535:
        raise PlanError(f"{where}: UDP port {udp_port}: 1..65535")


def compute(topo: Topology, name: str, servers: tuple[Server, ...], fabric_mtu: int,
            placement: str = DEFAULT_PLACEMENT, vni_base: int = DEFAULT_VNI_BASE,
            udp_port: int = DEFAULT_VXLAN_PORT) -> Plan:
    """The plan of `topo` over `servers` (parse_servers' result). Pure: the
    same arguments give the same plan."""
    if not valid_name(name):
        raise PlanError(f"fabric name {name!r}: 1-10 of a-z, 0-9")
    if not servers:
        raise PlanError("--servers: at least one server")
    _check_vxlan(vni_base, udp_port, len(topo.links), "--vni-base/--vxlan-port")
    if placement not in PLACEMENTS:
        raise PlanError(f"--placement {placement}: one of {', '.join(PLACEMENTS)}")
    where = (place_pod if placement == "pod" else place_auto)(topo, len(servers))
    server_of = {node: servers[i].name for node, i in where.items()}
    nodes = tuple(NodePlacement(s.name, s.role, None if s.role == "core" else s.pod,
                                server_of[s.name]) for s in topo.switches) + \
        tuple(NodePlacement(h.name, "host", h.pod, server_of[h.name])
              for h in topo.hosts)
    return Plan(name=name, topology=TopologySpec.of(topo), placement=placement,
                vni_base=vni_base, udp_port=udp_port, fabric_mtu=fabric_mtu,
                underlay_mtu=fabric_mtu + overhead(servers), servers=servers, nodes=nodes,
                crossing=crossing_links(topo, server_of, vni_base))


# -- the file ------------------------------------------------------------------
_END = {"node": str, "port": int, "server": str, "mac": str, "stitch_mac": str}
PLAN_SHAPE = {
    "version": int, "name": str,
    # topology.defaults and each link's attributes: _link_record checks them
    "topology": {"kind": OneOf("fattree", "leafspine"), "k": int,
                 "links": [{"endpoints": [str]}]},
    "placement": OneOf(*PLACEMENTS),
    "vxlan": {"vni_base": int, "udp_port": int},
    "fabric_mtu": int, "underlay_mtu": int,
    "servers": [{"name": str, "address": str}],
    "nodes": [{"name": str, "role": OneOf(*ROLES), "pod": Optional(int), "server": str}],
    "crossing_links": [{"id": int, "vni": int, "a": _END, "b": _END}],
}


def _link_attrs(doc: object, where: str) -> LinkAttrs:
    if not isinstance(doc, dict):
        raise PlanError(f"{where}: not a map")
    try:
        attrs = LinkAttrs().with_({k: v for k, v in doc.items() if k != "endpoints"}, where)
    except TopologyError as e:
        raise PlanError(str(e)) from None
    missing = [k for k in LINK_ATTRS if k not in doc]
    if missing:
        raise PlanError(f"{where}: no {missing[0]!r}")
    return attrs


def from_json(data: bytes | str, source: str) -> Plan:
    """A plan file's bytes -> its Plan, checked in itself (not yet against
    the topology: load() does that). PlanError, one line, for anything else."""
    if isinstance(data, bytes):
        data = utf8_text(data, source, PlanError)
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise PlanError(f"{source}: not JSON ({' '.join(str(e).split())[:200]}); a plan is "
                        "what ofan-emu plan -o FILE writes") from None
    if isinstance(doc, dict) and "version" in doc and doc["version"] != PLAN_VERSION:
        raise PlanError(f"{source}: plan version {_what(doc['version'])}; this ofan-emu "
                        f"reads version {PLAN_VERSION} (make the plan again)")
    try:
        shapes.check(doc, PLAN_SHAPE, source)
    except shapes.ShapeError as e:
        raise PlanError(str(e)) from None
    return _from_doc(doc, source)


def _from_doc(doc: dict[str, Any], source: str) -> Plan:
    if not valid_name(doc["name"]):
        raise PlanError(f"{source}: name {doc['name']!r}: 1-10 of a-z, 0-9")
    t = doc["topology"]
    links = []
    for i, ls in enumerate(t["links"]):
        at = f"{source}: topology.links[{i}]"
        if len(ls["endpoints"]) != 2:
            raise PlanError(f"{at}: endpoints takes two")
        links.append(LinkSpec((ls["endpoints"][0], ls["endpoints"][1]), _link_attrs(ls, at)))
    defaults = _link_attrs(t.get("defaults"), f"{source}: topology.defaults")
    spec = TopologySpec(t["kind"], t["k"], defaults, tuple(links))
    servers = []
    for i, s in enumerate(doc["servers"]):
        at = f"{source}: servers[{i}]"
        if s["name"] != f"{SERVER_PREFIX}{i}":
            raise PlanError(f"{at}: name {s['name']!r}, expected {SERVER_PREFIX}{i}")
        addr = parse_address(s["address"], at)
        if addr != s["address"]:
            raise PlanError(f"{at}: address {s['address']!r} is not in canonical form ({addr})")
        servers.append(Server(s["name"], addr))
    if not servers:
        raise PlanError(f"{source}: no servers")
    if len({s.address for s in servers}) != len(servers):
        raise PlanError(f"{source}: servers: an address named twice")
    _check_families(tuple(servers), f"{source}: servers")
    names = {s.name for s in servers}
    nodes = []
    seen: set[str] = set()
    for i, n in enumerate(doc["nodes"]):
        at = f"{source}: nodes[{i}]"
        if n["name"] in seen:
            raise PlanError(f"{at}: node {n['name']!r} listed twice")
        if n["server"] not in names:
            raise PlanError(f"{at}: node {n['name']!r} on unknown server {n['server']!r}")
        seen.add(n["name"])
        nodes.append(NodePlacement(n["name"], n["role"], n["pod"], n["server"]))
    vx = doc["vxlan"]
    _check_vxlan(vx["vni_base"], vx["udp_port"], 1, f"{source}: vxlan")
    fabric_mtu = doc["fabric_mtu"]
    if not 1280 <= fabric_mtu <= 65535:
        raise PlanError(f"{source}: fabric_mtu {fabric_mtu}: 1280..65535")
    need = fabric_mtu + overhead(tuple(servers))
    if doc["underlay_mtu"] != need:
        raise PlanError(f"{source}: underlay_mtu {doc['underlay_mtu']}, but fabric_mtu "
                        f"{fabric_mtu} over VXLAN needs {need}")
    server_of = {n.name: n.server for n in nodes}
    crossing = []
    ids: set[int] = set()
    vnis: dict[int, int] = {}
    for i, c in enumerate(doc["crossing_links"]):
        at = f"{source}: crossing_links[{i}]"
        if c["vni"] in vnis:
            raise PlanError(f"{at}: duplicate VNI {c['vni']} (also link {vnis[c['vni']]})")
        if c["id"] in ids:
            raise PlanError(f"{at}: link {c['id']} listed twice")
        if c["vni"] != vx["vni_base"] + c["id"] or not 1 <= c["vni"] <= MAX_VNI:
            raise PlanError(f"{at}: VNI {c['vni']} is not vni_base {vx['vni_base']} + link id "
                            f"{c['id']} (within 1..{MAX_VNI})")
        ids.add(c["id"])
        vnis[c["vni"]] = c["id"]
        ends = []
        for side, key in enumerate(("a", "b")):
            e = c[key]
            if e["node"] not in server_of:
                raise PlanError(f"{at}.{key}: unknown node {e['node']!r}")
            if e["server"] != server_of[e["node"]]:
                raise PlanError(f"{at}.{key}: {e['node']} is on {server_of[e['node']]}, not "
                                f"{e['server']!r}")
            for m in ("mac", "stitch_mac"):
                if not _MAC_RE.match(e[m]):
                    raise PlanError(f"{at}.{key}.{m}: {_what(e[m])} is not a MAC "
                                    "(xx:xx:xx:xx:xx:xx, lower case)")
            if e["stitch_mac"] != stitch_mac(c["vni"], side):
                raise PlanError(f"{at}.{key}.stitch_mac: {e['stitch_mac']}, expected "
                                f"{stitch_mac(c['vni'], side)}")
            ends.append(LinkEnd(e["node"], e["port"], e["server"], e["mac"], e["stitch_mac"]))
        if ends[0].server == ends[1].server:
            raise PlanError(f"{at}: both ends on {ends[0].server}: not a crossing link")
        crossing.append(CrossingLink(c["id"], c["vni"], ends[0], ends[1]))
    return Plan(name=doc["name"], topology=spec, placement=doc["placement"],
                vni_base=vx["vni_base"], udp_port=vx["udp_port"], fabric_mtu=fabric_mtu,
                underlay_mtu=doc["underlay_mtu"], servers=tuple(servers), nodes=tuple(nodes),
                crossing=tuple(crossing), version=doc["version"])


def check_against(plan: Plan, topo: Topology, source: str) -> None:
    """PlanError unless the plan places exactly the topology's nodes and
    lists exactly the links that cross between its servers, with their
    ports and MACs."""
    want = [s.name for s in topo.switches] + [h.name for h in topo.hosts]
    have = [n.name for n in plan.nodes]
    unknown = [x for x in have if x not in topo.sw_by_name and x not in topo.host_by_name]
    if unknown:
        raise PlanError(f"{source}: unknown node {unknown[0]!r} (not in a k={topo.k} "
                        f"{topo.kind()})")
    missing = [x for x in want if x not in set(have)]
    if missing:
        raise PlanError(f"{source}: node {missing[0]!r} is on no server")
    for n in plan.nodes:
        role = "host" if n.name in topo.host_by_name else topo.sw_by_name[n.name].role
        if n.role != role:
            raise PlanError(f"{source}: node {n.name!r}: role {n.role}, the topology's {role}")
    expected = crossing_links(topo, plan.server_of(), plan.vni_base)
    if expected != plan.crossing:
        got = {c.id: c for c in plan.crossing}
        exp = {c.id: c for c in expected}
        for lid in sorted(set(got) | set(exp)):
            if got.get(lid) != exp.get(lid):
                what = ("is not listed" if lid not in got else "does not cross" if lid not in exp
                        else "differs from the topology's (ports, MACs)")
                raise PlanError(f"{source}: crossing_links: link {lid} "
                                f"({topo.links[lid].name() if lid < len(topo.links) else '?'}) "
                                f"{what}")


def load(path: str | Path) -> tuple[Plan, Topology]:
    """A plan file -> (Plan, its Topology), checked in itself and against
    the topology; PlanError (exit 2, one line) otherwise."""
    p = Path(path)
    plan = from_json(read_file(p, PlanError), str(p))
    topo = plan.topology.build(f"{p}: topology")
    check_against(plan, topo, str(p))
    return plan, topo


# -- the summary ---------------------------------------------------------------
def summary(plan: Plan) -> str:
    """Per server its nodes and crossing links, as a table."""
    t = plan.topology
    lines = [f"plan {plan.name}: k={t.k} {'fat tree' if t.levels == 3 else 'leaf-spine'}, "
             f"{len(plan.nodes)} nodes over {len(plan.servers)} servers (placement "
             f"{plan.placement}), {len(plan.crossing)} crossing links, VXLAN UDP "
             f"{plan.udp_port}, VNI {plan.vni_base} + link id; underlay MTU >= "
             f"{plan.underlay_mtu} (fabric {plan.fabric_mtu})",
             f"  {'server':7} {'address':24} {'switches':>8} {'hosts':>5} {'crossing':>8}  "
             "switches"]
    for s in plan.servers:
        part = plan.part(s.name)
        sws = [n.name for n in part.nodes if n.role != "host"]
        lines.append(f"  {s.name:7} {s.address:24} {len(sws):>8} "
                     f"{len(part.nodes) - len(sws):>5} {len(part.crossing):>8}  "
                     + " ".join(sws))
    if plan.crossing:
        lines.append(f"  {'link':>5} {'vni':>8}  crossing link")
        for c in plan.crossing:
            lines.append(f"  {c.id:>5} {c.vni:>8}  {c.a.label()} ({c.a.server}) -- "
                         f"{c.b.label()} ({c.b.server})")
    return "\n".join(lines)
