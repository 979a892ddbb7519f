"""ofan-emu's command line.

Exit codes: 0 ok; 1 the operation or run failed (or a buffer did not verify);
2 bad command line or topology; 3 the run finished but was CPU-bound (or the
environment is missing something: root, hugepages, a binary).
"""
import argparse
import dataclasses
import json
import os
import shlex
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Mapping, NoReturn, Sequence

from . import control, fabric as fabric_mod, nodes, plan as plan_mod, reports, teardown
from .fabric import Fabric, load
from .request import DEFAULT_HOST_IO, HOST_IOS, Pfc, Reorder, UpRequest
from .state import State, fabric_lock, valid_name
from .tools import REPO, FabricError
from . import apps, containerlab, coordinator, facts
from .control_plane import CONTROLS, DEFAULT_CONTROL, FRR_DAEMONS, AgentControl
from .nodes.uroce import UroceHosts
from .run import CONGESTION_CONTROLS, WORKLOADS
from .run_rows import Cts, RunResult
from .topology import (LINK_ATTRS, Topology, TopologyError, load_file,
                       parse_size)

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_CPU = 0, 1, 2, 3
DEFAULT_NAME = "ofan"
EMU = str(REPO / "emu" / "ofan-emu")
DEFAULT_REMOTE_EMU = EMU  # the same checkout, at the same path, on every server

EPILOG = """\
examples:
  ofan-emu up --k 4 --levels 3                 # 20 switches in one ofan-dp, 16 hosts
  ofan-emu up --k 4 --engine per-switch        # the same, one ofan-dp per switch
  ofan-emu up --k 4 --levels 2 --switch kernel --name ks   # Linux ECMP routers
  ofan-emu up --topology emu/topologies/fattree-k4.yaml
  ofan-emu status [--json]
  ofan-emu ping                                # all-pairs reachability
  ofan-emu fail --link e0-0:2                  # an edge-agg link (either end names it)
  ofan-emu restore --link e0-0:2
  ofan-emu fail --switch a0-0 ; ofan-emu restore --switch a0-0
  ofan-emu up --k 4 --control agent           # lldpd, FRR and ofan-agent in every switch
  ofan-emu fail --link a0-0:2 --silent         # frames lost, carrier up (BFD finds it)
  ofan-emu verify-masks                        # live masks vs the brute-force valid sets
  ofan-emu agent restart e0-0                  # SIGKILL an agent, start it again
  ofan-emu frr restart e0-0 --daemon bgpd      # stop bgpd, start it again (empty)
  ofan-emu down [--name NAME] | ofan-emu down --all
  ofan-emu run --workload perm --msg 1MiB --lbs ecmp,rps,ar,ofan,pofan --with-sim
  ofan-emu demo                                # up, run, compare with ofan-sim, plot, down
  ofan-emu topology --k 4 --levels 3 > my.yaml # the canonical file of a shape
  ofan-emu plan --k 4 --servers 192.0.2.1,192.0.2.2 -o k4.plan.json   # across servers
  ofan-emu up --plan k4.plan.json --server srv0   # on each server: its part, VXLAN between
  ofan-emu up --plan k4.plan.json              # or every server's part from here, over SSH
  ofan-emu run --plan k4.plan.json --lbs ecmp,ofan   # every server's hosts, one collective
  ofan-emu status --plan k4.plan.json          # every server's part
  ofan-emu export --format containerlab -o k4.clab.yml   # for Containerlab, clabernetes
  ofan-emu up --k 4 --vm-hosts h0,h8           # two soft-RoCE (rxe) VMs, in pods 0 and 2
  ofan-emu exec h0 -- ibv_devinfo              # a command in a VM host
  ofan-emu vm run -- CMD                       # CMD under Debian's kernel (netem, rxe)

Everything a fabric creates carries its prefix (namespaces ofe-NAME-*) and is
listed in /run/ofan-emu/NAME/state.json; down removes exactly that, down --all
every fabric's, including what a crashed run left.
Exit codes: 0 ok; 1 failed; 2 bad command line or topology; 3 CPU-bound run,
or the environment lacks something (root, hugepages, a binary)."""


def interrupted(signum: int, _frame: FrameType | None) -> NoReturn:
    """SIGTERM, SIGHUP during up: KeyboardInterrupt, which removes what was made."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


def progress(msg: str) -> None:
    print(f"[ofan-emu {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def need_root() -> None:
    if os.geteuid() != 0:
        raise FabricError("ofan-emu needs root (network namespaces, veths, AF_XDP, hugepages)",
                          code=EXIT_CPU)


def shape_from_args(args: argparse.Namespace) -> tuple[str, Topology]:
    """(the fabric's name, its Topology) from SHAPE's options."""
    overrides = {}
    if args.ecn_kb is not None:
        if args.ecn is not None:
            raise TopologyError("--ecn and --ecn-kb say the same thing: give one")
        if args.ecn_kb < 0:
            raise TopologyError(f"--ecn-kb {args.ecn_kb}: a size in KiB, 0 or more")
        args.ecn = f"{args.ecn_kb}KiB"
    for key, val in (("rate_mbps", args.link_mbps), ("buffer", args.buffer),
                     ("ecn", args.ecn), ("latency_us", args.latency_us)):
        if val is not None:
            overrides[key] = val
    if args.topology:
        if args.k is not None or args.levels is not None:
            raise TopologyError("--topology FILE gives the shape: no --k or --levels with it")
        fname, topo = load_file(args.topology)
        if overrides:
            # Command-line values win over the file's, for every link.
            for link in topo.links:
                link.attrs = link.attrs.with_(overrides, "command line")
        name = args.name or fname
    else:
        k = 4 if args.k is None else args.k
        if k % 2 or not 4 <= k <= 64:
            raise TopologyError(f"--k {k}: an even number from 4 to 64")
        topo = Topology(k, 3 if args.levels is None else args.levels, overrides)
        name = args.name or DEFAULT_NAME
    if not valid_name(name):
        raise TopologyError(f"fabric name {name!r}: 1-10 of a-z, 0-9")
    return name, topo


def plan_from_args(args: argparse.Namespace) -> tuple[plan_mod.Plan, Topology]:
    """A plan computed from the shape and plan options."""
    from . import facts
    name, topo = shape_from_args(args)
    servers = plan_mod.parse_servers(args.servers)
    return plan_mod.compute(topo, name, servers, facts.netdev_mtu(), placement=args.placement,
                            vni_base=args.vni_base, udp_port=args.vxlan_port), topo


def write_output(path: str, text: str) -> None:
    """-o FILE (- for stdout); exit 2 if it cannot be written."""
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise TopologyError(f"-o {path}: {e.strerror or e}") from None


def cmd_fault(args: argparse.Namespace) -> int:
    """fault --pfc-storm HOST [--for-ms N]: the host's NIC pauses its edge
    port without end, as a broken NIC does; the edge's PFC watchdog is what
    should act (ofanctl ports, status)."""
    if not 0 <= args.for_ms <= 3_600_000:
        raise TopologyError("--for-ms: 0 to 3600000")
    need_root()
    fab = load(pick_name(args), log=progress)
    if fab.setup.pfc_priority is None:
        raise FabricError(f"fault --pfc-storm: fabric {fab.name} has no PFC (up --pfc)", code=2)
    if args.pfc_storm not in fab.topo.host_by_name:
        raise FabricError(f"--pfc-storm {args.pfc_storm}: no such host (ofan-emu status)",
                          code=2)
    hk = fab.host_kind(args.pfc_storm)
    if not isinstance(hk, UroceHosts):
        raise FabricError(f"--pfc-storm {args.pfc_storm}: a VM host's NIC is qemu's (storms "
                          "are uroce hosts' NICs)", code=2)
    edge, port = fab.topo.link_at(args.pfc_storm, 0).b
    if fab.kind.engine != "shared":
        # The per-switch engine's host is its own namespace: the frames
        # come from it (uroce pfc-storm); the edge records the window.
        hk.storm(args.pfc_storm, args.for_ms, fab.setup.pfc_priority)
    control.request(fab.ctx.sock(edge), "set_port", port=port, pfc_storm_ms=args.for_ms)
    res = {"host": args.pfc_storm, "edge": edge, "port": port, "for_ms": args.for_ms}
    emit(args, res, f"{args.pfc_storm} storms {edge} port {port} with pause for "
         f"{args.for_ms} ms" if args.for_ms else f"{args.pfc_storm}'s storm ended")
    return EXIT_OK


def pfc_from_args(args: argparse.Namespace) -> Pfc | None:
    """up's PFC (None: no --pfc); exit 2 for a PFC option alone or out of
    range (the ranges and defaults are ofan-dp's: ofan-topo facts)."""
    wd = (args.pfcwd_detect_ms, args.pfcwd_restore_ms, args.pfcwd_action)
    if not args.pfc:
        if args.pfc_priority is not None or any(v is not None for v in wd):
            raise TopologyError("--pfc-priority and --pfcwd-*: need --pfc")
        return None
    from . import facts
    f = facts.pfc_watchdog()
    detect = f.detect_ms if args.pfcwd_detect_ms is None else args.pfcwd_detect_ms
    restore = f.restore_ms if args.pfcwd_restore_ms is None else args.pfcwd_restore_ms
    for opt, v, (lo, hi) in (("--pfcwd-detect-ms", detect, f.detect_range_ms),
                             ("--pfcwd-restore-ms", restore, f.restore_range_ms)):
        if not lo <= v <= hi:
            raise TopologyError(f"{opt} {v}: {lo} to {hi}")
    action = args.pfcwd_action or f.actions[0]
    if action not in f.actions:
        raise TopologyError(f"--pfcwd-action {action}: one of {', '.join(f.actions)}")
    return Pfc(priority=pfc_priority_from_args(args), wd_detect_ms=detect,
               wd_restore_ms=restore, wd_action=action)


def reorder_from_args(args: argparse.Namespace) -> Reorder | None:
    """up's resequencing (None: no --reorder); exit 2 for an option alone,
    a buffer of 0 or a timeout outside ofan-dp's range (ofan-topo facts)."""
    if not args.reorder:
        if args.reorder_kb is not None or args.reorder_timeout_us is not None:
            raise TopologyError("--reorder-kb and --reorder-timeout-us: need --reorder")
        return None
    from . import facts
    f = facts.reorder()
    kb = f.buffer_bytes // 1024 if args.reorder_kb is None else args.reorder_kb
    if not 1 <= kb <= 1 << 20:
        raise TopologyError(f"--reorder-kb {kb}: 1 to {1 << 20}")
    timeout = args.reorder_timeout_us
    lo, hi = f.timeout_range_us
    if timeout is not None and not lo <= timeout <= hi:
        raise TopologyError(f"--reorder-timeout-us {timeout}: {lo} to {hi}")
    return Reorder(buffer_kb=kb, timeout_us=timeout)


def pfc_priority_from_args(args: argparse.Namespace) -> int:
    if args.pfc_priority is None:
        from . import facts
        return facts.pfc_priority()
    return int(args.pfc_priority)


def pick_name(args: argparse.Namespace) -> str:
    if args.name:
        return args.name
    names = State.names()
    if len(names) == 1:
        return names[0]
    if not names:
        raise FabricError("no fabric is up (ofan-emu up)")
    raise FabricError(f"several fabrics are up ({', '.join(names)}): say which with --name")


def emit(args: argparse.Namespace, obj: object, text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(obj, indent=1))
    else:
        print(text)


def no_shape_with_plan(args: argparse.Namespace, verb: str, *more: tuple[str, object]) -> None:
    """Exit 2 for a shape option (SHAPE's) or one of `more` given
    beside --plan FILE, which gives the fabric."""
    given = [o for o, v in (("--topology", args.topology), ("--k", args.k),
                            ("--levels", args.levels), ("--name", args.name),
                            ("--link-mbps", args.link_mbps), ("--buffer", args.buffer),
                            ("--ecn", args.ecn), ("--ecn-kb", args.ecn_kb),
                            ("--latency-us", args.latency_us)) + more
             if v is not None]
    if given:
        raise TopologyError(f"{verb} --plan FILE: the plan gives the fabric; not {given[0]}")


def plan_part(args: argparse.Namespace) -> tuple[plan_mod.Plan, Topology, str] | None:
    """up --plan FILE --server S: (the plan, its topology, S's name), or
    None without --plan; exit 2 for options the plan gives, or no --server."""
    if args.plan is None:
        if args.server is not None:
            raise TopologyError("up --server S: needs --plan FILE")
        return None
    no_shape_with_plan(args, "up", ("--miswire", args.miswire))
    plan, topo = plan_mod.load(args.plan)
    if args.server is None:
        raise TopologyError("up --plan FILE: needs --server S")  # cmd_up coordinates instead
    return plan, topo, plan.server(args.server).name


def remote(args: argparse.Namespace) -> "coordinator.Remote":
    """The coordinator's way to the servers: this ofan-emu here, the
    --remote-emu command over SSH elsewhere."""
    return coordinator.Remote(emu=args.remote_emu or DEFAULT_REMOTE_EMU, local_emu=EMU,
                              ssh_config=args.ssh_config)


def cmd_coordinate(args: argparse.Namespace) -> int:
    """up --plan FILE: every server's part (coordinator.py)."""
    no_shape_with_plan(args, "up", ("--miswire", args.miswire), ("--vm-hosts", args.vm_hosts),
                       ("--vm-mem", args.vm_mem))
    plan, _ = plan_mod.load(args.plan)
    up_args = ["--switch", args.switch, "--control", args.control, "--policy", args.policy,
               "--ofan-mode", args.ofan_mode, "--seed", str(args.seed)]
    up_args += ["--engine", args.engine] if args.engine else []
    old = {s: signal.signal(s, interrupted) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        res = coordinator.up(plan, Path(args.plan).resolve(), remote(args), up_args, progress)
    except KeyboardInterrupt as e:
        raise FabricError(f"interrupted ({e}); every part taken down again")
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    emit(args, res, f"fabric {plan.name} up on {len(plan.servers)} servers: " + ", ".join(
        f"{n} ({len(st['switches'])} switches, {len(st['hosts'])} hosts)"
        for n, st in res.items()) + f"; ofan-emu down --plan {args.plan}")
    return EXIT_OK


def cmd_up(args: argparse.Namespace) -> int:
    if args.plan is not None and args.server is None:
        return cmd_coordinate(args)
    part = plan_part(args)
    if part is not None:
        plan, topo, server = part
        name = plan.name
    else:
        name, topo = shape_from_args(args)
    req = UpRequest(switch=args.switch, policy=args.policy, ofan_mode=args.ofan_mode,
                    seed=args.seed, vm_hosts=parse_vm_hosts(args.vm_hosts, topo),
                    vm_mem_mb=args.vm_mem, engine=args.engine, control=args.control,
                    miswire=args.miswire, bfd_ms=args.bfd_ms,
                    bfd_multiplier=args.bfd_multiplier, pfc=pfc_from_args(args),
                    reorder=reorder_from_args(args), host_stamp=args.host_stamp,
                    host_io=args.host_io)
    fab = Fabric(name, topo, log=progress, plan=part[0] if part else None,
                 server=part[2] if part else None)
    checked = fab.check(req)  # exit 2 (3: a missing daemon), nothing made
    need_root()
    # The name (and a part's underlay: exit 3), before the try below, which
    # removes what has that name.
    claimed = fab.claim(checked)
    vm_hosts = req.vm_hosts
    progress(f"up {name}" + (f" (server {fab.server})" if fab.server else "")
             + f": k={topo.k} {topo.kind()}, {len(fab.ctx.switches)} switches "
             f"({args.switch}" + (f", {checked.kind.engine} engine" if args.switch == "ofan"
                                  else "")
             + f"), {len(fab.ctx.hosts)} hosts"
             + (f" ({len(vm_hosts)} of them VMs)" if vm_hosts else ""))

    old = {s: signal.signal(s, interrupted) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        took = fab.up(claimed)
    except (FabricError, KeyboardInterrupt, Exception) as e:
        if args.keep_on_error and not isinstance(e, KeyboardInterrupt):
            progress(f"up failed; left as it is (--keep-on-error): {e}")
        else:
            progress(f"up failed ({e}); removing what was made")
            teardown.down(name)
        if isinstance(e, FabricError):
            raise
        if isinstance(e, KeyboardInterrupt):
            raise FabricError(f"interrupted ({e})")
        raise FabricError(f"internal error: {type(e).__name__}: {e}")
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    emit(args, fab.status(), f"fabric {name} up in {took:.1f} s "
         + (f"(server {fab.server}: " if fab.server else "(")
         + f"{len(fab.ctx.switches)} switches, {len(fab.ctx.hosts)} hosts"
         + (f", {len(fab.state.stitches) // 2} links to other servers" if fab.server else "")
         + f"); ofan-emu status --name {name}")
    return EXIT_OK


def parse_vm_hosts(text: str | None, topo: Topology) -> tuple[str, ...]:
    """--vm-hosts: N (the first N host slots) or host names (Fabric.check
    checks the names)."""
    if not text:
        return ()
    if text.isdigit():
        n = int(text)
        if not 0 <= n <= len(topo.hosts):
            raise TopologyError(f"--vm-hosts {n}: 0 to {len(topo.hosts)} (the fabric's hosts)")
        return tuple(h.name for h in topo.hosts[:n])
    return tuple(x for x in text.split(",") if x)


def cmd_exec(args: argparse.Namespace) -> int:
    from vm import qemu
    cmd = args.cmd
    if "--" in cmd:
        # Options between HOST and "--" (argparse leaves them in the rest).
        i = cmd.index("--")
        pre = argparse.ArgumentParser(prog="ofan-emu exec", add_help=False)
        pre.add_argument("--name")
        pre.add_argument("--timeout", type=float)
        pre.add_argument("--json", action="store_true")
        try:
            extra = pre.parse_args(cmd[:i])
        except SystemExit:
            raise TopologyError(f"exec: cannot read the options {cmd[:i]}")
        for k in ("name", "timeout"):
            if getattr(extra, k) is not None:
                setattr(args, k, getattr(extra, k))
        args.json = args.json or extra.json
        cmd = cmd[i + 1:]
    if not cmd:
        raise TopologyError("exec: no command (ofan-emu exec HOST -- CMD ...)")
    need_root()
    fab = load(pick_name(args), log=progress)
    if args.host not in fab.topo.host_by_name:
        raise TopologyError(f"exec: {args.host} is not a host of fabric {fab.name}")

    def out(fd: int, text: str) -> None:
        if not args.json:
            (sys.stdout if fd == 1 else sys.stderr).write(text)
            (sys.stdout if fd == 1 else sys.stderr).flush()

    t0 = time.monotonic()
    try:
        # Only a VM host runs commands (a uroce host is a namespace that
        # ip netns exec reaches): the VM kind says so for the others.
        rc, o, e = fab.vms.exec(args.host, cmd, timeout=args.timeout, on_output=out)
    except qemu.VmError as e:
        raise FabricError(str(e))
    if rc == -9 and args.timeout:
        rc = 124
    if args.json:
        print(json.dumps({"host": args.host, "rc": rc, "stdout": o, "stderr": e,
                          "seconds": round(time.monotonic() - t0, 3)}))
    return rc if 0 <= rc <= 255 else EXIT_FAIL


def cmd_mpirun(args: argparse.Namespace) -> int:
    from . import mpi
    program = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if args.cmd and args.cmd[0] != "--":
        raise TopologyError(f"mpirun: options go before \"--\" and the program after it, "
                            f"not {args.cmd[0]!r} (ofan-emu mpirun -np 2 -- PROGRAM ARGS)")
    if not program:
        raise TopologyError("mpirun: no program (ofan-emu mpirun [OPTIONS] -- PROGRAM ARGS)")
    if "/" in program[0] and not os.path.isabs(program[0]):
        program = [os.path.abspath(program[0])] + program[1:]  # the guests' cwd is not ours
    if args.timeout is not None and not args.timeout > 0:
        raise TopologyError(f"mpirun: --timeout {args.timeout}: seconds > 0")
    need_root()
    fab = load(pick_name(args), log=progress)
    lb_list(args.lbs)  # checked before anything runs
    hosts = mpi.pick_hosts(list(fab.vms.names), args.hosts)
    ranks = mpi.ranks_for(hosts, args.np, args.oversubscribe)

    exec_in = vm_exec(fab, "mpirun")
    rows: list[dict[str, Any]] = []
    rc = 0
    for lb in lb_list(args.lbs):
        if lb is not None:
            fab.set_policy(lb)
            progress(f"mpirun: policy {lb}")
        before = fab.counts()
        job = mpi.run(fab.name, fab.state.dir, fab.vms.mgmt_ns(), exec_in, hosts, ranks,
                      program, oversubscribe=args.oversubscribe,
                      mca=[(k, v) for k, v in args.mca or []], env=args.x or [],
                      timeout=args.timeout, capture=args.json, log=progress)
        switches = over_job(fab, before)
        rows.append({"lb": lb, **job.to_json(),
                     "fabric_counters": switches.to_json() if switches else None})
        rc = rc or job.rc
        if not args.json:
            totals: dict[str, int] = {}
            for c in job.rxe.values():
                for k, v in c.items():
                    totals[k] = totals.get(k, 0) + v
            progress(f"mpirun: exit {job.rc}{' (timed out)' if job.timed_out else ''} after "
                     f"{job.seconds:.1f} s{f' under {lb}' if lb else ''}; rxe over the job: "
                     + ", ".join(f"{k} {totals.get(k, 0)}" for k in mpi.SUMMARY_COUNTERS)
                     + (f"; switches: {switches.summary()}" if switches else ""))
    if args.json:
        print(json.dumps(rows[0] if args.lbs is None else {"runs": rows}))
    return rc if 0 <= rc <= 255 else EXIT_FAIL


def over_job(fab: Fabric, before: "reports.FabricCounts | None") -> "reports.FabricCounts | None":
    """The switches' counters since `before` (mpirun's and app's summary;
    None on a kernel fabric)."""
    after = fab.counts()
    return after.minus(before) if after and before else None


def vm_exec(fab: Fabric, verb: str) -> Callable[[str, list[str], float],
                                                tuple[int, str, str]]:
    """A command in a VM host (its exit code, stdout, stderr), a VM's
    failure a FabricError naming the verb: how mpirun and app reach guests."""
    from vm import qemu

    def exec_in(host: str, argv: list[str], timeout: float) -> tuple[int, str, str]:
        try:
            return fab.vms.exec(host, argv, timeout=timeout)
        except qemu.VmError as e:
            raise FabricError(f"{verb}: VM host {host}: {e}")
    return exec_in


def lb_list(lbs: str | None) -> list[str | None]:
    """--lbs: the policies to run under, each checked (facts.policy); None:
    the fabric's as it is."""
    if lbs is None:
        return [None]
    names = [x.strip() for x in lbs.split(",")]
    if not names or any(not x for x in names):
        raise TopologyError(f"--lbs {lbs!r}: policies separated by commas")
    return [facts.policy(x).name for x in names]


def cmd_app(args: argparse.Namespace) -> int:
    from vm import qemu

    from .nodes import rxe_vm
    try:
        extra = shlex.split(args.tool_args)
    except ValueError as e:
        raise TopologyError(f"app: --tool-args {args.tool_args!r}: {e}")
    app = apps.APPS[args.app]
    for flag, v in (("--iters", args.iters), ("--size", args.size)):
        if v is not None and v < 1:
            raise TopologyError(f"app: {flag} {v}: at least 1")
    if not (args.seconds > 0 and args.timeout > 0):
        raise TopologyError("app: --seconds and --timeout: seconds > 0")
    need_root()
    fab = load(pick_name(args), log=progress)
    vms = list(fab.vms.names)
    if len(vms) < 2:
        raise FabricError(f"app: needs two VM hosts; fabric {fab.name} has "
                          f"{len(vms) or 'none'} (ofan-emu up --vm-hosts h0,h8)", code=2)
    client = args.client or vms[0]
    server = args.server or next(h for h in vms if h != client)
    for role, h in (("--client", client), ("--server", server)):
        if h not in vms:
            raise FabricError(f"app: {role} {h} is not a VM host of fabric {fab.name} (its VM "
                              f"hosts: {', '.join(vms)})", code=2)
    if client == server:
        raise FabricError("app: --client and --server are the same host", code=2)
    lbs = lb_list(args.lbs)

    exec_in = vm_exec(fab, "app")
    h = fab.topo.host_by_name[server]
    try:
        srv = fab.vms.attach(server)
    except qemu.VmError as e:
        raise FabricError(f"app: VM host {server}: {e}")
    try:
        rc, out, _ = srv.exec(["sh", "-c", apps.gid_index_script(h.addr)], timeout=30)
        if rc != 0 or not out.strip().isdigit():
            raise FabricError(f"app: {server}'s {rxe_vm.RXE_DEV} has no RoCE v2 GID of {h.addr}")
        ends = apps.Ends(server_addr=h.addr, server_mgmt=rxe_vm.mgmt_addr(h),
                         gid_index=int(out.strip()), tclass=facts.roce_traffic_class(),
                         size=args.size or app.default_size,
                         iters=args.iters or 1000, seconds=args.seconds)
        results = []
        for lb in lbs:
            if lb is not None:
                fab.set_policy(lb)
            before = fab.counts()
            res = apps.run(app, server, client, srv, exec_in, ends, extra, args.timeout,
                           log=progress)
            switches = over_job(fab, before)
            results.append((lb, res, switches))
            if not args.json:
                sys.stdout.write(res.stdout)
                if res.error:
                    print(f"ofan-emu: app {app.name}: {res.error}", file=sys.stderr)
                figures = ", ".join(f"{k} {v:g}" for k, v in res.result.items())
                progress(f"app {app.name}: {client} -> {server}"
                         f"{f' under {lb}' if lb else ''}: {figures or 'no result'}"
                         + (f"; switches: {switches.summary()}" if switches else ""))
    except qemu.VmError as e:
        raise FabricError(f"app: VM host {server}: {e}")
    finally:
        srv.detach()
    if args.json:
        app_rows: list[dict[str, Any]] = [
            {"lb": lb, **res.to_json(), "fabric_counters": sw.to_json() if sw else None}
            for lb, res, sw in results]
        print(json.dumps(app_rows[0] if args.lbs is None else {"runs": app_rows}))
    rc = next((r.rc for _, r, _ in results if r.rc != 0), 0)
    return rc if 0 <= rc <= 255 else EXIT_FAIL


def status_text(s: dict[str, Any]) -> str:
    lines = [f"fabric {s['name']}" + (f" (server {s['server']}'s part)" if s.get("server") else "")
             + f": k={s['k']} levels={s['levels']} switch={s['switch']} "
             f"engine={s['engine']} policy={s['policy']} control={s.get('control', 'tables')} "
             + (f"host_io={s['host_io']} "
                if s.get("host_io", DEFAULT_HOST_IO) != DEFAULT_HOST_IO else "")
             + f"phase={s['phase']}"]
    agents = s.get("control") == "agent"
    lines.append(f"  {'switch':8} {'role':5} {'pod':>3}  {'state':8} "
                 + (f"{'lldp':>4} {'bgp':>5} {'bfd':>3} {'masks':9} {'conv':4} " if agents else "")
                 + "ns")
    for w in s["switches"]:
        state = "failed" if w["failed"] else ("up" if w.get("alive", True) else "DEAD")
        cp = ""
        if agents:
            a = (w.get("control") or {}).get("agent")
            alive = (w.get("control") or {}).get("processes", {})
            if a is None:
                cp = f"{'-':>4} {'-':>5} {'-':>3} {'-':9} {'-':4} "
            else:
                conv = "yes" if a["converged"] else "no"
                cp = (f"{a['neighbours']:>4} {a['bgp_established']:>2}/{a['bgp_sessions']:<2} "
                      f"{a['bfd_up']:>3} {str(a['masks']):9} {conv:4} ")
            dead = [k for k, v in alive.items() if not v]
            if dead and not w["failed"]:
                cp += f"(down: {','.join(dead)}) "
        lines.append(f"  {w['name']:8} {w['role']:5} {w['pod']:>3}  {state:8} {cp}{w['ns']}")

    def host_text(h: dict[str, Any]) -> str:
        if h.get("kind") != "vm":
            return f"{h['name']}={h['addr']}"
        return f"{h['name']}={h['addr']} (VM" + (f", management {h['mgmt']})" if h.get("mgmt")
                                                 else ")")

    lines.append("  hosts: " + ", ".join(host_text(h) for h in s["hosts"]))
    if s["failed_links"]:
        silent = set(s.get("silent_links", []))
        lines.append("  failed links: " + ", ".join(
            x + (" (silent)" if x in silent else "") for x in s["failed_links"]))
    if s["failed_switches"]:
        lines.append("  failed switches: " + ", ".join(s["failed_switches"]))
    bufs = [(w["name"], w["buffer"]) for w in s["switches"] if w.get("buffer")]
    if bufs:
        def pct(b: dict[str, Any]) -> float:
            return 100.0 * b["max_bytes"] / b["capacity_bytes"] if b["capacity_bytes"] else 0.0
        name, top = max(bufs, key=lambda nb: pct(nb[1]))
        active = [n for n, b in bufs if b["alarm_active"]]
        lines.append(f"  buffers: at most {pct(top):.0f} % held ({name}); alarms above "
                     f"{top['alarm_pct']} %: {sum(b['alarms'] for _, b in bufs)} raised"
                     + (f", ON at {', '.join(active)}" if active else ""))
    if s.get("pfc"):
        pfc = [p["pfc"] for w in s["switches"] for p in w.get("ports", []) if p.get("pfc")]
        lines.append(f"  PFC on priority {s['pfc']['priority']}: "
                     f"{sum(p['sent'] for p in pfc)} pause frames sent, "
                     f"{sum(p['paused_us'] for p in pfc) / 1000:.1f} ms paused (ports summed), "
                     f"{sum(p['lossless_drops'] for p in pfc)} lossless drops "
                     "(per port: ofanctl ports, status --json)")
    if s.get("reorder"):
        ro = [p["reorder"] for w in s["switches"] for p in w.get("ports", []) if p.get("reorder")]
        waits = sorted({r["timeout_us"] for r in ro if r.get("timeout_us") is not None})
        wait = "/".join(str(w) for w in waits) or "?"
        lines.append(f"  reorder at {len(ro)} edge host ports ({s['reorder']['buffer_kb']} KiB, "
                     f"waits up to {wait} us): "
                     f"{sum(r['held'] for r in ro)} frames held, "
                     f"{sum(r['timeouts'] for r in ro)} released by a timeout, at most "
                     f"{max((r['max_bytes'] for r in ro), default=0)} B a port "
                     "(per port: status --json)")
    return "\n".join(lines)


def cmd_status(args: argparse.Namespace) -> int:
    if args.plan is not None:
        if args.name is not None:
            raise TopologyError("status --plan FILE: the plan names the fabric; no --name")
        plan, _ = plan_mod.load(args.plan)
        res = coordinator.everywhere(plan, remote(args), ["status", "--name", plan.name,
                                                          "--json"], progress)
        return emit_everywhere(args, plan, res, "status", "\n".join(
            f"{n}: {e}" if isinstance(e, Exception) else status_text(e) for n, e in res.items()))
    if args.name is None:
        names = State.names()
        if len(names) != 1:
            leftovers = sorted(set(teardown.all_names()) - set(names))
            obj = {"fabrics": names, "leftovers": leftovers}
            text = ("fabrics: " + (", ".join(names) if names else "none")
                    + (f"\nleftovers (ofan-emu down --all): {', '.join(leftovers)}"
                       if leftovers else ""))
            emit(args, obj, text)
            return EXIT_OK
        args.name = names[0]
    s = load(args.name).status()
    emit(args, s, status_text(s))
    return EXIT_OK


def cmd_down(args: argparse.Namespace) -> int:
    if args.plan is not None:
        plan, _ = plan_mod.load(args.plan)
        return emit_everywhere(args, plan, coordinator.down(plan, remote(args), progress),
                               "down")
    need_root()
    names = teardown.all_names() if args.all else [pick_name(args)]
    reports = []
    for n in names:
        r = fabric_mod.down(n, log=progress)
        reports.append(r)
        progress(f"down {n}: {len(r['namespaces'])} namespaces, {len(r['processes'])} processes")
    vms = []
    if args.all:
        from vm import throwaway
        vms = throwaway.leftovers()
        if vms:
            progress(f"down: throwaway VMs: {', '.join(vms)}")
    emit(args, {"down": reports, "vms": vms},
         f"down: {', '.join(names) if names else 'nothing to remove'}")
    return EXIT_OK


def cmd_fail_restore(args: argparse.Namespace) -> int:
    if args.plan is not None:
        if args.name is not None:
            raise TopologyError(f"{args.verb} --plan FILE: the plan names the fabric; no --name")
        plan, _ = plan_mod.load(args.plan)
        what = ["--link", args.link] if args.link else ["--switch", args.switch]
        what += ["--silent"] if getattr(args, "silent", False) else []
        res = coordinator.everywhere(plan, remote(args), [args.verb, "--name", plan.name,
                                                          "--part", "--json"] + what, progress)
        return emit_everywhere(args, plan, res, f"{args.verb} {' '.join(what)}")
    need_root()
    name = pick_name(args)
    with fabric_lock(name):
        fab = load(name, log=progress)
        if fab.plan is not None and not args.part:
            raise FabricError(f"{args.verb}: fabric {name} is server {fab.server}'s part of a "
                              f"plan: {args.verb} --plan FILE acts on every server", code=2)
        return fail_restore(args, fab)


def emit_everywhere(args: argparse.Namespace, plan: plan_mod.Plan, res: dict[str, Any],
                    what: str, text: str | None = None) -> int:
    """What a verb on every server gave (for people: `text`, or one line
    of what it did and where it failed); exit 1 if it failed on any."""
    bad = [str(e) for e in res.values() if isinstance(e, Exception)]
    emit(args, {n: (str(e) if isinstance(e, Exception) else e) for n, e in res.items()},
         text if text is not None else f"{what}: {plan.name} on {len(plan.servers)} servers"
         + (f"; failed: {'; '.join(bad)}" if bad else ""))
    return EXIT_FAIL if bad else EXIT_OK


def fail_restore(args: argparse.Namespace, fab: Fabric) -> int:
    fail = args.verb == "fail"
    if getattr(args, "silent", False) and not args.link:
        raise TopologyError("--silent fails a link (--link SWITCH:PORT)")
    if args.link:
        link = fab.topo.parse_link(args.link)
        if fail:
            fab.fail_link(link, silent=args.silent)
        else:
            fab.restore_link(link)
        what = f"link {link.name()}" + (" (silently)" if getattr(args, "silent", False) else "")
    else:
        if args.switch not in fab.topo.sw_by_name:
            raise TopologyError(f"--switch {args.switch}: no such switch (ofan-emu status)")
        (fab.fail_switch if fail else fab.restore_switch)(args.switch)
        what = f"switch {args.switch}"
    s = fab.status()
    emit(args, s, f"{args.verb}: {what}; failed links now: "
         f"{', '.join(s['failed_links']) or 'none'}; failed switches: "
         f"{', '.join(s['failed_switches']) or 'none'}")
    return EXIT_OK


def cmd_verify_masks(args: argparse.Namespace) -> int:
    need_root()
    fab = load(pick_name(args), log=progress)
    r = fab.verify_masks()
    bad = [s for s in r["switches"] if not s["ok"]]
    lines = [f"verify-masks: {len(r['switches']) - len(bad)}/{len(r['switches'])} switches "
             "hold the brute-force valid sets" + (f" (failed links: "
                                                  f"{', '.join(r['failed_links'])})"
                                                  if r["failed_links"] else "")]
    for s in bad[:5]:
        d = s["differences"]
        lines.append(f"  {s['name']}: {len(d)} destinations differ, first: dest {d[0]['dest']} "
                     f"live {d[0]['live']} expected {d[0]['expected']}")
    emit(args, r, "\n".join(lines))
    return EXIT_OK if r["ok"] else EXIT_FAIL


def control_plane_of(fab: Fabric, switch: str, verb: str) -> AgentControl:
    """The fabric's agents, for a running switch of it (verb: for messages)."""
    if fab.agents is None:
        raise TopologyError(f"fabric {fab.name} runs no agents (up --control agent)")
    if switch not in fab.topo.sw_by_name:
        raise TopologyError(f"{verb}: no switch {switch} (ofan-emu status)")
    if switch in fab.state.failed_switches:
        raise FabricError(f"switch {switch} is failed: restore it first")
    return fab.agents


def cmd_agent(args: argparse.Namespace) -> int:
    need_root()
    name = pick_name(args)
    with fabric_lock(name):
        fab = load(name, log=progress)
        killed = control_plane_of(fab, args.switch, "agent restart").restart_agent(args.switch)
        rec = fab.state.processes.get(f"agent:{args.switch}")
        obj = {"switch": args.switch, "killed": killed, "pid": rec.pid if rec else None}
        emit(args, obj, f"agent restart {args.switch}: killed {killed}, now pid {obj['pid']}")
    return EXIT_OK


def cmd_frr(args: argparse.Namespace) -> int:
    need_root()
    name = pick_name(args)
    with fabric_lock(name):
        fab = load(name, log=progress)
        daemons = args.daemon or list(FRR_DAEMONS)
        killed = control_plane_of(fab, args.switch, "frr restart").restart_frr(args.switch,
                                                                               daemons)
        obj = {"switch": args.switch, "daemons": daemons, "killed": killed}
        emit(args, obj, f"frr restart {args.switch}: {', '.join(daemons)} "
             f"(killed {', '.join(map(str, killed)) or 'none running'})")
    return EXIT_OK


def cmd_ping(args: argparse.Namespace) -> int:
    if args.plan is not None:
        return ping_everywhere(args)
    need_root()
    fab = load(pick_name(args), log=progress)
    res = fab.ping_all(count=args.count)
    bad = sorted(f"{a}->{b}" for (a, b), ok in res.items() if not ok)
    return emit_ping(args, len(res), bad)


def emit_ping(args: argparse.Namespace, pairs: int, bad: list[str],
              extra: dict[str, Any] | None = None) -> int:
    obj = {"pairs": pairs, "ok": pairs - len(bad), "failed": bad, **(extra or {})}
    emit(args, obj, f"ping: {pairs - len(bad)}/{pairs} pairs reach each other"
         + (f"; failed: {', '.join(bad[:20])}" + (" ..." if len(bad) > 20 else "") if bad else ""))
    return EXIT_OK if not bad else EXIT_FAIL


def ping_everywhere(args: argparse.Namespace) -> int:
    """ping --plan FILE: from every server's hosts to every host, merged."""
    if args.name is not None:
        raise TopologyError("ping --plan FILE: the plan names the fabric; no --name")
    plan, _ = plan_mod.load(args.plan)
    res = coordinator.everywhere(plan, remote(args), ["ping", "--name", plan.name, "--count",
                                                      str(args.count), "--json"], progress,
                                 ok_codes=(0, 1))
    errors = {n: str(e) for n, e in res.items() if isinstance(e, Exception)}
    if errors:
        raise FabricError("ping --plan: " + "; ".join(errors.values()))
    return emit_ping(args, sum(r["pairs"] for r in res.values()),
                     sorted(f for r in res.values() for f in r["failed"]),
                     {"servers": {n: {"pairs": r["pairs"], "ok": r["ok"]}
                                  for n, r in res.items()}})


def check_run_args(args: argparse.Namespace) -> tuple[int, list[str]]:
    """(--msg in bytes, --lbs as a list); exit 2 for a value run refuses."""
    msg = parse_size(args.msg, "--msg")
    if msg <= 0:
        raise TopologyError("--msg must be > 0")
    if not 0 < args.pace <= 1:
        raise TopologyError("--pace must be in (0, 1]")
    if args.seeds < 1 or args.qps < 1:
        raise TopologyError("--seeds and --qps must be >= 1")
    rto = getattr(args, "rto_us", None)
    if rto is not None and not 1000 <= rto <= 10_000_000:
        raise TopologyError("--rto-us: 1000 to 10000000 (1 ms to 10 s)")
    return msg, [x for x in args.lbs.split(",") if x]


def cts_from_args(args: argparse.Namespace) -> Cts | None:
    """run --cts [--channels N] [--channel-bytes S] [--cts-class C]: the
    run's Cts, None without --cts; exit 2 for a channel option without it
    or a value out of range."""
    given = [o for o, v in (("--channels", args.channels), ("--channel-bytes", args.channel_bytes),
                            ("--cts-class", args.cts_class)) if v is not None]
    if not args.cts:
        if given:
            raise TopologyError(f"{given[0]} is --cts's: give --cts")
        return None
    channels = 2 if args.channels is None else args.channels
    if not 1 <= channels <= 1024:
        raise TopologyError(f"--channels {channels}: 1 to 1024")
    size = parse_size(args.channel_bytes or "64KiB", "--channel-bytes")
    if size < 4 or size % 4:
        raise TopologyError(f"--channel-bytes {args.channel_bytes}: a multiple of 4 bytes")
    return Cts(channels, size, priority=args.cts_class != "data")


def do_run(fab: Fabric, args: argparse.Namespace) -> int:
    from . import run as runmod
    msg, lbs = check_run_args(args)
    rto = getattr(args, "rto_us", None)
    res = runmod.run(fab, args.workload, msg, lbs, seeds=args.seeds, seed=args.seed, qps=args.qps,
                     entropy=args.entropy, ooo=args.ooo, pace=args.pace, with_sim=args.with_sim,
                     deadline_s=args.deadline_s, hosts=args.hosts, log=progress, rto_us=rto,
                     incast_senders=args.incast_senders, cc=args.cc, victim=args.victim,
                     cts=cts_from_args(args), send_log=args.send_log)
    return report_run(args, res)


def report_run(args: argparse.Namespace, res: RunResult) -> int:
    """A run's result printed (and plotted); its exit code."""
    from . import run as runmod
    if args.plot:
        os.makedirs(os.path.dirname(os.path.abspath(args.plot)), exist_ok=True)
        runmod.plot(res, args.plot)
        res = dataclasses.replace(res, plot=args.plot)
    emit(args, res.to_json(), runmod.table(res) + (f"\nplot: {args.plot}" if args.plot else ""))
    rows = [r.row for r in res.runs]
    if any(not r.verified or r.error for r in rows):
        return EXIT_FAIL
    if any(r.cpu_bound for r in rows):
        return EXIT_CPU
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    if args.plan is None:
        if args.server is not None or args.part:
            raise TopologyError("run --server S: needs --plan FILE")
        need_root()
        fab = load(pick_name(args), log=progress)
        fab.whole("run")
        return do_run(fab, args)
    if args.name is not None:
        raise TopologyError("run --plan FILE: the plan names the fabric; no --name")
    if args.server is None:
        return run_everywhere(args)
    need_root()
    fab = plan_fabric(args.plan, args.server, "run")
    if not args.part:
        return do_run(fab, args)
    old = {s: signal.signal(s, interrupted) for s in (signal.SIGTERM, signal.SIGHUP)}
    threading.Thread(target=leash, daemon=True).start()
    try:
        return do_run(fab, args)
    except KeyboardInterrupt:
        raise FabricError(f"run on {fab.server} stopped: another server's part failed, or the "
                          "coordinator stopped")
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def leash() -> None:
    """A part that the coordinator runs (--part) stops when its stdin
    closes: the coordinator let go (another part failed), or went away."""
    try:
        while os.read(sys.stdin.fileno(), 4096):
            pass
    except (OSError, ValueError):
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def plan_fabric(plan_file: str, server: str, verb: str) -> Fabric:
    """The fabric up here as server `server`'s part of the plan in
    plan_file; exit 2 if the one of the plan's name here is something else
    (a whole fabric, another server's part, or another plan's)."""
    plan, _ = plan_mod.load(plan_file)
    name = plan.server(server).name
    fab = load(plan.name, log=progress)
    why = ("is a whole fabric, not a part of a plan" if fab.plan is None else
           f"is server {fab.server}'s part" if fab.server != name else
           "was brought up from another plan" if fab.plan.to_json() != plan.to_json() else None)
    if why:
        raise FabricError(f"{verb} --plan {plan_file} --server {name}: fabric {plan.name} here "
                          f"{why} (ofan-emu status --name {plan.name})", code=2)
    return fab


def run_everywhere(args: argparse.Namespace) -> int:
    """run --plan FILE: every server's part at once (run --plan FILE
    --server S on each, over SSH), one collective; merged (run.py)."""
    from . import run as runmod
    _, lbs = check_run_args(args)  # exit 2 here rather than on every server
    if args.send_log is not None:
        raise FabricError("--send-log: a fabric on one server", code=2)
    plan, _ = plan_mod.load(args.plan)
    opts = ["--workload", args.workload, "--msg", args.msg, "--lbs", args.lbs, "--seeds",
            str(args.seeds), "--seed", str(args.seed), "--qps", str(args.qps), "--entropy",
            args.entropy, "--pace", str(args.pace), "--deadline-s", str(args.deadline_s)]
    opts += ["--ooo"] if args.ooo else []
    opts += ["--hosts", args.hosts] if args.hosts else []
    opts += ["--rto-us", str(args.rto_us)] if args.rto_us is not None else []
    opts += ["--incast-senders", str(args.incast_senders)] if args.incast_senders else []
    opts += ["--cc", args.cc] + (["--victim"] if args.victim else [])
    for flag, v in (("--channels", args.channels), ("--channel-bytes", args.channel_bytes),
                    ("--cts-class", args.cts_class)):
        opts += [flag, str(v)] if v is not None else []
    opts += ["--cts"] if args.cts else []

    def args_of(s: plan_mod.Server, where: str) -> list[str]:
        # ofan-sim sees one fabric: the first server's part runs it.
        sim = ["--with-sim"] if args.with_sim and s == plan.servers[0] else []
        return ["run", "--plan", where, "--server", s.name, "--json", "--part"] + opts + sim

    runs = len(lbs) * args.seeds
    timeout = runs * (args.deadline_s + 120 + (600 if args.with_sim else 0)) + 120
    old = {s: signal.signal(s, interrupted) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        parts = coordinator.leashed(plan, Path(args.plan).resolve(), remote(args), args_of,
                                    progress, timeout, ok_codes=(EXIT_OK, EXIT_FAIL, EXIT_CPU))
    except KeyboardInterrupt as e:
        raise FabricError(f"interrupted ({e}); every server's part stopped")
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return report_run(args, runmod.merge_runs(runmod.parts_from_json(parts)))


def cmd_demo(args: argparse.Namespace) -> int:
    """Up, run, compare, plot, down: the README's first command."""
    need_root()
    name = "demo"
    if State.load(name) is not None:
        teardown.down(name)
    attrs = {} if args.link_mbps is None else {"rate_mbps": args.link_mbps}
    topo = Topology(4, 3, attrs)
    fab = Fabric(name, topo, log=progress)
    vms = ("h0", "h4", "h8", "h12") if args.rxe else ()
    progress("demo: k=4 fat tree of ofan-dp switches (20), " +
             ("rxe VMs on h0, h4, h8, h12" if args.rxe else "16 uroce hosts"))
    try:
        fab.up(fab.claim(fab.check(UpRequest(vm_hosts=vms, engine=args.engine))))
        # The run verb's own defaults, and what the demo asks beyond them.
        if args.rxe:
            run_args = ["run", "--workload", "allgather", "--msg", args.msg or "512KiB",
                        "--hosts", "vm", "--lbs", "ecmp,rps,ofan,pofan",
                        "--seeds", str(args.seeds), "--deadline-s", "600",
                        "--plot", args.plot or "results/emu-demo-rxe.png"]
        else:
            run_args = ["run", "--workload", "perm", "--msg", args.msg or "1MiB",
                        "--seeds", str(args.seeds), "--ooo", "--with-sim", "--deadline-s", "300",
                        "--plot", args.plot or "results/emu-demo.png"]
        return do_run(fab, parser().parse_args(run_args + (["--json"] if args.json else [])))
    finally:
        r = teardown.down(name)
        progress(f"demo: fabric down ({len(r['namespaces'])} namespaces removed)")


def cmd_topology(args: argparse.Namespace) -> int:
    import yaml
    topo = Topology(args.k, args.levels)
    name = args.name or (f"fattree{args.k}" if args.levels == 3 else f"leafspine{args.k}")
    if args.json:
        print(json.dumps(topo.to_yaml_dict(name), indent=1))
        return EXIT_OK
    head = (f"# The canonical ofan-emu topology of a k={args.k} {topo.kind()} "
            f"(ofan-emu topology --k {args.k} --levels {args.levels}).\n"
            "# Format: docs/emu.md. Every link is listed; give any of them its own\n"
            f"# attributes ({', '.join(LINK_ATTRS)}).\n")
    print(head + yaml.safe_dump(topo.to_yaml_dict(name), sort_keys=False,
                                default_flow_style=None, width=100), end="")
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    plan, _ = plan_from_args(args)
    text = plan.to_json()
    if args.output:
        write_output(args.output, text)
    if args.json and args.output != "-":
        sys.stdout.write(text)
    elif not args.json and args.output != "-":
        print(plan_mod.summary(plan)
              + (f"\nplan written to {args.output}" if args.output
                 else "\n(-o FILE writes the plan, --json prints it)"))
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from . import facts
    if args.plan:
        no_shape_with_plan(args, "export", ("--servers", args.servers))
        plan, topo = plan_mod.load(args.plan)
    elif args.servers:
        plan, topo = plan_from_args(args)
    else:
        if args.server is not None:
            raise TopologyError("export --server S: needs --plan FILE or --servers")
        name, topo = shape_from_args(args)
        doc = containerlab.topology_doc(name, topo, facts.netdev_mtu())
        what = "the whole fabric, every link a veth (for clabernetes or one Containerlab host)"
        write_output(args.output, containerlab.to_yaml(doc, export_header(name, topo, what)))
        return export_summary(args, doc)
    server = containerlab.pick_server(plan, args.server)
    doc = containerlab.topology_doc(plan.name, topo, plan.fabric_mtu, plan, server)
    what = ("the whole fabric, every link a veth" if server is None else
            f"server {server.name} ({server.address}) of {len(plan.servers)}: its nodes, "
            "vxlan-stitch links to the others")
    write_output(args.output, containerlab.to_yaml(doc, export_header(plan.name, topo, what)))
    return export_summary(args, doc)


def export_summary(args: argparse.Namespace, doc: dict[str, Any]) -> int:
    """export --json: what was written, for scripts (not with -o -, whose
    stdout is the topology itself)."""
    if args.json and args.output != "-":
        t = doc.get("topology", {})
        print(json.dumps({"file": args.output, "format": args.format,
                          "nodes": len(t.get("nodes", {})), "links": len(t.get("links", []))}))
    return EXIT_OK


def export_header(name: str, topo: Topology, what: str) -> str:
    return (f"Containerlab topology of ofan fabric {name}: k={topo.k} {topo.kind()},\n{what}.\n"
            "Written by ofan-emu export (docs/emu.md, 'Across servers'); the images are not\n"
            "built by ofan-emu. A switch port P is eth<P+1>, a host's port eth1.")


def cmd_vm(args: argparse.Namespace) -> int:
    from vm import qemu, throwaway
    if args.vm_verb == "check":
        c = qemu.check()
        emit(args, c, f"VMs can run here: kernel {c['kernel']}, {c['accel']}, {c['qemu']}"
             if c["ok"] else f"VMs cannot run here: {c['why']}")
        return EXIT_OK if c["ok"] else EXIT_CPU
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise TopologyError("vm run: no command (ofan-emu vm run -- CMD ...)")
    if args.mem < 128 or not 1 <= args.cpus <= 64:
        raise TopologyError("vm run: --mem at least 128 (MiB), --cpus 1 to 64")
    for s in args.share:
        if not os.path.isdir(s):
            raise TopologyError(f"vm run: --share {s}: not a directory")
    c = qemu.check()
    if not c["ok"]:
        print(f"ofan-emu: vm run: VMs cannot run here: {c['why']}", file=sys.stderr)
        return throwaway.EXIT_VM

    def out(fd: int, text: str) -> None:
        stream = sys.stdout if fd == 1 else sys.stderr
        stream.write(text)
        stream.flush()

    try:
        rc, facts = throwaway.run(cmd, mem_mb=args.mem, cpus=args.cpus, shares=args.share,
                                  timeout=args.timeout, on_output=out, log=progress)
    except (qemu.VmError, KeyboardInterrupt, OSError) as e:
        print(f"ofan-emu: vm run: {e}", file=sys.stderr)
        return throwaway.EXIT_VM
    if args.json:
        print(json.dumps({"rc": rc, **facts}))
    return rc if 0 <= rc <= 255 else throwaway.EXIT_VM


def cmd_capture(args: argparse.Namespace) -> int:
    from . import capture
    if args.count < 0 or args.duration < 0:
        raise TopologyError("capture: --count and --duration are 0 (no limit) or more")
    if not 64 <= args.snaplen <= 4096:
        raise TopologyError("capture: --snaplen is 64 to 4096")
    if args.write == "-" and sys.stdout.isatty():
        raise TopologyError("capture: -w - writes pcapng to a terminal; pipe it "
                            "(| tshark -i -) or give a file")
    need_root()
    fab = load(pick_name(args), log=progress)
    point = capture.capture_point(fab.topo, args.link)
    r = capture.run(fab.kind, fab.state, point,
                    capture.Limits(args.count, args.duration, args.snaplen), args.write,
                    log=progress)
    summary = {"link": point.label(), "file": r.file, "frames": r.frames, "dropped": r.dropped,
               "stopped_by": r.stopped_by}
    if args.json:
        print(json.dumps(summary), file=sys.stderr)
    else:
        progress(f"capture: {r.frames} frames from {point.label()} -> {r.file} "
                 f"(stopped by {r.stopped_by}" + (f"; {r.dropped} copies dropped" if r.dropped
                                                  else "") + ")")
    return EXIT_OK


# -- the command line: options once, verbs as a table ---------------------------------
@dataclass(frozen=True)
class Opt:
    """One option (or positional) as argparse.add_argument takes it: its
    names and keywords. An option several verbs share is defined once
    below; but() gives it with a verb's own help (or default)."""
    names: tuple[str, ...]
    kw: Mapping[str, Any]

    def but(self, **kw: Any) -> "Opt":
        return Opt(self.names, {**self.kw, **kw})

    def add(self, p: argparse._ActionsContainer) -> None:
        p.add_argument(*self.names, **self.kw)


def opt(*names: str, **kw: Any) -> Opt:
    return Opt(names, kw)


@dataclass(frozen=True)
class Exclusive:
    """Options of which a verb takes one at most (one exactly: required)."""
    opts: tuple[Opt, ...]
    required: bool = False

    def add(self, p: argparse._ActionsContainer) -> None:
        g = p.add_mutually_exclusive_group(required=self.required)
        for o in self.opts:
            o.add(g)


# The options several verbs take.
NAME = opt("--name", default=None)
JSON = opt("--json", action="store_true")
PLAN = opt("--plan", metavar="FILE", default=None)
SERVER = opt("--server", metavar="S", default=None)
# What the coordinator runs on each server of a plan (fail, restore: the
# part of a verb; run: one that stops once its stdin closes).
PART = opt("--part", action="store_true", help=argparse.SUPPRESS)
ENGINE = opt("--engine", choices=nodes.ENGINES, default=None)
K = opt("--k", type=int)
LEVELS = opt("--levels", type=int, choices=(2, 3))
LINK_MBPS = opt("--link-mbps", type=float, default=None)
TIMEOUT = opt("--timeout", type=float, default=None, metavar="S")
SWITCH_ARG = opt("switch", metavar="SWITCH")
COMMAND = opt("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...")

# How the coordinator (a verb with --plan FILE and no --server) reaches the
# other servers.
REMOTE = (
    opt("--ssh-config", metavar="FILE", default=None,
        help="with --plan and no --server: ssh -F FILE (user, key, port, known hosts)"),
    opt("--remote-emu", metavar="CMD", default=None,
        help="with --plan and no --server: the ofan-emu command on the other servers "
             f"(default {DEFAULT_REMOTE_EMU})"))

# The fabric's shape and name (up, plan, export; shape_from_args reads them),
# the link attributes among them.
SHAPE = (
    NAME.but(help=f"fabric name, 1-10 of a-z0-9 (default {DEFAULT_NAME}, or the topology "
                  "file's)"),
    K.but(default=None, help="switch radix, even (default 4)"),
    LEVELS.but(default=None, help="2 = leaf-spine, 3 = fat tree (default 3)"),
    opt("--topology", metavar="FILE", help="a YAML topology file (docs/emu.md)"),
    LINK_MBPS.but(help=f"every link's rate (default {LINK_ATTRS['rate_mbps'][1]:g}, "
                       "or the file's)"),
    opt("--buffer", default=None, help="every switch port's buffer (e.g. 256KiB)"),
    opt("--ecn", default=None, help="every switch port's ECN threshold (e.g. 64KiB)"),
    opt("--ecn-kb", type=int, default=None, metavar="N",
        help="the same in KiB (--ecn NKiB): a relaxed threshold for PFC + DCQCN"),
    opt("--latency-us", type=float, default=None, help="every link's latency (netem)"))


def plan_options(servers_required: bool) -> tuple[Opt, ...]:
    """Where a plan places the fabric (plan; export without --plan)."""
    return (
        opt("--servers", required=servers_required, default=None, metavar="ADDR,ADDR[,...]",
            help="the servers' underlay addresses (IPv4, IPv6 or host names), in order: "
                 "srv0, srv1, ..."),
        opt("--placement", choices=plan_mod.PLACEMENTS, default=plan_mod.DEFAULT_PLACEMENT,
            help="pod = whole pods on a server, cores spread: only aggregation-core links "
                 "cross (default); auto = balance node counts, fewest crossing links a greedy "
                 "finds"),
        opt("--vni-base", type=int, default=plan_mod.DEFAULT_VNI_BASE,
            help=f"a crossing link's VNI is this + its link id (default "
                 f"{plan_mod.DEFAULT_VNI_BASE})"),
        opt("--vxlan-port", type=int, default=plan_mod.DEFAULT_VXLAN_PORT,
            help=f"VXLAN's UDP port (default {plan_mod.DEFAULT_VXLAN_PORT})"))


UP = (
    *SHAPE,
    PLAN.but(help="a plan (ofan-emu plan -o FILE) instead of the shape's options: with "
                  "--server, that server's part, its links to the others over VXLAN"),
    SERVER.but(help="with --plan: the server (srv0 or its address) this is; run it on that "
                    "server (without it: every server's part, over SSH)"),
    *REMOTE,
    opt("--switch", choices=("ofan", "kernel"), default="ofan",
        help="ofan = ofan-dp switches (default); kernel = Linux routers with multipath routes "
             "(the ECMP baseline)"),
    ENGINE.but(help="how ofan-dp runs the switches: per-switch = one process per switch on "
                    "AF_XDP veths; shared = every switch in one process, links between "
                    f"switches in memory, time emulated (default {nodes.DEFAULT_ENGINE})"),
    opt("--control", choices=CONTROLS, default=DEFAULT_CONTROL,
        help="who computes the switches' valid-uplink masks: tables = ofan-emu, from the "
             "topology and the failures it made (default); agent = each switch's own lldpd, "
             "FRR (BGP unnumbered + BFD) and ofan-agent"),
    opt("--miswire", default=None, metavar="SW:PORT,SW:PORT",
        help="a cabling error: the far ends of the cables at these two switch ports swapped "
             "(with --control agent, lldpd and ofan-agent find it; the two planned links count "
             "as out of service)"),
    opt("--bfd-ms", type=int, default=None, metavar="MS",
        help="with --control agent: BFD's transmit and receive interval (default: "
             "ofan-agent's, 300)"),
    opt("--bfd-multiplier", type=int, default=None, metavar="N",
        help="with --control agent: BFD packets missed before a session is down (default: "
             "ofan-agent's, 3)"),
    opt("--pfc", action="store_true",
        help="a lossless fabric: PFC (802.1Qbb) on every link, RoCE data (DSCP 26) in one "
             "lossless priority, thresholds and headroom per ingress port (exact in the shared "
             "engine's emulated time; the per-switch engine's on the wall clock; docs/emu.md)"),
    opt("--pfc-priority", type=int, default=None, metavar="P",
        help="with --pfc: the lossless priority, 0-7 (default 3)"),
    opt("--pfcwd-detect-ms", type=int, default=None, metavar="N",
        help="with --pfc: the PFC watchdog fires when a queue stays paused, frames waiting, "
             "this long (100-5000, default 200)"),
    opt("--pfcwd-restore-ms", type=int, default=None, metavar="N",
        help="with --pfc: ... and restores it after this long without pause (100-60000, "
             "default 200)"),
    opt("--pfcwd-action", default=None, metavar="drop|forward|alert",
        help="with --pfc: what a stormed queue does: drop its lossless frames and ignore pause "
             "(default), forward (ignore pause), or alert (count)"),
    opt("--reorder", action="store_true",
        help="resequencing at the edges: RoCE data bound for a host leaves its edge in PSN "
             "order per QP, for NICs without out-of-order placement (rxe, uroce without "
             "--ooo); the shared engine's, in emulated time"),
    opt("--reorder-kb", type=int, default=None, metavar="N",
        help="with --reorder: each host port's reorder buffer, KiB (default 256)"),
    opt("--reorder-timeout-us", type=int, default=None, metavar="T",
        help="with --reorder: the longest a frame waits for a gap to fill; then the gap is a "
             "loss (default: the time the host link takes to send the reorder buffer, 84 ms "
             "for 256 KiB at 25 Mb/s)"),
    opt("--host-stamp", default=None, metavar="kernel|poll",
        help="the shared engine: a host's frame enters its emulated wire at the time the host "
             "port's XDP program received it (kernel, the default) or when the engine polled "
             "the socket (poll, up to a pass later)"),
    opt("--host-io", default=DEFAULT_HOST_IO, metavar="|".join(HOST_IOS),
        help="the shared engine: uroce hosts' frames through their veths and AF_XDP (veth, the "
             "default: tcpdump and the hosts' kernels see them) or through shared-memory rings "
             "(shm: no kernel in the way, the hosts' kernels off the fabric; VM hosts keep "
             "their links)"),
    opt("--policy", default="ofan", help="ofan-dp's LB policy (default ofan)"),
    opt("--ofan-mode", default="combined", choices=("combined", "atomic"),
        help="how --policy ofan shares pointers across workers"),
    opt("--seed", type=int, default=1, help="LB seed (default 1)"),
    opt("--vm-hosts", default=None, metavar="N|HOSTS",
        help="soft-RoCE VMs (rdma_rxe) on the first N host slots, or on the hosts named "
             "(h0,h8); the rest stay uroce hosts"),
    opt("--vm-mem", type=int, default=None, metavar="MIB",
        help="memory per VM host (default 512)"),
    opt("--keep-on-error", action="store_true",
        help="leave a half-built fabric for inspection instead of removing it"),
    JSON)

RUN = (
    opt("--workload", default="perm", choices=WORKLOADS),
    opt("--msg", default="1MiB",
        help="bytes per host (perm: to its peer; incast: each sender's to the first host; a2a, "
             "allgather, reducescatter: the whole buffer, nccl-tests' size)"),
    opt("--lbs", default="ecmp,rps,ar,ofan,pofan",
        help="LB policies, comma separated; one run each"),
    opt("--seeds", type=int, default=1, help="runs per policy (seed, seed+1, ...)"),
    opt("--seed", type=int, default=1),
    opt("--qps", type=int, default=1, help="RC QPs per peer (E-ECMP entropy)"),
    opt("--entropy", default="qp", choices=("qp", "spray", "reps"),
        help="UDP source port: per QP as rxe (qp), per packet (spray), REPS-like"),
    opt("--incast-senders", type=int, default=0, metavar="N",
        help="with --workload incast: N hosts send --msg each to the first host, spread evenly "
             "over the others (default: all of them)"),
    opt("--cts", action="store_true",
        help="receiver-driven admission (NCCL's simple protocol): a chunk goes only into one "
             "of --channels slots of --channel-bytes its receiver cleared; rows give the CTS "
             "delay (cts_delay_us p50, p90)"),
    opt("--channels", type=int, default=None, metavar="N",
        help="with --cts: slots per (sender, receiver) pair (default 2)"),
    opt("--channel-bytes", default=None, metavar="S",
        help="with --cts: a slot's bytes, the chunk size then (default 64KiB)"),
    opt("--cts-class", default=None, choices=("prio", "data"),
        help="with --cts: the clear-to-sends in the switches' strict-priority class (prio, "
             "DSCP 48: the default) or the data's (data)"),
    opt("--victim", action="store_true",
        help="with --workload incast: the last host also sends --msg to the second (the "
             "receiver's edge neighbour): a flow that shares the incast's upstream ports, not "
             "its last hop; rows give its rate (victim_gbps)"),
    opt("--ooo", action="store_true", help="out-of-order placement at receivers"),
    opt("--send-log", default=None, metavar="DIR",
        help="test mode, uroce hosts: each writes every RoCEv2 frame it sends, with its send "
             "time (CLOCK_MONOTONIC ns), to DIR/LB-sSEED/HOST.tsv (bench/run-send-times)"),
    opt("--cc", default="none", choices=CONGESTION_CONTROLS,
        help="the uroce hosts' congestion control: none (fixed rate) or dcqcn (a DCQCN-like "
             "rate cut on CNPs, the receivers sending CNPs for CE-marked data: up --ecn / "
             "--ecn-kb sets where switches mark)"),
    opt("--pace", type=float, default=0.8,
        help="hosts send at this fraction of their link rate (default 0.8)"),
    opt("--hosts", default=None, metavar="vm|uroce|all|NAMES",
        help="who takes part: the VM hosts (rxe), the uroce hosts, all of them, or host names, "
             "comma separated (default: the uroce hosts, or the VM hosts where there are no "
             "others)"),
    opt("--with-sim", action="store_true", help="run the same scenario in ofan-sim and print both"),
    opt("--deadline-s", type=float, default=120),
    opt("--rto-us", type=int, default=None, metavar="US",
        help="the hosts' retransmission timeout (default: from the links' rates and buffers; "
             "seven in a row fail a QP)"),
    opt("--plot", default=None, metavar="PNG"),
    JSON,
    NAME,
    PLAN.but(help="the plan's fabric: every server's hosts in one collective (over SSH), the "
                  "results and every server's switches merged"),
    SERVER.but(help="with --plan: only server S's part (its hosts' ranks; the others' must run "
                    "theirs at the same time)"),
    *REMOTE,
    PART)


@dataclass(frozen=True)
class Verb:
    """A verb of ofan-emu: its name and line in --help, what runs it (None:
    its parent verb's, for a sub-verb), its options in --help's order, its
    sub-verbs (parsed into NAME_verb) and more of add_parser's keywords."""
    name: str
    help: str
    run: Callable[[argparse.Namespace], int] | None
    options: tuple[Opt | Exclusive, ...] = ()
    sub: tuple["Verb", ...] = ()
    kw: Mapping[str, Any] = field(default_factory=dict)


def fail_restore_verb(verb: str) -> Verb:
    """fail and restore: the same options, but fail's --silent."""
    silent = opt("--silent", action="store_true",
                 help="with --link: the carrier stays up and every frame is lost (only a "
                      "control plane that hears nothing back notices: BFD)")
    return Verb(verb, f"{verb} a link or a switch", cmd_fail_restore, (
        NAME,
        Exclusive((opt("--link", metavar="SWITCH:PORT", help="an inter-switch link, by either end"),
                   opt("--switch", metavar="SWITCH", help="a switch, as status lists it")),
                  required=True),
        *((silent,) if verb == "fail" else ()),
        PLAN.but(help="the plan's fabric: on every server (over SSH)"), *REMOTE, PART, JSON))


VERBS = (
    Verb("up", "bring a fabric up", cmd_up, UP),
    Verb("status", "fabrics, or one fabric's switches and hosts", cmd_status, (
        NAME, PLAN.but(help="the plan's fabric: every server's part (over SSH)"), *REMOTE,
        JSON)),
    Verb("down", "tear a fabric down (--all: every fabric, crashed ones too)", cmd_down, (
        Exclusive((NAME, opt("--all", action="store_true"),
                   PLAN.but(help="the plan's fabric on every server (down --name NAME on each, "
                                 "over SSH)"))),
        *REMOTE, JSON)),
    fail_restore_verb("fail"),
    fail_restore_verb("restore"),
    Verb("fault", "a fault a lossless fabric must survive: a host's NIC sending continuous PFC "
         "pause (up --pfc)", cmd_fault, (
             NAME,
             opt("--pfc-storm", metavar="HOST", required=True,
                 help="the host whose NIC storms its edge port with pause frames"),
             opt("--for-ms", type=int, default=1000, metavar="N",
                 help="how long, in ms (emulated on the shared engine, wall-clock on the "
                      "per-switch one; default 1000; 0 ends a storm)"),
             JSON)),
    Verb("verify-masks", "every switch's live masks against the brute-force valid sets for the "
         "fabric's failures (exit 0 all agree, 1 with the first differences)", cmd_verify_masks,
         (NAME, JSON)),
    Verb("agent", "a switch's ofan-agent (--control agent fabrics)", cmd_agent, sub=(
        Verb("restart", "SIGKILL the switch's agent and start it again", None,
             (SWITCH_ARG, NAME, JSON)),)),
    Verb("frr", "a switch's FRR daemons (--control agent fabrics)", cmd_frr, sub=(
        Verb("restart", "stop FRR daemons of a switch (SIGTERM) and start them again, empty "
             "(its agent gives them frr.conf again)", None, (
                 SWITCH_ARG,
                 opt("--daemon", action="append", choices=FRR_DAEMONS, default=None,
                     help="zebra, bfdd or bgpd; again for more (default: all three)"),
                 NAME, JSON)),)),
    Verb("capture", "pcapng of both directions of a link (tshark, Wireshark)", cmd_capture, (
        opt("--link", required=True, metavar="SWITCH:PORT|HOST",
            help="one end of the link (e0-0:2), or a host (its link to its edge switch)"),
        opt("--count", type=int, default=0, help="stop after N frames (default: no limit)"),
        opt("--duration", type=float, default=0, metavar="S",
            help="stop after S seconds (default: no limit)"),
        opt("--snaplen", type=int, default=4096, help="bytes kept per frame (64..4096)"),
        opt("-w", dest="write", required=True, metavar="FILE|-",
            help="the pcapng file, or - for stdout (... -w - | tshark -i -)"),
        NAME, JSON.but(help="the summary as JSON, on stderr")),
        kw={"description": "Writes pcapng of both directions of one link: on an ofan-dp fabric "
            "the switch at that end writes it (AF_XDP hides the links from tcpdump); on a "
            "kernel fabric dumpcap captures the router's port. Stops at --count frames, after "
            "--duration seconds, or at Ctrl-C."}),
    Verb("ping", "all-pairs ping between the hosts", cmd_ping, (
        NAME, opt("--count", type=int, default=1),
        PLAN.but(help="the plan's fabric: from every server's hosts (over SSH)"), *REMOTE,
        JSON)),
    Verb("run", "collectives with real RoCEv2 traffic, one per LB policy", cmd_run, RUN),
    Verb("demo", "the main job: k=4 fat tree, permutation (out-of-order placement at the hosts) "
         "under ECMP, RPS, AR, Ofan and POfan beside the simulator, plot, teardown", cmd_demo, (
             opt("--msg", default=None, help="default 1MiB (512KiB with --rxe)"),
             opt("--seeds", type=int, default=1),
             LINK_MBPS,
             ENGINE.but(help=f"ofan-dp's engine (default {nodes.DEFAULT_ENGINE})"),
             opt("--plot", default=None, metavar="PNG",
                 help="default results/emu-demo.png (results/emu-demo-rxe.png with --rxe)"),
             opt("--rxe", action="store_true",
                 help="soft-RoCE instead: rxe VMs on h0, h4, h8, h12 (one per pod) run a ring "
                      "all-gather under ECMP, RPS, Ofan and POfan"),
             JSON)),
    Verb("vm", "VMs with Debian's kernel over the host's root (netem, rxe)", cmd_vm,
         kw={"formatter_class": argparse.RawDescriptionHelpFormatter,
             "epilog": "examples:\n  ofan-emu vm check\n"
                       "  ofan-emu vm run -- tc qdisc add dev lo root netem delay 1ms\n"
                       "exit codes of vm run: the command's own; 124 it ran past --timeout;\n"
                       "125 the VM failed or cannot run here (vm check says why)"},
         sub=(Verb("check", "can VMs run here? (exit 0 yes, 3 no, and why)", None, (JSON,)),
              Verb("run", "boot a throwaway VM, run CMD in it, power off", None, (
                  opt("--mem", type=int, default=1024, metavar="MIB",
                      help="guest memory (1024)"),
                  opt("--cpus", type=int, default=2, help="vCPUs (2)"),
                  opt("--share", action="append", default=[], metavar="DIR",
                      help="a host directory the guest may write, at the same path"),
                  TIMEOUT.but(help="kill CMD after S seconds (exit 124)"),
                  JSON.but(help="after CMD's output, one line of JSON: rc, kernel, accel, "
                                "boot_s"),
                  COMMAND)))),
    Verb("exec", "run a command in a VM host; its output and exit code", cmd_exec, (
        opt("host", help="a VM host, as status lists it (h0)"), NAME,
        TIMEOUT.but(help="kill the command after S seconds (exit 124)"),
        JSON.but(help="one object: rc, stdout, stderr, seconds (instead of streaming)"),
        COMMAND)),
    Verb("mpirun", "an Open MPI job across the VM hosts: UCX over rxe on the fabric, its "
         "launch on the management network; the job's exit code", cmd_mpirun, (
             opt("--hosts", default="vm", metavar="vm|NAMES",
                 help="the VM hosts to run on: vm (all, the default) or names (h0,h8)"),
             opt("-np", dest="np", type=int, default=None, metavar="N",
                 help="ranks (default one per host)"),
             opt("--oversubscribe", action="store_true",
                 help="more ranks than hosts (each VM has one vCPU)"),
             opt("--mca", nargs=2, action="append", metavar=("KEY", "VALUE"),
                 help="an Open MPI parameter for the job (again for more)"),
             opt("-x", action="append", metavar="VAR[=VALUE]",
                 help="an environment variable for the ranks (again for more)"),
             opt("--lbs", default=None, metavar="POLICIES",
                 help="run once under each of these LB policies (ecmp,rps,ofan,pofan), "
                      "set on every switch first (default: the fabric's as it is)"),
             NAME, TIMEOUT.but(help="end the job after S seconds (exit 124)"),
             JSON.but(help="one object: rc, hosts, ranks, seconds, stdout, stderr and each "
                           "host's rxe counters over the job ({\"runs\": [...]} with --lbs)"),
             COMMAND),
         kw={"formatter_class": argparse.RawDescriptionHelpFormatter,
             "epilog": "example:\n  ofan-emu up --k 4 --vm-hosts h0,h4,h8,h12 --reorder\n"
                       "  ofan-emu mpirun -np 4 -- build/emu/mpi/ofan-mpi-bench\n"
                       "exit codes: the job's; 2 a bad command line, no VM hosts, more ranks "
                       "than hosts,\na program the guests cannot find; 124 past --timeout"}),
    Verb("app", "a pairwise RDMA tool between two VM hosts (perftest, qperf, rping, "
         "ucx_perftest), its server started and stopped for you, its result parsed", cmd_app, (
             opt("app", metavar="APP", choices=sorted(apps.APPS),
                 help="; ".join(f"{a.name}: {a.help}" for a in apps.APPS.values())),
             opt("--client", default=None, metavar="HOST",
                 help="default: the first VM host"),
             opt("--server", default=None, metavar="HOST",
                 help="default: the next VM host"),
             opt("--size", type=int, default=None, metavar="BYTES",
                 help="message size (default: the tool's usual one)"),
             opt("--iters", type=int, default=None, metavar="N",
                 help="iterations (default 1000; qperf runs for --seconds)"),
             opt("--seconds", type=float, default=3.0, metavar="S",
                 help="qperf's test length (3)"),
             opt("--timeout", type=float, default=300.0, metavar="S",
                 help="kill both ends after S seconds (300)"),
             opt("--lbs", default=None, metavar="POLICIES",
                 help="run once under each of these LB policies (ecmp,rps,ofan,pofan), "
                      "set on every switch first (default: the fabric's as it is)"),
             NAME,
             JSON.but(help="one object: app, hosts, rc, result (parsed), rxe counters, stdout "
                           "({\"runs\": [...]} with --lbs)"),
             opt("--tool-args", default="", metavar="ARGS",
                 help="more arguments for both ends of the tool, as one string")),
         kw={"formatter_class": argparse.RawDescriptionHelpFormatter,
             "epilog": "example:\n  ofan-emu up --k 4 --vm-hosts h0,h8 --reorder\n"
                       "  ofan-emu app ib_write_bw --size 65536 --iters 500\n"
                       "exit codes: the client's; 2 a bad command line or fewer than two VM "
                       "hosts;\n3 the tool is not installed"}),
    Verb("plan", "place a fabric across servers (VXLAN between them): one plan, computed once, "
         "that every server follows", cmd_plan, (
             *SHAPE, *plan_options(servers_required=True),
             opt("-o", dest="output", default=None, metavar="FILE",
                 help="write the plan (JSON) to FILE and print a summary; without it, --json "
                      "prints the plan, else the summary"),
             JSON.but(help="the plan's JSON on stdout")),
         kw={"description": "Assigns every switch and host to a server, every link between two "
             "servers a VNI (base + link id), and records the MACs, underlay addresses, UDP "
             "port and underlay MTU, so that no server allocates anything on its own "
             "(docs/emu.md, 'Across servers')."}),
    Verb("export", "write the fabric as another tool's topology (Containerlab; clabernetes "
         "takes it to Kubernetes)", cmd_export, (
             opt("--format", required=True, choices=("containerlab",)),
             PLAN.but(help="a plan (ofan-emu plan -o FILE) instead of the shape's options"),
             SERVER.but(help="with a plan over several servers: the server (srv0 or its "
                             "address) whose part to write"),
             *SHAPE, *plan_options(servers_required=False),
             opt("-o", dest="output", required=True, metavar="FILE|-",
                 help="the topology file (- for stdout)"),
             JSON.but(help="also print {file, nodes, links} of what was written")),
         kw={"description": "Writes a Containerlab topology: kind linux nodes running "
             f"{containerlab.SWITCH_IMAGE} and {containerlab.HOST_IMAGE} (ofan-emu builds "
             "neither), every link a veth with the fabric's MACs. With a plan over several "
             "servers, --server S writes S's part, the links to other servers as vxlan-stitch "
             "links. What carries over: docs/emu.md."}),
    Verb("topology", "print the canonical topology file of a shape", cmd_topology, (
        K.but(default=4), LEVELS.but(default=3), NAME,
        JSON.but(help="the same topology as JSON (no comment header)"))),
)


def add_verbs(sub: "argparse._SubParsersAction[argparse.ArgumentParser]",
              verbs: Sequence[Verb]) -> None:
    for v in verbs:
        p = sub.add_parser(v.name, help=v.help, **v.kw)
        for o in v.options:
            o.add(p)
        if v.sub:
            dest = f"{v.name.replace('-', '_')}_verb"
            s = p.add_subparsers(dest=dest, metavar=dest.upper())
            s.required = True
            add_verbs(s, v.sub)


def parser() -> argparse.ArgumentParser:
    """ofan-emu's command line: VERBS, each with its options."""
    p = argparse.ArgumentParser(
        prog="ofan-emu", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Emulated fat trees of ofan-dp switches (or Linux routers) in network "
                    "namespaces, carrying real RoCEv2 traffic.", epilog=EPILOG)
    sub = p.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    add_verbs(sub, VERBS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    run = next(v.run for v in VERBS if v.name == args.verb)
    assert run is not None  # every verb has its own (sub-verbs use their parent's)
    try:
        return run(args)
    except FabricError as e:
        print(f"ofan-emu: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print("ofan-emu: interrupted", file=sys.stderr)
        return EXIT_FAIL
    except BrokenPipeError:
        # The reader of stdout went away (| head): nothing more to say.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAIL
