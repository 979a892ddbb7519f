"""The fabric's shape: a fat tree or leaf-spine from ofan-topo, and the
per-link attributes a topology file adds.

expects:  k, levels (from the command line or a topology file); ofan-topo
          (emu/topo/ofan_topo.cc) computes the wiring, names, addresses and
          MACs: nothing of the fat tree is re-derived here
gives:    Topology: switches, hosts, links (inter-switch and host links, each
          with its attributes), lookups by name and by "SWITCH:PORT"
errors:   TopologyError (exit code 2) naming the file, the entry and what is
          wrong

Topology file (YAML, in the spirit of Containerlab's; docs/emu.md has the full
description and emu/topologies/ one canonical file per built-in shape):

    name: k4                      # the fabric's name (default: the file's stem)
    topology:
      kind: fattree               # fattree (3 levels) | leafspine (2 levels)
      k: 4
      defaults:                   # every link, unless the link says otherwise
        rate_mbps: 25             # emulated line rate (switch egress, host pacing)
        buffer: 256KiB            # per switch egress port
        ecn: 64KiB                # CE-mark above this backlog (0 = off)
        latency_us: 0             # tc netem on the wire (0 = none)
        loss_pct: 0               # tc netem loss, for tests
      links:                      # optional; if given, every link of the shape
        - endpoints: ["e0-0:2", "a0-0:0"]
          latency_us: 50          # per-link overrides
        - endpoints: ["h0", "e0-0:0"]
"""
import ipaddress
import math
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from . import shapes
from .shapes import OneOf
from .tools import FabricError, run, tool

SIZE_UNITS = {"": 1, "B": 1, "KB": 1000, "MB": 1000**2, "KIB": 1024, "MIB": 1024**2,
              "K": 1024, "M": 1024**2}


def _attr(default: Any, doc: str) -> Any:
    return field(default=default, metadata={"help": doc})


@dataclass(frozen=True)
class LinkAttrs:
    """A link's attributes, defined here once: the topology file's, the
    command line's (--link-mbps ...), the state file's and a plan's names,
    types and defaults are these fields'. Numbers are floats; sizes the
    text given (parse_size reads them). Made checked: LinkAttrs().with_()."""
    # 25 Mb/s: on two shared cores a k=4 fat tree of 20 switches stays
    # link-bound there (shapers lose ~1% of line time); at 50 Mb/s they lose
    # 6-15%, at 100 Mb/s 26-30% (bench/RESULTS.md, "ofan-emu").
    rate_mbps: float = _attr(25.0, "emulated line rate, Mb/s")
    buffer: str = _attr("256KiB", "per-port egress buffer (tail drop above)")
    ecn: str = _attr("64KiB", "ECN CE threshold (0 = off)")
    latency_us: float = _attr(0.0, "one-way latency added by tc netem")
    loss_pct: float = _attr(0.0, "random loss added by tc netem, percent")
    reorder_pct: float = _attr(0.0, "tc netem reordering, percent (needs latency_us > 0)")

    @property
    def rate_gbps(self) -> float:
        """rate_mbps in Gb/s, the unit ofan-dp, uroce, ofan-coll and ofan-sim
        take: the one place ofan-emu converts it."""
        return self.rate_mbps / 1000.0

    def netem(self) -> bool:
        """Does the link need tc netem (latency, loss or reordering)?"""
        return self.latency_us > 0 or self.loss_pct > 0 or self.reorder_pct > 0

    def to_doc(self) -> dict[str, Any]:
        """As the topology, state and plan files write them."""
        return dataclasses.asdict(self)

    def with_(self, over: dict[Any, Any] | None, where: str) -> "LinkAttrs":
        """These attributes with those in `over` (a link's entry, the
        defaults or the command line's values) checked and applied, and
        every rule between them held (the one place they are checked);
        TopologyError names a bad one."""
        out: dict[str, Any] = {}
        for key, val in (over or {}).items():
            if key == "endpoints":
                continue
            if key not in LINK_ATTRS:
                raise TopologyError(f"{where}: unknown link attribute {key!r} "
                                    f"(known: {', '.join(sorted(LINK_ATTRS))})")
            if LINK_ATTRS[key][0] is float:
                try:
                    val = float(val)
                except (TypeError, ValueError, OverflowError):
                    raise TopologyError(f"{where}: {key}: {val!r} is not a number") from None
                if not math.isfinite(val) or val < 0 or (key.endswith("_pct") and val > 100):
                    raise TopologyError(f"{where}: {key}: {val} is out of range")
                if key == "rate_mbps" and val <= 0:
                    raise TopologyError(f"{where}: rate_mbps must be > 0")
            else:
                parse_size(val, f"{where}: {key}")
                val = str(val)
            out[key] = val
        new = dataclasses.replace(self, **out)
        if new.reorder_pct > 0 and new.latency_us <= 0:
            raise TopologyError(f"{where}: reorder_pct needs latency_us > 0 (netem reorders by "
                                "sending some packets without the delay)")
        return new


# name: (type, default, help), from LinkAttrs's fields, for the help texts
# and the file shapes that name them.
LINK_ATTRS: dict[str, tuple[type, Any, str]] = {
    f.name: (float if f.type in (float, "float") else str, f.default, f.metadata["help"])
    for f in dataclasses.fields(LinkAttrs)}


# ofan-topo's records of a switch, its ports and a host (its "describe"
# JSON, DESCRIBE_SHAPE below), read once into frozen dataclasses.
@dataclass(frozen=True)
class Peer:
    """What a switch port is wired to: a host (host: its id) or a switch
    port (switch: its id, port)."""
    name: str
    mac: str
    host: int | None = None
    switch: int | None = None
    port: int | None = None

    def switch_id(self) -> int:
        """The far switch's id (a port between switches)."""
        if self.switch is None:
            raise FabricError(f"{self.name} is a host, not a switch")
        return self.switch


@dataclass(frozen=True)
class SwitchPort:
    port: int
    mac: str
    up: bool      # towards the core (an uplink)
    stage: str    # the queue stage it feeds (facts.stages())
    peer: Peer


@dataclass(frozen=True)
class SwitchInfo:
    name: str
    id: int
    role: str     # edge | agg | core
    pod: int
    index: int    # within its pod (edge, agg) or among the cores
    uplinks: int
    addr: str     # its own address (FatTree::switch_addr)
    gateway: str | None  # an edge's: its hosts' gateway
    ports: tuple[SwitchPort, ...]


@dataclass(frozen=True)
class HostInfo:
    name: str
    id: int
    pod: int
    edge: int     # its edge switch's id
    addr: str
    mac: str
    gateway: str
    edge_name: str
    edge_port: int
    edge_mac: str


def _switch(d: dict[str, Any]) -> SwitchInfo:
    ports = tuple(SwitchPort(port=p["port"], mac=p["mac"], up=p["up"], stage=p["stage"],
                             peer=Peer(name=p["peer"]["name"], mac=p["peer"]["mac"],
                                       host=p["peer"].get("host"), switch=p["peer"].get("switch"),
                                       port=p["peer"].get("port")))
                  for p in d["ports"])
    return SwitchInfo(name=d["name"], id=d["id"], role=d["role"], pod=d["pod"], index=d["index"],
                      uplinks=d["uplinks"], addr=d["addr"], gateway=d.get("gateway"), ports=ports)


def _host(d: dict[str, Any]) -> HostInfo:
    return HostInfo(**{f.name: d[f.name] for f in dataclasses.fields(HostInfo)})


# What Topology reads of `ofan-topo describe` (emu/topo/ofan_topo.cc); more
# may be there.
_PEER = {"name": str, "mac": str, "host?": int, "switch?": int, "port?": int}
DESCRIBE_SHAPE = {
    "k": int, "levels": OneOf(2, 3), "w": int,
    "switches": [{"name": str, "id": int, "role": OneOf("edge", "agg", "core"), "pod": int,
                  "index": int, "uplinks": int, "addr": str, "gateway?": str,
                  "ports": [{"port": int, "mac": str, "up": bool, "stage": str,
                             "peer": _PEER}]}],
    "hosts": [{"name": str, "id": int, "pod": int, "edge": int, "addr": str, "mac": str,
               "gateway": str, "edge_name": str, "edge_port": int, "edge_mac": str}],
    "links": [{"id": int, "lower_name": str, "lower_port": int, "upper_name": str,
               "upper_port": int}],
}

# What Fabric.push_tables reads of `ofan-topo tables` (emu/topo/ofan_topo.cc
# Tables()): per switch the valid-uplink masks (ofan-dp's load_tables) and
# the same as IPv4 routes (kernel routers); a route with no ports says the
# destination is unreachable from there.
TABLES_SHAPE = {
    "k": int, "levels": OneOf(2, 3), "failed": [int],
    "switches": [{"id": int, "name": str, "masks": [int],
                  "routes": [{"prefix": str, "ports": [int], "key?": int}]}],
}


class TopologyError(FabricError):
    """A topology (file, shape or link) that cannot be: exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code=2)


def parse_size(text: object, what: str) -> int:
    """A size in bytes from 256KiB, 1MiB, 64KB, 65536 (TopologyError if not)."""
    s = str(text).strip().upper().replace(" ", "")
    num = s.rstrip("KMIB")
    unit = s[len(num):]
    try:
        v = float(num) * SIZE_UNITS[unit]
    except (ValueError, KeyError):
        v = -1.0
    if not 0 <= v < 2**63:  # also NaN and infinity
        raise TopologyError(f"{what}: {text!r} is not a size (e.g. 256KiB, 1MiB, 65536)")
    return int(v)


def parse_describe(text: str) -> dict[str, Any]:
    """`ofan-topo describe`'s JSON, checked: its switches, hosts and links,
    every name a link or host refers to among the switches, every port within
    the radix, every switch port wired. FabricError (exit 1: a mismatch of
    ofan-emu and its build)."""
    try:
        d = shapes.parse_json(text, DESCRIBE_SHAPE, "ofan-topo describe")
        k = d["k"]
        names = {s["name"] for s in d["switches"]}
        for h in d["hosts"]:
            if h["edge_name"] not in names or not 0 <= h["edge_port"] < k:
                raise shapes.ShapeError(f"ofan-topo describe: host {h['name']!r} is wired to "
                                        f"{h['edge_name']!r} port {h['edge_port']}")
        for li in d["links"]:
            for end in ("lower", "upper"):
                if li[f"{end}_name"] not in names or not 0 <= li[f"{end}_port"] < k:
                    raise shapes.ShapeError(f"ofan-topo describe: link {li['id']} ends at "
                                            f"{li[f'{end}_name']!r} port {li[f'{end}_port']}")
        for s in d["switches"]:
            # The code indexes a switch's ports by their number.
            if [p["port"] for p in s["ports"]] != list(range(k)):
                raise shapes.ShapeError(f"ofan-topo describe: switch {s['name']!r}: its "
                                        f"ports are not 0..{k - 1} in order")
        # Every switch port is wired (Topology.link_at finds a link at each).
        wired = {(h["edge_name"], h["edge_port"]) for h in d["hosts"]}
        for li in d["links"]:
            wired |= {(li["lower_name"], li["lower_port"]), (li["upper_name"], li["upper_port"])}
        for s in d["switches"]:
            for p in range(k):
                if (s["name"], p) not in wired:
                    raise shapes.ShapeError(f"ofan-topo describe: switch {s['name']!r} port "
                                            f"{p} has no link")
        if not d["switches"] or not d["hosts"]:
            raise shapes.ShapeError("ofan-topo describe: no switches or no hosts")
    except shapes.ShapeError as e:
        raise FabricError(f"{e} (is build/emu/ofan-topo this checkout's?)") from None
    return d


def parse_tables(text: str, topo: "Topology") -> dict[str, Any]:
    """`ofan-topo tables`' JSON for `topo`, checked: its k and levels, one
    entry for each of the topology's switches, every mask non-negative, every
    route an IPv4 network over ports of the switch. FabricError (exit 1: a
    mismatch of ofan-emu and its build)."""
    where = "ofan-topo tables"
    try:
        d: dict[str, Any] = shapes.parse_json(text, TABLES_SHAPE, where)
        if (d["k"], d["levels"]) != (topo.k, topo.levels):
            raise shapes.ShapeError(f"{where}: k={d['k']} levels={d['levels']}, asked for "
                                    f"k={topo.k} levels={topo.levels}")
        names = [s["name"] for s in d["switches"]]
        if sorted(names) != sorted(topo.sw_by_name):
            raise shapes.ShapeError(f"{where}: {len(names)} switches, not the topology's "
                                    f"{len(topo.sw_by_name)} (each once)")
        for s in d["switches"]:
            at = f"{where}: switch {s['name']!r}"
            if any(m < 0 for m in s["masks"]):
                raise shapes.ShapeError(f"{at}: a negative mask")
            nports = len(topo.sw_by_name[s["name"]].ports)
            for r in s["routes"]:
                try:
                    canonical = str(ipaddress.IPv4Network(r["prefix"]))
                except ValueError as e:
                    raise shapes.ShapeError(f"{at}: route {r['prefix']!r}: {e}") from None
                if canonical != r["prefix"]:  # netns.replace_route splits ADDR/LEN
                    raise shapes.ShapeError(f"{at}: route {r['prefix']!r} is not ADDR/LEN "
                                            f"({canonical})")
                if any(not 0 <= p < nports for p in r["ports"]):
                    raise shapes.ShapeError(f"{at}: route {r['prefix']!r} over ports "
                                            f"{r['ports']} (it has 0..{nports - 1})")
    except shapes.ShapeError as e:
        raise FabricError(f"{e} (is build/emu/ofan-topo this checkout's?)") from None
    return d


Endpoint = tuple[str, int]


class Link:
    """One cable. a/b: (node name, port); for a host link a is the host (port 0)."""

    def __init__(self, lid: int, a: Endpoint, b: Endpoint, attrs: LinkAttrs, host: bool = False,
                 switch_link_id: int | None = None) -> None:
        self.id = lid                  # index in Topology.links
        self.a, self.b = a, b
        self.attrs = attrs
        self.host = host
        self.switch_link_id = switch_link_id  # ofan-topo's link id (inter-switch only)

    def netem(self) -> bool:
        return self.attrs.netem()

    def name(self) -> str:
        return f"{self.a[0]}:{self.a[1]}--{self.b[0]}:{self.b[1]}"

    def endpoints(self) -> list[str]:
        """Its two ends as a topology file's endpoints name them."""
        return [f"{self.a[0]}" if self.host else f"{self.a[0]}:{self.a[1]}",
                f"{self.b[0]}:{self.b[1]}"]


class Topology:
    def __init__(self, k: int, levels: int, defaults: dict[Any, Any] | None = None,
                 link_overrides: object = None, source: str | None = None) -> None:
        if levels not in (2, 3):
            raise TopologyError(f"levels must be 2 or 3, not {levels}")
        p = run([tool("ofan-topo"), "describe", "--k", str(k), "--levels", str(levels)],
                check=False)
        if p.returncode != 0:
            raise TopologyError(" ".join(p.stderr.split())
                                or f"ofan-topo failed ({p.returncode})")
        d = parse_describe(p.stdout)
        self.k: int = d["k"]
        self.levels: int = d["levels"]
        self.w: int = d["w"]
        self.source = source
        self.switches: list[SwitchInfo] = [_switch(s) for s in d["switches"]]
        self.hosts: list[HostInfo] = [_host(h) for h in d["hosts"]]
        self.sw_by_name = {s.name: s for s in self.switches}
        self.host_by_name = {h.name: h for h in self.hosts}
        base = LinkAttrs().with_(defaults, f"{source or 'topology'}: defaults")
        self.defaults = base
        self.links: list[Link] = []
        self._by_end: dict[Endpoint, Link] = {}
        for h in self.hosts:
            self._add((h.name, 0), (h.edge_name, h.edge_port), base, host=True)
        for li in d["links"]:
            self._add((li["lower_name"], li["lower_port"]), (li["upper_name"], li["upper_port"]),
                      base, switch_link_id=li["id"])
        if link_overrides is not None:
            self._apply_overrides(link_overrides)

    def _add(self, a: Endpoint, b: Endpoint, attrs: LinkAttrs, host: bool = False,
             switch_link_id: int | None = None) -> None:
        link = Link(len(self.links), a, b, attrs, host, switch_link_id)
        self.links.append(link)
        self._by_end[a] = link
        self._by_end[b] = link

    def _endpoint(self, text: object, where: str) -> Endpoint:
        name, _, port = str(text).partition(":")
        if name in self.host_by_name:
            if port not in ("", "0", "eth0"):
                raise TopologyError(f"{where}: host {name} has one port (0), not {port!r}")
            return (name, 0)
        if name not in self.sw_by_name:
            raise TopologyError(f"{where}: no node {name!r} in a k={self.k} "
                                f"{self.kind()} (switches {self.switches[0].name}.."
                                f"{self.switches[-1].name}, hosts h0..h{len(self.hosts) - 1})")
        try:
            p = int(port)
        except ValueError:
            raise TopologyError(f"{where}: {str(text)!r}: a switch endpoint is NAME:PORT") \
                from None
        if not 0 <= p < self.k:
            raise TopologyError(f"{where}: {name} has ports 0..{self.k - 1}, not {p}")
        return (name, p)

    def _apply_overrides(self, entries: object) -> None:
        if not isinstance(entries, list):
            raise TopologyError(f"{self.source}: links must be a list")
        seen = set()
        for i, e in enumerate(entries):
            where = f"{self.source}: links[{i}]"
            if not isinstance(e, dict) or "endpoints" not in e:
                raise TopologyError(f"{where}: each link is a map with endpoints: [A, B]")
            ends = e["endpoints"]
            if not isinstance(ends, list) or len(ends) != 2:
                raise TopologyError(f"{where}: endpoints takes two, e.g. [e0-0:2, a0-0:0]")
            a, b = (self._endpoint(x, where) for x in ends)
            la, lb = self._by_end.get(a), self._by_end.get(b)
            if la is None or la is not lb:
                other = la.b if la is not None and la.a == a else (la.a if la else None)
                raise TopologyError(
                    f"{where}: {ends[0]} and {ends[1]} are not linked in a k={self.k} "
                    f"{self.kind()}" + (f" ({ends[0]} is wired to {other[0]}:{other[1]})"
                                        if other else ""))
            if la.id in seen:
                raise TopologyError(f"{where}: link {la.name()} is listed twice")
            seen.add(la.id)
            la.attrs = self.defaults.with_(e, where)
        missing = [li.name() for li in self.links if li.id not in seen]
        if missing:
            raise TopologyError(
                f"{self.source}: links lists {len(seen)} of the {len(self.links)} links of a "
                f"k={self.k} {self.kind()}; missing: {', '.join(missing[:6])}"
                + (" ..." if len(missing) > 6 else "")
                + " (omit links: to take the defaults for all)")

    def kind(self) -> str:
        return "fat tree" if self.levels == 3 else "leaf-spine"

    def link_at(self, name: str, port: int) -> Link:
        """The link at a host (port 0) or a switch port; parse_describe made
        sure that every one has a link."""
        link = self._by_end.get((name, port))
        if link is None:
            raise FabricError(f"internal: no link at {name}:{port}")
        return link

    def parse_endpoint(self, text: str, where: str) -> Endpoint:
        """'SWITCH:PORT' or 'HOST' -> (node, port), checked against the shape."""
        return self._endpoint(text, where)

    def parse_link(self, text: str) -> Link:
        """'SWITCH:PORT' (either end) -> the inter-switch Link."""
        end = self._endpoint(text, "--link")
        link = self._by_end.get(end)
        if link is None:
            raise TopologyError(f"--link {text}: no link there")
        if link.host:
            raise TopologyError(f"--link {text}: that is the host link of {link.a[0]}; "
                                "fail and restore take inter-switch links (edge-agg, agg-core)")
        return link

    def parse_miswire(self, text: str) -> tuple[Endpoint, Endpoint]:
        """'SW:PORT,SW:PORT' (up --miswire): two switch ports on two different
        links between switches, whose far ends are to be swapped."""
        parts = text.split(",")
        if len(parts) != 2:
            raise TopologyError(f"--miswire {text}: give two switch ports, SW:PORT,SW:PORT")
        ends = [self._endpoint(x, "--miswire") for x in parts]
        links = [self._by_end.get(e) for e in ends]
        for x, link in zip(parts, links):
            if link is None or link.host:
                raise TopologyError(f"--miswire {x}: not a port cabled to another switch (a "
                                    "host's cable cannot be swapped)")
        if links[0] is links[1]:
            raise TopologyError(f"--miswire {text}: both ends of one cable")
        return ends[0], ends[1]

    def cabling(self, miswire: tuple[Endpoint, Endpoint] | None) -> dict[Endpoint, Endpoint]:
        """The far end of each port whose cable --miswire swapped (a map
        both ways; empty without one): ports E1, E2 with planned peers X1,
        X2 are cabled E1-X2 and E2-X1."""
        if miswire is None:
            return {}
        e1, e2 = miswire
        x1, x2 = self.peer_of(e1), self.peer_of(e2)
        return {e1: x2, x2: e1, e2: x1, x1: e2}

    def peer_of(self, end: Endpoint) -> Endpoint:
        """The planned far end of a port."""
        link = self.link_at(*end)
        return link.b if link.a == end else link.a

    def to_yaml_dict(self, name: str) -> dict[str, Any]:
        """The canonical topology file of this shape, every link listed."""
        links = [{"endpoints": li.endpoints()} for li in self.links]
        d = self.defaults.to_doc()
        return {"name": name,
                "topology": {"kind": "fattree" if self.levels == 3 else "leafspine",
                             "k": self.k, "defaults": d, "links": links}}


@dataclass
class TopologyFile:
    """A topology file's content, checked as far as it can be without
    ofan-topo (Topology checks the links against the shape)."""
    name: str
    kind: str                          # fattree | leafspine
    k: int
    defaults: dict[Any, Any] = field(default_factory=dict)
    links: object = None               # the links: list, if given
    source: str = ""

    @property
    def levels(self) -> int:
        return 3 if self.kind == "fattree" else 2

    def topology(self) -> Topology:
        return Topology(self.k, self.levels, self.defaults, self.links, source=self.source)


def _yaml_problem(e: Exception) -> str:
    """One line from a YAML error: where and what, without the excerpt."""
    import yaml
    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark or e.context_mark
        what = " ".join(str(x) for x in (e.context, e.problem) if x)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        return at + " ".join(what.split())
    if isinstance(e, yaml.reader.ReaderError):
        return f"character {e.character!r} at offset {e.position}: {e.reason}"
    if isinstance(e, RecursionError):
        return "nested too deeply"
    return " ".join(str(e).split())


def _keys(d: Iterable[Any]) -> str:
    return ", ".join(sorted(map(str, d)))


def utf8_text(data: bytes, source: str, error: type[TopologyError] = TopologyError) -> str:
    """A file's bytes as text; `error` (one line: which byte, where) if
    they are not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{source}: not UTF-8 text (byte 0x{data[e.start]:02x} at "
                    f"offset {e.start})") from None


def parse_file(data: bytes, source: str) -> TopologyFile:
    """A topology file's bytes -> its content; TopologyError (one line,
    naming `source`) for anything that is not a topology file."""
    import yaml
    text = utf8_text(data, source)
    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as e:
        # PyYAML raises ValueError for impossible dates (2024-13-01) and
        # OverflowError for their years, RecursionError for deep nesting.
        raise TopologyError(f"{source}: not YAML: {_yaml_problem(e)}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("topology"), dict):
        raise TopologyError(f"{source}: expected a map with a 'topology' map (see docs/emu.md)")
    unknown = set(doc) - {"name", "topology"}
    if unknown:
        raise TopologyError(f"{source}: unknown top-level keys: {_keys(unknown)}")
    t = doc["topology"]
    unknown = set(t) - {"kind", "k", "defaults", "links"}
    if unknown:
        raise TopologyError(f"{source}: topology: unknown keys: {_keys(unknown)}")
    kind = t.get("kind", "fattree")
    if kind not in ("fattree", "leafspine"):
        raise TopologyError(f"{source}: topology.kind: {kind!r} (fattree or leafspine)")
    k = t.get("k")
    if not isinstance(k, int) or isinstance(k, bool):
        raise TopologyError(f"{source}: topology.k: an even integer, e.g. 4")
    defaults = t.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise TopologyError(f"{source}: topology.defaults must be a map")
    name = doc.get("name", Path(source).stem)
    if not isinstance(name, str):
        raise TopologyError(f"{source}: name: {name!r} is not a string")
    return TopologyFile(name, kind, k, defaults, t.get("links"), source)


def read_file(path: Path, error: type[TopologyError] = TopologyError) -> bytes:
    """A file's bytes; `error` (one line) if it cannot be read."""
    try:
        return path.read_bytes()
    except OSError as e:
        raise error(f"{path}: {e.strerror or e}") from None


def load_file(path: str | Path) -> tuple[str, Topology]:
    """A topology file -> (its name, the Topology); TopologyError (exit 2,
    one line) for a file that cannot be read or is not a topology."""
    f = parse_file(read_file(Path(path)), str(path))
    return f.name, f.topology()
