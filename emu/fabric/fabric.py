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
from typing import Any, Callable, Iterable

from . import control, facts, netns, nodes, plan as plan_mod, stitch, teardown
from .control_plane import AgentControl, check_control
from .nodes import HostKind, RxeVmHosts, SwitchKind, UroceHosts, host_if, port_if
from .plan import Plan
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
        self.name = name
        self.plan = plan
        self.server = server
        self.prefix = prefix(name, server)
        self._here = None if plan is None or server is None else \
            {n.name for n in plan.part(server).nodes}
        self.topo = topo
        self._part_checked = False
        self.writer = StateWriter(state or State(name))
        self.log = log
        self._kind: SwitchKind | None = None
        self._cp: AgentControl | None = None
        self._hosts: tuple[UroceHosts, RxeVmHosts] | None = None

    @property
    def state(self) -> State:
        """The state as last written (read it here; change it through
        self.writer)."""
        return self.writer.state

    @property
    def setup(self) -> Setup:
        """What up was asked for (a loaded fabric always has it)."""
        if self.state.setup is None:
            raise FabricError(f"fabric {self.name} has no setup on record (ofan-emu down "
                              f"--name {self.name})")
        return self.state.setup

    @property
    def kind(self) -> SwitchKind:
        """What runs the switches (nodes/), as the state file says."""
        if self._kind is None:
            setup = self.state.setup
            self._kind = nodes.make(self, setup.switch if setup else "ofan",
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
            self._cp = AgentControl(self)
        return self._cp

    @property
    def host_kinds(self) -> tuple[UroceHosts, RxeVmHosts]:
        """What runs the hosts (nodes/): uroce, and rxe VMs on the slots the
        state file names."""
        if self._hosts is None:
            self._hosts = nodes.hosts(self, self.state.vm_hosts)
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

    def use(self, switch: str, engine: str | None = None) -> SwitchKind:
        """The kind for `up`, checked against the topology (FabricError,
        exit 2, before anything is made)."""
        self._kind = nodes.make(self, switch, engine)
        self._kind.check()
        return self._kind

    # -- this server's part ----------------------------------------------
    def here(self, node: str) -> bool:
        """Does this server run `node` (every node, without a plan)?"""
        return self._here is None or node in self._here

    def crosses(self, link: Link) -> bool:
        """Is one end of `link` on this server and the other elsewhere?"""
        return self.here(link.a[0]) != self.here(link.b[0])

    @property
    def switches(self) -> list[SwitchInfo]:
        """The switches this server runs."""
        return [s for s in self.topo.switches if self.here(s["name"])]

    @property
    def hosts(self) -> list[HostInfo]:
        """The hosts this server runs."""
        return [h for h in self.topo.hosts if self.here(h["name"])]

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

    def check_part(self, kind: SwitchKind, control: str, vm_hosts: list[str]) -> None:
        """What a server's part cannot run (exit 2), and the underlay
        (exit 3), before anything is made."""
        if self.plan is None or self.server is None or self._part_checked:
            return
        netns.check_lasting()
        if kind.switch != "ofan":
            raise FabricError("up --plan: the switches of a part are ofan-dp's (--switch ofan)",
                              code=2)
        if control != "tables" or vm_hosts:
            raise FabricError("up --plan: --control agent and --vm-hosts across servers are "
                              "not built yet", code=2)
        for link in self.topo.links:
            if self.crosses(link) and link.netem():
                raise FabricError(f"link {link.name()} crosses servers: latency, loss and "
                                  "reordering on a crossing link are not built yet", code=2)
        mine = self.plan.server(self.server)
        sts = self.stitches()
        if sts:
            stitch.check_underlay(self.plan, {st.remote for st in sts})
        self.log(f"part {self.server} ({mine.address}) of plan {self.plan.name}: "
                 f"{len(self.switches)} switches, {len(self.hosts)} hosts, "
                 f"{len(sts)} crossing links (VXLAN UDP "
                 f"{self.plan.udp_port}; underlay MTU >= {self.plan.underlay_mtu})")
        self._part_checked = True

    # -- names ---------------------------------------------------------
    def ns(self, node: str) -> str:
        return self.prefix + node

    def wire_ns(self, link: Link) -> str:
        return f"{self.prefix}w{link.id}"

    def sock(self, sw: str) -> str:
        return str(self.state.dir / "sock" / f"{sw}.sock")

    # -- up ------------------------------------------------------------
    def up(self, switch: str = "ofan", policy: str = "ofan", ofan_mode: str | None = "combined",
           seed: int = 1, pipe_size: int | None = None, vm_hosts: Iterable[str] = (),
           vm_mem_mb: int | None = None, engine: str | None = None,
           control: str = "tables", miswire: str | None = None,
           bfd_ms: int | None = None, bfd_multiplier: int | None = None,
           pfc_priority: int | None = None,
           pfcwd: tuple[int, int, str] | None = None,
           reorder: tuple[int, int | None] | None = None) -> float:
        """vm_hosts: host names whose slot a soft-RoCE VM takes (nodes/rxe_vm.py);
        engine: ofan-dp's, per-switch or shared (None: nodes.DEFAULT_ENGINE);
        control: who computes the masks (control_plane.py); miswire:
        'SW:PORT,SW:PORT', two ports whose cables are swapped (a cabling
        error for the control plane to find: Topology.cabling); bfd_ms,
        bfd_multiplier: the agents' BFD timers (None: ofan-agent's default);
        pfc_priority: PFC's lossless priority on every link (None: off);
        pfcwd: its watchdog's (detect ms, restore ms, action), None: ofan-dp's
        defaults; reorder: the edges' resequencing (buffer KiB, timeout us),
        None: off."""
        t = self.topo
        if (bfd_ms is not None or bfd_multiplier is not None) and control != "agent":
            raise FabricError("--bfd-ms and --bfd-multiplier are the agents' (--control agent)",
                              code=2)
        swapped = t.parse_miswire(miswire) if miswire else None
        kind = self.use(switch, engine)
        check_control(control, switch)
        check_pfc(pfc_priority, kind, self.plan is not None)
        check_reorder(reorder is not None, kind)
        if control == "agent":
            AgentControl.check()
        vm_hosts = list(vm_hosts)
        for name in vm_hosts:
            if name not in t.host_by_name:
                raise FabricError(f"VM host {name}: no such host (h0..h{len(t.hosts) - 1})", code=2)
        self.check_part(kind, control, vm_hosts)
        self.ensure_new()
        t0 = time.monotonic()
        w = self.writer
        w.begin_up(Setup(k=t.k, levels=t.levels, switch=switch, engine=kind.engine,
                         policy=policy, ofan_mode=ofan_mode, seed=seed,
                         pipe_size=pipe_size or t.k, topology_source=t.source,
                         created=time.time(), control=control,
                         miswire=tuple(f"{n}:{p}" for n, p in swapped) if swapped else (),
                         bfd_ms=bfd_ms, bfd_multiplier=bfd_multiplier,
                         pfc_priority=pfc_priority,
                         pfcwd_detect_ms=pfcwd[0] if pfcwd else None,
                         pfcwd_restore_ms=pfcwd[1] if pfcwd else None,
                         pfcwd_action=pfcwd[2] if pfcwd else None,
                         reorder_kb=reorder[0] if reorder else None,
                         reorder_timeout_us=reorder[1] if reorder else None,
                         server=self.server),
                   {link.id: link.attrs for link in t.links}, vm_hosts)
        self._hosts = nodes.hosts(self, vm_hosts, vm_mem_mb)
        d = self.state.dir
        if self.plan is not None:
            self.state.plan_path.write_text(self.plan.to_json())
        (d / "sock").mkdir(parents=True, exist_ok=True)
        (d / "logs").mkdir(exist_ok=True)
        (d / "config").mkdir(exist_ok=True)
        if kind.hugepage_bytes_per_switch:
            self._ensure_hugepages(len(self.switches), kind.hugepage_bytes_per_switch)
        self.log(f"namespaces: {len(self.switches)} switches, {len(self.hosts)} hosts")
        cp = self.agents
        sysctls = kind.namespace_sysctls() + (cp.namespace_sysctls() if cp else [])
        for s in self.switches:
            w.add_namespace(self.ns(s["name"]))
            netns.create(self.ns(s["name"]), sysctls)
        for h in self.hosts:
            w.add_namespace(self.ns(h["name"]))
            netns.create(self.ns(h["name"]), self.host_kind(h["name"]).namespace_sysctls())
        links = [link for link in t.links if self.here(link.a[0]) and self.here(link.b[0])]
        veths = [link for link in links if not kind.in_memory(link)]
        mem = len(links) - len(veths)
        stitches = self.stitches()
        self.log(f"links: {len(links)}" + (f" ({mem} in memory)" if mem else "")
                 + (f", {len(stitches)} to other servers (VXLAN)" if stitches else ""))
        cabling = self.cabling()
        for link in veths:
            # A swapped cable runs from the --miswire port to its new far end.
            end = next((e for e in (link.a, link.b) if e in (swapped or ())), None)
            self._make_link(link, *((end, cabling[end]) if end else (link.a, link.b)))
        for st in stitches:
            w.add_stitch(st.names)
            stitch.create(st, self.ns(st.node), port_if(st.port),
                          plan_mod.port_mac(t, st.node, st.port))
        kind.up()
        if cp is not None:
            names = [s["name"] for s in self.switches]
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

    def ensure_new(self) -> None:
        """FabricError if a fabric of this name exists (or left something)."""
        if State.load(self.name) is not None or any(
                n.startswith(self.prefix) for n in netns.list_ns()):
            raise FabricError(f"fabric {self.name} exists already (ofan-emu down --name "
                              f"{self.name}, or down --all after a crash)", code=1)

    def _make_link(self, link: Link, a: Endpoint, b: Endpoint) -> None:
        """The veths of a link (with link's attributes) between ends a and
        b: link's own, or the ends a --miswire gave it."""
        t = self.topo
        a_node, a_port = a
        b_node, b_port = b
        if link.host:
            h = t.host_by_name[a_node]
            a_ns, a_if, a_mac = self.ns(a_node), host_if(), h["mac"]
        else:
            a_ns, a_if = self.ns(a_node), port_if(a_port)
            a_mac = t.sw_by_name[a_node]["ports"][a_port]["mac"]
        b_ns, b_if = self.ns(b_node), port_if(b_port)
        b_mac = t.sw_by_name[b_node]["ports"][b_port]["mac"]
        if not link.netem():
            netns.veth(a_ns, a_if, a_mac, b_ns, b_if, b_mac, facts.netdev_mtu())
            netns.ethtool_off(b_ns, b_if)
            if not link.host:
                netns.ethtool_off(a_ns, a_if)
            return
        # A wire namespace in the middle carries netem (see netns.wire).
        w = self.wire_ns(link)
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

    # -- cabling -----------------------------------------------------------
    def miswire(self) -> tuple[Endpoint, Endpoint] | None:
        """The two ports whose cables up swapped (up --miswire), or None."""
        m = self.setup.miswire if self.state.setup is not None else ()
        return self.topo.parse_miswire(",".join(m)) if m else None

    def cabling(self) -> dict[Endpoint, Endpoint]:
        """Far ends that differ from the plan (Topology.cabling)."""
        return self.topo.cabling(self.miswire())

    def far_end(self, end: Endpoint) -> Endpoint:
        """Where the cable at a port really goes."""
        return self.cabling().get(end) or self.topo.peer_of(end)

    # -- names of the switches -------------------------------------------
    def router_addr(self, sid: int) -> str:
        """The switch's own address, ofan-topo's (FatTree::switch_addr): an
        ofan-dp switch answers on it and sends ICMP errors from it; a kernel
        router holds it on lo."""
        addr: str = self.topo.switches[sid]["addr"]
        return addr

    # -- tables ----------------------------------------------------------
    def tables(self) -> dict[str, Any]:
        failed = self.failed_switch_links()
        cmd = [tool("ofan-topo"), "tables", "--k", str(self.topo.k),
               "--levels", str(self.topo.levels)]
        if failed:
            cmd += ["--failed", ",".join(str(x) for x in sorted(failed))]
        return parse_tables(run(cmd).stdout, self.topo)

    def links_out_of_service(self) -> list[Link]:
        """Failed links, every inter-switch link of a failed switch, and the
        two planned links a miswire broke (a control plane never uses them)."""
        out = {lid: self.topo.links[lid] for lid in self.state.failed_links}
        for end in self.miswire() or ():
            link = self.topo.link_at(*end)
            out[link.id] = link
        for name in self.state.failed_switches:
            for p in self.topo.sw_by_name[name]["ports"]:
                link = self.topo.link_at(name, p["port"])
                if not link.host:
                    out[link.id] = link
        return list(out.values())

    def failed_switch_links(self) -> set[int]:
        """ofan-topo's ids of the inter-switch links out of service (a failed
        host link has none: ofan-topo's tables do not route over it anyway)."""
        return {link.switch_link_id for link in self.links_out_of_service()
                if link.switch_link_id is not None}

    def dead_ports(self) -> set[Endpoint]:
        """(switch, port) ends of the links out of service."""
        return {(end[0], end[1]) for link in self.links_out_of_service()
                for end in (link.a, link.b)}

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
    def set_link(self, link: Link, up: bool) -> None:
        """Both ends of a link (its veths, if it has them) up or down, and
        the switches told."""
        ends = [link.a, link.b]
        failed = self.state.failed_switches
        for node, port in ends:
            if node in failed and up or not self.here(node):
                continue  # another server's end: its own part sets it
            if not self.kind.in_memory(link):
                netns.set_link(self.ns(node), port_if(port), up)
            elif self.agents is not None:
                # The port's TAP (its kernel interface): carrier as the link's,
                # for the daemons behind it to see.
                netns.set_link(self.ns(node), port_if(port), up)
            if node in self.topo.sw_by_name and node not in failed:
                self.kind.set_port(node, port, up)

    def set_wire(self, link: Link, cut: bool) -> None:
        """A link cut silently, or mended: every frame across it lost with
        the carrier up, neither switch told. What the dataplanes send is
        lost at the sender (set_port wire); what a veth's kernel hears is
        dropped by nftables at the receiver (the kernel's own frames, BGP
        and BFD, do not pass through ofan-dp)."""
        for node, port in (link.a, link.b):
            if node in self.state.failed_switches or not self.here(node):
                continue
            self.kind.set_wire(node, port, cut)
            if not self.kind.in_memory(link):
                netns.silent_drop(self.ns(node), port_if(port), cut)

    def _switch_veths(self, name: str, up: bool) -> None:
        """Switch `name`'s veth ports up or down (up: those of links that
        are not failed). With agents on the shared engine, its in-memory
        links' TAPs at both ends too: a switch that dies takes its links'
        carrier with it, as a veth's peer sees on the per-switch engine, and
        its dying daemons send nothing (BGP would otherwise see their TCP
        close and keep its routes as a graceful restart's, for minutes)."""
        for p in self.topo.sw_by_name[name]["ports"]:
            link = self.topo.link_at(name, p["port"])
            if up and link.id in self.state.failed_links:
                continue
            if not self.kind.in_memory(link):
                netns.set_link(self.ns(name), port_if(p["port"]), up)
                continue
            if self.agents is None:
                continue
            for node, port in (link.a, link.b):
                if up and node != name and node in self.state.failed_switches or \
                        not self.here(node):
                    continue
                netns.set_link(self.ns(node), port_if(port), up)

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
        if not self.here(name):
            return
        self._switch_veths(name, False)
        self.kind.fail(name)
        if self.agents is not None:
            self.agents.stop(name)  # the whole box: its daemons too

    def restore_switch(self, name: str) -> None:
        if name not in self.state.failed_switches:
            raise FabricError(f"switch {name} is not failed")
        if not self.here(name):
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
        for s in self.switches:
            entry: dict[str, Any] = {
                "name": s["name"], "role": s["role"], "pod": s["pod"], "id": s["id"],
                "ns": self.ns(s["name"]), "failed": s["name"] in st.failed_switches}
            proc = self.kind.status(s["name"])
            if proc is not None:
                entry.update(dataclasses.asdict(proc))
            if self.agents is not None:
                entry["control"] = self.agents.summary(s["name"])
            if ((setup.pfc_priority is not None or setup.reorder_kb is not None)
                    and entry.get("alive") and not entry["failed"]):
                entry["ports"] = self.pfc_ports(s["name"])
            if setup.switch == "ofan" and entry.get("alive") and not entry["failed"]:
                entry["buffer"] = self.buffer_of(s["name"])
            sws.append(entry)
        return {"name": self.name, "switch": setup.switch, "engine": self.kind.engine,
                "k": t.k, "levels": t.levels, "policy": setup.policy,
                "ofan_mode": setup.ofan_mode, "control": setup.control,
                "pfc": None if setup.pfc_priority is None else {"priority": setup.pfc_priority},
                "reorder": None if setup.reorder_kb is None else {
                    "buffer_kb": setup.reorder_kb, "timeout_us": setup.reorder_timeout_us},
                "phase": st.phase, "up_s": st.up_s,
                "switches": sws,
                "hosts": [self.host_kind(h["name"]).status(h["name"]).to_json()
                          for h in self.hosts],
                "server": self.server, "stitches": list(st.stitches),
                "failed_links": [t.links[i].name() for i in st.failed_links],
                "silent_links": [t.links[i].name() for i in st.silent_links],
                "failed_switches": list(st.failed_switches),
                "wires": len(st.wires)}

    def buffer_of(self, name: str) -> dict[str, Any] | None:
        """Switch `name`'s buffer and its 80 % alarm (ofanctl status's
        buffer), None when its socket does not answer or has none."""
        st = control.request(self.sock(name), "status", check=False, timeout=5)
        b = st.get("buffer") if isinstance(st, dict) else None
        return b if isinstance(b, dict) else None

    def pfc_ports(self, name: str) -> list[dict[str, Any]]:
        """Switch `name`'s ports' PFC and reorder stage (ofanctl ports' pfc:
        thresholds and counts; reorder: an edge's host ports', null
        elsewhere), [] when its socket does not answer."""
        ports = control.request(self.sock(name), "ports", check=False, timeout=5)
        if not isinstance(ports, list):
            return []
        return [{"port": p.get("port"), "pfc": p.get("pfc"), "reorder": p.get("reorder")}
                for p in ports if isinstance(p, dict)
                and (isinstance(p.get("pfc"), dict) or isinstance(p.get("reorder"), dict))]

    # -- masks -------------------------------------------------------------
    def live_masks(self, name: str) -> list[int]:
        """Switch `name`'s valid-uplink masks as its dataplane holds them
        now (the pointers view: each data key's uplinks; bit u = uplink u)."""
        r = control.request(self.sock(name), "pointers")
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
        for s in self.switches:
            name = s["name"]
            if name in self.state.failed_switches or s["uplinks"] == 0:
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
        hs = hosts or self.hosts
        every = hosts or self.topo.hosts
        texts: dict[str, str] = {}

        def ping_from(name: str, script: str) -> None:
            try:
                texts[name] = self.host_kind(name).shell(name, script, 60 + timeout_s * count)
            except Exception as e:  # its pairs stay unreachable; say why
                self.log(f"ping from {name}: {e}")

        threads = []
        for h in hs:
            targets = " ".join(x["addr"] for x in every if x["name"] != h["name"])
            script = (f"for ip in {targets}; do (ping -n -q -c {count} -W {timeout_s} $ip "
                      ">/dev/null 2>&1 && echo ok $ip || echo no $ip) & done; wait")
            threads.append(threading.Thread(target=ping_from, args=(h["name"], script)))
            threads[-1].start()
        for th in threads:
            th.join()
        by_addr = {h["addr"]: h["name"] for h in every}
        out = {(h["name"], x["name"]): False for h in hs for x in every
               if x["name"] != h["name"]}
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
            link.attrs = rec.attrs()
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
