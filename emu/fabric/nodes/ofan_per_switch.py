"""The ofan per-switch kind (--engine per-switch): one ofan-dp process per
switch, inside the switch's namespace, on AF_XDP veths; each switch killable
on its own. A failed switch is its process stopped; restored, started again.

modifies: one ofan-dp per switch namespace, recorded as processes[SWITCH]
          (kind "ofan-dp"), EAL --file-prefix ofe-NAME-SWITCH --in-memory
"""
from typing import Iterable

from .. import teardown
from ..tools import rt_prefix, tool
from .base import SwitchStatus
from .ofan import OfanKind


class OfanPerSwitch(OfanKind):
    engine = "per-switch"

    def up(self) -> None:
        self.start_switches([s.name for s in self.ctx.switches])

    def start_switches(self, names: Iterable[str]) -> None:
        ctx = self.ctx
        dp = tool("ofan-dp")
        procs = {}
        for name in names:
            cfg = self.write_config(self.topo.sw_by_name[name])
            # Both lcores may run on either CPU: twenty switches share two
            # cores and the scheduler balances them (workers sleep when idle).
            procs[name] = self.start(name, rt_prefix() + [
                "ip", "netns", "exec", ctx.ns(name), dp, "--lcores", "(0,1)@(0,1)",
                "--file-prefix", ctx.ns(name), "--in-memory", "--", "--config", cfg], "ofan-dp")
        self.wait_ready({n: n for n in procs}, procs)
        ctx.log(f"switches: {len(procs)} ofan-dp ready")

    def fail(self, name: str) -> None:
        self.stop(name)

    def restore(self, name: str) -> None:
        self.start_switches([name])
        for port in self.failed_ports(name):
            self.set_port(name, port, False)

    def status(self, name: str) -> SwitchStatus:
        return self.process_status(name, name)

    def dead(self) -> list[str]:
        st = self.ctx.state
        return sorted(n for n, rec in st.processes.items()
                      if rec.kind == "ofan-dp" and n not in st.failed_switches
                      and not rec.alive())

    def down(self) -> list[int]:
        return teardown.kill_processes(
            rec.pid for rec in self.ctx.state.processes.values()
            if rec.kind == "ofan-dp" and rec.pid is not None and rec.alive())
