#!/usr/bin/python3
"""The switch kinds (emu/fabric/nodes/) without root and without ofan-dp:
what the shared engine's kind writes and starts, what it refuses, and what
the per-switch and kernel kinds keep.

    nodes_test.py          (no root; needs ofan-topo and ofanctl)

Covered: the shared kind's per-switch configs (every port between switches
an in-memory "mem:" device whose peer names it back, host ports AF_XDP in
the switch's namespace, each port's latency_us: the link's between
switches, 0 on a host link, which keeps its netem wire), its fabric file
and the one command it starts (with up's process start faked); loss or
reordering between switches refused (exit 2, naming the link and
--engine per-switch), also by `ofan-emu up`, before anything is made;
the per-switch configs as before; the engine in the state file and in
status; a shared engine found for down by its command line; the run's
CPU-bound verdict from the shared engine's stats; switch_admin by ofanctl.
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parents[3]
RUN_DIR = tempfile.mkdtemp(prefix="ofan-nodes-test-")
os.environ["OFAN_EMU_RUN_DIR"] = RUN_DIR  # state.py reads it at import
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import check, failures, log  # noqa: E402
sys.path.insert(0, str(REPO / "emu"))
from fabric import control, nodes, teardown  # noqa: E402
from fabric import run as fabric_run  # noqa: E402
from fabric.fabric import Fabric  # noqa: E402
from fabric.nodes import ofan_shared  # noqa: E402
from fabric.nodes.ofan import OfanKind  # noqa: E402
from fabric.tools import FabricError  # noqa: E402
from fabric.topology import Topology, attrs_with  # noqa: E402

EMU = str(REPO / "emu" / "ofan-emu")


def fabric(engine: str | None, switch: str = "ofan", topo: Topology | None = None,
           name: str = "t") -> Fabric:
    """A fabric as up() leaves its state, made nowhere."""
    fab = Fabric(name, topo or Topology(4, 3), log=lambda _m: None)
    kind = fab.use(switch, engine)
    fab.state.update({"k": fab.topo.k, "levels": fab.topo.levels, "switch": switch,
                      "engine": kind.engine, "policy": "ofan", "ofan_mode": "combined",
                      "seed": 1, "pipe_size": 4, "failed_links": [], "failed_switches": [],
                      "links": {}, "wires": [], "vm_hosts": []})
    return fab


def ofan_kind(fab: Fabric) -> OfanKind:
    kind = fab.kind
    assert isinstance(kind, OfanKind)
    return kind


def with_attrs(topo: Topology, link: str, **attrs: Any) -> Any:
    """topo's link at `link` (either end) with these attributes."""
    li = topo.link_at(*topo.parse_endpoint(link, "test"))
    li.attrs = attrs_with(li.attrs, attrs, "test")
    return li


def shared_configs() -> None:
    topo = Topology(4, 3)
    lat = with_attrs(topo, "e0-0:2", latency_us=50)
    host = with_attrs(topo, "h0", latency_us=2000)
    fab = fabric("shared", topo=topo)
    kind = ofan_kind(fab)
    check("--engine shared: the shared kind", isinstance(kind, ofan_shared.OfanShared)
          and kind.engine == "shared", type(kind).__name__)
    cfgs = {s["name"]: kind.switch_config(s) for s in topo.switches}
    by_cfg_name = {c["name"]: c for c in cfgs.values()}
    check("config names are FABRIC-SWITCH", sorted(by_cfg_name) ==
          sorted(f"t-{s['name']}" for s in topo.switches))
    check("each config names its switch's namespace",
          all(c["netns"] == f"ofe-t-{n}" for n, c in cfgs.items()))
    mem, xdp, unpaired = 0, 0, []
    for n, c in cfgs.items():
        for p in c["ports"]:
            link = topo.link_at(n, p["port"])
            if p["dev"].startswith("mem:"):
                mem += 1
                peer, _, port = p["dev"][4:].rpartition(":")
                back = by_cfg_name.get(peer, {}).get("ports", [])
                if link.host or not any(q["port"] == int(port) and q["dev"] == f"mem:t-{n}:"
                                        f"{p['port']}" for q in back):
                    unpaired.append(f"{n}:{p['port']} -> {p['dev']}")
            else:
                xdp += 1
                if not (link.host and p["dev"].startswith("net_af_xdp")
                        and f"iface=p{p['port']}" in p["dev"]):
                    unpaired.append(f"{n}:{p['port']} -> {p['dev']}")
    inter = sum(not li.host for li in topo.links)
    check("every port between switches is mem:PEER:PORT, and the peer names it back",
          not unpaired and mem == 2 * inter, f"{mem} mem ports for {inter} links; "
          f"wrong: {unpaired[:4]}")
    check("host ports stay AF_XDP on p<port> (16 of them)", xdp == len(topo.hosts), str(xdp))
    lats = {(n, p["port"]): p["egress"]["latency_us"] for n, c in cfgs.items()
            for p in c["ports"]}
    check("latency_us of a link between switches is on both ends' egress",
          lats[lat.a] == 50.0 and lats[lat.b] == 50.0, f"{lats[lat.a]} {lats[lat.b]}")
    check("other ports have latency_us 0; a host link's latency stays on its wire (netem)",
          lats[host.b] == 0.0 and sum(v != 0 for v in lats.values()) == 2
          and not kind.in_memory(host) and kind.in_memory(lat) and host.netem())
    check("every port has a rate", all(p["egress"]["rate_gbps"] > 0 for c in cfgs.values()
                                       for p in c["ports"]))
    base = ofan_kind(fabric("per-switch", topo=topo)).switch_config(topo.switches[0])
    ours = cfgs[topo.switches[0]["name"]]
    same = {k: v for k, v in ours.items() if k not in ("netns", "ports")}
    check("beside netns, mem: devices and latency / loss / reordering, the per-switch config "
          "as it is",
          same == {k: v for k, v in base.items() if k != "ports"}
          and [{k: v for k, v in p.items() if k not in ("dev", "egress")} for p in ours["ports"]]
          == [{k: v for k, v in p.items() if k not in ("dev", "egress")}
              for p in base["ports"]]
          and all({k: v for k, v in p["egress"].items()
                   if k not in ("latency_us", "loss_pct", "reorder_pct")} == q["egress"]
                  for p, q in zip(ours["ports"], base["ports"])))


def per_switch_configs() -> None:
    topo = Topology(4, 2)
    with_attrs(topo, "l0:2", latency_us=50)
    check("no --engine: shared", fabric(None, topo=topo).kind.engine == "shared"
          == nodes.DEFAULT_ENGINE)
    fab = fabric("per-switch", topo=topo)
    c = ofan_kind(fab).switch_config(topo.switches[0])
    check("per-switch configs: no netns, no mem: ports, no latency_us (netem wires)",
          "netns" not in c and all(p["dev"].startswith("net_af_xdp") and
                                   "latency_us" not in p["egress"] for p in c["ports"])
          and not any(fab.kind.in_memory(li) for li in topo.links))
    check("the kernel kind: engine kernel, router sysctls",
          fabric(None, "kernel").kind.engine == "kernel"
          and "net.ipv4.ip_forward=1" in fabric(None, "kernel").kind.namespace_sysctls())
    for switch, engine in (("kernel", "shared"), ("ofan", "frob")):
        try:
            nodes.make(fab, switch, engine)
            check(f"--switch {switch} --engine {engine} refused", False)
        except FabricError as e:
            check(f"--switch {switch} --engine {engine} refused (exit 2)", e.code == 2, str(e))


def loss_between_switches() -> None:
    for attrs in ({"loss_pct": 1.0}, {"latency_us": 10.0, "reorder_pct": 5.0}):
        topo = Topology(4, 3)
        with_attrs(topo, "a0-0:2", **attrs)
        fab = fabric("shared", topo=topo)
        ports = {p["port"]: p for p in ofan_kind(fab).switch_config(topo.sw_by_name["a0-0"])
                 ["ports"]}
        check(f"{attrs} between switches: the engine's, in the port's egress",
              all(ports[2]["egress"][k] == v for k, v in attrs.items()),
              str(ports[2]["egress"]))
    topo = Topology(4, 3)
    with_attrs(topo, "h3", loss_pct=1.0)
    fab = fabric("shared", topo=topo)
    edge = topo.sw_by_name[topo.host_by_name["h3"]["edge_name"]]
    cfg = ofan_kind(fab).switch_config(edge)
    check("loss on a host link: its wire's netem, not the engine's",
          all(p["egress"]["loss_pct"] == 0 for p in cfg["ports"]))
    fabric("per-switch", topo=with_loss_topo())
    check("loss between switches: the per-switch kind takes it", True)
    r = subprocess.run([EMU, "up", "--switch", "kernel", "--engine", "shared", "--name", "zz"],
                       capture_output=True, text=True, timeout=60)
    check("ofan-emu up --switch kernel --engine shared: exit 2, one line",
          r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr.strip())


def with_loss_topo() -> Topology:
    topo = Topology(4, 3)
    with_attrs(topo, "a0-0:2", loss_pct=1.0)
    return topo


def shared_up() -> None:
    """kind.up() with the process start faked: the files and the command."""
    os.environ["OFAN_OFAN_DP"] = "/bin/true"  # tool() finds it; nothing runs it here
    fab = fabric("shared", topo=Topology(4, 2), name="u")
    for d in ("config", "logs", "sock"):
        (fab.state.dir / d).mkdir(parents=True, exist_ok=True)
    kind = ofan_kind(fab)
    started: dict[str, Any] = {}
    waited: dict[str, Any] = {}

    def start(key: str, cmd: list[str], what: str) -> Any:
        started.update(key=key, cmd=cmd, kind=what)
        return SimpleNamespace(pid=1)

    setattr(kind, "start", start)
    setattr(kind, "wait_ready", lambda owners, procs: waited.update(owners=owners, procs=procs))
    kind.up()
    ff = json.loads((fab.state.dir / "config" / "fabric.json").read_text())
    want = [str(fab.state.dir / "config" / f"{s['name']}.json") for s in fab.topo.switches]
    check("fabric.json lists every switch's config", ff == {"switches": want}, str(ff))
    cfg = json.loads(Path(want[0]).read_text())
    check("the configs are written, with their mem: ports",
          all(Path(p).exists() for p in want) and cfg["netns"] == "ofe-u-l0"
          and any(p["dev"] == "mem:u-s0:0" for p in cfg["ports"]), str(cfg["ports"][2]))
    cmd = started.get("cmd", [])
    check("one ofan-dp, in the root namespace, recorded as processes[engine]",
          started.get("key") == "engine" and started.get("kind") == "ofan-dp-shared"
          and "netns" not in cmd and cmd[-2:] == ["--fabric", ff and str(
              fab.state.dir / "config" / "fabric.json")], str(started))
    check("EAL: --lcores (0,1)@(0,1) --file-prefix ofe-NAME-shared --in-memory",
          " --lcores (0,1)@(0,1) --file-prefix ofe-u-shared --in-memory -- " in " ".join(cmd),
          " ".join(cmd))
    check("up waits for every switch's socket, all owned by the engine",
          waited.get("owners") == {s["name"]: "engine" for s in fab.topo.switches})


def state_and_status() -> None:
    check("a state file without engine: per-switch (ofan) or kernel",
          nodes.engine_of({"switch": "ofan"}) == "per-switch"
          and nodes.engine_of({"switch": "kernel"}) == "kernel")
    for engine, want in (("shared", "shared"), ("per-switch", "per-switch"), (None, None)):
        switch = "kernel" if engine is None else "ofan"
        fab = fabric(engine, switch)
        fab.state["processes"]["engine"] = {"pid": os.getpid(), "start": 1,
                                            "kind": "ofan-dp-shared"}
        s = fab.status()
        want = want or "kernel"
        check(f"status: engine {want}", s["engine"] == want, str(s["engine"]))
        if engine == "shared":
            w = s["switches"][0]
            check("shared: each switch's pid is the engine's; not alive when the engine "
                  "is not that very process", w["pid"] == os.getpid() and not w["alive"]
                  and w["socket"].endswith("/sock/e0-0.sock"), str(w))
            check("shared: dead() names every switch when the engine is gone",
                  len(fab.kind.dead()) == len(fab.topo.switches))
        if engine is None:
            check("kernel: switches have no pid", "pid" not in s["switches"][0])


def engine_found_by_argv() -> None:
    path = str(Path(RUN_DIR) / "zq" / "config" / "fabric.json")
    other = str(Path(RUN_DIR) / "zr" / "config" / "fabric.json")
    sleeper = "import time; time.sleep(60)"
    ours = subprocess.Popen([sys.executable, "-c", sleeper, "--fabric", path])
    theirs = subprocess.Popen([sys.executable, "-c", sleeper, "--fabric", other])
    try:
        found = teardown.engine_pids("zq")
        check("down finds a shared engine by --fabric FILE, and only that fabric's",
              found == [ours.pid], f"{found} (ours {ours.pid}, another {theirs.pid})")
    finally:
        for p in (ours, theirs):
            p.kill()
            p.wait()


def snap(engine: dict[str, Any] | None) -> dict[str, Any]:
    s: dict[str, Any] = {"queues": [], "ports": [], "counters": {}, "status": {}}
    if engine is not None:
        s["status"]["engine"] = engine
    return s


def cpu_bound_verdict() -> None:
    ok = {"kind": "shared", "lag_events": 3, "lag_max_us": 40.0, "cpu_bound": False,
          "reason": ""}
    bound = dict(ok, lag_events=9, lag_max_us=900.0, cpu_bound=True,
                 reason="behind wall-clock time by more than a frame time")
    cases = [
        ("idle engine", {"e0-0": snap(ok)}, {"e0-0": snap(ok)}, False),
        ("cpu_bound after, lag grew", {"e0-0": snap(ok), "e0-1": snap(ok)},
         {"e0-0": snap(bound), "e0-1": snap(bound)}, True),
        ("cpu_bound before and after, no new lag", {"e0-0": snap(dict(bound))},
         {"e0-0": snap(dict(bound))}, False),
        ("no engine stats", {"e0-0": snap(None)}, {"e0-0": snap(None)}, True),
    ]
    for what, before, after, want in cases:
        reasons: list[str] = []
        lag = fabric_run.Runner.engine_report(before, after, reasons)
        check(f"shared engine's verdict: {what}: cpu-bound {want}", bool(reasons) == want
              and len(reasons) <= 1, f"{reasons} {lag}")
        if what.startswith("cpu_bound after"):
            check("the reason is the engine's, once, naming a switch and the lag",
                  "behind wall-clock" in reasons[0] and "e0-0 and 1 more" in reasons[0]
                  and lag == {"lag_events": 6, "lag_max_us": 900.0},
                  f"{reasons} {lag}")
    fab = fabric("shared")
    fab.state["processes"]["engine"] = {"pid": os.getpid(), "start": 1, "kind": "ofan-dp-shared"}
    r = fabric_run.Runner(fab, log)
    lagging = {"port": 2, "max_bytes": 4220, "ecn_marked": 0, "shaper_lag_bytes": 10 ** 6}
    late = snap(bound)
    late.update(queues=[lagging], ports=[{"port": 2, "tx_bytes": 100}])
    out = r.switch_report({"e0-0": snap(ok)}, {"e0-0": late})
    check("shared: the shaper-lag check is the per-switch engine's, not this one's",
          len(out["cpu_reasons"]) == 1 and "shared engine" in out["cpu_reasons"][0]
          and out["engine_lag_events"] == 6, str(out["cpu_reasons"]))


def switch_admin() -> None:
    argv, stdin = control._argv("switch_admin", {"admin": "down"})
    check("switch_admin is ofanctl switch down", argv == ["switch", "down"] and stdin is None,
          str(argv))


def main() -> int:
    shared_configs()
    per_switch_configs()
    loss_between_switches()
    shared_up()
    state_and_status()
    engine_found_by_argv()
    cpu_bound_verdict()
    switch_admin()
    log(f"{len(failures)} failure(s)" + (": " + "; ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
