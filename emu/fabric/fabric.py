"""A fabric: its namespaces, links, switches and hosts, brought up and torn
down as one, with failures injected on request.

expects:  root; a Topology (topology.py); the built binaries (tools.py)
modifies: network namespaces "ofe-NAME-*", the veths inside them (but for
          the links the switch kind carries itself), /run/ofan-emu/NAME/
          (state, configs, logs, control sockets), and the hugepage
          reservation when the switches need more than is free; the
          switches themselves are their kind's (nodes/: one ofan-dp per
          switch, every switch in one ofan-dp, or Linux routing), and the
          hosts their kinds' (nodes/: uroce in the namespace, rxe VMs)
gives:    Fabric, whose StateWriter (Fabric.writer) is the one writer of its
          state file: the fabric and its kinds record through it; with a
          plan and a server (up --plan FILE --server S), that server's part:
          its nodes only (Fabric.switches, Fabric.hosts), each crossing
          link's local end a veth whose outer side is stitched to VXLAN in
          this namespace (stitch.py)
next:     run.py drives collectives over the hosts; control.py talks to the
          switches (tables in, counters out)

The split of control and dataplane is docs/design.md's (rule 6): the tables (valid-uplink
masks per key, or kernel routes) are computed from the topology and the failed
links by ofan-topo and pushed to each switch; the coming ofan-agent takes that
job over per switch, and push_tables() is the one place it happens now.
"""
import dataclasses
import os
import threading
import time
from typing import Any, Callable

from . import control, facts, netns, nodes, plan as plan_mod, reports, stitch, teardown
from .context import NodeContext
from .control_plane import AgentControl, check_control
from .nodes import HostKind, RxeVmHosts, SwitchKind, UroceHosts, host_if, port_if
from .plan import Plan
from .request import HOST_IOS, UpRequest
from .state import HUGEPAGES_MARK, Setup, State, StateWriter, prefix, valid_name
from .tools import FabricError, run, tool
from .topology import Endpoint, HostInfo, Link, SwitchInfo, Topology, parse_tables

__all__ = ["Fabric", "down", "host_if", "load", "port_if"]


PFC_PRIORITIES = range(8)  # 802.1Qbb's eight classes


def check_pfc(priority: int | None, kind: SwitchKind, planned: bool) -> None:
    """FabricError (exit 2) for PFC (up --pfc) where it cannot run, before
    anything is made."""
    if priority is None:
        return
    if priority not in PFC_PRIORITIES:
        raise FabricError(f"--pfc-priority {priority}: a priority from 0 to 7", code=2)
    if kind.switch != "ofan":
        raise FabricError("--pfc: the kernel switch's Linux routers cannot pause a link "
                          "(no PFC in the kernel's forwarding); use --switch ofan", code=2)
    if planned:
        raise FabricError("--pfc across servers: the servers' engines keep separate emulated "
                          "clocks, so a pause crossing a VXLAN stitch would land at the wrong "
                          "time; not built yet", code=2)


def check_reorder(on: bool, kind: SwitchKind) -> None:
    """FabricError (exit 2) for resequencing (up --reorder) where it cannot
    run, before anything is made."""
    if not on:
        return
    if kind.switch != "ofan":
        raise FabricError("--reorder: the kernel switch's Linux routers forward in arrival "
                          "order; use --switch ofan", code=2)


def check_host_stamp(stamp: str | None, kind: SwitchKind) -> None:
    """FabricError (exit 2) for up --host-stamp where no shared engine
    stamps hosts' frames, or a name ofan-dp does not know (ofan-topo
    facts)."""
    if stamp is None:
        return
    if kind.engine != "shared":
        raise FabricError("--host-stamp: only the shared engine stamps hosts' frames in emulated "
                          "time; use --engine shared", code=2)
    names = facts.host_stamps().names
    if stamp not in names:
        raise FabricError(f"--host-stamp {stamp}: one of {', '.join(names)}", code=2)


def check_host_io(host_io: str, kind: SwitchKind, topo: Topology) -> None:
    """FabricError (exit 2) for up --host-io shm where it cannot run: not
    the shared engine, or a host link whose latency, loss or reordering
    only a veth's netem wire gives."""
    if host_io not in HOST_IOS:
        raise FabricError(f"--host-io {host_io}: one of {', '.join(HOST_IOS)}", code=2)
    if host_io == "veth":
        return
    if kind.engine != "shared":
        raise FabricError("--host-io shm: the shared engine's host ports only; use --engine "
                          "shared", code=2)
    for link in topo.links:
        if link.host and link.netem():
            raise FabricError(f"--host-io shm: host link {link.name()} has latency, loss or "
                              "reordering, which only its veth's netem wire gives", code=2)


@dataclasses.dataclass(frozen=True)
class Checked:
    """An UpRequest that Fabric.check found this fabric can run: the kind
    made for it and the ports --miswire swaps."""
    req: UpRequest
    kind: SwitchKind
    swapped: tuple[Endpoint, Endpoint] | None


@dataclasses.dataclass(frozen=True)
class Claimed:
    """A Checked request whose fabric name was free (Fabric.claim): the one
    thing Fabric.up takes, so no caller can skip a check or run one twice."""
    checked: Checked


class Fabric:
    def __init__(self, name: str, topo: Topology, state: State | None = None,
                 log: Callable[[str], None] = print, plan: Plan | None = None,
                 server: str | None = None) -> None:
        """plan, server: this server's part of a plan (server: its name,
        srv0, ...), or the whole fabric here (None, None)."""
        if not valid_name(name):
            raise FabricError(f"fabric name {name!r}: 1-10 of a-z, 0-9", code=2)
        if (plan is None) != (server is None):
            raise FabricError("a server's part needs both the plan and the server")
        self.plan = plan
        self.server = server
        # What the kinds are made with (context.py): the fabric's names,
        # topology, state and log, never the fabric. The fabric reads them
        # there too (name, prefix, topo, writer, log below).
        self.ctx = NodeContext(name, prefix(name, server), topo,
                               StateWriter(state or State(name)), log,
                               None if plan is None or server is None else
                               frozenset(n.name for n in plan.part(server).nodes))
        self._kind: SwitchKind | None = None
        self._cp: AgentControl | None = None
        self._hosts: tuple[UroceHosts, RxeVmHosts] | None = None

    @property
    def name(self) -> str:
        return self.ctx.name

    @property
    def prefix(self) -> str:
        return self.ctx.prefix

    @property
    def topo(self) -> Topology:
        return self.ctx.topo

    @property
    def writer(self) -> StateWriter:
        return self.ctx.writer

    @property
    def log(self) -> Callable[[str], None]:
        return self.ctx.log

    @property
    def state(self) -> State:
        """The state as last written (the context's)."""
        return self.ctx.state

    @property
    def setup(self) -> Setup:
        return self.ctx.setup

    @property
    def kind(self) -> SwitchKind:
        """What runs the switches (nodes/), as the state file says."""
        if self._kind is None:
            setup = self.state.setup
            self._kind = nodes.make(self.ctx, setup.switch if setup else "ofan",
                                    setup.engine if setup else None)
        return self._kind

    @property
    def agents(self) -> AgentControl | None:
        """The switches' own control planes (--control agent), or None when
        ofan-emu computes their tables (--control tables)."""
        setup = self.state.setup
        if setup is None or setup.control != "agent":
            return None
        if self._cp is None:
            self._cp = AgentControl(self.ctx)
        return self._cp

    @property
    def host_kinds(self) -> tuple[UroceHosts, RxeVmHosts]:
        """What runs the hosts (nodes/): uroce, and rxe VMs on the slots the
        state file names."""
        if self._hosts is None:
            self._hosts = nodes.hosts(self.ctx, self.state.vm_hosts)
        return self._hosts

    @property
    def uroce_hosts(self) -> UroceHosts:
        return self.host_kinds[0]

    @property
    def vms(self) -> RxeVmHosts:
        return self.host_kinds[1]

    def host_kind(self, name: str) -> HostKind:
        """The kind of host `name` (a host of the topology)."""
        return self.vms if name in self.vms.names else self.uroce_hosts

    # -- this server's part ----------------------------------------------
    def whole(self, verb: str) -> None:
        """FabricError (exit 2) for a verb that needs every server of a plan
        (--plan FILE) on a server's part."""
        if self.plan is not None:
            raise FabricError(f"{verb}: fabric {self.name} is server {self.server}'s part of a "
                              f"plan over {len(self.plan.servers)} servers: {verb} --plan FILE "
                              "runs it on every server", code=2)

    def stitches(self) -> list[stitch.Stitch]:
        """This server's ends of the plan's crossing links."""
        if self.plan is None or self.server is None:
            return []
        return [stitch.Stitch.of(self.plan, c, self.server)
                for c in self.plan.part(self.server).crossing]

    # -- up: checked once, claimed, made ---------------------------------
    def check(self, req: UpRequest) -> "Checked":
        """Everything in `req` this fabric cannot run, as FabricError (exit
        2; exit 3 for a daemon --control agent needs that is not
        installed), before anything is made and without root."""
        t = self.topo
        if req.switch == "ofan":
            facts.policy(req.policy)
        if req.vm_mem_mb is not None and not 128 <= req.vm_mem_mb <= 65536:
            raise FabricError("--vm-mem: 128 to 65536 (MiB)", code=2)
        for name in req.vm_hosts:
            if name not in t.host_by_name:
                raise FabricError(f"--vm-hosts: {name} is not a host (h0..h{len(t.hosts) - 1})",
                                  code=2)
        if len(set(req.vm_hosts)) != len(req.vm_hosts):
            raise FabricError("--vm-hosts: a host named twice", code=2)
        if (req.bfd_ms is not None or req.bfd_multiplier is not None) and req.control != "agent":
            raise FabricError("--bfd-ms and --bfd-multiplier are the agents' (--control agent)",
                              code=2)
        swapped = t.parse_miswire(req.miswire) if req.miswire else None
        check_control(req.control, req.switch)
        kind = nodes.make(self.ctx, req.switch, req.engine)
        kind.check()
        check_pfc(req.pfc.priority if req.pfc else None, kind, self.plan is not None)
        check_reorder(req.reorder is not None, kind)
        check_host_stamp(req.host_stamp, kind)
        check_host_io(req.host_io, kind, self.topo)
        if self.plan is not None:
            self._check_part(kind, req)
        if req.control == "agent":
            AgentControl.check()
        return Checked(req, kind, swapped)

    def _check_part(self, kind: SwitchKind, req: UpRequest) -> None:
        """What a server's part cannot run (exit 2)."""
        if kind.switch != "ofan":
            raise FabricError("up --plan: the switches of a part are ofan-dp's (--switch ofan)",
                              code=2)
        if req.control != "tables" or req.vm_hosts:
            raise FabricError("up --plan: --control agent and --vm-hosts across servers are "
                              "not built yet", code=2)
        for link in self.topo.links:
            if self.ctx.crosses(link) and link.netem():
                raise FabricError(f"link {link.name()} crosses servers: latency, loss and "
                                  "reordering on a crossing link are not built yet", code=2)

    def claim(self, checked: "Checked") -> "Claimed":
        """The name taken (FabricError, exit 1, if a fabric of this name
        exists or left something) and, on a server's part, the underlay
        checked (exit 3): root, nothing made yet. What up() is given."""
        if State.load(self.name) is not None or any(
                n.startswith(self.prefix) for n in netns.list_ns()):
            raise FabricError(f"fabric {self.name} exists already (ofan-emu down --name "
                              f"{self.name}, or down --all after a crash)", code=1)
        if self.plan is not None and self.server is not None:
            netns.check_lasting()
            sts = self.stitches()
            if sts:
                stitch.check_underlay(self.plan, {st.remote for st in sts})
            self.log(f"part {self.server} ({self.plan.server(self.server).address}) of plan "
                     f"{self.plan.name}: {len(self.ctx.switches)} switches, "
                     f"{len(self.ctx.hosts)} hosts, {len(sts)} crossing links (VXLAN UDP "
                     f"{self.plan.udp_port}; underlay MTU >= {self.plan.underlay_mtu})")
        return Claimed(checked)

    def up(self, claimed: "Claimed") -> float:
        """The fabric made as `claimed` asks (Fabric.check, then .claim);
        the seconds it took."""
        req, kind, swapped = claimed.checked.req, claimed.checked.kind, claimed.checked.swapped
        t = self.topo
        self._kind = kind
        pfc, reorder, vm_hosts = req.pfc, req.reorder, list(req.vm_hosts)
        t0 = time.monotonic()
        w = self.writer
        w.begin_up(Setup(k=t.k, levels=t.levels, switch=req.switch, engine=kind.engine,
                         policy=req.policy, ofan_mode=req.ofan_mode, seed=req.seed,
                         pipe_size=req.pipe_size or t.k, topology_source=t.source,
                         created=time.time(), control=req.control,
                         miswire=tuple(f"{n}:{p}" for n, p in swapped) if swapped else (),
                         bfd_ms=req.bfd_ms, bfd_multiplier=req.bfd_multiplier,
                         pfc_priority=pfc.priority if pfc else None,
                         pfcwd_detect_ms=pfc.wd_detect_ms if pfc else None,
                         pfcwd_restore_ms=pfc.wd_restore_ms if pfc else None,
                         pfcwd_action=pfc.wd_action if pfc else None,
                         reorder_kb=reorder.buffer_kb if reorder else None,
                         reorder_timeout_us=reorder.timeout_us if reorder else None,
                         host_stamp=req.host_stamp, host_io=req.host_io,
                         server=self.server),
                   {link.id: link.attrs for link in t.links}, vm_hosts)
        self._hosts = nodes.hosts(self.ctx, vm_hosts, req.vm_mem_mb)
        d = self.state.dir
        if self.plan is not None:
            self.state.plan_path.write_text(self.plan.to_json())
        (d / "sock").mkdir(parents=True, exist_ok=True)
        (d / "logs").mkdir(exist_ok=True)
        (d / "config").mkdir(exist_ok=True)
        if kind.hugepage_bytes_per_switch:
            self._ensure_hugepages(len(self.ctx.switches), kind.hugepage_bytes_per_switch)
        self.log(f"namespaces: {len(self.ctx.switches)} switches, {len(self.ctx.hosts)} hosts")
        cp = self.agents
        sysctls = kind.namespace_sysctls() + (cp.namespace_sysctls() if cp else [])
        for s in self.ctx.switches:
            w.add_namespace(self.ctx.ns(s.name))
            netns.create(self.ctx.ns(s.name), sysctls)
        for h in self.ctx.hosts:
            w.add_namespace(self.ctx.ns(h.name))
            netns.create(self.ctx.ns(h.name), self.host_kind(h.name).namespace_sysctls())
        links = [link for link in t.links if self.ctx.here(link.a[0]) and self.ctx.here(link.b[0])]
        veths = [link for link in links if not kind.in_memory(link)]
        mem = len(links) - len(veths)
        stitches = self.stitches()
        self.log(f"links: {len(links)}" + (f" ({mem} in memory)" if mem else "")
                 + (f", {len(stitches)} to other servers (VXLAN)" if stitches else ""))
        cabling = self.ctx.cabling()
        for link in veths:
            # A swapped cable runs from the --miswire port to its new far end.
            end = next((e for e in (link.a, link.b) if e in (swapped or ())), None)
            self._make_link(link, *((end, cabling[end]) if end else (link.a, link.b)))
        for st in stitches:
            w.add_stitch(st.names)
            stitch.create(st, self.ctx.ns(st.node), port_if(st.port),
                          plan_mod.port_mac(t, st.node, st.port))
        kind.up()
        if cp is not None:
            names = [s.name for s in self.ctx.switches]
            cp.up(names)
            took_cp = cp.wait_converged(names, log=self.log)
            self.log(f"control: every switch's agent converged ({took_cp:.1f} s after the "
                     "daemons started)")
        else:
            self.push_tables()
        # The hosts once the switches forward: a VM's boot is the long part
        # of up, and its guest needs nothing from the switches to be set up.
        for hk in self.host_kinds:
            hk.up()
            hk.configure()
        took = round(time.monotonic() - t0, 2)
        w.ready(took)
        return took

    def _make_link(self, link: Link, a: Endpoint, b: Endpoint) -> None:
        """The veths of a link (with link's attributes) between ends a and
        b: link's own, or the ends a --miswire gave it."""
        t = self.topo
        a_node, a_port = a
        b_node, b_port = b
        if link.host:
            h = t.host_by_name[a_node]
            a_ns, a_if, a_mac = self.ctx.ns(a_node), host_if(), h.mac
        else:
            a_ns, a_if = self.ctx.ns(a_node), port_if(a_port)
            a_mac = t.sw_by_name[a_node].ports[a_port].mac
        b_ns, b_if = self.ctx.ns(b_node), port_if(b_port)
        b_mac = t.sw_by_name[b_node].ports[b_port].mac
        if not link.netem():
            netns.veth(a_ns, a_if, a_mac, b_ns, b_if, b_mac, facts.netdev_mtu())
            netns.ethtool_off(b_ns, b_if)
            if not link.host:
                netns.ethtool_off(a_ns, a_if)
            return
        # A wire namespace in the middle carries netem (see netns.wire).
        w = self.ctx.wire_ns(link)
        self.writer.add_wire(w, link.id)
        netns.create(w)
        netns.veth(a_ns, a_if, a_mac, w, "a", "02:0e:00:00:00:0a", facts.netdev_mtu())
        netns.veth(w, "b", "02:0e:00:00:00:0b", b_ns, b_if, b_mac, facts.netdev_mtu())
        for ns_, if_ in ((a_ns, a_if), (b_ns, b_if), (w, "a"), (w, "b")):
            netns.ethtool_off(ns_, if_)
        netns.wire(w, "a", "b", link.attrs)

    def _ensure_hugepages(self, nswitches: int, per_switch: int) -> None:
        need = nswitches * per_switch
        page = 2 << 20
        try:
            total = int(open("/proc/sys/vm/nr_hugepages").read())
            free = int(next(line.split()[1] for line in open("/proc/meminfo")
                            if line.startswith("HugePages_Free")))
        except (OSError, StopIteration, ValueError) as e:
            raise FabricError(f"cannot read the hugepage reservation: {e}", code=3)
        if not os.path.ismount("/dev/hugepages"):
            os.makedirs("/dev/hugepages", exist_ok=True)
            run(["mount", "-t", "hugetlbfs", "nodev", "/dev/hugepages"])
        if free * page >= need:
            return
        want = total + (need - free * page + page - 1) // page
        # The reservation before the first fabric raised it, restored when
        # the last one is down (teardown.py).
        if not HUGEPAGES_MARK.exists():
            HUGEPAGES_MARK.write_text(str(total))
        with open("/proc/sys/vm/nr_hugepages", "w") as f:
            f.write(str(want))
        got = int(open("/proc/sys/vm/nr_hugepages").read())
        if got < want:
            raise FabricError(f"{nswitches} switches need {need >> 20} MiB of hugepages; "
                              f"the kernel gave {got} of the {want} 2 MiB pages asked for", code=3)
        self.log(f"hugepages: {total} -> {got} (2 MiB)")

    # -- tables ----------------------------------------------------------
    def tables(self) -> dict[str, Any]:
        failed = self.ctx.failed_switch_links()
        cmd = [tool("ofan-topo"), "tables", "--k", str(self.topo.k),
               "--levels", str(self.topo.levels)]
        if failed:
            cmd += ["--failed", ",".join(str(x) for x in sorted(failed))]
        return parse_tables(run(cmd).stdout, self.topo)

    def push_tables(self) -> dict[str, Any]:
        """Computes every switch's table and has the kind install it: the
        one place ofan-emu acts as the fabric's control plane. Nothing with
        --control agent: there each switch's agent finds out for itself."""
        if self.agents is not None:
            return {}
        tabs = self.tables()
        self.kind.configure(tabs)
        return tabs

    # -- failures --------------------------------------------------------
    def set_policy(self, lb: str) -> None:
        """Every live switch's LB policy, as ofan-dp's set_policy takes it
        (with the fabric's Ofan mode where the policy has modes); a kernel
        fabric runs Linux ECMP only."""
        if self.kind.switch != "ofan":
            if lb != "ecmp":
                raise FabricError(f"--lbs {lb}: a --switch kernel fabric runs Linux ECMP only "
                                  "(fib_multipath_hash_policy=1); say --lbs ecmp", code=2)
            return
        mode = self.setup.ofan_mode if facts.policy(lb).modes else None
        for s in self.ctx.switches:
            if s.uplinks and s.name not in self.state.failed_switches:
                control.request(self.ctx.sock(s.name), "set_policy", policy=lb, ofan_mode=mode)

    def live_switches(self) -> list[SwitchInfo]:
        """The switches this server runs (every one, without a plan) but
        the failed ones."""
        return [s for s in self.ctx.switches if s.name not in self.state.failed_switches]

    def ask_live(self, cmds: tuple[str, ...]) -> dict[str, dict[str, Any]]:
        """Per live switch of an ofan-dp fabric, its answer to each command
        (each asked of every switch by one ofanctl); a failed switch is not
        asked, a live one's error is a FabricError."""
        answers = {cmd: control.request_all(self.ctx.sock_dir(), cmd) for cmd in cmds}
        out: dict[str, dict[str, Any]] = {}
        for s in self.live_switches():
            snap = {}
            for cmd, per_switch in answers.items():
                ok, val = per_switch.get(s.name, (False, "no control socket"))
                if not ok:
                    raise FabricError(f"{self.ctx.sock(s.name)}: {cmd}: {val}")
                snap[cmd] = val
            out[s.name] = snap
        return out

    def counts(self) -> "reports.FabricCounts | None":
        """The live switches' drops, pause frames and reorder counters,
        summed (a kernel fabric: None)."""
        if self.kind.switch != "ofan":
            return None
        return reports.fabric_counts(self.ask_live(("queues", "counters")))

    def set_link(self, link: Link, up: bool) -> None:
        """Both ends of a link (its veths, if it has them) up or down, and
        the switches told."""
        ends = [link.a, link.b]
        failed = self.state.failed_switches
        for node, port in ends:
            if node in failed and up or not self.ctx.here(node):
                continue  # another server's end: its own part sets it
            if not self.kind.in_memory(link):
                netns.set_link(self.ctx.ns(node), port_if(port), up)
            elif self.agents is not None:
                # The port's TAP (its kernel interface): carrier as the link's,
                # for the daemons behind it to see.
                netns.set_link(self.ctx.ns(node), port_if(port), up)
            if node in self.topo.sw_by_name and node not in failed:
                self.kind.set_port(node, port, up)

    def set_wire(self, link: Link, cut: bool) -> None:
        """A link cut silently, or mended: every frame across it lost with
        the carrier up, neither switch told. What the dataplanes send is
        lost at the sender (set_port wire); what a veth's kernel hears is
        dropped by nftables at the receiver (the kernel's own frames, BGP
        and BFD, do not pass through ofan-dp)."""
        for node, port in (link.a, link.b):
            if node in self.state.failed_switches or not self.ctx.here(node):
                continue
            self.kind.set_wire(node, port, cut)
            if not self.kind.in_memory(link):
                netns.silent_drop(self.ctx.ns(node), port_if(port), cut)

    def _switch_veths(self, name: str, up: bool) -> None:
        """Switch `name`'s veth ports up or down (up: those of links that
        are not failed). With agents on the shared engine, its in-memory
        links' TAPs at both ends too: a switch that dies takes its links'
        carrier with it, as a veth's peer sees on the per-switch engine, and
        its dying daemons send nothing (BGP would otherwise see their TCP
        close and keep its routes as a graceful restart's, for minutes)."""
        for p in self.topo.sw_by_name[name].ports:
            link = self.topo.link_at(name, p.port)
            if up and link.id in self.state.failed_links:
                continue
            if not self.kind.in_memory(link):
                netns.set_link(self.ctx.ns(name), port_if(p.port), up)
                continue
            if self.agents is None:
                continue
            for node, port in (link.a, link.b):
                if up and node != name and node in self.state.failed_switches or \
                        not self.ctx.here(node):
                    continue
                netns.set_link(self.ctx.ns(node), port_if(port), up)

    def fail_link(self, link: Link, silent: bool = False) -> None:
        """silent: the carrier stays up and every frame is lost (only a
        link between switches: a host's engine would go on sending)."""
        if link.id in self.state.failed_links:
            raise FabricError(f"link {link.name()} is already failed")
        if silent and link.host:
            raise FabricError(f"link {link.name()}: --silent fails a link between switches "
                              "(a host's link fails with its carrier)", code=2)
        self.writer.set_link_failed(link.id, True, silent)
        if silent:
            self.set_wire(link, True)
        else:
            self.set_link(link, False)
        self.push_tables()

    def restore_link(self, link: Link) -> None:
        if link.id not in self.state.failed_links:
            raise FabricError(f"link {link.name()} is not failed")
        silent = link.id in self.state.silent_links
        self.writer.set_link_failed(link.id, False)
        # Up first: a kernel router takes no route over a down link, and
        # ofan-dp uses the link only once the tables say so.
        if silent:
            self.set_wire(link, False)
        else:
            self.set_link(link, True)
        self.push_tables()

    def fail_switch(self, name: str) -> None:
        if name in self.state.failed_switches:
            raise FabricError(f"switch {name} is already failed")
        self.writer.set_switch_failed(name, True)
        # The others route around it first, then it goes dark (on its own
        # server: another server's part only routes around it).
        self.push_tables()
        if not self.ctx.here(name):
            return
        self._switch_veths(name, False)
        self.kind.fail(name)
        if self.agents is not None:
            self.agents.stop(name)  # the whole box: its daemons too

    def restore_switch(self, name: str) -> None:
        if name not in self.state.failed_switches:
            raise FabricError(f"switch {name} is not failed")
        if not self.ctx.here(name):
            self.writer.set_switch_failed(name, False)
            self.push_tables()
            return
        self._switch_veths(name, True)
        self.writer.set_switch_failed(name, False)
        self.kind.restore(name)
        if self.agents is not None:
            self.agents.start(name)
        self.push_tables()

    def down(self) -> dict[str, Any]:
        """The switches and the hosts stopped by their kinds, then
        everything the fabric made removed (teardown.py): down's report."""
        stopped = self.kind.down()
        for hk in self.host_kinds:
            stopped += hk.down()
        report = teardown.down(self.name)
        report["processes"] = sorted(set(report["processes"]) | set(stopped))
        return report

    # -- status ----------------------------------------------------------
    def status(self) -> dict[str, Any]:
        st = self.state
        setup = self.setup
        t = self.topo
        sws = []
        for s in self.ctx.switches:
            entry: dict[str, Any] = {
                "name": s.name, "role": s.role, "pod": s.pod, "id": s.id,
                "ns": self.ctx.ns(s.name), "failed": s.name in st.failed_switches}
            proc = self.kind.status(s.name)
            if proc is not None:
                entry.update(dataclasses.asdict(proc))
            if self.agents is not None:
                entry["control"] = self.agents.summary(s.name)
            if ((setup.pfc_priority is not None or setup.reorder_kb is not None)
                    and entry.get("alive") and not entry["failed"]):
                entry["ports"] = self.pfc_ports(s.name)
            if setup.switch == "ofan" and entry.get("alive") and not entry["failed"]:
                entry["buffer"] = self.buffer_of(s.name)
            sws.append(entry)
        return {"name": self.name, "switch": setup.switch, "engine": self.kind.engine,
                "k": t.k, "levels": t.levels, "policy": setup.policy,
                "ofan_mode": setup.ofan_mode, "control": setup.control,
                "pfc": None if setup.pfc_priority is None else {"priority": setup.pfc_priority},
                "reorder": None if setup.reorder_kb is None else {
                    "buffer_kb": setup.reorder_kb, "timeout_us": setup.reorder_timeout_us},
                "host_io": setup.host_io, "phase": st.phase, "up_s": st.up_s,
                "switches": sws,
                "hosts": [self.host_kind(h.name).status(h.name).to_json()
                          for h in self.ctx.hosts],
                "server": self.server, "stitches": list(st.stitches),
                "failed_links": [t.links[i].name() for i in st.failed_links],
                "silent_links": [t.links[i].name() for i in st.silent_links],
                "failed_switches": list(st.failed_switches),
                "wires": len(st.wires)}

    def buffer_of(self, name: str) -> dict[str, Any] | None:
        """Switch `name`'s buffer and its 80 % alarm (ofanctl status's
        buffer), None when its socket does not answer or has none."""
        st = control.request(self.ctx.sock(name), "status", check=False, timeout=5)
        b = st.get("buffer") if isinstance(st, dict) else None
        return b if isinstance(b, dict) else None

    def pfc_ports(self, name: str) -> list[dict[str, Any]]:
        """Switch `name`'s ports' PFC and reorder stage (ofanctl ports' pfc:
        thresholds and counts; reorder: an edge's host ports', null
        elsewhere), [] when its socket does not answer."""
        ports = control.request(self.ctx.sock(name), "ports", check=False, timeout=5)
        if not isinstance(ports, list):
            return []
        return [{"port": p.get("port"), "pfc": p.get("pfc"), "reorder": p.get("reorder")}
                for p in ports if isinstance(p, dict)
                and (isinstance(p.get("pfc"), dict) or isinstance(p.get("reorder"), dict))]

    # -- masks -------------------------------------------------------------
    def live_masks(self, name: str) -> list[int]:
        """Switch `name`'s valid-uplink masks as its dataplane holds them
        now (the pointers view: each data key's uplinks; bit u = uplink u)."""
        r = control.request(self.ctx.sock(name), "pointers")
        masks: dict[int, int] = {}
        for key in r.get("keys", []) if isinstance(r, dict) else []:
            if key.get("class") != "data":
                continue
            d = int(key["dest"])
            for u in key.get("order", []):
                masks[d] = masks.get(d, 0) | (1 << int(u))
            masks.setdefault(d, 0)
        return [masks.get(d, 0) for d in range(max(masks) + 1)] if masks else []

    def verify_masks(self) -> dict[str, Any]:
        """Every running switch's live masks against the brute-force valid
        sets for the fabric's failures (ofan-topo tables): {ok, switches:
        [{name, ok, differences: [{dest, live, expected}]}]}."""
        want = {s["name"]: s["masks"] for s in self.tables()["switches"]}
        out = []
        for s in self.ctx.switches:
            name = s.name
            if name in self.state.failed_switches or s.uplinks == 0:
                continue
            live = self.live_masks(name)
            exp = want[name]
            diffs = [{"dest": d, "live": hex(live[d]) if d < len(live) else None,
                      "expected": hex(exp[d])}
                     for d in range(max(len(live), len(exp)))
                     if (live[d] if d < len(live) else None) != (exp[d] if d < len(exp) else None)]
            out.append({"name": name, "ok": not diffs, "differences": diffs})
        return {"ok": all(x["ok"] for x in out), "failed_links":
                [self.topo.links[i].name() for i in self.state.failed_links],
                "failed_switches": list(self.state.failed_switches), "switches": out}

    # -- reachability ----------------------------------------------------
    def ping_all(self, count: int = 1, timeout_s: float = 2,
                 hosts: list[HostInfo] | None = None) -> dict[tuple[str, str], bool]:
        """All-pairs ping among hosts, each from where its kind runs it
        (its namespace, or inside its VM); returns {(src, dst): ok}. On a
        server's part (without `hosts`): from its hosts to every host of the
        fabric, those of the other servers too."""
        hs = hosts or self.ctx.hosts
        every = hosts or self.topo.hosts
        texts: dict[str, str] = {}

        def ping_from(name: str, script: str) -> None:
            try:
                texts[name] = self.host_kind(name).shell(name, script, 60 + timeout_s * count)
            except Exception as e:  # its pairs stay unreachable; say why
                self.log(f"ping from {name}: {e}")

        threads = []
        for h in hs:
            targets = " ".join(x.addr for x in every if x.name != h.name)
            script = (f"for ip in {targets}; do (ping -n -q -c {count} -W {timeout_s} $ip "
                      ">/dev/null 2>&1 && echo ok $ip || echo no $ip) & done; wait")
            threads.append(threading.Thread(target=ping_from, args=(h.name, script)))
            threads[-1].start()
        for th in threads:
            th.join()
        by_addr = {h.addr: h.name for h in every}
        out = {(h.name, x.name): False for h in hs for x in every
               if x.name != h.name}
        for name, text in texts.items():
            for line in text.strip().splitlines():
                verdict, ip = line.split()
                out[(name, by_addr[ip])] = verdict == "ok"
        return out


def load(name: str, log: Callable[[str], None] = print) -> Fabric:
    """The fabric NAME as its state file describes it."""
    st = State.load(name)
    if st is None:
        raise FabricError(f"no fabric {name} (ofan-emu status lists them)")
    if st.corrupt or st.setup is None:
        raise FabricError(f"fabric {name}'s state file is unreadable; ofan-emu down --name {name} "
                          "removes it by its names")
    topo = Topology(st.setup.k, st.setup.levels)
    wrong = st.mismatch(topo)
    if wrong:
        raise FabricError(f"fabric {name}'s state file does not fit its fabric ({wrong}); "
                          f"ofan-emu down --name {name} removes it by its names")
    for link in topo.links:
        rec = st.links.get(str(link.id))
        if rec is not None:
            link.attrs = rec
    plan = None
    if st.server is not None:
        try:
            plan = plan_mod.from_json(st.plan_path.read_bytes(), str(st.plan_path))
            plan.part(st.server)
        except (OSError, plan_mod.PlanError) as e:
            raise FabricError(f"fabric {name}'s plan is unreadable ({e}); ofan-emu down --name "
                              f"{name} removes it by its names")
    fab = Fabric(name, topo, st, log=log, plan=plan, server=st.server)
    try:
        fab.kind
    except FabricError as e:
        raise FabricError(f"fabric {name}'s state file names no switch kind this ofan-emu "
                          f"has ({e}); ofan-emu down --name {name} removes it by its names")
    return fab


def down(name: str, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Fabric NAME down: through its kind when its state file is readable,
    else by the names alone (teardown.py), as after a crash."""
    try:
        fab = load(name, log=log)
    except FabricError:
        return teardown.down(name)
    return fab.down()
