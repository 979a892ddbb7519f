"""The state file: every object a fabric created, written before the object
is, so that a crash at any point leaves a record that `down` can act on.

expects:  root (the directory is under /run)
gives:    State, one fabric's record (frozen dataclasses: its setup, its
          namespaces, processes, link attributes, failures); StateWriter,
          the one place that changes a State and saves it (atomically, on
          every change); the fabric's prefix, and the list of fabrics that
          have a state file

One writer: a State is never changed in place (its records are frozen, its
lists tuples, its maps read-only to mypy); a fabric's StateWriter makes the
next State and saves it before handing it out, so no change can be made
without being on disk, and none is written twice from two places.

Naming (the contract with `down --all`): every network namespace of fabric
NAME is "ofe-NAME-<node>", every per-switch ofan-dp runs inside one of them,
the shared engine's ofan-dp (root namespace) is named by its command line
(`--fabric /run/ofan-emu/NAME/config/fabric.json`), every EAL file prefix is
"ofe-NAME-<node>" or "ofe-NAME-shared". A server's part of a plan (up --plan
FILE --server S) puts S after NAME ("ofe-NAME-S-<node>") and records the
interfaces its stitches make in its own namespace (stitch.py). Nothing else
is ever touched.

The file's JSON is flat, as it has been since the first fabric: the setup's
keys beside the rest (Setup and the records are only how the code reads it).
"""
import contextlib
import dataclasses
import fcntl
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from . import shapes
from .request import DEFAULT_HOST_IO, HOST_IOS
from .shapes import MapOf, OneOf, Optional
from .topology import LINK_ATTRS, LinkAttrs, Topology, TopologyError


RUN_DIR = Path(os.environ.get("OFAN_EMU_RUN_DIR", "/run/ofan-emu"))
# The machine's hugepage reservation before the first fabric raised it: one
# for the machine (the reservation is), whatever run directory each ofan-emu
# has (two servers' parts on one machine: teardown.py restores it once no
# page is in use, whichever part goes down last).
HUGEPAGES_MARK = Path("/run/ofan-emu-hugepages-before")
NS_PREFIX = "ofe-"
NAME_RE = re.compile(r"^[a-z0-9]{1,10}$")


# What the code reads of a state file (StateWriter writes it); every key may
# be missing in a file written part way. A file of another shape is
# "corrupt": down still works from the names alone.
_LINK_ATTRS = {name: typ for name, (typ, _default, _help) in LINK_ATTRS.items()}
_PROCESS = {"kind?": str, "pid?": int, "start?": Optional(int), "host?": str,
            # a VM host's boot, once it is up (nodes/rxe_vm.py)
            "boot_s?": float, "mem_mb?": int, "accel?": str, "active_mtu?": Optional(int)}
STATE_SHAPE = {
    "name?": str, "namespaces?": [str], "processes?": MapOf(_PROCESS),
    "k?": int, "levels?": OneOf(2, 3), "switch?": OneOf("ofan", "kernel"),
    "engine?": OneOf("per-switch", "shared", "kernel"), "policy?": str,
    "ofan_mode?": Optional(str), "seed?": int, "pipe_size?": int,
    "topology_source?": Optional(str), "created?": Optional(float), "phase?": str, "up_s?": float,
    "failed_links?": [int], "silent_links?": [int], "failed_switches?": [str],
    "links?": MapOf(_LINK_ATTRS), "control?": OneOf("tables", "agent"), "miswire?": [str],
    "bfd_ms?": Optional(int), "bfd_multiplier?": Optional(int),
    "pfc_priority?": Optional(int), "pfcwd_detect_ms?": Optional(int),
    "pfcwd_restore_ms?": Optional(int), "pfcwd_action?": Optional(str),
    "reorder_kb?": Optional(int), "reorder_timeout_us?": Optional(int),
    "host_stamp?": Optional(str), "host_io?": OneOf(*HOST_IOS), "wires?": [int],
    "vm_hosts?": [str],
    # A server's part of a plan (up --plan FILE --server S): the server, and
    # the interfaces its crossing links' stitches made in its own namespace.
    "server?": Optional(str), "stitches?": [str],
}
# StateWriter.begin_up writes these at once, with "k", before it makes
# anything (and "engine", which a file written before the engines existed
# lacks: per-switch, or kernel).
UP_KEYS = ("k", "levels", "switch", "policy", "seed", "pipe_size", "phase", "failed_links",
           "failed_switches", "links", "wires", "vm_hosts")


@contextlib.contextmanager
def fabric_lock(name: str) -> Iterator[None]:
    """Held by a command that changes fabric NAME (fail, restore, agent
    restart): two of them at once take turns, each reading the state the
    other left (a StateWriter writes a whole file, so without the lock the
    second would write back the first's change undone). No lock without
    the fabric's directory (there is nothing to change)."""
    d = fabric_dir(name)
    if not d.is_dir():
        yield
        return
    with open(d / "lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def prefix(name: str, server: str | None = None) -> str:
    """The prefix of fabric NAME's namespaces (and EAL files): ofe-NAME-, or
    ofe-NAME-SERVER- on a server's part of a plan (up --plan --server), so
    that one server's down never takes another's, even where the two share
    /run/netns (the tests' servers are namespaces of one machine)."""
    return f"{NS_PREFIX}{name}-" + (f"{server}-" if server else "")


def part_prefix_re(name: str) -> "re.Pattern[str]":
    """What the namespaces of any server's part of fabric NAME start with."""
    return re.compile(rf"^{re.escape(NS_PREFIX)}{re.escape(name)}-srv[0-9]+-")


def fabric_dir(name: str) -> Path:
    return RUN_DIR / name


def valid_name(name: object) -> bool:
    return isinstance(name, str) and bool(NAME_RE.match(name))


# -- the records ---------------------------------------------------------------
@dataclass(frozen=True)
class VmBoot:
    """What a VM host's boot gave (status shows it)."""
    boot_s: float
    mem_mb: int
    accel: str
    active_mtu: int | None  # rxe's, None when ibv_devinfo did not say


@dataclass(frozen=True)
class ProcessRecord:
    """One process the fabric started, recorded before it runs (kind and
    host) and again once it does (pid and start time: with the pid, the
    start names one process even after the pid is reused)."""
    kind: str = ""            # ofan-dp | ofan-dp-shared | vm | uroce
    pid: int | None = None
    start: int | None = None
    host: str | None = None   # a VM's host slot
    boot: VmBoot | None = None

    def alive(self) -> bool:
        """Is that very process still running?"""
        f = _stat(self.pid)
        return f is not None and f[0] not in ("Z", "X") and int(f[19]) == self.start

    def to_doc(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind}
        if self.host is not None:
            d["host"] = self.host
        if self.pid is not None:
            d.update(pid=self.pid, start=self.start)
        if self.boot is not None:
            d.update(dataclasses.asdict(self.boot))
        return d

    @classmethod
    def from_doc(cls, d: Mapping[str, Any]) -> "ProcessRecord":
        """From a checked document (STATE_SHAPE's processes, or a run's
        *.proc.json after check_process)."""
        boot = None
        if all(k in d for k in ("boot_s", "mem_mb", "accel", "active_mtu")):
            boot = VmBoot(float(d["boot_s"]), d["mem_mb"], d["accel"], d["active_mtu"])
        return cls(kind=d.get("kind", ""), pid=d.get("pid"), start=d.get("start"),
                   host=d.get("host"), boot=boot)

    @classmethod
    def parse(cls, data: bytes, where: str) -> "ProcessRecord":
        """A record on its own (a run's *.proc.json); ValueError if it is not one."""
        return cls.from_doc(shapes.parse_json(data.decode("utf-8"), _PROCESS, where))


@dataclass(frozen=True)
class Setup:
    """What `up` was asked for: written once, before anything is made."""
    k: int
    levels: int
    switch: str                 # ofan | kernel
    engine: str                 # per-switch | shared | kernel
    policy: str
    ofan_mode: str | None
    seed: int
    pipe_size: int
    topology_source: str | None = None
    created: float | None = None
    control: str = "tables"     # tables | agent (control_plane.py)
    miswire: tuple[str, ...] = ()  # up --miswire: two "SW:PORT" whose cables are swapped
    # up --bfd-ms / --bfd-multiplier: the agents' BFD timers (None: ofan-agent's default)
    bfd_ms: int | None = None
    bfd_multiplier: int | None = None
    # up --pfc [--pfc-priority P]: the lossless priority of every switch's
    # PFC (dataplane/fabric/pfc.h), None: PFC off (a lossy fabric)
    pfc_priority: int | None = None
    # its watchdog: detection and restoration times, action (None: ofan-dp's)
    pfcwd_detect_ms: int | None = None
    pfcwd_restore_ms: int | None = None
    pfcwd_action: str | None = None
    # up --reorder: each edge host port's reorder buffer (KiB) and timeout
    # (us) (dataplane/egress/reorder.h), None: off
    reorder_kb: int | None = None
    reorder_timeout_us: int | None = None
    # up --host-stamp: when the shared engine puts a host's frame on its
    # wire (dataplane/fabric/host_stamp.h), None: ofan-dp's default
    host_stamp: str | None = None
    # up --host-io: how uroce hosts' frames reach the shared engine
    # (request.HOST_IOS)
    host_io: str = DEFAULT_HOST_IO
    # up --plan FILE --server S: this server's part of a plan (plan.py; a
    # copy of the file is the state directory's plan.json), else None
    server: str | None = None


@dataclass(frozen=True)
class State:
    """One fabric's state file, as read or as last written. Never changed in
    place: StateWriter makes the next one."""
    name: str
    namespaces: tuple[str, ...] = ()
    processes: Mapping[str, ProcessRecord] = field(default_factory=dict)
    setup: Setup | None = None  # None: a file from before up wrote it, or corrupt
    phase: str | None = None    # up | ready
    up_s: float | None = None
    failed_links: tuple[int, ...] = ()
    silent_links: tuple[int, ...] = ()  # those of failed_links failed silently
    failed_switches: tuple[str, ...] = ()
    links: Mapping[str, LinkAttrs] = field(default_factory=dict)  # link id -> attributes
    wires: tuple[int, ...] = ()  # links with a wire namespace (netem)
    vm_hosts: tuple[str, ...] = ()
    stitches: tuple[str, ...] = ()  # interfaces in the server's namespace (stitch.py)
    corrupt: bool = False       # the file was torn or of another shape (never saved)

    @property
    def dir(self) -> Path:
        return fabric_dir(self.name)

    @property
    def path(self) -> Path:
        return self.dir / "state.json"

    @property
    def plan_path(self) -> Path:
        """A server's part: the plan it follows (a copy, written at up)."""
        return self.dir / "plan.json"

    def shm_link(self, host: str) -> str:
        """The file of a host's shared-memory link (up --host-io shm): the
        engine makes it, the host's uroce attaches to it; it goes with the
        state directory."""
        return str(self.dir / "shm" / host)

    @property
    def server(self) -> str | None:
        return self.setup.server if self.setup is not None else None

    @property
    def prefix(self) -> str:
        return prefix(self.name, self.server)

    def to_doc(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "namespaces": list(self.namespaces),
                             "processes": {k: r.to_doc() for k, r in self.processes.items()}}
        if self.stitches:
            d["stitches"] = list(self.stitches)
        if self.setup is not None:
            d.update(dataclasses.asdict(self.setup))
            d.update(failed_links=list(self.failed_links),
                     silent_links=list(self.silent_links),
                     failed_switches=list(self.failed_switches),
                     links={k: v.to_doc() for k, v in self.links.items()},
                     wires=list(self.wires), vm_hosts=list(self.vm_hosts))
        if self.phase is not None:
            d["phase"] = self.phase
        if self.up_s is not None:
            d["up_s"] = self.up_s
        return d

    @classmethod
    def load(cls, name: str) -> "State | None":
        """The fabric's state, None if it has no file; a file that is torn,
        unreadable or of another shape gives a State marked corrupt."""
        p = fabric_dir(name) / "state.json"
        try:
            return parse(name, p.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            # A torn or unreadable file still names the fabric: down works
            # from the naming convention alone.
            return cls(name, corrupt=True)

    def mismatch(self, topo: Topology) -> str | None:
        """What in this state does not fit the fabric's shape (link ids,
        switch and host names), or None."""
        n = len(topo.links)
        for key, ids in (("failed_links", self.failed_links), ("silent_links", self.silent_links),
                         ("wires", self.wires)):
            bad = [i for i in ids if not 0 <= i < n]
            if bad:
                return f"{key}: link {bad[0]} of a fabric of {n}"
        bad_links = [k for k in self.links if not (k.isdigit() and int(k) < n)]
        if bad_links:
            return f"links: no link {bad_links[0]!r} in a fabric of {n}"
        if self.setup is not None and self.setup.miswire:
            try:
                topo.parse_miswire(",".join(self.setup.miswire))
            except TopologyError as e:
                return f"miswire: {e}"
        bad_nodes = [s for s in self.failed_switches if s not in topo.sw_by_name]
        bad_nodes += [h for h in self.vm_hosts if h not in topo.host_by_name]
        if bad_nodes:
            return f"no node {bad_nodes[0]!r} in a k={topo.k} {topo.kind()}"
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


def parse(name: str, data: bytes) -> State:
    """A state file's bytes -> its State; ValueError (shapes.ShapeError,
    UnicodeDecodeError, json's) when it is not a state file."""
    doc: dict[str, Any] = shapes.parse_json(data.decode("utf-8"), STATE_SHAPE, "state file")
    missing = [k for k in UP_KEYS if k not in doc]
    if "k" in doc and missing:
        raise shapes.ShapeError(f"state file: no {missing[0]!r}")
    links: dict[str, LinkAttrs] = {}
    for lid, attrs in doc.get("links", {}).items():
        try:
            links[lid] = LinkAttrs().with_(attrs, f"state file: links.{lid}")
        except TopologyError as e:
            raise shapes.ShapeError(str(e)) from None
    setup = None
    if "k" in doc:
        # No engine: a file from before the engines, which ran per switch.
        engine = doc.get("engine") or ("kernel" if doc["switch"] == "kernel" else "per-switch")
        setup = Setup(k=doc["k"], levels=doc["levels"], switch=doc["switch"], engine=engine,
                      policy=doc["policy"], ofan_mode=doc.get("ofan_mode"), seed=doc["seed"],
                      pipe_size=doc["pipe_size"], topology_source=doc.get("topology_source"),
                      created=doc.get("created"), control=doc.get("control", "tables"),
                      miswire=tuple(doc.get("miswire", [])), bfd_ms=doc.get("bfd_ms"),
                      bfd_multiplier=doc.get("bfd_multiplier"),
                      pfc_priority=doc.get("pfc_priority"),
                      pfcwd_detect_ms=doc.get("pfcwd_detect_ms"),
                      pfcwd_restore_ms=doc.get("pfcwd_restore_ms"),
                      pfcwd_action=doc.get("pfcwd_action"),
                      reorder_kb=doc.get("reorder_kb"),
                      reorder_timeout_us=doc.get("reorder_timeout_us"),
                      host_stamp=doc.get("host_stamp"), host_io=doc.get("host_io", DEFAULT_HOST_IO),
                      server=doc.get("server"))
    return State(name=name, namespaces=tuple(doc.get("namespaces", [])),
                 processes={k: ProcessRecord.from_doc(r)
                            for k, r in doc.get("processes", {}).items()},
                 setup=setup, phase=doc.get("phase"), up_s=doc.get("up_s"),
                 failed_links=tuple(doc.get("failed_links", [])),
                 silent_links=tuple(doc.get("silent_links", [])),
                 failed_switches=tuple(doc.get("failed_switches", [])), links=links,
                 wires=tuple(doc.get("wires", [])), vm_hosts=tuple(doc.get("vm_hosts", [])),
                 stitches=tuple(doc.get("stitches", [])))


# -- the one writer ---------------------------------------------------------------
class StateWriter:
    """The one place a fabric's state changes: each method makes the next
    State, saves it (atomically: a reader or a crash sees the old file or
    the new one) and only then returns, so that what it records is on disk
    before the caller creates it. The fabric owns one (Fabric.writer); the
    kinds record through it."""

    def __init__(self, state: State) -> None:
        self._state = state

    @property
    def state(self) -> State:
        return self._state

    def _commit(self, **changes: Any) -> State:
        new = dataclasses.replace(self._state, **changes)
        new.dir.mkdir(parents=True, exist_ok=True)
        tmp = new.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(new.to_doc(), indent=1, sort_keys=True))
        os.replace(tmp, new.path)
        self._state = new
        return new

    def begin_up(self, setup: Setup, links: Mapping[int, LinkAttrs],
                 vm_hosts: list[str]) -> None:
        """The fabric's setup, before anything is made."""
        self._commit(setup=setup, phase="up", up_s=None, failed_links=(), silent_links=(),
                     failed_switches=(),
                     links={str(lid): a for lid, a in links.items()},
                     wires=(), vm_hosts=tuple(vm_hosts))

    def add_namespace(self, ns: str) -> None:
        if ns not in self._state.namespaces:
            self._commit(namespaces=self._state.namespaces + (ns,))

    def add_wire(self, ns: str, link_id: int) -> None:
        """A link's wire namespace (netns.wire), before it is made."""
        st = self._state
        self._commit(namespaces=st.namespaces + (() if ns in st.namespaces else (ns,)),
                     wires=st.wires + (link_id,))

    def add_stitch(self, names: tuple[str, ...]) -> None:
        """A crossing link's interfaces in the server's namespace
        (stitch.py), before they are made."""
        st = self._state
        self._commit(stitches=st.stitches + tuple(n for n in names if n not in st.stitches))

    def ready(self, up_s: float) -> None:
        self._commit(phase="ready", up_s=up_s)

    def process(self, key: str, rec: ProcessRecord) -> None:
        """processes[key] = rec (a new one, or what is known of it now)."""
        self._commit(processes={**self._state.processes, key: rec})

    def process_update(self, key: str, **changes: Any) -> None:
        """processes[key] with these fields changed (it must exist)."""
        rec = dataclasses.replace(self._state.processes[key], **changes)
        self.process(key, rec)

    def set_link_failed(self, link_id: int, failed: bool, silent: bool = False) -> None:
        """A link failed (silent: with its carrier up, frames lost) or restored."""
        ids = tuple(i for i in self._state.failed_links if i != link_id)
        quiet = tuple(i for i in self._state.silent_links if i != link_id)
        self._commit(failed_links=ids + ((link_id,) if failed else ()),
                     silent_links=quiet + ((link_id,) if failed and silent else ()))

    def set_switch_failed(self, name: str, failed: bool) -> None:
        names = tuple(n for n in self._state.failed_switches if n != name)
        self._commit(failed_switches=names + ((name,) if failed else ()))

    def reload(self) -> None:
        """The failures and processes as the file has them now: another
        ofan-emu (fail, restore) changes them while a run goes on. Nothing
        is written."""
        st = State.load(self._state.name)
        if st is None or st.corrupt or st.setup is None:
            return
        self._state = dataclasses.replace(self._state, failed_links=st.failed_links,
                                          silent_links=st.silent_links,
                                          failed_switches=st.failed_switches,
                                          processes=st.processes)


# -- processes ---------------------------------------------------------------------
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


def alive(rec: ProcessRecord | None) -> bool:
    """Is the process of this record (if any) that very process, running?"""
    return rec is not None and rec.alive()


def now() -> float:
    return time.time()
