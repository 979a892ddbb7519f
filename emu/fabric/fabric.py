"""A fabric: its namespaces, links, switches and hosts, brought up and torn
down as one, with failures injected on request.

expects:  root; a Topology (topology.py); the built binaries (tools.py)
modifies: network namespaces "ofe-NAME-*", the veths inside them (but for
          the links the switch kind carries itself), /run/ofan-emu/NAME/
          (state, configs, logs, control sockets), and the hugepage
          reservation when the switches need more than is free; the
          switches themselves are their kind's (nodes/: one ofan-dp per
          switch, every switch in one ofan-dp, or Linux routing)
next:     run.py drives collectives over the hosts; control.py talks to the
          switches (tables in, counters out)

The split of control and dataplane is docs/design.md's (rule 6): the tables (valid-uplink
masks per key, or kernel routes) are computed from the topology and the failed
links by ofan-topo and pushed to each switch; the coming ofan-agent takes that
job over per switch, and push_tables() is the one place it happens now.
"""
import dataclasses
import os
import subprocess
import time
from typing import Any, Callable, Iterable

from . import facts, netns, nodes, teardown
from .nodes import SwitchKind, host_if, port_if
from .state import RUN_DIR, State, alive, prefix, valid_name
from .tools import FabricError, run, tool
from .topology import Endpoint, HostInfo, Link, Topology, parse_tables

__all__ = ["Fabric", "down", "host_if", "load", "port_if"]


class Fabric:
    def __init__(self, name: str, topo: Topology, state: State | None = None,
                 log: Callable[[str], None] = print) -> None:
        if not valid_name(name):
            raise FabricError(f"fabric name {name!r}: 1-10 of a-z, 0-9", code=2)
        self.name = name
        self.prefix = prefix(name)
        self.topo = topo
        self.state = state or State(name)
        self.log = log
        self._kind: SwitchKind | None = None

    @property
    def kind(self) -> SwitchKind:
        """What runs the switches (nodes/), as the state file says."""
        if self._kind is None:
            self._kind = nodes.make(self, self.state.get("switch", "ofan"),
                                    nodes.engine_of(self.state))
        return self._kind

    def use(self, switch: str, engine: str | None = None) -> SwitchKind:
        """The kind for `up`, checked against the topology (FabricError,
        exit 2, before anything is made)."""
        self._kind = nodes.make(self, switch, engine)
        self._kind.check()
        return self._kind

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
           vm_mem_mb: int | None = None, engine: str | None = None) -> float:
        """vm_hosts: host names whose slot a soft-RoCE VM takes (vmhosts.py);
        engine: ofan-dp's, per-switch or shared (None: nodes.DEFAULT_ENGINE)."""
        t = self.topo
        kind = self.use(switch, engine)
        vm_hosts = list(vm_hosts)
        for name in vm_hosts:
            if name not in t.host_by_name:
                raise FabricError(f"VM host {name}: no such host (h0..h{len(t.hosts) - 1})", code=2)
        st = self.state
        self.ensure_new()
        t0 = time.monotonic()
        st.update({"k": t.k, "levels": t.levels, "switch": switch, "engine": kind.engine,
                   "policy": policy, "ofan_mode": ofan_mode, "seed": seed,
                   "pipe_size": pipe_size or t.k,
                   "topology_source": t.source, "created": time.time(), "phase": "up",
                   "failed_links": [], "failed_switches": [],
                   "links": {str(link.id): link.attrs for link in t.links},
                   "wires": [], "vm_hosts": vm_hosts})
        st.save()
        (st.dir / "sock").mkdir(parents=True, exist_ok=True)
        (st.dir / "logs").mkdir(exist_ok=True)
        (st.dir / "config").mkdir(exist_ok=True)
        if kind.hugepage_bytes_per_switch:
            self._ensure_hugepages(len(t.switches), kind.hugepage_bytes_per_switch)
        self.log(f"namespaces: {len(t.switches)} switches, {len(t.hosts)} hosts")
        for s in t.switches:
            st.add_ns(self.ns(s["name"]))
            netns.create(self.ns(s["name"]), kind.namespace_sysctls())
        for h in t.hosts:
            st.add_ns(self.ns(h["name"]))
            # icmp_ratelimit 0: a host answers every traceroute probe (Linux
            # sends a destination 6 ICMP errors, then one a second).
            netns.create(self.ns(h["name"]), ["net.ipv4.conf.all.rp_filter=0",
                                              "net.ipv4.icmp_ratelimit=0"])
        veths = [link for link in t.links if not kind.in_memory(link)]
        mem = len(t.links) - len(veths)
        self.log(f"links: {len(t.links)}" + (f" ({mem} in memory)" if mem else ""))
        for link in veths:
            self._make_link(link)
        for h in t.hosts:
            ns = self.ns(h["name"])
            if h["name"] in vm_hosts:
                continue  # a wire to the VM, which holds the host's address
            netns.add_addr(ns, host_if(), h["addr"], 32)
            netns.add_neighbor(ns, host_if(), h["gateway"], h["edge_mac"])
            netns.add_default_route(ns, host_if(), h["gateway"])
            netns.ethtool_off(ns, host_if())
        kind.up()
        self.push_tables()
        if vm_hosts:
            from . import vmhosts
            vmhosts.start(self, vm_hosts, facts.netdev_mtu(),
                          mem_mb=vm_mem_mb or vmhosts.DEFAULT_MEM_MB, log=self.log)
        st["phase"] = "ready"
        took = round(time.monotonic() - t0, 2)
        st["up_s"] = took
        st.save()
        return took

    def ensure_new(self) -> None:
        """FabricError if a fabric of this name exists (or left something)."""
        if State.load(self.name) is not None or any(
                n.startswith(self.prefix) for n in netns.list_ns()):
            raise FabricError(f"fabric {self.name} exists already (ofan-emu down --name "
                              f"{self.name}, or down --all after a crash)", code=1)

    def _make_link(self, link: Link) -> None:
        t = self.topo
        a_node, a_port = link.a
        b_node, b_port = link.b
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
        self.state.add_ns(w)
        self.state["wires"].append(link.id)
        netns.create(w)
        netns.veth(a_ns, a_if, a_mac, w, "a", "02:0e:00:00:00:0a", facts.netdev_mtu())
        netns.veth(w, "b", "02:0e:00:00:00:0b", b_ns, b_if, b_mac, facts.netdev_mtu())
        for ns_, if_ in ((a_ns, a_if), (b_ns, b_if), (w, "a"), (w, "b")):
            netns.ethtool_off(ns_, if_)
        netns.wire(w, "a", "b", link.attrs)
        self.state.save()

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
        mark = RUN_DIR / "hugepages_before"
        if not mark.exists():
            mark.write_text(str(total))
        with open("/proc/sys/vm/nr_hugepages", "w") as f:
            f.write(str(want))
        got = int(open("/proc/sys/vm/nr_hugepages").read())
        if got < want:
            raise FabricError(f"{nswitches} switches need {need >> 20} MiB of hugepages; "
                              f"the kernel gave {got} of the {want} 2 MiB pages asked for", code=3)
        self.log(f"hugepages: {total} -> {got} (2 MiB)")

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
        """Failed links, and every inter-switch link of a failed switch."""
        out = {lid: self.topo.links[lid] for lid in self.state["failed_links"]}
        for name in self.state["failed_switches"]:
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
        one place the fabric's control plane acts (ofan-agent's job, later)."""
        tabs = self.tables()
        self.kind.configure(tabs)
        return tabs

    # -- failures --------------------------------------------------------
    def set_link(self, link: Link, up: bool) -> None:
        """Both ends of a link (its veths, if it has them) up or down, and
        the switches told."""
        ends = [link.a, link.b]
        for node, port in ends:
            if node in self.state["failed_switches"] and up:
                continue
            if not self.kind.in_memory(link):
                netns.set_link(self.ns(node), port_if(port), up)
            if node in self.topo.sw_by_name and node not in self.state["failed_switches"]:
                self.kind.set_port(node, port, up)

    def _switch_veths(self, name: str, up: bool) -> None:
        """Switch `name`'s veth ports up or down (up: those of links that
        are not failed)."""
        for p in self.topo.sw_by_name[name]["ports"]:
            link = self.topo.link_at(name, p["port"])
            if self.kind.in_memory(link) or (up and link.id in self.state["failed_links"]):
                continue
            netns.set_link(self.ns(name), port_if(p["port"]), up)

    def fail_link(self, link: Link) -> None:
        if link.id in self.state["failed_links"]:
            raise FabricError(f"link {link.name()} is already failed")
        self.state["failed_links"].append(link.id)
        self.state.save()
        self.set_link(link, False)
        self.push_tables()

    def restore_link(self, link: Link) -> None:
        if link.id not in self.state["failed_links"]:
            raise FabricError(f"link {link.name()} is not failed")
        self.state["failed_links"].remove(link.id)
        self.state.save()
        # Up first: a kernel router takes no route over a down link, and
        # ofan-dp uses the link only once the tables say so.
        self.set_link(link, True)
        self.push_tables()

    def fail_switch(self, name: str) -> None:
        if name in self.state["failed_switches"]:
            raise FabricError(f"switch {name} is already failed")
        self.state["failed_switches"].append(name)
        self.state.save()
        # The others route around it first, then it goes dark.
        self.push_tables()
        self._switch_veths(name, False)
        self.kind.fail(name)

    def restore_switch(self, name: str) -> None:
        if name not in self.state["failed_switches"]:
            raise FabricError(f"switch {name} is not failed")
        self._switch_veths(name, True)
        self.state["failed_switches"].remove(name)
        self.state.save()
        self.kind.restore(name)
        self.push_tables()

    def down(self) -> dict[str, Any]:
        """The switches stopped by their kind, then everything the fabric
        made removed (teardown.py): down's report."""
        stopped = self.kind.down()
        report = teardown.down(self.name)
        report["processes"] = sorted(set(report["processes"]) | set(stopped))
        return report

    # -- status ----------------------------------------------------------
    def status(self) -> dict[str, Any]:
        st = self.state
        t = self.topo
        sws = []
        for s in t.switches:
            entry: dict[str, Any] = {
                "name": s["name"], "role": s["role"], "pod": s["pod"], "id": s["id"],
                "ns": self.ns(s["name"]), "failed": s["name"] in st["failed_switches"]}
            proc = self.kind.status(s["name"])
            if proc is not None:
                entry.update(dataclasses.asdict(proc))
            sws.append(entry)
        return {"name": self.name, "switch": st["switch"], "engine": self.kind.engine,
                "k": t.k, "levels": t.levels, "policy": st["policy"],
                "ofan_mode": st.get("ofan_mode"),
                "phase": st.get("phase"), "up_s": st.get("up_s"),
                "switches": sws,
                "hosts": [self._host_status(h) for h in t.hosts],
                "failed_links": [t.links[i].name() for i in st["failed_links"]],
                "failed_switches": list(st["failed_switches"]),
                "wires": len(st.get("wires", []))}

    def vm_hosts(self) -> list[str]:
        return list(self.state.get("vm_hosts", []))

    def _host_status(self, h: HostInfo) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": h["name"], "addr": h["addr"], "ns": self.ns(h["name"]),
                                 "edge": h["edge_name"], "kind": "uroce"}
        if h["name"] in self.vm_hosts():
            rec = self.state["processes"].get(f"vm-{h['name']}", {})
            entry.update({"kind": "vm", "alive": bool("pid" in rec and alive(rec))})
            if entry["alive"]:
                entry["cpu_s"] = _cpu_seconds(rec["pid"])
            entry.update({k: rec[k] for k in ("pid", "boot_s", "mem_mb", "accel", "active_mtu")
                          if k in rec})
        return entry

    # -- reachability ----------------------------------------------------
    def ping_all(self, count: int = 1, timeout_s: float = 2,
                 hosts: list[HostInfo] | None = None) -> dict[tuple[str, str], bool]:
        """All-pairs ping among hosts (from inside the VM for a VM host);
        returns {(src, dst): ok}."""
        import threading
        hs = hosts or self.topo.hosts
        vms = set(self.vm_hosts())
        texts: dict[str, str] = {}
        procs: dict[str, subprocess.Popen[str]] = {}
        threads: list[threading.Thread] = []

        def in_vm(name: str, script: str) -> None:
            from . import vmhosts
            v = vmhosts.attach(self, name)
            try:
                texts[name] = v.exec(["sh", "-c", script], timeout=60 + timeout_s * count)[1]
            finally:
                v.detach()

        for h in hs:
            targets = " ".join(x["addr"] for x in hs if x is not h)
            script = (f"for ip in {targets}; do (ping -n -q -c {count} -W {timeout_s} $ip "
                      ">/dev/null 2>&1 && echo ok $ip || echo no $ip) & done; wait")
            if h["name"] in vms:
                threads.append(threading.Thread(target=in_vm, args=(h["name"], script)))
                threads[-1].start()
            else:
                procs[h["name"]] = subprocess.Popen(
                    ["ip", "netns", "exec", self.ns(h["name"]), "sh", "-c", script],
                    stdout=subprocess.PIPE, text=True)
        for name, p in procs.items():
            texts[name] = p.communicate(timeout=60 + timeout_s * count)[0]
        for t in threads:
            t.join()
        by_addr = {h["addr"]: h["name"] for h in hs}
        out = {(h["name"], x["name"]): False for h in hs for x in hs if x is not h}
        for name, text in texts.items():
            for line in text.strip().splitlines():
                verdict, ip = line.split()
                out[(name, by_addr[ip])] = verdict == "ok"
        return out


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time a process has used (qemu: its VM's cost)."""
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return round((int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK"), 2)
    except (OSError, ValueError, IndexError):
        return None


def load(name: str, log: Callable[[str], None] = print) -> Fabric:
    """The fabric NAME as its state file describes it."""
    st = State.load(name)
    if st is None:
        raise FabricError(f"no fabric {name} (ofan-emu status lists them)")
    if st.get("corrupt") or "k" not in st:
        raise FabricError(f"fabric {name}'s state file is unreadable; ofan-emu down --name {name} "
                          "removes it by its names")
    topo = Topology(st["k"], st["levels"])
    wrong = st.mismatch(topo)
    if wrong:
        raise FabricError(f"fabric {name}'s state file does not fit its fabric ({wrong}); "
                          f"ofan-emu down --name {name} removes it by its names")
    for link in topo.links:
        if str(link.id) in st["links"]:
            link.attrs = st["links"][str(link.id)]
    fab = Fabric(name, topo, st, log=log)
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
