#!/usr/bin/python3
"""Every file and line the emulator's Python side parses, under property
tests (Debian's python3-hypothesis): random bytes and random mutations of
real documents give either what the parser promises or its typed error,
never another exception, and the error is one line.

    parsers_test.py     (no root; needs build/emu/ofan-topo)

Covered: topology files (emu/topologies/*.yaml mutated byte- and
token-wise, random bytes, random YAML documents), ofan-topo's describe JSON
fed to Topology and its tables JSON to parse_tables (Fabric.tables), state
files through State.load, fabric.load and status(), the run's reports
(reports.py) and run.py's reading of uroce's report, the VM ranks'
ofan-coll lines and uroce's progress stream, run.py's own rows (`run
--json` as it has always printed it, read back as a server's part and
printed again key for key; mutated, a RunResult or a one-line error), the
VM agent's lines both ways (agent.parse_request, agent.parse_message),
`ofan-emu up --topology` on garbage: exit 2, one line on stderr, no
traceback; and the command line itself: every ofan-emu command in a code
block of README.md and docs/*.md and in --help's examples parses
(cli.parser), a wrong one named by its file and line.

Derandomized (the same examples on every run) and bounded: about 15 s.
"""
import contextlib
import copy
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable
from unittest import mock

REPO = Path(__file__).resolve().parents[3]
RUN_DIR = tempfile.mkdtemp(prefix="ofan-parsers-test-")
os.environ["OFAN_EMU_RUN_DIR"] = RUN_DIR  # state.py reads it at import
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import check, failures  # noqa: E402
import doc_commands  # noqa: E402
sys.path.insert(0, str(REPO / "emu"))
from fabric import fabric, reports, state, topology  # noqa: E402
from fabric import cli as emu_cli  # noqa: E402
from fabric import run as fabric_run  # noqa: E402
from fabric.run_rows import RunResult  # noqa: E402
from fabric.tools import FabricError, run, tool  # noqa: E402
from fabric.topology import TopologyError  # noqa: E402
from vm import agent  # noqa: E402

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402
from hypothesis.strategies import SearchStrategy  # noqa: E402

EMU = str(REPO / "emu" / "ofan-emu")
CANONICAL = sorted((REPO / "emu" / "topologies").glob("*.yaml"))


def bounded(n: int, deadline_ms: int) -> Callable[[Any], Any]:
    """Explicit bounds, derandomized, no example database in the tree."""
    return settings(max_examples=n, deadline=deadline_ms, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                    print_blob=False)


def one_line(e: Exception) -> bool:
    return "\n" not in str(e) and str(e).strip() != ""


# -- strategies ---------------------------------------------------------------
# Values that break parsers: odd numbers, types, YAML tags and anchors.
NASTY = ["-1", "0", "nan", ".nan", ".inf", "-.inf", "1e400", "9" * 40, "4.5", "true", "null",
         "~", "[]", "{}", "'x'", "2024-13-01", "2024-02-30 25:61:61", "0x10", "0o17", "1_000",
         "!!binary AAAA", "!!python/object:os.system", "&a x", "*a", "<<: *a", "'\\x00'",
         "\"\\ud800\"", "? [1]", "- - -", "{a: [", "\t", "%YAML 9.9", "---", "...",
         "[" * 60, "]", ":", "-", "'", "\"", "#", "|", ">", "!", "@", "`", "\\", "\x00",
         "\x85", "\ufeff"]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=6)


@st.composite
def byte_mutations(draw: Any, base: bytes) -> bytes:
    """base with one to four edits: a byte set, a span cut or repeated,
    random bytes or a nasty token put in, a token replaced."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["set", "cut", "insert", "nasty", "token", "repeat"]))
        i = draw(st.integers(0, len(data)))
        j = min(len(data), i + draw(st.integers(0, 40)))
        if op == "set" and data:
            data[min(i, len(data) - 1)] = draw(st.integers(0, 255))
        elif op == "cut":
            del data[i:j]
        elif op == "insert":
            data[i:i] = draw(st.binary(max_size=16))
        elif op == "nasty":
            data[i:i] = draw(st.sampled_from(NASTY)).encode()
        elif op == "repeat":
            data[i:i] = data[i:j]
        else:
            # Replace a whole word (a number, a name, a key) with a nasty one.
            words = [w for w in bytes(data).split() if w.strip(b"[],:'-")]
            if words:
                w = draw(st.sampled_from(words))
                data = bytearray(bytes(data).replace(w, draw(st.sampled_from(NASTY)).encode(), 1))
    return bytes(data)


def paths(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document (for json_mutations)."""
    out = [at] if at else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, at + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, at + (i,))
    return out


@st.composite
def json_mutations(draw: Any, base: Any) -> Any:
    """base with one to three places replaced by a random value, removed, or
    given a random sibling key."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        ps = paths(doc)
        if not ps:
            return draw(json_values)
        at = draw(st.sampled_from(ps))
        parent = doc
        for key in at[:-1]:
            parent = parent[key]
        op = draw(st.sampled_from(["replace", "remove", "add"]))
        if op == "replace":
            parent[at[-1]] = draw(json_values)
        elif op == "remove":
            del parent[at[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=6))] = draw(json_values)
        else:
            parent.append(draw(json_values))
    return doc


# -- topology files ---------------------------------------------------------------
def load_bytes(data: bytes) -> None:
    """load_file on a file holding data: a Topology or a one-line TopologyError."""
    with tempfile.NamedTemporaryFile(suffix=".yaml", dir=RUN_DIR) as f:
        f.write(data)
        f.flush()
        try:
            name, topo = topology.load_file(f.name)
        except TopologyError as e:
            assert one_line(e), repr(str(e))
            assert e.code == 2
            return
        assert isinstance(name, str) and topo.k >= 4 and topo.links
        topo.to_yaml_dict(name)
        for li in topo.links:
            topology.parse_size(li.attrs.buffer, "buffer")
            assert li.attrs.rate_mbps > 0


@bounded(300, 2000)
@given(st.binary(max_size=300))
def random_bytes_topology(data: bytes) -> None:
    try:
        topology.parse_file(data, "random.yaml")
    except TopologyError as e:
        assert one_line(e) and e.code == 2, repr(str(e))


@bounded(150, 10000)
@given(st.sampled_from(CANONICAL).map(lambda p: p.read_bytes()).flatmap(byte_mutations))
def mutated_topology(data: bytes) -> None:
    load_bytes(data)


K_VALUES: list[Any] = [4, 4, 6, 3, 0, -4, 66, True, "4", 4.0]
KIND_VALUES: list[Any] = ["fattree", "leafspine", "ring", 3, None]
link_attr_values = st.one_of(json_values, st.sampled_from(NASTY),
                             st.sampled_from(["256KiB", "1MiB", "64KB", "0", "25", "1e3"]))


ENDPOINTS = ["h0", "h1", "l0:0", "l0:2", "s0:0", "e0-0:2", "a0-0:0", "x:1", "l0:9", "h0:1",
             "l0:-1", "l0:x"]
link_entries: SearchStrategy[Any] = st.fixed_dictionaries(
    {"endpoints": st.lists(st.sampled_from(ENDPOINTS), max_size=3)},
    optional={"latency_us": link_attr_values, "rate_mbps": link_attr_values})
defaults: SearchStrategy[Any] = st.dictionaries(
    st.sampled_from(list(topology.LINK_ATTRS) + ["speed", "endpoints"]), link_attr_values,
    max_size=4)
topology_maps: SearchStrategy[Any] = st.fixed_dictionaries(
    {"k": st.sampled_from(K_VALUES)},
    optional={"kind": st.sampled_from(KIND_VALUES), "defaults": defaults | json_values,
              "links": st.lists(link_entries, max_size=3) | json_values})
documents: SearchStrategy[Any] = st.fixed_dictionaries(
    {"topology": topology_maps}, optional={"name": st.text(max_size=8) | json_values})


@bounded(100, 10000)
@given(documents)
def random_documents(doc: dict[str, Any]) -> None:
    import yaml
    load_bytes(yaml.safe_dump(doc).encode())


# -- ofan-topo's JSON ----------------------------------------------------------
DESCRIBE = {lv: json.loads(run([tool("ofan-topo"), "describe", "--k", "4", "--levels",
                                str(lv)]).stdout) for lv in (2, 3)}


@bounded(200, 5000)
@given(st.sampled_from([2, 3]).flatmap(lambda lv: json_mutations(DESCRIBE[lv]))
       | st.text(max_size=100).map(lambda t: {"raw": t}))
def mutated_describe(doc: Any) -> None:
    text = doc["raw"] if isinstance(doc, dict) and set(doc) == {"raw"} else \
        json.dumps(doc)
    fake = subprocess.CompletedProcess([], 0, stdout=text, stderr="")
    with mock.patch.object(topology, "run", return_value=fake):
        try:
            topo = topology.Topology(4, 3)
        except FabricError as e:
            assert one_line(e), repr(str(e))
            return
    topo.to_yaml_dict("x")
    for s in topo.switches:
        for p in s.ports:
            topo.link_at(s.name, p.port)


TABLES_TOPO = {lv: topology.Topology(4, lv) for lv in (2, 3)}
TABLES = {lv: json.loads(run([tool("ofan-topo"), "tables", "--k", "4", "--levels", str(lv),
                              "--failed", "1"]).stdout) for lv in (2, 3)}


@bounded(200, 5000)
@given(st.sampled_from([2, 3]),
       st.sampled_from([2, 3]).flatmap(lambda lv: json_mutations(TABLES[lv]).map(json.dumps))
       | st.sampled_from([2, 3]).flatmap(lambda lv: st.just(json.dumps(TABLES[lv]).encode()))
       .flatmap(byte_mutations).map(lambda b: b.decode("utf-8", "replace"))
       | st.text(max_size=100))
def mutated_tables(lv: int, text: str) -> None:
    """ofan-topo tables' JSON as Fabric.tables reads it: checked tables that
    push_tables can install (every switch's ports, prefixes as ADDR/LEN), or
    a one-line FabricError."""
    topo = TABLES_TOPO[lv]
    try:
        d = topology.parse_tables(text, topo)
    except FabricError as e:
        assert one_line(e), repr(str(e))
        return
    for s in d["switches"]:
        sw = topo.sw_by_name[s["name"]]
        for r in s["routes"]:
            dst, _, plen = r["prefix"].partition("/")
            assert 0 <= int(plen) <= 32
            [sw.ports[p].peer for p in r["ports"]]


# -- state files ------------------------------------------------------------------
def base_state() -> dict[str, Any]:
    """A state file as fabric.up writes it, for a k=4 leaf-spine."""
    t = topology.Topology(4, 2)
    return {"name": "t", "namespaces": ["ofe-t-l0", "ofe-t-h0"], "k": 4, "levels": 2,
            "switch": "ofan", "engine": "per-switch", "policy": "ofan", "ofan_mode": "combined",
            "seed": 1, "pipe_size": 4, "topology_source": None, "created": 1.5, "phase": "ready",
            "failed_links": [3], "failed_switches": ["s1"],
            "links": {str(li.id): li.attrs.to_doc() for li in t.links}, "wires": [],
            "vm_hosts": ["h1"],
            "processes": {"l0": {"pid": os.getpid(), "start": 1, "kind": "ofan-dp"},
                          "vm-h1": {"kind": "vm", "host": "h1", "pid": os.getpid(),
                                    "start": state.proc_start_time(os.getpid()), "boot_s": 3.5,
                                    "mem_mb": 512, "accel": "tcg", "active_mtu": 2048}},
            "up_s": 2.0}


STATE = base_state()


def load_state(data: bytes) -> None:
    d = Path(RUN_DIR) / "t"
    d.mkdir(exist_ok=True)
    (d / "state.json").write_bytes(data)
    st_ = state.State.load("t")
    assert st_ is not None
    assert state.State.names() == ["t"]
    if not st_.corrupt:
        # What the writer would save of it reads back as itself.
        doc = st_.to_doc()
        assert state.parse("t", json.dumps(doc).encode()).to_doc() == doc
    try:
        fab = fabric.load("t", log=lambda _m: None)
    except FabricError as e:
        assert one_line(e), repr(str(e))
        return
    fab.status()
    fab.ctx.links_out_of_service()
    for rec in fab.state.processes.values():
        state.alive(rec)


@bounded(150, 10000)
@given(json_mutations(STATE).map(lambda d: json.dumps(d).encode())
       | st.binary(max_size=64)
       | st.just(json.dumps(STATE).encode()).flatmap(byte_mutations))
def mutated_state(data: bytes) -> None:
    load_state(data)


# -- the run's reports ------------------------------------------------------------
HOST_REPORT = {"result": {"cct_us": 1200.5, "cct_lower_bound_us": 1000.0, "algbw_gbps": 0.02,
                          "busbw_gbps": 0.02, "verified": True, "error": None, "rank_us": [1, 2]},
               "totals": {"retransmissions": 0, "naks_received": 1, "timeouts": 0},
               "hosts": [{"name": "h0", "tx_refused": 0, "rank": 0}]}
SIM_REPORT = {"queue_max_pkts": 3.0, "cct_inflation": 0.2, "cct_us": 10.0,
              "cct_lower_bound_us": 8.0, "stages": {"E->A": {"max_pkts": 1.0}}}
SNAPSHOT = {"queues": [{"port": 0, "max_bytes": 4096, "ecn_marked": 2, "shaper_lag_bytes": 0}],
            "ports": [{"port": 0, "tx_bytes": 100, "rx_missed": 0}],
            "counters": {"drops": {"buffer": 0}}}


@bounded(300, 2000)
@given(st.one_of(json_mutations(HOST_REPORT), json_mutations(SIM_REPORT),
                 json_mutations(SNAPSHOT), json_values),
       st.sampled_from(["host", "coll", "sim", "snap"]))
def mutated_reports(doc: Any, which: str) -> None:
    text = json.dumps(doc)
    try:
        if which == "host":
            r = reports.parse_host_report(text)
            assert isinstance(r["result"], dict)
        elif which == "coll":
            reports.parse_coll_result(text, "ofan-coll")
        elif which == "sim":
            r = reports.parse_sim_report(text)
            {k: v["max_pkts"] for k, v in r["stages"].items()}
        else:
            r = reports.check_snapshot(doc, "l0", nports=4)
            assert all(0 <= x["port"] < 4 for x in r["queues"] + r["ports"])
            c = reports.fabric_counts({"l0": doc})
            assert c.minus(c) == reports.FabricCounts()
    except FabricError as e:
        assert one_line(e), repr(str(e))


@bounded(300, 2000)
@given(st.text(max_size=30) | st.sampled_from(
    ["progress 1 2", "progress 3 0", "progress -1 2", "progress 1", "progress ١ ٢",
     "progress 5 2"]))
def progress_lines(line: str) -> None:
    r = reports.parse_progress(line)
    assert r is None or (0 <= r[0] <= r[1] and r[1] > 0)


# What run.py makes of the programs' output (run.py: host_report, coll_partial,
# Runner._show_progress): a result or a one-line FabricError naming the program.
COLL_LINE = json.dumps(HOST_REPORT["result"])
outputs = (st.one_of(json_mutations(HOST_REPORT), json_mutations(HOST_REPORT["result"]),
                     json_values).map(json.dumps)
           | st.just(json.dumps(HOST_REPORT).encode()).flatmap(byte_mutations).map(
               lambda b: b.decode("utf-8", "replace"))
           | st.text(max_size=40))
stderrs = st.text(max_size=60) | st.just("a\nb\n\n" + "x" * 900)


@bounded(300, 2000)
@given(st.integers(-9, 255), outputs, stderrs)
def uroce_outputs(rc: int, out: str, err: str) -> None:
    try:
        r = fabric_run.host_report(rc, out, err)
    except FabricError as e:
        assert one_line(e) and "uroce" in str(e), repr(str(e))
        return
    assert isinstance(r["result"], dict)
    [h.get("tx_refused", 0) > 0 for h in r.get("hosts", [])]


@bounded(300, 2000)
@given(st.integers(-9, 255), outputs | st.sampled_from(["", "\n", "log\n" + COLL_LINE,
                                                        COLL_LINE + "\n\n"]), stderrs)
def vm_rank_outputs(rc: int, out: str, err: str) -> None:
    try:
        r = fabric_run.coll_partial("h3", rc, out, err)
    except FabricError as e:
        assert one_line(e) and "ofan-coll" in str(e) and "h3" in str(e), repr(str(e))
        return
    sum(r.get("rxe_counters", {}).values())


PROGRESS = b"log line\nprogress 10 100\nprogress 100 100\n"


@bounded(300, 2000)
@given(st.lists(st.binary(max_size=40)
                | st.just(PROGRESS).flatmap(byte_mutations)
                | st.sampled_from([b"progress 1 2\n", b"progress 3 0\n", b"progress x\n",
                                   b"progress 5 2\n", b"progress \xff\xfe 2\n", b"\xe2\x82"]),
                max_size=4))
def progress_stream(writes: list[bytes]) -> None:
    """uroce's stderr as _show_progress reads it, written in pieces."""
    shown: list[str] = []
    r = fabric_run.Runner.__new__(fabric_run.Runner)
    r.log, r.bad_progress = shown.append, 0
    with tempfile.TemporaryFile(dir=RUN_DIR) as f:
        seen = 0
        total = b""
        with mock.patch.object(sys.stderr, "isatty", return_value=False):
            for data in writes:
                f.seek(0, os.SEEK_END)
                f.write(data)
                f.flush()
                total += data
                seen = r._show_progress(f, seen)
                assert 0 <= seen <= len(total) and total[seen - 1:seen] in (b"", b"\n")
    assert all("% of" in m for m in shown) and r.bad_progress >= 0


# -- the run's own rows (run.py: `run --json`, read back from a server's part) -------
# Rows as run.py has always printed them, key for key and in that order
# (record(), what run() adds to a seed's row, the mean over seeds, the
# comparisons): RunResult.to_json must give exactly these, and from_json
# must read them back.
STAGE = {"max_pkts": 2.5, "max_bytes": 5275, "queues": 16, "pause_frames": 3, "paused_us": 120.0}
IDLE_STAGE = {"max_pkts": 0.0, "max_bytes": 0, "queues": 8, "pause_frames": 0, "paused_us": 0.0}
SIM_ROW = {"queue_max_pkts": 3.0, "cct_inflation": 0.25, "cct_us": 1250.0,
           "cct_lower_bound_us": 1000.0, "stages": {"E->A": 3.0, "C->A": 1.0},
           "link_gbps": 0.025, "note": None,
           "pfc_pause_frames": 4, "pfc_paused_us": 150.0, "lossless_drops": 0,
           "pfc_stages": {"E->A": {"pause_frames": 4, "paused_us": 150.0},
                          "C->A": {"pause_frames": 0, "paused_us": 0.0}},
           "reorder_max_bytes": 8440, "reorder_max_hold_us": 310.5, "reorder_timeouts": 0,
           "reorder_held": 12, "out_of_seq": 5, "naks": 1}
ROW = {"lb": "ofan", "seed": 1, "cct_us": 1250.0, "cct_lower_bound_us": 1000.0,
       "algbw_gbps": 0.02, "busbw_gbps": 0.02, "verified": True, "error": None,
       "queue_max_pkts": 2.5, "stages": {"E->A": STAGE, "C->A": IDLE_STAGE}, "ecn_marks": 7,
       "drops": {"buffer": 2}, "pfc_pause_frames": 3, "pfc_paused_us": 120.0,
       "lossless_drops": 0, "reorder_max_bytes": 6330, "reorder_max_hold_us": 280.0,
       "reorder_timeouts": 1, "reorder_held": 9,
       "cts_delay_us": {"p50": 40.0, "p90": 90.0, "n": 12},
       "cts_wait_us": {"p50": 5.0, "p90": 20.0, "n": 30}, "buffer_max_pct": 12.5,
       "buffer_alarms": 0, "shaper_lag_max_fraction": 0.01, "engine_lag_events": 0,
       "engine_lag_max_us": 3.5, "retransmissions": 1, "naks": 1, "out_of_sequence": 4,
       "timeouts": 0, "cnps": 0, "cpu_bound": False, "cpu_bound_reasons": [], "wall_s": 2.5,
       "hosts": "mixed", "cct_inflation": 0.25, "victim_gbps": 0.01, "victim_share": 0.4,
       "rxe_counters": {"rcvd_seq_err": 1}, "duplicates": 0, "sim": SIM_ROW}
# The second seed: no CCT (no cct_inflation), no victim rate, CPU-bound,
# a failed buffer, ofan-sim's flows incomplete.
ROW2 = {k: v for k, v in ROW.items() if k != "cct_inflation"}
ROW2.update(seed=2, cct_us=None, verified=False, error="rank 3: buffer mismatch",
            queue_max_pkts=3.5, stages={"E->A": dict(STAGE, max_pkts=3.5, pause_frames=4),
                                        "C->A": IDLE_STAGE},
            victim_gbps=None, victim_share=None, cpu_bound=True,
            cpu_bound_reasons=["e0-0 port 2: 3 frames dropped before the switch polled them "
                               "(rx_missed)"],
            rxe_counters={"rcvd_seq_err": 2, "duplicate_request": 1}, duplicates=1,
            sim=dict(SIM_ROW, cct_inflation=None, cct_us=None, queue_max_pkts=5.0,
                     note="ofan-sim left 1 flows incomplete"))
# ofan's two seeds, their mean (as run.py's _merge made it before MeanRow).
MEAN = {"lb": "ofan", "per_seed": [ROW, ROW2], "cct_us": 1250.0, "cct_lower_bound_us": 1000.0,
        "algbw_gbps": 0.02, "busbw_gbps": 0.02, "queue_max_pkts": 3.0, "cct_inflation": 0.25,
        "shaper_lag_max_fraction": 0.01, "victim_gbps": 0.01, "victim_share": 0.4,
        "retransmissions": 2, "naks": 2, "out_of_sequence": 8, "timeouts": 0, "ecn_marks": 14,
        "cnps": 0, "pfc_pause_frames": 6, "lossless_drops": 0, "buffer_alarms": 0,
        "buffer_max_pct": 12.5, "reorder_max_bytes": 6330, "reorder_max_hold_us": 280.0,
        "reorder_timeouts": 2, "reorder_held": 18, "cts_delay_us": {"p50": 40.0, "p90": 90.0},
        "cts_wait_us": {"p50": 5.0, "p90": 20.0}, "pfc_paused_us": 120.0, "verified": False,
        "hosts": "mixed", "duplicates": 1, "rxe_counters": {"rcvd_seq_err": 3,
                                                            "duplicate_request": 1},
        "error": "rank 3: buffer mismatch", "cpu_bound": True,
        "cpu_bound_reasons": ROW2["cpu_bound_reasons"],
        "stages": {"E->A": {"max_pkts": 3.0, "pause_frames": 3.5, "paused_us": 120.0},
                   "C->A": {"max_pkts": 0.0, "pause_frames": 0, "paused_us": 0.0}},
        "sim": {"queue_max_pkts": 4.0, "cct_inflation": None,
                "stages": {"E->A": 3.0, "C->A": 1.0}, "pfc_pause_frames": 8,
                "pfc_paused_us": 150.0, "lossless_drops": 0,
                "pfc_stages": {"E->A": {"pause_frames": 4, "paused_us": 150.0},
                               "C->A": {"pause_frames": 0, "paused_us": 0.0}}}}
# ECMP's one seed: its row, and per_seed beside its keys.
ECMP = dict(ROW, lb="ecmp", queue_max_pkts=40.0, sim=dict(SIM_ROW, queue_max_pkts=2.0))
RUN_DOC = {
    "fabric": "t", "switch": "ofan", "engine": "shared", "k": 4, "levels": 3,
    "workload": "incast", "msg_bytes": 65536, "seeds": 2, "qps_per_peer": 1, "entropy": "qp",
    "ooo": False, "pace_fraction": 0.8, "hosts": 4, "host_kind": "mixed",
    "host_names": ["h0", "h1", "h4", "h8"], "cc": "none", "victim": True,
    "cts": {"channels": 2, "channel_bytes": 65536, "priority": True},
    "runs": [MEAN, dict(ECMP, per_seed=[ECMP])],
    "comparison": {"emu_ranking": ["ofan", "ecmp"], "sim_ranking": ["ecmp", "ofan"],
                   "agree": False, "disagreements": [{"pair": ["ofan", "ecmp"],
                                                      "emu_pkts": [3.0, 40.0],
                                                      "sim_pkts": [4.0, 2.0]}]},
    "queue_comparison": [
        {"lb": "ofan", "emu_pkts": 3.0, "sim_pkts": 4.0, "within": True,
         "seeds": [{"seed": 1, "emu_pkts": 2.5, "sim_pkts": 3.0},
                   {"seed": 2, "emu_pkts": 3.5, "sim_pkts": 5.0}]},
        {"lb": "ecmp", "emu_pkts": 40.0, "sim_pkts": 2.0, "within": False,
         "seeds": [{"seed": 1, "emu_pkts": 40.0, "sim_pkts": 2.0}]}],
    "pfc_comparison": [
        {"lb": lb, "stage": st, "emu_pause_frames": e, "sim_pause_frames": s,
         "emu_paused_us": eu, "sim_paused_us": su, "paused_within": True, "frames_within": True}
        for lb, st, e, s, eu, su in (("ofan", "E->A", 3.5, 4, 120.0, 150.0),
                                     ("ofan", "C->A", 0, 0, 0.0, 0.0),
                                     ("ecmp", "E->A", 3, 4, 120.0, 150.0),
                                     ("ecmp", "C->A", 0, 0, 0.0, 0.0))],
    "reorder_comparison": [
        {"lb": lb, "seed": seed, "emu_max_bytes": 6330, "sim_max_bytes": 8440,
         "emu_max_hold_us": 280.0, "sim_max_hold_us": 310.5, "within": True}
        for lb, seed in (("ofan", 1), ("ofan", 2), ("ecmp", 1))],
}
# A run across servers (merge_runs): a seed's row has each server's part, the
# mean each server's verdict, the result the servers' names.
SERVERS_ROW = dict({k: v for k, v in ROW.items() if k not in (
    "victim_gbps", "victim_share", "rxe_counters", "duplicates", "sim")},
    cpu_bound=True, cpu_bound_reasons=["srv1: x"],
    servers={n: {"ranks": 2, "cct_us": 1240.0, "cpu_bound": n == "srv1",
                 "cpu_bound_reasons": ["x"] if n == "srv1" else [], "wall_s": 2.5}
             for n in ("srv0", "srv1")})
SERVERS_MEAN = {
    "lb": "ofan", "per_seed": [SERVERS_ROW, dict(SERVERS_ROW, seed=2)], "cct_us": 1250.0,
    "cct_lower_bound_us": 1000.0, "algbw_gbps": 0.02, "busbw_gbps": 0.02,
    "queue_max_pkts": 2.5, "cct_inflation": 0.25, "shaper_lag_max_fraction": 0.01,
    "victim_gbps": None, "victim_share": None, "retransmissions": 2, "naks": 2,
    "out_of_sequence": 8, "timeouts": 0, "ecn_marks": 14, "cnps": 0, "pfc_pause_frames": 6,
    "lossless_drops": 0, "buffer_alarms": 0, "buffer_max_pct": 12.5,
    "reorder_max_bytes": 6330, "reorder_max_hold_us": 280.0, "reorder_timeouts": 2,
    "reorder_held": 18, "cts_delay_us": {"p50": 40.0, "p90": 90.0},
    "cts_wait_us": {"p50": 5.0, "p90": 20.0}, "pfc_paused_us": 120.0, "verified": True,
    "hosts": "mixed", "error": None, "cpu_bound": True,
    "cpu_bound_reasons": ["srv1: x", "srv1: x"],
    "servers": {"srv0": {"cpu_bound": False, "cpu_bound_reasons": []},
                "srv1": {"cpu_bound": True, "cpu_bound_reasons": ["x", "x"]}},
    "stages": {"E->A": {"max_pkts": 2.5, "pause_frames": 3, "paused_us": 120.0},
               "C->A": {"max_pkts": 0.0, "pause_frames": 0, "paused_us": 0.0}}}
SERVERS_DOC = dict(RUN_DOC, victim=False, cts=None, runs=[SERVERS_MEAN], comparison=None,
                   queue_comparison=None, pfc_comparison=None, reorder_comparison=None,
                   servers=["srv0", "srv1"])


def run_rows() -> None:
    """The rows above through RunResult: read back and printed again, the
    same JSON to the byte (keys and their order); what merge_runs and
    from_json refuse, refused in one line naming where."""
    for what, doc in (("two policies, two seeds, ofan-sim", RUN_DOC),
                      ("across servers", SERVERS_DOC)):
        res = RunResult.from_json(json.loads(json.dumps(doc)), "run")
        check(f"run --json ({what}): from_json then to_json gives it back, key for key",
              json.dumps(res.to_json()) == json.dumps(doc),
              json.dumps(res.to_json())[:400])
        fabric_run.table(res)
    res = RunResult.from_json(copy.deepcopy(RUN_DOC), "run")
    bad = {
        "a missing key": (dict(RUN_DOC, runs=[dict(ECMP, per_seed=[
            {k: v for k, v in ECMP.items() if k != "wall_s"}])]), "per_seed[0]: no 'wall_s'"),
        "half the reorder figures": (dict(RUN_DOC, runs=[dict(ECMP, per_seed=[
            dict(ECMP, reorder_held=None)])]), "all four or none"),
        "no run": (dict(RUN_DOC, runs=[]), "runs: no run"),
        "seeds of two policies": (dict(RUN_DOC, runs=[dict(MEAN, per_seed=[ROW, ECMP])]),
                                  "per_seed[1]: another policy"),
        "a string for a count": (dict(RUN_DOC, seeds="2"), "seeds: '2' is not an integer"),
        # A mean over seeds of it would not fit in a float.
        "a count past 2^64": (dict(RUN_DOC, runs=[dict(ECMP, per_seed=[
            dict(ECMP, ecn_marks=10 ** 400)])]), "per_seed[0].ecn_marks: 1000"),
    }
    for what, (doc, want) in bad.items():
        try:
            fabric_run.parts_from_json({"srv1": doc})
            got = "no error"
        except FabricError as e:
            got = str(e)
        check(f"a part's run --json with {what}: one line naming the server and the place",
              want in got and got.startswith("server srv1's run") and "\n" not in got, got)
    refusals = {"parts of another workload": ({"srv0": res, "srv1": dataclasses.replace(
        res, workload="perm")}, "differ (srv0 and srv1: workload)"),
        "rows without a partial result": ({"srv0": res, "srv1": res},
                                          "srv0's part of the run: seed 1 of ofan has no partial")}
    for what, (parts, want) in refusals.items():
        try:
            fabric_run.merge_runs(parts, RUN_DIR)
            got = "no error"
        except FabricError as e:
            got = str(e)
        check(f"merge_runs refuses {what} in one line", want in got and "\n" not in got, got)


@bounded(300, 5000)
@given(st.sampled_from([RUN_DOC, SERVERS_DOC]).flatmap(json_mutations) | json_values)
def mutated_run_docs(doc: Any) -> None:
    """A part's run --json, mutated: a RunResult that prints and reads back
    as itself, or a one-line FabricError."""
    try:
        res = RunResult.from_json(doc, "server s's run")
    except FabricError as e:
        assert one_line(e) and str(e).startswith("server s's run"), repr(str(e))
        return
    text = json.dumps(res.to_json())
    again = RunResult.from_json(json.loads(text), "again")
    assert json.dumps(again.to_json()) == text
    fabric_run.table(res)


# -- the VM agent's lines -----------------------------------------------------------
REQUEST = {"id": 3, "op": "exec", "argv": ["true"], "env": {"A": "b"}, "cwd": "/", "timeout": 5}
MESSAGES = [{"event": "ready", "kernel": "6.1", "uptime_s": 1.0, "notes": []},
            {"id": 3, "fd": 1, "data": "x"}, {"id": 3, "rc": 0, "seconds": 0.1},
            {"id": 3, "error": "cannot run"}]


@bounded(400, 2000)
@given(json_mutations(REQUEST).map(lambda d: json.dumps(d).encode())
       | st.binary(max_size=40)
       | st.just(json.dumps(REQUEST).encode()).flatmap(byte_mutations))
def agent_requests(line: bytes) -> None:
    try:
        req = agent.parse_request(line)
    except agent.BadRequest as e:
        assert one_line(e)
        json.dumps({"id": e.rid, "error": str(e)})  # the reply can be sent
        return
    if req is not None:
        assert req.op in ("exec", "poweroff") and isinstance(req.id, int)
        if req.op == "exec":
            assert req.argv and all(isinstance(a, str) for a in req.argv)
            assert req.timeout is None or req.timeout > 0


@bounded(400, 2000)
@given(st.sampled_from(MESSAGES).flatmap(json_mutations).map(lambda d: json.dumps(d).encode())
       | st.binary(max_size=40))
def agent_messages(line: bytes) -> None:
    msg = agent.parse_message(line)
    if msg is None or isinstance(msg.get("event"), str):
        return
    # What Vm.exec and Vm._read index.
    out: dict[int, list[str]] = {1: [], 2: []}
    if "data" in msg:
        out[msg["fd"]].append(msg["data"])
    elif "rc" in msg:
        assert isinstance(msg["rc"], int)
    else:
        assert isinstance(msg["error"], str)


# -- the command line ------------------------------------------------------------------
def emu_up(data: bytes) -> subprocess.CompletedProcess[str]:
    with tempfile.NamedTemporaryFile(suffix=".yaml", dir=RUN_DIR) as f:
        f.write(data)
        f.flush()
        return subprocess.run([EMU, "up", "--topology", f.name], capture_output=True, text=True,
                              env=dict(os.environ, OFAN_EMU_RUN_DIR=RUN_DIR))


def cli() -> None:
    garbage = {"random bytes": bytes(range(256)) * 3, "not UTF-8": b"topology: {k: \xff}\n",
               "not YAML": b"topology: {k: [4\n",
               "an impossible date": b"topology: 2024-13-01\n",
               "deep nesting": b"[" * 5000, "NUL": b"topology:\x00\n",
               "NaN size": b"topology: {k: 4, defaults: {buffer: .nan}}\n"}
    for what, data in garbage.items():
        p = emu_up(data)
        lines = p.stderr.splitlines()
        check(f"ofan-emu up --topology ({what}): exit 2, one line, no traceback",
              p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr
              and lines[0].startswith("ofan-emu: "), f"rc {p.returncode}: {p.stderr!r}")


# -- the documented command lines -------------------------------------------------------
# Every `ofan-emu ...` line in a fenced code block of README.md and docs/*.md,
# and in ofan-emu's own --help examples, must parse (cli.parser; parse only,
# nothing runs); how lines are read: tests/common/doc_commands.py.
EMU_PREFIX = re.compile(r"(sudo\s+)?(emu/)?ofan-emu(\s|$)")
EMU_NAMES = {"ofan-emu", "emu/ofan-emu"}
# Placeholders a documented line may hold (doc_commands.problems).
SAMPLES = {"<host>": "h0", "<switch>": "e0-0", "<file>": "plan.json", "<name>": "ofan"}


def parse_problem(argv: list[str]) -> str | None:
    """Why cli.parser() refuses argv (its message), or None."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            emu_cli.parser().parse_args(argv)
    except SystemExit as e:
        if e.code not in (0, None):  # --help exits 0
            return err.getvalue().strip().splitlines()[-1]
    return None


def doc_problems(commands: list[tuple[str, str]]) -> tuple[list[str], int, int]:
    """doc_commands.problems for ofan-emu's lines."""
    return doc_commands.problems(commands, EMU_NAMES.__contains__, SAMPLES,
                                 lambda _prog, argv: parse_problem(argv))


def documented_commands() -> None:
    commands = doc_commands.documented(EMU_PREFIX)
    epilogs = [("", emu_cli.EPILOG)]
    epilogs += [(v.name + " ", v.kw["epilog"]) for v in emu_cli.VERBS if "epilog" in v.kw]
    for verb, epilog in epilogs:
        commands += [(f"ofan-emu {verb}--help, example {i}", line.strip())
                     for i, line in enumerate(epilog.splitlines(), 1)
                     if line.strip().startswith("ofan-emu ")]
    bad, checked, skipped = doc_problems(commands)
    check(f"every documented ofan-emu command line parses ({len(commands)} lines, {checked} "
          f"commands; {skipped} with '...' skipped)", not bad and checked > 50, "\n".join(bad))
    # The check itself: a documented line that no longer parses is named by
    # its file and line, a placeholder without a sample too; a sample and
    # an optional "..." are taken.
    wrong = ("# x\n\n```sh\nsudo emu/ofan-emu up --k 4 [--engine ...]   # up's options\n"
             "sudo emu/ofan-emu run --lbs ofan \\\n    --no-such-option 3   # a comment\n"
             "emu/ofan-emu exec <host> -- true\nemu/ofan-emu capture --link <port> -w -\n```\n")
    bad, checked, skipped = doc_problems(doc_commands.fenced_commands(wrong, "wrong.md",
                                                                      EMU_PREFIX))
    check("a wrong documented line is reported with its file and line",
          checked == 3 and skipped == 1 and len(bad) == 2
          and bad[0].startswith("wrong.md:5: ofan-emu run --lbs ofan --no-such-option 3: ")
          and bad[1].startswith("wrong.md:8: placeholder <port>"), str(bad))


PROPERTIES = [random_bytes_topology, mutated_topology, random_documents, mutated_describe,
              mutated_tables,
              mutated_state, mutated_reports, progress_lines, uroce_outputs, vm_rank_outputs,
              progress_stream, mutated_run_docs, agent_requests, agent_messages]


def shape_edges() -> None:
    """shapes.check at its edges: an integer no float holds is not a number
    (not an OverflowError), and a key with a newline is named on one line."""
    from fabric import shapes
    for value, shape, doc in ((10 ** 400, float, "an integer past a float's range"),
                              (float("nan"), float, "NaN"),
                              ({"a\nb": "x"}, shapes.MapOf(int), "a key with a newline")):
        try:
            shapes.check(value, shape, "doc")
            check(f"shapes: {doc} is refused", False, "accepted")
        except shapes.ShapeError as e:
            check(f"shapes: {doc} is refused in one line", "\n" not in str(e), str(e))


def fabric_counts() -> None:
    """reports.fabric_counts: the switches' drops, pause frames and reorder
    counters summed; minus gives a job's change."""
    q = {"port": 0, "max_bytes": 0, "ecn_marked": 0,
         "pfc": {"sent": 5, "received": 0, "paused_us": 0.0, "lossless_drops": 0},
         "reorder": {"held": 7, "timeouts": 1, "max_bytes": 0, "max_hold_us": 0.0, "old": 2}}
    a = {"queues": [q, {"port": 1, "max_bytes": 0, "ecn_marked": 0}],
         "counters": {"drops": {"buffer_full": 3, "no_route": 1}}}
    b = {"queues": [dict(q, reorder=None, pfc=None)], "counters": {}}
    got = reports.fabric_counts({"e0-0": a, "a0-0": b})
    want = reports.FabricCounts(drops=4, pause_frames=5, reorder_held=7, reorder_timeouts=1,
                                reorder_old=2)
    check("fabric_counts: sums over switches and queues", got == want, repr(got))
    check("fabric_counts: minus", got.minus(reports.FabricCounts(drops=1, reorder_held=7))
          == reports.FabricCounts(3, 5, 0, 1, 2), repr(got))
    check("fabric_counts: to_json", got.to_json()["pause_frames"] == 5, repr(got.to_json()))
    try:
        reports.fabric_counts({"e0-0": {"queues": "x", "counters": {}}})
        check("fabric_counts: a bad answer is refused", False, "accepted")
    except FabricError as e:
        check("fabric_counts: a bad answer is refused in one line naming the switch",
              "\n" not in str(e) and "e0-0" in str(e), str(e))


def fabric_requests() -> None:
    """control.request_all (one ofanctl --fabric for every switch): a
    folder without sockets and a command not for a whole fabric are one-line
    FabricErrors; a switch whose socket does not answer is its own error,
    not the whole request's."""
    import socket
    from fabric import control
    with tempfile.TemporaryDirectory(prefix="ofan-fabric-req-") as d:
        try:
            control.request_all(d, "queues", timeout=1)
            check("request_all: a folder with no socket is refused", False, "accepted")
        except FabricError as e:
            check("request_all: a folder with no socket is refused in one line",
                  "\n" not in str(e) and "no control socket" in str(e), str(e))
        try:
            control.request_all(d, "set_policy")
            check("request_all: set_policy is not asked of a whole fabric", False, "accepted")
        except FabricError as e:
            check("request_all: set_policy is not asked of a whole fabric", True, str(e))
        silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            silent.bind(os.path.join(d, "e0-0.sock"))  # bound, never listening: refused
            got = control.request_all(d, "status", timeout=1)
            ok, err = got.get("e0-0", (True, None))
            check("request_all: a switch that does not answer is its own error",
                  list(got) == ["e0-0"] and not ok and isinstance(err, str) and bool(err),
                  repr(got))
        finally:
            silent.close()


def main() -> int:
    import shutil
    import time
    try:
        for prop in PROPERTIES:
            t0 = time.monotonic()
            try:
                prop()
                check(f"{prop.__name__}: never an untyped error "
                      f"({time.monotonic() - t0:.1f} s)", True)
            except Exception:  # the falsifying example and the trace, as a failure
                check(f"{prop.__name__}: never an untyped error", False, traceback.format_exc())
        run_rows()
        shape_edges()
        fabric_counts()
        fabric_requests()
        cli()
        documented_commands()
    finally:
        shutil.rmtree(RUN_DIR, ignore_errors=True)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
