"""The ofan shared kind (--engine shared): every switch of the fabric as its
own instance (tables, queues, counters, control socket) inside one ofan-dp
process, links between switches in memory, time emulated; AF_XDP only on the
host links, which stay veths (host eth0 <-> switch namespace p<port>), opened
by the engine inside each switch's namespace.

modifies: the per-switch configs (as the per-switch kind writes them, plus
          "netns", "mem:" devices for the ports between switches and each
          port's one-way latency_us), config/fabric.json naming them, and one
          ofan-dp in the root namespace (`-- --fabric config/fabric.json`,
          EAL --file-prefix ofe-NAME-shared --in-memory), recorded as
          processes["engine"] (kind "ofan-dp-shared")

With up --host-io shm a uroce host's port is "shm:STATE_DIR/shm/HOST"
instead (dataplane/hostio/shm_io.h): the engine makes the rings, the
host's uroce attaches; its veth stays, unused by the fabric.

Latency, loss, reordering: a link between switches gets latency_us,
loss_pct and reorder_pct from the engine, on each end's egress (no wire
namespace; netem's meaning: reordered frames skip the latency). A host link
keeps its wire namespace with tc netem for them, as on the per-switch
engine, and its switch port's are 0.
A failed switch is its instance stopped (switch_admin down: it drops and
counts what reaches it, its queues dropped and counted); the process stays.
"""
import json
from typing import Any

from .. import control, teardown
from ..state import alive
from ..tools import rt_prefix, tool
from ..topology import Link, SwitchInfo
from .base import SwitchStatus
from .ofan import OfanKind

ENGINE_KEY = "engine"           # its key in the state file's "processes"
ENGINE_KIND = "ofan-dp-shared"  # and its kind there


class OfanShared(OfanKind):
    engine = "shared"

    def in_memory(self, link: Link) -> bool:
        # A link to another server is a veth at this end (stitch.py).
        return not link.host and not self.ctx.crosses(link)

    def fabric_file(self) -> str:
        return str(self.ctx.state.dir / "config" / "fabric.json")

    def switch_config(self, s: SwitchInfo) -> dict[str, Any]:
        cfg = super().switch_config(s)
        cfg["netns"] = self.ctx.ns(s.name)
        for port in cfg["ports"]:
            link = self.topo.link_at(s.name, port["port"])
            if self.in_memory(link):
                # The cable's real far end (up --miswire may have swapped it).
                peer_name, peer_port = self.ctx.far_end((s.name, port["port"]))
                port["dev"] = f"mem:{self.config_name(peer_name)}:{peer_port}"
                for key in ("latency_us", "loss_pct", "reorder_pct"):
                    port["egress"][key] = float(getattr(link.attrs, key))
            else:
                for key in ("latency_us", "loss_pct", "reorder_pct"):
                    port["egress"][key] = 0.0  # the host link's wire has them (netem)
                if link.host and self.shm_host(link.a[0]):
                    port["dev"] = "shm:" + self.ctx.state.shm_link(link.a[0])
        return cfg

    def shm_host(self, host: str) -> bool:
        """Does this host's link go through shared memory (up --host-io shm;
        a VM host keeps its link)?"""
        return self.ctx.setup.host_io == "shm" and host not in self.ctx.state.vm_hosts

    def kernel_ports(self, cfg: dict[str, Any], s: SwitchInfo) -> None:
        """A TAP per in-memory port in the switch's namespace (linux-cp:
        dataplane/exception/kernel_ports.h); host ports stay veths, which
        no control plane talks over."""
        cfg["control"]["kernel_ports"] = True

    def up(self) -> None:
        ctx = self.ctx
        if self.ctx.setup.host_io == "shm":
            (self.ctx.state.dir / "shm").mkdir(exist_ok=True)
        configs = [self.write_config(s) for s in self.ctx.switches]
        doc: dict[str, Any] = {"switches": configs}
        if self.ctx.setup.host_stamp is not None:
            doc["engine"] = {"host_stamp": self.ctx.setup.host_stamp}
        with open(self.fabric_file(), "w") as f:
            json.dump(doc, f, indent=1)  # JSON is YAML
        # In the root namespace: the engine enters each switch's namespace
        # to open its host ports.
        p = self.start(ENGINE_KEY, rt_prefix() + [
            tool("ofan-dp"), "--lcores", "(0,1)@(0,1)", "--file-prefix", f"{ctx.prefix}shared",
            "--in-memory", "--", "--fabric", self.fabric_file()], ENGINE_KIND)
        self.wait_ready({s.name: ENGINE_KEY for s in self.ctx.switches}, {ENGINE_KEY: p})
        ctx.log(f"switches: {len(self.ctx.switches)} in one ofan-dp (shared engine) ready")

    def admin(self, name: str, up: bool) -> None:
        control.request(self.ctx.sock(name), "switch_admin", admin="up" if up else "down")

    def fail(self, name: str) -> None:
        self.admin(name, False)

    def restore(self, name: str) -> None:
        # The instance kept its ports' admin states while it was down; links
        # restored meanwhile come up, links failed meanwhile go down.
        self.admin(name, True)
        failed = set(self.failed_ports(name))
        for p in self.topo.sw_by_name[name].ports:
            self.set_port(name, p.port, p.port not in failed)

    def engine_alive(self) -> bool:
        return alive(self.ctx.state.processes.get(ENGINE_KEY))

    def status(self, name: str) -> SwitchStatus:
        s = self.process_status(ENGINE_KEY, name)
        s.alive = s.alive and name not in self.ctx.state.failed_switches
        return s

    def dead(self) -> list[str]:
        if self.engine_alive():
            return []
        failed = self.ctx.state.failed_switches
        return [s.name for s in self.ctx.switches if s.name not in failed]

    def down(self) -> list[int]:
        rec = self.ctx.state.processes.get(ENGINE_KEY)
        if rec is None or rec.pid is None or not rec.alive():
            return []
        return teardown.kill_processes([rec.pid])
