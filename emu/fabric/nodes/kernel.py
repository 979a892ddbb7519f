"""The kernel kind (--switch kernel): each switch a Linux router in its
namespace, with multipath routes (fib_multipath_hash_policy=1, the ECMP
baseline) and a token bucket at the link's rate on every port.

modifies: in each switch namespace: addresses on lo, permanent neighbours,
          a tbf qdisc per port, the routes ofan-topo's tables give; a capture
          runs dumpcap (Wireshark's capture engine) on the router's port
"""
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from .. import netns
from ..tools import FabricError
from ..topology import parse_size
from ..capture import Captured, Wait, count_packets
from .base import SwitchKind, port_if


class Kernel(SwitchKind):
    switch = "kernel"
    engine = "kernel"

    def namespace_sysctls(self) -> list[str]:
        return ["net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1",
                "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"]

    def up(self) -> None:
        ctx, t = self.ctx, self.topo
        for s in t.switches:
            ns = ctx.ns(s.name)
            netns.add_addr(ns, "lo", ctx.router_addr(s.id), 32)
            if s.gateway is not None:  # an edge: its hosts' gateway
                netns.add_addr(ns, "lo", s.gateway, 32)
            for p in s.ports:
                peer = p.peer
                ifname = port_if(p.port)
                peer_ip = (t.hosts[peer.host].addr if peer.host is not None
                           else ctx.router_addr(peer.switch_id()))
                netns.add_neighbor(ns, ifname, peer_ip, peer.mac)
                # The same line rate as ofan-dp emulates, by a token bucket
                # on the router's egress, with the same buffer.
                a = t.link_at(s.name, p.port).attrs
                netns.tc(ns, ["qdisc", "replace", "dev", ifname, "root", "tbf",
                              "rate", f"{a.rate_mbps}mbit", "burst", "32kb",
                              "limit", str(parse_size(a.buffer, "buffer"))])
        ctx.log(f"switches: {len(t.switches)} Linux routers (ECMP, fib_multipath_hash_policy=1)")

    def configure(self, tables: dict[str, Any]) -> None:
        ctx = self.ctx
        down = set(ctx.state.failed_switches)
        dead = ctx.dead_ports()
        for s in tables["switches"]:
            name = s["name"]
            if name in down:
                continue
            ns = ctx.ns(name)
            sw = self.topo.sw_by_name[name]
            for r in s["routes"]:
                hops: list[tuple[str, str | None]] = []
                for port in r["ports"]:
                    if (name, port) in dead:
                        continue  # the kernel refuses a route over a down link
                    peer = sw.ports[port].peer
                    gw = None if peer.host is not None else ctx.router_addr(peer.switch_id())
                    hops.append((port_if(port), gw))
                netns.replace_route(ns, r["prefix"], hops)

    def capture(self, name: str, port: int, count: int, snaplen: int, file: Path,
                wait: Wait) -> Captured:
        dumpcap = shutil.which("dumpcap")
        if not dumpcap:
            raise FabricError("capture: dumpcap is not installed (bash scripts/setup.sh: "
                              "tshark)", code=3)
        cmd = ["ip", "netns", "exec", self.ctx.ns(name), dumpcap, "-q", "-i", port_if(port),
               "-s", str(snaplen), "-w", str(file)]
        if count:
            cmd += ["-c", str(count)]
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
        try:
            why = wait(lambda: p.poll() is not None)
        finally:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)  # dumpcap finishes the file
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        err = p.stderr.read().decode(errors="replace").strip() if p.stderr else ""
        if why == "count" and p.returncode not in (0, None):
            raise FabricError(f"capture: dumpcap on {name}:{port} failed: {err[-300:]}")
        return Captured(count_packets(file), 0, why)
