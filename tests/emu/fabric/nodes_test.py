#!/usr/bin/python3
"""The node kinds (emu/fabric/nodes/) and the state file's one writer
without root, ofan-dp or VMs: what the shared engine's kind writes and
starts, what it refuses, and what the per-switch and kernel kinds keep; the
host kinds (uroce, rxe VM) and their records.

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
Host kinds: which kind each host has, what configure() gives a uroce
host's namespace, status --json's host entries as before, the uroce
collective's process recorded while it runs and stopped by poll, a
timeout or down(), a VM host's qemu found, stopped and refused for exec.
The state: every StateWriter change on disk when it returns, records
frozen, a file from before the engines read as per-switch or kernel, its
link attributes read back as they were written.
"""
import atexit
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parents[3]
RUN_DIR = tempfile.mkdtemp(prefix="ofan-nodes-test-")
atexit.register(shutil.rmtree, RUN_DIR, ignore_errors=True)
os.environ["OFAN_EMU_RUN_DIR"] = RUN_DIR  # state.py reads it at import
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import check, failures, log  # noqa: E402
sys.path.insert(0, str(REPO / "emu"))
from fabric import control, nodes, teardown  # noqa: E402
from fabric import run as fabric_run  # noqa: E402
from fabric.run_rows import EngineLag  # noqa: E402
from fabric.fabric import Fabric  # noqa: E402
from fabric.nodes import ofan_shared  # noqa: E402
from fabric.nodes.ofan import OfanKind  # noqa: E402
from fabric.request import Pfc, Reorder, UpRequest  # noqa: E402
from fabric.state import ProcessRecord, Setup  # noqa: E402
from fabric.tools import FabricError  # noqa: E402
from fabric.topology import LinkAttrs, Topology  # noqa: E402
from fabric import state as fstate  # noqa: E402
from fabric.nodes import uroce as uroce_kind  # noqa: E402

EMU = str(REPO / "emu" / "ofan-emu")


def fabric(engine: str | None, switch: str = "ofan", topo: Topology | None = None,
           name: str = "t", vm_hosts: tuple[str, ...] = (),
           host_stamp: str | None = None, host_io: str = "veth") -> Fabric:
    """A fabric as up() leaves its state, made nowhere (its state file in
    RUN_DIR)."""
    fab = Fabric(name, topo or Topology(4, 3), log=lambda _m: None)
    kind = fab.check(UpRequest(switch=switch, engine=engine, vm_hosts=vm_hosts)).kind
    setup = Setup(k=fab.topo.k, levels=fab.topo.levels, switch=switch, engine=kind.engine,
                  policy="ofan", ofan_mode="combined", seed=1, pipe_size=4,
                  host_stamp=host_stamp, host_io=host_io)
    fab.writer.begin_up(setup, {}, list(vm_hosts))
    return fab


def ofan_kind(fab: Fabric) -> OfanKind:
    kind = fab.kind
    assert isinstance(kind, OfanKind)
    return kind


def with_attrs(topo: Topology, link: str, **attrs: Any) -> Any:
    """topo's link at `link` (either end) with these attributes."""
    li = topo.link_at(*topo.parse_endpoint(link, "test"))
    li.attrs = li.attrs.with_(attrs, "test")
    return li


def shared_configs() -> None:
    topo = Topology(4, 3)
    lat = with_attrs(topo, "e0-0:2", latency_us=50)
    host = with_attrs(topo, "h0", latency_us=2000)
    fab = fabric("shared", topo=topo)
    kind = ofan_kind(fab)
    check("--engine shared: the shared kind", isinstance(kind, ofan_shared.OfanShared)
          and kind.engine == "shared", type(kind).__name__)
    cfgs = {s.name: kind.switch_config(s) for s in topo.switches}
    by_cfg_name = {c["name"]: c for c in cfgs.values()}
    check("config names are FABRIC-SWITCH", sorted(by_cfg_name) ==
          sorted(f"t-{s.name}" for s in topo.switches))
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
    ours = cfgs[topo.switches[0].name]
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
            nodes.make(fab.ctx, switch, engine)
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
    edge = topo.sw_by_name[topo.host_by_name["h3"].edge_name]
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


def faked_up(started: dict[str, Any], waited: dict[str, Any], **setup: Any) -> tuple[Fabric, Any]:
    """A k=4 two-level shared fabric "u" with these Setup fields, kind.up()
    run with the process start and the wait faked (what they were asked
    goes into started and waited); its fabric file."""
    teardown.down("u")
    fab = fabric("shared", topo=Topology(4, 2), name="u", **setup)
    for d in ("config", "logs", "sock"):
        (fab.state.dir / d).mkdir(parents=True, exist_ok=True)
    kind = ofan_kind(fab)

    def start(key: str, cmd: list[str], what: str) -> Any:
        started.update(key=key, cmd=cmd, kind=what)
        return SimpleNamespace(pid=1)

    setattr(kind, "start", start)
    setattr(kind, "wait_ready", lambda owners, procs: waited.update(owners=owners, procs=procs))
    kind.up()
    return fab, json.loads((fab.state.dir / "config" / "fabric.json").read_text())


def shared_up() -> None:
    """kind.up() with the process start faked: the files and the command."""
    os.environ["OFAN_OFAN_DP"] = "/bin/true"  # tool() finds it; nothing runs it here
    started: dict[str, Any] = {}
    waited: dict[str, Any] = {}
    fab, ff = faked_up(started, waited)
    want = [str(fab.state.dir / "config" / f"{s.name}.json") for s in fab.topo.switches]
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
          waited.get("owners") == {s.name: "engine" for s in fab.topo.switches})
    fab, ff = faked_up(started, waited, host_stamp="poll")
    check("up --host-stamp poll: the fabric file's engine.host_stamp",
          ff.get("engine") == {"host_stamp": "poll"} and len(ff["switches"]) == len(want),
          str(ff.get("engine")))
    fab, ff = faked_up(started, waited, host_io="shm", vm_hosts=("h1",))
    devs = {p["port"]: p["dev"] for p in json.loads(Path(ff["switches"][0]).read_text())["ports"]}
    check("up --host-io shm: a uroce host's port is shm:STATE/shm/HOST, a VM host's keeps its "
          "veth, the rings' folder is made",
          devs.get(0) == f"shm:{fab.state.dir}/shm/h0" and devs.get(1, "").startswith("net_af_xdp")
          and (fab.state.dir / "shm").is_dir(), str(devs))
    teardown.down("u")


def state_and_status() -> None:
    for engine, want in (("shared", "shared"), ("per-switch", "per-switch"), (None, None)):
        switch = "kernel" if engine is None else "ofan"
        fab = fabric(engine, switch)
        fab.writer.process("engine", ProcessRecord("ofan-dp-shared", os.getpid(), 1))
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
                  and lag == EngineLag(events=6, max_us=900.0),
                  f"{reasons} {lag}")
    fab = fabric("shared")
    fab.writer.process("engine", ProcessRecord("ofan-dp-shared", os.getpid(), 1))
    r = fabric_run.Runner(fab, log)
    lagging = {"port": 2, "max_bytes": 4220, "ecn_marked": 0, "shaper_lag_bytes": 10 ** 6}
    late = snap(bound)
    late.update(queues=[lagging], ports=[{"port": 2, "tx_bytes": 100}])
    out = r.switch_report({"e0-0": snap(ok)}, {"e0-0": late})
    check("shared: the shaper-lag check is the per-switch engine's, not this one's",
          len(out.cpu_reasons) == 1 and "shared engine" in out.cpu_reasons[0]
          and out.engine_lag_events == 6, str(out.cpu_reasons))


def switch_admin() -> None:
    argv, stdin = control._argv("switch_admin", {"admin": "down"})
    check("switch_admin is ofanctl switch down", argv == ["switch", "down"] and stdin is None,
          str(argv))


def one_writer() -> None:
    fab = fabric("per-switch", name="w")
    w = fab.writer
    w.add_namespace("ofe-w-e0-0")
    w.add_wire("ofe-w-w20", 20)
    w.process("e0-0", ProcessRecord("ofan-dp", os.getpid(), fstate.proc_start_time(os.getpid())))
    w.set_link_failed(20, True)
    w.set_switch_failed("a0-0", True)
    w.ready(1.5)
    on_disk = fstate.State.load("w")
    check("every StateWriter change is on disk when it returns",
          on_disk == fab.state and on_disk is not None and on_disk.wires == (20,)
          and on_disk.namespaces == ("ofe-w-e0-0", "ofe-w-w20") and on_disk.phase == "ready"
          and on_disk.processes["e0-0"].alive(), str(on_disk))
    w.set_link_failed(20, False)
    w.set_switch_failed("a0-0", False)
    check("restores leave nothing failed", fstate.State.load("w") == fab.state
          and not fab.state.failed_links and not fab.state.failed_switches)
    try:
        fab.state.processes["e0-0"].pid = 1  # type: ignore[misc]
        check("records are frozen: only the writer makes the next state", False)
    except dataclasses.FrozenInstanceError:
        check("records are frozen: only the writer makes the next state", True)
    doc = json.loads(fab.state.path.read_text())
    for switch, want in (("ofan", "per-switch"), ("kernel", "kernel")):
        old = dict(doc, switch=switch)
        del old["engine"], old["created"]
        st = fstate.parse("w", json.dumps(old).encode())
        check(f"a state file from before the engines ({switch}): engine {want}",
              st.setup is not None and st.setup.engine == want, str(st.setup))
    topo = Topology(4, 3)
    with_attrs(topo, "e0-0:2", latency_us=50, buffer="1MiB")
    w = fstate.StateWriter(fstate.State("la"))
    w.begin_up(Setup(k=4, levels=3, switch="ofan", engine="shared", policy="ofan",
                     ofan_mode="combined", seed=1, pipe_size=4),
               {li.id: li.attrs for li in topo.links}, [])
    back = fstate.parse("la", w.state.path.read_bytes())
    check("the state file keeps each link's LinkAttrs as they were",
          all(back.links[str(li.id)] == li.attrs for li in topo.links)
          and isinstance(back.links["0"], LinkAttrs), str(back.links.get("0")))


def host_kinds() -> None:
    fab = fabric("shared", name="h", vm_hosts=("h1", "h8"))
    uroce, vms = fab.host_kinds
    check("host kinds: rxe VMs on the slots named, uroce on the rest",
          vms.names == ["h1", "h8"] and len(uroce.names) == 14 and "h1" not in uroce.names
          and fab.host_kind("h8").kind == "vm" and fab.host_kind("h0").kind == "uroce")
    calls: list[tuple[str, ...]] = []
    saved = {n: getattr(uroce_kind.netns, n) for n in
             ("add_addr", "add_neighbor", "add_default_route", "ethtool_off")}
    try:
        for n in saved:
            setattr(uroce_kind.netns, n, lambda *a, _n=n: calls.append((_n,) + a))
        uroce.configure()
    finally:
        for n, f in saved.items():
            setattr(uroce_kind.netns, n, f)
    h0 = fab.topo.host_by_name["h0"]
    check("uroce configure: address /32, gateway neighbour, default route, offloads off, "
          "in each uroce host's namespace and no VM's",
          ("add_addr", "ofe-h-h0", "eth0", h0.addr, 32) in calls
          and ("add_neighbor", "ofe-h-h0", "eth0", h0.gateway, h0.edge_mac) in calls
          and ("add_default_route", "ofe-h-h0", "eth0", h0.gateway) in calls
          and ("ethtool_off", "ofe-h-h0", "eth0") in calls and len(calls) == 4 * 14
          and not any(c[1] in ("ofe-h-h1", "ofe-h-h8") for c in calls), str(calls[:4]))
    me = ProcessRecord("vm", os.getpid(), fstate.proc_start_time(os.getpid()), host="h1",
                       boot=fstate.VmBoot(3.5, 512, "tcg", 2048))
    fab.writer.process("vm-h1", me)
    fab.writer.process("vm-h8", ProcessRecord("vm", host="h8"))  # recorded, not started
    hs = {h["name"]: h for h in fab.status()["hosts"]}
    check("status: a uroce host as before", hs["h0"] == {
        "name": "h0", "addr": h0.addr, "ns": "ofe-h-h0", "edge": h0.edge_name,
        "kind": "uroce"}, str(hs["h0"]))
    check("status: a VM host with its qemu, boot and cost",
          hs["h1"]["kind"] == "vm" and hs["h1"]["alive"] and hs["h1"]["pid"] == os.getpid()
          and "cpu_s" in hs["h1"] and hs["h1"]["boot_s"] == 3.5 and hs["h1"]["accel"] == "tcg"
          and hs["h1"]["active_mtu"] == 2048 and hs["h1"]["mem_mb"] == 512, str(hs["h1"]))
    check("status: a VM host not started yet: not alive, no pid, no boot",
          hs["h8"]["alive"] is False and not {"pid", "cpu_s", "boot_s"} & set(hs["h8"]),
          str(hs["h8"]))
    for host, want in (("h0", "is not a VM host"), ("h8", "is not running")):
        try:
            vms.exec(host, ["true"])
            check(f"exec {host}: refused", False)
        except FabricError as e:
            check(f"exec {host}: refused ({want})", want in str(e)
                  and (e.code == 2) == (host == "h0"), str(e))
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        rec = ProcessRecord("vm", sleeper.pid, fstate.proc_start_time(sleeper.pid), "h8")
        fab.writer.process("vm-h8", rec)
        fab.writer.process("vm-h1", dataclasses.replace(me, start=1))  # a pid reused
        check("VM kind down: its live qemus stopped, a reused pid not",
              vms.down() == [sleeper.pid] and sleeper.wait(5) is not None)
    finally:
        sleeper.kill()
        sleeper.wait()


def uroce_collective() -> None:
    fab = fabric("shared", name="c")
    fake = Path(RUN_DIR) / "fake-uroce"
    fake.write_text("#!/bin/sh\necho progress 1 2 >&2\nsleep \"${FAKE_S:-0.6}\"\n"
                    "echo '{\"ok\": 1}'\n")
    fake.chmod(0o755)
    os.environ["OFAN_UROCE"] = str(fake)
    hosts = fab.uroce_hosts
    seen: list[Any] = []

    def poll(err: Any) -> None:
        recs = hosts.records()
        seen.append([(r.kind, r.pid is not None and r.alive()) for r in recs.values()])

    rc, out, err = hosts.collective({"hosts": []}, 30, poll)
    left = sorted(p.name for p in fab.state.dir.iterdir() if p.name.startswith("uroce-")
                  or p.suffix == ".json" and p.name != "state.json")
    check("uroce collective: one process, on record (kind uroce, alive) while it runs; "
          "its output; nothing left after",
          rc == 0 and json.loads(out) == {"ok": 1} and "progress 1 2" in err
          and seen and all(s == [("uroce", True)] for s in seen[:1]) and not left,
          f"rc {rc} {out!r} {err!r} {seen[:2]} {left}")

    def stop(err: Any) -> None:
        raise FabricError("switch(es) e0-0 died")
    os.environ["FAKE_S"] = "30"
    try:
        hosts.collective({"hosts": []}, 30, stop)
        check("an error from poll stops the collective", False)
    except FabricError as e:
        check("an error from poll stops the collective and goes on up",
              "e0-0 died" in str(e) and not hosts.records(), str(e))
    try:
        hosts.collective({"hosts": []}, 0.3, lambda err: None)
        check("a collective past its timeout is stopped", False)
    except FabricError as e:
        check("a collective past its timeout is stopped", "did not finish" in str(e)
              and not hosts.records(), str(e))
    killed: list[int] = []
    t0 = time.monotonic()
    hosts.collective({"hosts": []}, 30,
                     lambda err: killed.extend(hosts.down()) if not killed else None)
    # (down reaps the process, this test's child, so its exit code is lost)
    check("uroce kind down: the running collective stopped",
          len(killed) == 1 and not fstate.running(killed[0]) and time.monotonic() - t0 < 10,
          f"{killed}")
    del os.environ["FAKE_S"]


def checked_once() -> None:
    """Fabric.check refuses before anything is made, without root; claim
    takes the name; up takes only a claimed request."""
    topo = Topology(4, 3)
    bad = [(UpRequest(vm_hosts=("h99",)), "--vm-hosts: h99 is not a host"),
           (UpRequest(vm_hosts=("h1", "h1")), "a host named twice"),
           (UpRequest(bfd_ms=100), "--bfd-ms and --bfd-multiplier are the agents'"),
           (UpRequest(vm_mem_mb=64), "--vm-mem: 128 to 65536"),
           (UpRequest(policy="frob"), "--policy frob: not a policy"),
           (UpRequest(switch="kernel", pfc=Pfc(3, 100, 200, "drop")), "--pfc: the kernel"),
           (UpRequest(switch="kernel", reorder=Reorder(256, None)), "--reorder: the kernel"),
           (UpRequest(engine="per-switch", host_stamp="poll"),
            "--host-stamp: only the shared engine"),
           (UpRequest(engine="shared", host_stamp="frob"),
            "--host-stamp frob: one of kernel, poll"),
           (UpRequest(engine="per-switch", host_io="shm"), "--host-io shm: the shared engine"),
           (UpRequest(engine="shared", host_io="pipes"), "--host-io pipes: one of veth, shm"),
           (UpRequest(miswire="e0-0:2"), "--miswire"),
           (UpRequest(control="frob"), "--control frob")]
    for req, why in bad:
        fab = Fabric("c", topo, log=lambda _m: None)
        try:
            fab.check(req)
            check(f"check refuses {req}", False)
        except FabricError as e:
            check(f"check refuses: {why} (exit 2)", e.code == 2 and why in str(e), str(e))
        check(f"nothing made for {why}", fstate.State.load("c") is None)
    fab = Fabric("c", topo, log=lambda _m: None)
    checked = fab.check(UpRequest(engine="shared", vm_hosts=("h0",)))
    check("a checked request carries its kind", checked.kind.engine == "shared")
    claimed = fab.claim(checked)
    check("claim hands up the checked request", claimed.checked is checked)
    fab.writer.begin_up(Setup(k=4, levels=3, switch="ofan", engine="shared", policy="ofan",
                              ofan_mode="combined", seed=1, pipe_size=4), {}, ["h0"])
    try:
        Fabric("c", topo, log=lambda _m: None).claim(checked)
        check("claim refuses a name in use", False)
    except FabricError as e:
        check("claim refuses a name in use (exit 1)", e.code == 1 and "exists already" in str(e),
              str(e))
    teardown.down("c")


def main() -> int:
    checked_once()
    one_writer()
    host_kinds()
    uroce_collective()
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
