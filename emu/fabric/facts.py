"""What ofan-emu asks the C++ binaries instead of keeping a copy
(docs/design.md, rule 7): each fact lives in one place in C++, and here it
is read from the binary that owns it, once per process.

gives:    policies() -> the LB policies, as `ofanctl --list-policies --json`
          lists them (from dataplane/lb/policy_list.h);
          emu_policies() -> the names a fabric of ofan-dp switches can run;
          policy(name) -> one of them by any of its names;
          netdev_mtu() -> every fabric link's MTU, as ofan-dp sets it on its
          ports (dataplane/packet/frame_budget.h; `ofan-topo facts`);
          stages() -> the queue stages in report order, as ofan-sim reports
          them (dataplane/lb/fat_tree.h; `ofan-topo facts`; `ofan-topo
          describe` gives each switch port's);
          pfc_priority() -> PFC's default lossless priority
          (dataplane/fabric/pfc.h; `ofan-topo facts`); wire() -> what a
          frame costs on the wire beyond its bytes (preamble, FCS, gap:
          dataplane/packet/frame_budget.h; `ofan-topo facts`);
          host_stamps() -> how the shared engine may stamp hosts' frames,
          and its default (dataplane/fabric/host_stamp.h; `ofan-topo facts`)
errors:   FabricError naming the binary when it is missing (tools.tool says
          where it looked) or answers something that is not the list
"""
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import shapes
from .tools import FabricError, run, tool


@dataclass(frozen=True)
class Policy:
    """One row of the list of LB policies."""
    name: str
    aliases: tuple[str, ...]
    queue_aware: bool
    host_chooses: bool  # follows the source host's choice (needs hosts that make one)
    modes: tuple[str, ...]  # ofan-dp's lb.ofan_mode values (Ofan's ways of sharing)
    help: str


def _ask_json(name: str, argv: list[str], shape: Any) -> Any:
    """What `name argv` prints, checked against `shape` (shapes.py)."""
    exe = tool(name)
    p = run([exe] + argv, check=False, timeout=30)
    if p.returncode != 0:
        raise FabricError(f"{exe} {' '.join(argv)} failed ({p.returncode}): "
                          f"{(p.stderr or p.stdout).strip()[:400]}")
    try:
        return shapes.parse_json(p.stdout, shape, f"{name} {' '.join(argv)}")
    except shapes.ShapeError as e:
        raise FabricError(str(e)) from None


@lru_cache(maxsize=None)
def policies() -> tuple[Policy, ...]:
    argv = ["--list-policies", "--json"]
    d = _ask_json("ofanctl", argv, [{"name": str, "aliases": [str], "queue_aware": bool,
                                     "host_chooses": bool, "modes": [str], "help": str}])
    out = tuple(Policy(name=p["name"], aliases=tuple(p["aliases"]), queue_aware=p["queue_aware"],
                       host_chooses=p["host_chooses"], modes=tuple(p["modes"]), help=p["help"])
                for p in d)
    if not out:
        raise FabricError(f"ofanctl {' '.join(argv)}: an empty list of policies")
    return out


def policy(name: str) -> Policy:
    """The policy named `name` or one of its other names, as a fabric's
    switches run it; FabricError (exit 2) naming the choices if none is."""
    for p in policies():
        if name == p.name or name in p.aliases:
            if p.host_chooses:
                break
            return p
    raise FabricError(f"--policy {name}: not a policy a fabric's switches run "
                      f"(one of {', '.join(emu_policies())}; ofanctl --list-policies)", code=2)


def emu_policies() -> tuple[str, ...]:
    """The policies a fabric's switches can run on their own: not those that
    follow a choice the source host made (uroce and rxe hosts make none)."""
    return tuple(p.name for p in policies() if not p.host_chooses)


@dataclass(frozen=True)
class PfcWatchdogFacts:
    """The PFC watchdog's defaults, ranges and actions (dataplane/fabric/pfc.h)."""
    detect_ms: int
    restore_ms: int
    detect_range_ms: tuple[int, int]
    restore_range_ms: tuple[int, int]
    actions: tuple[str, ...]


@dataclass(frozen=True)
class ReorderFacts:
    """The reorder stage's default buffer and timeout range
    (dataplane/fabric/reorder.h; the default timeout is the buffer's drain
    time at the port's rate, which ofan-dp computes)."""
    buffer_bytes: int
    timeout_range_us: tuple[int, int]


@dataclass(frozen=True)
class WireFacts:
    """What a frame costs on the wire beyond its length without FCS
    (dataplane/packet/frame_budget.h): its parts and their sum."""
    preamble_sfd_bytes: int
    fcs_bytes: int
    ifg_bytes: int
    overhead_bytes: int

    @property
    def gap_bytes(self) -> int:
        """Beyond a frame length that counts its FCS (ofan-sim's frames)."""
        return self.overhead_bytes - self.fcs_bytes


@dataclass(frozen=True)
class HostStampFacts:
    """How the shared engine may stamp a host's frames, and its default
    (dataplane/fabric/host_stamp.h)."""
    names: tuple[str, ...]
    default: str


@dataclass(frozen=True)
class TopoFacts:
    """What `ofan-topo facts` prints."""
    netdev_mtu: int
    stages: tuple[str, ...]
    pfc_priority: int
    pfc_dscp: int
    pfc_watchdog: PfcWatchdogFacts
    reorder: ReorderFacts
    wire: WireFacts
    host_stamps: HostStampFacts


@lru_cache(maxsize=None)
def _topo_facts() -> TopoFacts:
    d = _ask_json("ofan-topo", ["facts"], {
        "netdev_mtu": int, "stages": [str], "pfc_priority": int, "pfc_dscp": int,
        "pfc_watchdog": {"detect_ms": int, "restore_ms": int, "detect_range_ms": [int],
                         "restore_range_ms": [int], "actions": [str]},
        "reorder": {"buffer_bytes": int, "timeout_range_us": [int]},
        "wire": {"preamble_sfd_bytes": int, "fcs_bytes": int, "ifg_bytes": int,
                 "overhead_bytes": int},
        "host_stamps": {"names": [str], "default": str}})
    w = d["pfc_watchdog"]
    if len(w["detect_range_ms"]) != 2 or len(w["restore_range_ms"]) != 2 or not w["actions"]:
        raise FabricError(f"ofan-topo facts: pfc_watchdog {w}: not usable")
    dr, rr = w["detect_range_ms"], w["restore_range_ms"]
    wd = PfcWatchdogFacts(w["detect_ms"], w["restore_ms"], (dr[0], dr[1]), (rr[0], rr[1]),
                          tuple(w["actions"]))
    r = d["reorder"]
    if len(r["timeout_range_us"]) != 2 or r["buffer_bytes"] <= 0:
        raise FabricError(f"ofan-topo facts: reorder {r}: not usable")
    ro = ReorderFacts(r["buffer_bytes"], (r["timeout_range_us"][0], r["timeout_range_us"][1]))
    wi = WireFacts(**d["wire"])
    if wi.overhead_bytes != wi.preamble_sfd_bytes + wi.fcs_bytes + wi.ifg_bytes:
        raise FabricError(f"ofan-topo facts: wire {d['wire']}: its parts do not add up")
    hs = HostStampFacts(tuple(d["host_stamps"]["names"]), d["host_stamps"]["default"])
    if hs.default not in hs.names:
        raise FabricError(f"ofan-topo facts: host_stamps {d['host_stamps']}: not usable")
    f = TopoFacts(d["netdev_mtu"], tuple(d["stages"]), d["pfc_priority"], d["pfc_dscp"], wd, ro,
                  wi, hs)
    if f.netdev_mtu < 1280 or not f.stages or not 0 <= f.pfc_priority <= 7:
        raise FabricError(f"ofan-topo facts: {f}: not usable")
    return f


def netdev_mtu() -> int:
    return _topo_facts().netdev_mtu


def stages() -> tuple[str, ...]:
    return _topo_facts().stages


def pfc_priority() -> int:
    """PFC's default lossless priority (dataplane/fabric/pfc.h)."""
    return _topo_facts().pfc_priority


def pfc_dscp() -> int:
    """The DSCP of PFC's lossless class (dataplane/fabric/pfc.h)."""
    return _topo_facts().pfc_dscp


def roce_traffic_class() -> int:
    """The IPv4 TOS (a GRH's traffic class) of RoCE traffic in the lossless
    class: its DSCP, ECN-capable (ECT(0)), as DCQCN's senders mark."""
    return pfc_dscp() << 2 | 0b10


def reorder() -> ReorderFacts:
    """The reorder stage's defaults and timeout range (dataplane/fabric/reorder.h)."""
    return _topo_facts().reorder


def host_stamps() -> HostStampFacts:
    """How the shared engine may stamp hosts' frames (dataplane/fabric/host_stamp.h)."""
    return _topo_facts().host_stamps


def wire() -> WireFacts:
    """What a frame costs on the wire beyond its bytes
    (dataplane/packet/frame_budget.h)."""
    return _topo_facts().wire


def pfc_watchdog() -> PfcWatchdogFacts:
    """The PFC watchdog's defaults, ranges and actions (dataplane/fabric/pfc.h)."""
    return _topo_facts().pfc_watchdog
