"""The state file: every object a fabric created, written before the object
is, so that a crash at any point leaves a record that `down` can act on.

expects:  root (the directory is under /run)
gives:    State (a dict saved atomically on every change), the fabric's
          prefix, and the list of fabrics that have a state file

Naming (the contract with `down --all`): every network namespace of fabric
NAME is "ofe-NAME-<node>", every per-switch ofan-dp runs inside one of them,
the shared engine's ofan-dp (root namespace) is named by its command line
(`--fabric /run/ofan-emu/NAME/config/fabric.json`), every EAL file prefix is
"ofe-NAME-<node>" or "ofe-NAME-shared". Nothing else is ever touched.
"""
import json
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import shapes
from .shapes import MapOf, OneOf, Optional

if TYPE_CHECKING:
    from .topology import Topology

RUN_DIR = Path(os.environ.get("OFAN_EMU_RUN_DIR", "/run/ofan-emu"))
NS_PREFIX = "ofe-"
NAME_RE = re.compile(r"^[a-z0-9]{1,10}$")


# What the code reads of a state file (fabric.py writes it); every key may be
# missing in a file written part way. A file of another shape is "corrupt":
# down still works from the names alone.
_LINK_ATTRS = {"rate_mbps": float, "buffer": str, "ecn": str, "latency_us": float,
               "loss_pct": float, "reorder_pct": float}
STATE_SHAPE = {
    "name?": str, "namespaces?": [str],
    "processes?": MapOf({"kind?": str, "pid?": int, "start?": Optional(int), "host?": str}),
    "k?": int, "levels?": OneOf(2, 3), "switch?": OneOf("ofan", "kernel"),
    "engine?": OneOf("per-switch", "shared", "kernel"), "policy?": str,
    "ofan_mode?": Optional(str), "seed?": int, "pipe_size?": int,
    "topology_source?": Optional(str), "phase?": str, "up_s?": float,
    "failed_links?": [int], "failed_switches?": [str], "links?": MapOf(_LINK_ATTRS),
    "wires?": [int], "vm_hosts?": [str],
}
# fabric.up writes these at once, with "k", before it makes anything (and
# "engine", which a file written before the engines existed lacks: per-switch).
UP_KEYS = ("k", "levels", "switch", "policy", "seed", "pipe_size", "phase", "failed_links",
           "failed_switches", "links", "wires", "vm_hosts")


def prefix(name: str) -> str:
    return f"{NS_PREFIX}{name}-"


def fabric_dir(name: str) -> Path:
    return RUN_DIR / name


def valid_name(name: object) -> bool:
    return isinstance(name, str) and bool(NAME_RE.match(name))


class State(dict[str, Any]):
    def __init__(self, name: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(data or {})
        self.name = name
        self.dir = fabric_dir(name)
        self.setdefault("name", name)
        self.setdefault("namespaces", [])
        self.setdefault("processes", {})

    @property
    def path(self) -> Path:
        return self.dir / "state.json"

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self, indent=1, sort_keys=True))
        os.replace(tmp, self.path)

    def add_ns(self, ns: str) -> None:
        if ns not in self["namespaces"]:
            self["namespaces"].append(ns)
            self.save()

    @classmethod
    def load(cls, name: str) -> "State | None":
        """The fabric's state, None if it has no file; a file that is torn,
        unreadable or of another shape gives a State marked "corrupt"."""
        p = fabric_dir(name) / "state.json"
        try:
            return cls(name, parse(p.read_bytes()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            # A torn or unreadable file still names the fabric: down works
            # from the naming convention alone.
            return cls(name, {"corrupt": True})

    def mismatch(self, topo: "Topology") -> str | None:
        """What in this state does not fit the fabric's shape (link ids,
        switch and host names), or None."""
        n = len(topo.links)
        for key in ("failed_links", "wires"):
            bad = [i for i in self.get(key, []) if not 0 <= i < n]
            if bad:
                return f"{key}: link {bad[0]} of a fabric of {n}"
        bad = [k for k in self.get("links", {}) if not (k.isdigit() and int(k) < n)]
        if bad:
            return f"links: no link {bad[0]!r} in a fabric of {n}"
        bad = [s for s in self.get("failed_switches", []) if s not in topo.sw_by_name]
        bad += [h for h in self.get("vm_hosts", []) if h not in topo.host_by_name]
        if bad:
            return f"no node {bad[0]!r} in a k={topo.k} {topo.kind()}"
        return None

    @staticmethod
    def names() -> list[str]:
        try:
            # A fabric's directory holds its state file from the start; other
            # directories here are not fabrics (throwaway VMs: _vm/).
            return sorted(d.name for d in RUN_DIR.iterdir()
                          if d.is_dir() and valid_name(d.name) and (d / "state.json").exists())
        except FileNotFoundError:
            return []


def parse(data: bytes) -> dict[str, Any]:
    """A state file's bytes -> its content; ValueError (shapes.ShapeError,
    UnicodeDecodeError, json's) when it is not a state file."""
    from .topology import LINK_ATTRS, TopologyError, attrs_with
    doc: dict[str, Any] = shapes.parse_json(data.decode("utf-8"), STATE_SHAPE, "state file")
    missing = [k for k in UP_KEYS if k not in doc]
    if "k" in doc and missing:
        raise shapes.ShapeError(f"state file: no {missing[0]!r}")
    for lid, attrs in doc.get("links", {}).items():
        try:
            attrs_with({k: v[1] for k, v in LINK_ATTRS.items()}, attrs, f"state file: links.{lid}")
        except TopologyError as e:
            raise shapes.ShapeError(str(e)) from None
    return doc


def _stat(pid: object) -> list[str] | None:
    """/proc/PID/stat after the command name: state first, start time 20th."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None  # a record's pid, from a file: never a path
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def proc_start_time(pid: int | None) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of
    /proc/PID/stat): with the pid, it names one process even after reuse."""
    f = _stat(pid)
    return int(f[19]) if f else None


def running(pid: int) -> bool:
    """Not gone and not a zombie (whose parent, maybe not an init that reaps,
    has yet to wait for it)."""
    f = _stat(pid)
    return f is not None and f[0] not in ("Z", "X")


def alive(rec: object) -> bool:
    """rec = {"pid", "start"}: is that very process still running?"""
    if not isinstance(rec, dict):
        return False
    f = _stat(rec.get("pid"))
    return f is not None and f[0] not in ("Z", "X") and int(f[19]) == rec.get("start")


def now() -> float:
    return time.time()
