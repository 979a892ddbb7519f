"""What `ofan-emu run` reads back from the programs it starts, checked before
run.py uses it: uroce's progress lines and report, ofan-coll's partial and
merged results, ofan-sim's report, ofan-dp's queues, ports and counters (by
way of ofanctl).

gives:    parse_progress(line) -> (done, total) or None; parse_host_report,
          parse_coll_result, parse_sim_report, check_snapshot -> the
          document, or FabricError (exit 1) naming the program and what in
          its output is not as run.py needs it; engine_stats(snapshot) ->
          EngineStats, what a switch's status says of its engine;
          fabric_counts(per switch queues and counters) -> FabricCounts
The shapes list what run.py reads; the programs may say more.
"""
from dataclasses import asdict, astuple, dataclass
from typing import Any

from . import shapes
from .shapes import MapOf, OneOf, Optional
from .tools import FabricError

# emu/collective/report.cc ResultJson: one collective's result.
COLL_RESULT_SHAPE = {
    "cct_us?": Optional(float), "cct_lower_bound_us?": Optional(float),
    "algbw_gbps?": Optional(float), "busbw_gbps?": Optional(float),
    "verified?": bool, "error?": Optional(str),
    "rxe_counters?": MapOf(int),
}
# uroce collective --json (emu/uroce/collective_mode.cc).
HOST_REPORT_SHAPE = {
    "result": COLL_RESULT_SHAPE,
    "totals?": MapOf(int),
    "hosts?": [{"name?": str, "tx_refused?": int}],
}
# ofan-sim --json (sim/main.cc).
SIM_REPORT_SHAPE = {
    "queue_max_pkts": float, "cct_inflation": float, "cct_us": float,
    "cct_lower_bound_us": float,
    "stages": MapOf({"max_pkts": float, "pause_frames?": int, "paused_us?": float}),
    "flows_incomplete?": int,
    # --pfc (ofan-sim's names are ofan-emu run's); stages then carry
    # pause_frames and paused_us too.
    "pfc_pause_frames?": int, "pfc_paused_us?": float, "lossless_drops?": int,
    # --reorder, --receiver gbn: the same names as the run rows'.
    "reorder_max_bytes?": int, "reorder_max_hold_us?": float, "reorder_timeouts?": int,
    "reorder_held?": int, "out_of_seq?": int, "naks?": int,
}
# ofan-dp's status: its engine (per-switch, or the shared engine's instance),
# with the shared engine's lag behind wall-clock time and its verdict.
ENGINE_SHAPE = {"kind": OneOf("shared", "per-switch"), "lag_events?": int,
                "lag_max_us?": float, "cpu_bound?": bool, "reason?": str}
# One switch's ofanctl queues, ports and counters (common/protocol), and
# (the shared engine) its status.
SNAPSHOT_SHAPE = {
    "queues": [{"port": int, "max_bytes": int, "ecn_marked": int, "shaper_lag_bytes?": int,
                "pfc?": Optional({"sent": int, "received": int, "paused_us": float,
                                  "lossless_drops": int}),
                "reorder?": Optional({"held": int, "timeouts": int, "max_bytes": int,
                                      "max_hold_us": float, "old?": int})}],
    "ports": [{"port": int, "tx_bytes": int, "rx_missed?": int}],
    "counters": {"drops?": MapOf(int)},
    "status?": {"engine?": ENGINE_SHAPE,
                "buffer?": {"capacity_bytes": int, "max_bytes": int, "alarms": int,
                            "alarm_active": bool}},
}


@dataclass
class EngineStats:
    """A switch's engine as its status gives it."""
    kind: str                # shared | per-switch
    lag_events: int = 0      # times the loop fell more than a frame time behind
    lag_max_us: float = 0.0  # the most it fell behind
    cpu_bound: bool = False  # the engine's verdict
    reason: str = ""         # why, for people


def _parse(text: str, shape: Any, who: str) -> Any:
    try:
        return shapes.parse_json(text, shape, who)
    except shapes.ShapeError as e:
        raise FabricError(str(e)) from None


def parse_progress(line: str) -> tuple[int, int] | None:
    """uroce's "progress DONE TOTAL" line -> (DONE, TOTAL); None for any
    other line (the hosts' log lines, a line cut short)."""
    f = line.split()
    if len(f) != 3 or f[0] != "progress" or not (f[1].isdigit() and f[2].isdigit()):
        return None
    done, total = int(f[1]), int(f[2])
    return (done, total) if total > 0 and done <= total else None


def parse_host_report(text: str) -> dict[str, Any]:
    """uroce collective --json's output."""
    doc: dict[str, Any] = _parse(text, HOST_REPORT_SHAPE, "uroce's report")
    return doc


def parse_coll_result(text: str, who: str) -> dict[str, Any]:
    """A collective result (ofan-coll's partial one, or `ofan-coll merge`'s)."""
    doc: dict[str, Any] = _parse(text, COLL_RESULT_SHAPE, who)
    return doc


def parse_sim_report(text: str) -> dict[str, Any]:
    """ofan-sim --json's report."""
    doc: dict[str, Any] = _parse(text, SIM_REPORT_SHAPE, "ofan-sim's report")
    return doc


def check_snapshot(snap: object, switch: str, nports: int | None = None) -> dict[str, Any]:
    """One switch's {queues, ports, counters} as ofanctl gave them; with
    nports, every queue's and port's number is one of the switch's
    (0..nports-1), as run.py indexes its ports by them."""
    where = f"switch {switch} (ofanctl)"
    try:
        doc: dict[str, Any] = shapes.check(snap, SNAPSHOT_SHAPE, where)
    except shapes.ShapeError as e:
        raise FabricError(str(e)) from None
    if nports is not None:
        for what in ("queues", "ports"):
            for i, rec in enumerate(doc[what]):
                if not 0 <= rec["port"] < nports:
                    raise FabricError(f"{where}.{what}[{i}].port: {rec['port']} is not a port "
                                      f"of the switch (it has {nports})")
    return doc


# What mpirun and app read of every switch: its queues and counters.
COUNTS_SHAPE = {"queues": SNAPSHOT_SHAPE["queues"], "counters": SNAPSHOT_SHAPE["counters"]}


@dataclass(frozen=True)
class FabricCounts:
    """The switches' counters summed, or their change over a job (mpirun,
    app): frames dropped for any reason, PFC pause frames sent, and the
    reorder stages' frames held, released by a timeout, and passed as
    already released (retransmissions, duplicates)."""
    drops: int = 0
    pause_frames: int = 0
    reorder_held: int = 0
    reorder_timeouts: int = 0
    reorder_old: int = 0

    def minus(self, before: "FabricCounts") -> "FabricCounts":
        return FabricCounts(*(a - b for a, b in zip(astuple(self), astuple(before))))

    def to_json(self) -> dict[str, int]:
        return asdict(self)

    def summary(self) -> str:
        return (f"drops {self.drops}, pause frames {self.pause_frames}, reorder held "
                f"{self.reorder_held} / timeouts {self.reorder_timeouts} / old {self.reorder_old}")


def fabric_counts(per_switch: dict[str, dict[str, Any]]) -> FabricCounts:
    """The sums over switches of their {queues, counters} (ofanctl's),
    each checked against COUNTS_SHAPE."""
    drops = pauses = held = timeouts = old = 0
    for name, snap in per_switch.items():
        try:
            doc = shapes.check(snap, COUNTS_SHAPE, f"switch {name} (ofanctl)")
        except shapes.ShapeError as e:
            raise FabricError(str(e)) from None
        drops += sum(doc["counters"].get("drops", {}).values())
        for q in doc["queues"]:
            if q.get("pfc"):
                pauses += q["pfc"]["sent"]
            ro = q.get("reorder")
            if ro:
                held += ro["held"]
                timeouts += ro["timeouts"]
                old += ro.get("old", 0)
    return FabricCounts(drops, pauses, held, timeouts, old)


def engine_stats(snap: dict[str, Any]) -> EngineStats | None:
    """The engine of a snapshot check_snapshot passed; None when its status
    is not in it or says nothing of an engine (an ofan-dp before engines)."""
    e = snap.get("status", {}).get("engine")
    if e is None:
        return None
    return EngineStats(kind=e["kind"], lag_events=e.get("lag_events", 0),
                       lag_max_us=float(e.get("lag_max_us", 0)),
                       cpu_bound=e.get("cpu_bound", False), reason=e.get("reason", ""))
