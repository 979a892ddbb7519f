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
import json
from pathlib import Path

from .tools import FabricError, run, tool

LINK_ATTRS = {
    # name: (type, default, help)
    # 25 Mb/s: on two shared cores a k=4 fat tree of 20 switches stays
    # link-bound there (shapers lose ~1% of line time); at 50 Mb/s they lose
    # 6-15%, at 100 Mb/s 26-30% (bench/RESULTS.md, "ofan-emu").
    "rate_mbps": (float, 25.0, "emulated line rate, Mb/s"),
    "buffer": (str, "256KiB", "per-port egress buffer (tail drop above)"),
    "ecn": (str, "64KiB", "ECN CE threshold (0 = off)"),
    "latency_us": (float, 0.0, "one-way latency added by tc netem"),
    "loss_pct": (float, 0.0, "random loss added by tc netem, percent"),
    "reorder_pct": (float, 0.0, "tc netem reordering, percent (needs latency_us > 0)"),
}

SIZE_UNITS = {"": 1, "B": 1, "KB": 1000, "MB": 1000**2, "KIB": 1024, "MIB": 1024**2,
              "K": 1024, "M": 1024**2}


class TopologyError(FabricError):
    def __init__(self, message):
        super().__init__(message, code=2)


def parse_size(text, what):
    s = str(text).strip().upper().replace(" ", "")
    num = s.rstrip("KMIB")
    unit = s[len(num):]
    try:
        v = float(num)
    except ValueError:
        raise TopologyError(f"{what}: {text!r} is not a size (e.g. 256KiB, 1MiB, 65536)")
    if unit not in SIZE_UNITS or v < 0:
        raise TopologyError(f"{what}: {text!r} is not a size (e.g. 256KiB, 1MiB, 65536)")
    return int(v * SIZE_UNITS[unit])


def attrs_with(base, over, where):
    out = dict(base)
    for key, val in (over or {}).items():
        if key == "endpoints":
            continue
        if key not in LINK_ATTRS:
            raise TopologyError(f"{where}: unknown link attribute {key!r} "
                                f"(known: {', '.join(sorted(LINK_ATTRS))})")
        typ = LINK_ATTRS[key][0]
        if typ is float:
            try:
                val = float(val)
            except (TypeError, ValueError):
                raise TopologyError(f"{where}: {key}: {val!r} is not a number")
            if val < 0 or (key.endswith("_pct") and val > 100):
                raise TopologyError(f"{where}: {key}: {val} is out of range")
            if key == "rate_mbps" and val <= 0:
                raise TopologyError(f"{where}: rate_mbps must be > 0")
        else:
            parse_size(val, f"{where}: {key}")
            val = str(val)
        out[key] = val
    if out["reorder_pct"] > 0 and out["latency_us"] <= 0:
        raise TopologyError(f"{where}: reorder_pct needs latency_us > 0 (netem reorders by "
                            "sending some packets without the delay)")
    return out


class Link:
    """One cable. a/b: (node name, port); for a host link a is the host (port 0)."""

    def __init__(self, lid, a, b, attrs, host=False, switch_link_id=None):
        self.id = lid                  # index in Topology.links
        self.a, self.b = a, b
        self.attrs = attrs
        self.host = host
        self.switch_link_id = switch_link_id  # ofan-topo's link id (inter-switch only)

    def netem(self):
        a = self.attrs
        return a["latency_us"] > 0 or a["loss_pct"] > 0 or a["reorder_pct"] > 0

    def name(self):
        return f"{self.a[0]}:{self.a[1]}--{self.b[0]}:{self.b[1]}"


class Topology:
    def __init__(self, k, levels, defaults=None, link_overrides=None, source=None):
        if levels not in (2, 3):
            raise TopologyError(f"levels must be 2 or 3, not {levels}")
        p = run([tool("ofan-topo"), "describe", "--k", str(k), "--levels", str(levels)],
                check=False)
        if p.returncode != 0:
            raise TopologyError(p.stderr.strip() or f"ofan-topo failed ({p.returncode})")
        d = json.loads(p.stdout)
        self.k, self.levels, self.w = d["k"], d["levels"], d["w"]
        self.source = source
        self.switches = d["switches"]
        self.hosts = d["hosts"]
        self.sw_by_name = {s["name"]: s for s in self.switches}
        self.host_by_name = {h["name"]: h for h in self.hosts}
        base = attrs_with({k_: v[1] for k_, v in LINK_ATTRS.items()}, defaults,
                          f"{source or 'topology'}: defaults")
        self.defaults = base
        self.links = []
        self._by_end = {}
        for h in self.hosts:
            self._add(("h", h["name"]), (h["edge_name"], h["edge_port"]), base, host=True)
        for l in d["links"]:
            self._add((l["lower_name"], l["lower_port"]), (l["upper_name"], l["upper_port"]),
                      base, switch_link_id=l["id"])
        if link_overrides is not None:
            self._apply_overrides(link_overrides)

    def _add(self, a, b, attrs, host=False, switch_link_id=None):
        if host:
            a = (a[1], 0)
        link = Link(len(self.links), a, b, dict(attrs), host, switch_link_id)
        self.links.append(link)
        self._by_end[a] = link
        self._by_end[b] = link

    def _endpoint(self, text, where):
        name, _, port = str(text).partition(":")
        if name in self.host_by_name:
            if port not in ("", "0", "eth0"):
                raise TopologyError(f"{where}: host {name} has one port (0), not {port!r}")
            return (name, 0)
        if name not in self.sw_by_name:
            raise TopologyError(f"{where}: no node {name!r} in a k={self.k} "
                                f"{self.kind()} (switches {self.switches[0]['name']}.."
                                f"{self.switches[-1]['name']}, hosts h0..h{len(self.hosts) - 1})")
        try:
            p = int(port)
        except ValueError:
            raise TopologyError(f"{where}: {text!r}: a switch endpoint is NAME:PORT")
        if not 0 <= p < self.k:
            raise TopologyError(f"{where}: {name} has ports 0..{self.k - 1}, not {p}")
        return (name, p)

    def _apply_overrides(self, entries):
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
            la.attrs = attrs_with(self.defaults, e, where)
        missing = [l.name() for l in self.links if l.id not in seen]
        if missing:
            raise TopologyError(
                f"{self.source}: links lists {len(seen)} of the {len(self.links)} links of a "
                f"k={self.k} {self.kind()}; missing: {', '.join(missing[:6])}"
                + (" ..." if len(missing) > 6 else "")
                + " (omit links: to take the defaults for all)")

    def kind(self):
        return "fat tree" if self.levels == 3 else "leaf-spine"

    def link_at(self, name, port):
        return self._by_end.get((name, port))

    def parse_link(self, text):
        """'SWITCH:PORT' (either end) -> the inter-switch Link."""
        end = self._endpoint(text, "--link")
        link = self._by_end.get(end)
        if link is None:
            raise TopologyError(f"--link {text}: no link there")
        if link.host:
            raise TopologyError(f"--link {text}: that is the host link of {link.a[0]}; "
                                "fail and restore take inter-switch links (edge-agg, agg-core)")
        return link

    def to_yaml_dict(self, name):
        """The canonical topology file of this shape, every link listed."""
        links = [{"endpoints": [f"{l.a[0]}" if l.host else f"{l.a[0]}:{l.a[1]}",
                                f"{l.b[0]}:{l.b[1]}"]} for l in self.links]
        d = {k_: self.defaults[k_] for k_ in LINK_ATTRS}
        return {"name": name,
                "topology": {"kind": "fattree" if self.levels == 3 else "leafspine",
                             "k": self.k, "defaults": d, "links": links}}


def load_file(path):
    import yaml
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise TopologyError(f"{path}: {e.strerror}")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise TopologyError(f"{path}: not YAML: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("topology"), dict):
        raise TopologyError(f"{path}: expected a map with a 'topology' map (see docs/emu.md)")
    unknown = set(doc) - {"name", "topology"}
    if unknown:
        raise TopologyError(f"{path}: unknown top-level keys: {', '.join(sorted(unknown))}")
    t = doc["topology"]
    unknown = set(t) - {"kind", "k", "defaults", "links"}
    if unknown:
        raise TopologyError(f"{path}: topology: unknown keys: {', '.join(sorted(unknown))}")
    kind = t.get("kind", "fattree")
    if kind not in ("fattree", "leafspine"):
        raise TopologyError(f"{path}: topology.kind: {kind!r} (fattree or leafspine)")
    k = t.get("k")
    if not isinstance(k, int) or isinstance(k, bool):
        raise TopologyError(f"{path}: topology.k: an even integer, e.g. 4")
    defaults = t.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise TopologyError(f"{path}: topology.defaults must be a map")
    name = doc.get("name", path.stem)
    return name, Topology(k, 3 if kind == "fattree" else 2, defaults, t.get("links"),
                          source=str(path))
