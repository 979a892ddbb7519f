"""A fabric: its namespaces, links, switches and hosts, brought up and torn
down as one, with failures injected on request.

expects:  root; a Topology (topology.py); the built binaries (tools.py)
modifies: network namespaces "ofe-NAME-*", the veths inside them, one
          ofan-dp per switch namespace (or Linux routing, --switch kernel),
          /run/ofan-emu/NAME/ (state, configs, logs, control sockets), and
          the hugepage reservation when the switches need more than is free
next:     run.py drives collectives over the hosts; control.py talks to the
          switches (tables in, counters out)

The split of control and dataplane is docs/design.md's (rule 6): the tables (valid-uplink
masks per key, or kernel routes) are computed from the topology and the failed
links by ofan-topo and pushed to each switch; the coming ofan-agent takes that
job over per switch, and push_tables() is the one place it happens now.
"""
import functools
import json
import os
import subprocess
import time
from typing import Any, Callable, Iterable

from . import control, facts, netns, teardown
from .state import RUN_DIR, State, alive, prefix, proc_start_time, valid_name
from .tools import FabricError, run, tool
from .topology import (Endpoint, HostInfo, Link, SwitchInfo, Topology, parse_size, parse_tables,
                       rate_gbps)

HUGEPAGE_BYTES_PER_SWITCH = 96 << 20  # mempool + rings at ring_slots 512, with slack
RING_SLOTS = 512
SWITCH_START_TIMEOUT_S = 60
# An idle worker blocks on its AF_XDP sockets (dataplane/idle_wait.h); where
# it cannot, it sleeps up to this long between polls (doubling from 1 us).
IDLE_MAX_SLEEP_US = 5000


# With OFAN_EMU_RT_PRIORITY=N (1..99), switches and hosts run SCHED_FIFO N:
# a woken one runs at once, so a small fabric (a k=4 leaf-spine) keeps its
# links at 100 Mb/s. Off by default: with twenty switches the kernel's
# softirq threads, which carry the veths' frames, starve behind them and
# the fabric stalls (bench/RESULTS.md, "ofan-emu").
RT_PRIORITY = int(os.environ.get("OFAN_EMU_RT_PRIORITY", "0"))


@functools.lru_cache(maxsize=None)
def _rt_allowed() -> bool:
    try:
        return subprocess.run(["chrt", "-f", str(RT_PRIORITY), "true"],
                              capture_output=True).returncode == 0
    except OSError:
        return False


def rt_prefix() -> list[str]:
    """The command prefix that runs a switch or the hosts SCHED_FIFO, or []."""
    return ["chrt", "-f", str(RT_PRIORITY)] if RT_PRIORITY > 0 and _rt_allowed() else []


def host_if() -> str:
    return "eth0"


def port_if(port: int) -> str:
    return f"p{port}"


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
           vm_mem_mb: int | None = None) -> float:
        """vm_hosts: host names whose slot a soft-RoCE VM takes (vmhosts.py)."""
        t = self.topo
        vm_hosts = list(vm_hosts)
        for name in vm_hosts:
            if name not in t.host_by_name:
                raise FabricError(f"VM host {name}: no such host (h0..h{len(t.hosts) - 1})", code=2)
        st = self.state
        if State.load(self.name) is not None or any(
                n.startswith(self.prefix) for n in netns.list_ns()):
            raise FabricError(f"fabric {self.name} exists already (ofan-emu down --name "
                              f"{self.name}, or down --all after a crash)", code=1)
        t0 = time.monotonic()
        st.update({"k": t.k, "levels": t.levels, "switch": switch, "policy": policy,
                   "ofan_mode": ofan_mode, "seed": seed, "pipe_size": pipe_size or t.k,
                   "topology_source": t.source, "created": time.time(), "phase": "up",
                   "failed_links": [], "failed_switches": [],
                   "links": {str(link.id): link.attrs for link in t.links},
                   "wires": [], "vm_hosts": vm_hosts})
        st.save()
        (st.dir / "sock").mkdir(parents=True, exist_ok=True)
        (st.dir / "logs").mkdir(exist_ok=True)
        (st.dir / "config").mkdir(exist_ok=True)
        if switch == "ofan":
            self._ensure_hugepages(len(t.switches))
        self.log(f"namespaces: {len(t.switches)} switches, {len(t.hosts)} hosts")
        router = ["net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1",
                  "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"]
        for s in t.switches:
            st.add_ns(self.ns(s["name"]))
            netns.create(self.ns(s["name"]), router if switch == "kernel" else ())
        for h in t.hosts:
            st.add_ns(self.ns(h["name"]))
            netns.create(self.ns(h["name"]), ["net.ipv4.conf.all.rp_filter=0"])
        self.log(f"links: {len(t.links)}")
        for link in t.links:
            self._make_link(link)
        for h in t.hosts:
            ns = self.ns(h["name"])
            if h["name"] in vm_hosts:
                continue  # a wire to the VM, which holds the host's address
            netns.add_addr(ns, host_if(), h["addr"], 32)
            netns.add_neighbor(ns, host_if(), h["gateway"], h["edge_mac"])
            netns.add_default_route(ns, host_if(), h["gateway"])
            netns.ethtool_off(ns, host_if())
        if switch == "ofan":
            self._start_ofan_switches([s["name"] for s in t.switches])
        else:
            self._setup_kernel_switches()
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

    def _ensure_hugepages(self, nswitches: int) -> None:
        need = nswitches * HUGEPAGE_BYTES_PER_SWITCH
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

    # -- ofan-dp switches ------------------------------------------------
    def switch_config(self, s: SwitchInfo) -> dict[str, Any]:
        """ofan-dp's YAML config for switch s (dataplane/config.h)."""
        t = self.topo
        st = self.state
        ports = []
        for p in s["ports"]:
            a = t.link_at(s["name"], p["port"]).attrs
            ports.append({
                "port": p["port"],
                "dev": f"net_af_xdp{p['port']},iface={port_if(p['port'])},busy_budget=0",
                "mac": p["mac"], "peer_mac": p["peer"]["mac"],
                "egress": {"rate_gbps": rate_gbps(a),
                           "buffer": parse_size(a["buffer"], "buffer"),
                           "ecn": parse_size(a["ecn"], "ecn")}})
        lb: dict[str, Any] = {"policy": st["policy"], "seed": st["seed"]}
        if st["policy"] == "ofan":
            lb["ofan_mode"] = st["ofan_mode"]
        return {"name": f"{self.name}-{s['name']}",
                "fabric": {"k": t.k, "levels": t.levels, "switch": s["id"]},
                "ports": ports, "pipe_size": st["pipe_size"], "lb": lb,
                "egress": {"ring_slots": RING_SLOTS},
                "control": {"socket": self.sock(s["name"])},
                "idle": {"max_sleep_us": IDLE_MAX_SLEEP_US}}

    def _start_ofan_switches(self, names: Iterable[str]) -> None:
        dp = tool("ofan-dp")
        procs: dict[str, subprocess.Popen[bytes]] = {}
        for name in names:
            s = self.topo.sw_by_name[name]
            cfg = self.state.dir / "config" / f"{name}.json"
            cfg.write_text(json.dumps(self.switch_config(s), indent=1))  # JSON is YAML
            logf = open(self.state.dir / "logs" / f"{name}.log", "ab")
            # Both lcores may run on either CPU: twenty switches share two
            # cores and the scheduler balances them (workers sleep when idle).
            cmd = rt_prefix() + ["ip", "netns", "exec", self.ns(name), dp,
                                 "--lcores", "(0,1)@(0,1)", "--file-prefix", self.ns(name),
                                 "--in-memory", "--", "--config", str(cfg)]
            p = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            logf.close()
            procs[name] = p
            self.state["processes"][name] = {"pid": p.pid, "start": proc_start_time(p.pid),
                                             "kind": "ofan-dp"}
            self.state.save()
        # ip netns exec execs the switch: the start time read at once may be
        # the one of `ip`, which is the same process; refresh it when ready.
        end = time.monotonic() + SWITCH_START_TIMEOUT_S
        pending = dict(procs)
        while pending:
            for name, p in list(pending.items()):
                if p.poll() is not None:
                    raise FabricError(f"switch {name} exited ({p.returncode}) while starting: "
                                      f"{self.log_tail(name)}")
                if os.path.exists(self.sock(name)):
                    r = control.request(self.sock(name), "status", timeout=5, check=False)
                    if r is not None:
                        self.state["processes"][name]["start"] = proc_start_time(p.pid)
                        del pending[name]
            if time.monotonic() > end:
                raise FabricError(f"switches not ready after {SWITCH_START_TIMEOUT_S} s: "
                                  f"{', '.join(sorted(pending))}")
            time.sleep(0.1)
        self.state.save()
        self.log(f"switches: {len(procs)} ofan-dp ready")

    def log_tail(self, name: str, lines: int = 8) -> str:
        try:
            text = (self.state.dir / "logs" / f"{name}.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(text.strip().splitlines()[-lines:])

    def stop_switch(self, name: str, timeout: float = 10) -> bool:
        rec = self.state["processes"].get(name)
        if not rec or not alive(rec):
            return False
        return bool(teardown.kill_processes([rec["pid"]], timeout))

    # -- kernel routers --------------------------------------------------
    def router_addr(self, sid: int) -> str:
        """The switch's own address, ofan-topo's (FatTree::switch_addr): an
        ofan-dp switch answers on it and sends ICMP errors from it; a kernel
        router holds it on lo."""
        addr: str = self.topo.switches[sid]["addr"]
        return addr

    def _setup_kernel_switches(self) -> None:
        t = self.topo
        for s in t.switches:
            ns = self.ns(s["name"])
            netns.add_addr(ns, "lo", self.router_addr(s["id"]), 32)
            if s["role"] == "edge":
                netns.add_addr(ns, "lo", s["gateway"], 32)
            for p in s["ports"]:
                peer = p["peer"]
                ifname = port_if(p["port"])
                peer_ip = (t.hosts[peer["host"]]["addr"] if "host" in peer
                           else self.router_addr(peer["switch"]))
                netns.add_neighbor(ns, ifname, peer_ip, peer["mac"])
                # The same line rate as ofan-dp emulates, by a token bucket
                # on the router's egress, with the same buffer.
                a = t.link_at(s["name"], p["port"]).attrs
                netns.tc(ns, ["qdisc", "replace", "dev", ifname, "root", "tbf",
                              "rate", f"{a['rate_mbps']}mbit", "burst", "32kb",
                              "limit", str(parse_size(a["buffer"], "buffer"))])
        self.log(f"switches: {len(t.switches)} Linux routers (ECMP, fib_multipath_hash_policy=1)")

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
        """Computes every switch's table and installs it: the one place the
        fabric's control plane acts (ofan-agent's job, later)."""
        tabs = self.tables()
        down = set(self.state["failed_switches"])
        dead = self.dead_ports()
        for s in tabs["switches"]:
            name = s["name"]
            if name in down:
                continue
            if self.state["switch"] == "ofan":
                if self.topo.sw_by_name[name]["uplinks"] == 0:
                    continue  # cores and spines do not balance
                control.request(self.sock(name), "load_tables", masks=s["masks"])
            else:
                ns = self.ns(name)
                sw = self.topo.sw_by_name[name]
                for r in s["routes"]:
                    hops: list[tuple[str, str | None]] = []
                    for port in r["ports"]:
                        if (name, port) in dead:
                            continue  # the kernel refuses a route over a down link
                        peer = sw["ports"][port]["peer"]
                        gw = None if "host" in peer else self.router_addr(peer["switch"])
                        hops.append((port_if(port), gw))
                    netns.replace_route(ns, r["prefix"], hops)
        return tabs

    # -- failures --------------------------------------------------------
    def set_link(self, link: Link, up: bool) -> None:
        """Both ends of a link (and its wire) up or down, and the switches told."""
        ends = [link.a, link.b]
        for node, port in ends:
            if node in self.state["failed_switches"] and up:
                continue
            netns.set_link(self.ns(node), port_if(port), up)
            if self.state["switch"] == "ofan" and node in self.topo.sw_by_name and \
                    node not in self.state["failed_switches"]:
                control.request(self.sock(node), "set_port", port=port,
                                admin="up" if up else "down")

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
        sw = self.topo.sw_by_name[name]
        for p in sw["ports"]:
            netns.set_link(self.ns(name), port_if(p["port"]), False)
        if self.state["switch"] == "ofan":
            self.stop_switch(name)

    def restore_switch(self, name: str) -> None:
        if name not in self.state["failed_switches"]:
            raise FabricError(f"switch {name} is not failed")
        sw = self.topo.sw_by_name[name]
        for p in sw["ports"]:
            link = self.topo.link_at(name, p["port"])
            if link.id not in self.state["failed_links"]:
                netns.set_link(self.ns(name), port_if(p["port"]), True)
        self.state["failed_switches"].remove(name)
        self.state.save()
        if self.state["switch"] == "ofan":
            self._start_ofan_switches([name])
            for p in sw["ports"]:
                link = self.topo.link_at(name, p["port"])
                if link.id in self.state["failed_links"]:
                    control.request(self.sock(name), "set_port", port=p["port"], admin="down")
        self.push_tables()

    # -- status ----------------------------------------------------------
    def status(self) -> dict[str, Any]:
        st = self.state
        t = self.topo
        sws = []
        for s in t.switches:
            rec = st["processes"].get(s["name"])
            entry: dict[str, Any] = {
                "name": s["name"], "role": s["role"], "pod": s["pod"], "id": s["id"],
                "ns": self.ns(s["name"]), "failed": s["name"] in st["failed_switches"]}
            if st["switch"] == "ofan":
                entry["pid"] = rec["pid"] if rec else None
                entry["alive"] = bool(rec and alive(rec))
                entry["socket"] = self.sock(s["name"])
            sws.append(entry)
        return {"name": self.name, "switch": st["switch"], "k": t.k, "levels": t.levels,
                "policy": st["policy"], "ofan_mode": st.get("ofan_mode"),
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
    return Fabric(name, topo, st, log=log)
