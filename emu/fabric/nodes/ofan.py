"""What both ofan-dp kinds share: a switch's config (dataplane/config.h), its
tables and port states over its control socket, starting ofan-dp processes
and waiting until their switches answer.

modifies: /run/ofan-emu/NAME/config/ (one config per switch), logs/, and the
          state file's "processes" (each process recorded as it starts,
          through the fabric's StateWriter)
"""
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from .. import control, facts, teardown, tools
from ..state import ProcessRecord, alive, proc_start_time
from ..tools import FabricError
from ..topology import SwitchInfo, parse_size
from ..capture import Captured, Wait, count_packets
from .base import SwitchKind, SwitchStatus, port_if

RING_SLOTS = 512
SWITCH_START_TIMEOUT_S = 60
# An idle worker blocks on its AF_XDP sockets (dataplane/idle_wait.h); where
# it cannot, it sleeps up to this long between polls (doubling from 1 us).
IDLE_MAX_SLEEP_US = 5000


class OfanKind(SwitchKind):
    switch = "ofan"
    hugepage_bytes_per_switch = 96 << 20  # mempool + rings at ring_slots 512, with slack

    def switch_config(self, s: SwitchInfo) -> dict[str, Any]:
        """ofan-dp's YAML config for switch s (dataplane/config.h)."""
        ctx, t, st = self.ctx, self.topo, self.ctx.setup
        ports = []
        for p in s.ports:
            a = t.link_at(s.name, p.port).attrs
            ports.append({
                "port": p.port,
                "dev": f"net_af_xdp{p.port},iface={port_if(p.port)},busy_budget=0",
                "mac": p.mac, "peer_mac": p.peer.mac,
                "egress": {"rate_gbps": a.rate_gbps,
                           "buffer": parse_size(a.buffer, "buffer"),
                           "ecn": parse_size(a.ecn, "ecn")}})
        lb: dict[str, Any] = {"policy": st.policy, "seed": st.seed}
        if facts.policy(st.policy).modes:
            lb["ofan_mode"] = st.ofan_mode
        cfg = {"name": self.config_name(s.name),
               "fabric": {"k": t.k, "levels": t.levels, "switch": s.id},
               "ports": ports, "pipe_size": st.pipe_size, "lb": lb,
               "egress": {"ring_slots": RING_SLOTS},
               "control": {"socket": ctx.sock(s.name)},
               "idle": {"max_sleep_us": IDLE_MAX_SLEEP_US}}
        if st.pfc_priority is not None:
            # One lossless priority, RoCE data's DSCP (uroce marks 26), the
            # thresholds derived per port from its buffer and link.
            wd = {k: v for k, v in (("detect_ms", st.pfcwd_detect_ms),
                                    ("restore_ms", st.pfcwd_restore_ms),
                                    ("action", st.pfcwd_action)) if v is not None}
            cfg["pfc"] = {"enabled": True, "priority": st.pfc_priority, "watchdog": wd}
        if st.reorder_kb is not None:
            # An edge's host ports resequence (dataplane/egress/reorder.h);
            # ofan-dp applies it to no other port.
            reorder: dict[str, object] = {"enabled": True, "buffer": st.reorder_kb * 1024}
            if st.reorder_timeout_us is not None:  # else the buffer's drain time
                reorder["timeout_us"] = st.reorder_timeout_us
            cfg["reorder"] = reorder
        if st.control == "agent":
            self.kernel_ports(cfg, s)
        return cfg

    def kernel_ports(self, cfg: dict[str, Any], s: SwitchInfo) -> None:
        """The switch's ports as kernel interfaces for its control plane
        (control_plane.py): here each port between switches is a veth whose
        XDP program (dataplane/xdp/trap.bpf.c) passes LLDP, IPv6 ND, BGP and
        BFD to the kernel and the rest to ofan-dp."""
        trap = tools.trap_bpf()
        for port in cfg["ports"]:
            if not self.topo.link_at(s.name, port["port"]).host:
                port["dev"] += f",xdp_prog={trap}"

    def config_name(self, sw: str) -> str:
        """The switch's name in its config (and in its status)."""
        return f"{self.ctx.name}-{sw}"

    def write_config(self, s: SwitchInfo) -> str:
        cfg = self.ctx.state.dir / "config" / f"{s.name}.json"
        cfg.write_text(json.dumps(self.switch_config(s), indent=1))  # JSON is YAML
        return str(cfg)

    # -- processes -------------------------------------------------------
    def start(self, key: str, cmd: list[str], kind: str) -> "subprocess.Popen[bytes]":
        """Starts one ofan-dp (its own session, output to logs/KEY.log) and
        records it in the state file as processes[KEY]."""
        with open(self.ctx.state.dir / "logs" / f"{key}.log", "ab") as logf:
            p = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        # Recorded at once: a switch in its namespace is found by down
        # anyway, the shared engine by its command line (teardown.py).
        self.ctx.writer.process(key, ProcessRecord(kind, p.pid, proc_start_time(p.pid)))
        return p

    def wait_ready(self, owners: dict[str, str],
                   procs: dict[str, "subprocess.Popen[bytes]"]) -> None:
        """Until every switch in `owners` (switch -> the key of its process
        in procs) answers status on its socket; FabricError with the log's
        end when a process exits, or after SWITCH_START_TIMEOUT_S."""
        ctx = self.ctx
        end = time.monotonic() + SWITCH_START_TIMEOUT_S
        pending = dict(owners)
        while pending:
            for name, key in list(pending.items()):
                p = procs[key]
                if p.poll() is not None:
                    who = f"switch {name}" if key == name else f"ofan-dp ({key})"
                    raise FabricError(f"{who} exited ({p.returncode}) while starting: "
                                      f"{self.log_tail(key)}")
                if os.path.exists(ctx.sock(name)):
                    r = control.request(ctx.sock(name), "status", timeout=5, check=False)
                    if r is not None:
                        del pending[name]
            if time.monotonic() > end:
                raise FabricError(f"switches not ready after {SWITCH_START_TIMEOUT_S} s: "
                                  f"{', '.join(sorted(pending))}")
            time.sleep(0.1)
        # `ip netns exec` and `chrt` exec the switch: the start time read at
        # once may be theirs (the same process); read it again now.
        for key, p in procs.items():
            ctx.writer.process_update(key, start=proc_start_time(p.pid))

    def log_tail(self, key: str, lines: int = 8) -> str:
        return tools.log_tail(self.ctx.state.dir / "logs" / f"{key}.log", lines)

    def stop(self, key: str, timeout: float = 10) -> bool:
        rec = self.ctx.state.processes.get(key)
        if rec is None or rec.pid is None or not rec.alive():
            return False
        return bool(teardown.kill_processes([rec.pid], timeout))

    def process_status(self, key: str, name: str) -> SwitchStatus:
        rec = self.ctx.state.processes.get(key)  # written part way: no pid
        return SwitchStatus(pid=rec.pid if rec else None, alive=alive(rec),
                            socket=self.ctx.sock(name))

    # -- the control socket ----------------------------------------------
    def configure(self, tables: dict[str, Any]) -> None:
        down = set(self.ctx.state.failed_switches)
        for s in tables["switches"]:
            name = s["name"]
            if name in down or self.topo.sw_by_name[name].uplinks == 0 or \
                    not self.ctx.here(name):
                continue  # a failed switch gets its tables when restored; cores and
                # spines do not balance; another server's switch, from its server
            control.request(self.ctx.sock(name), "load_tables", masks=s["masks"])

    def set_port(self, name: str, port: int, up: bool) -> None:
        control.request(self.ctx.sock(name), "set_port", port=port, admin="up" if up else "down")

    def set_wire(self, name: str, port: int, cut: bool) -> None:
        control.request(self.ctx.sock(name), "set_port", port=port, wire="cut" if cut else "ok")

    def failed_ports(self, name: str) -> list[int]:
        """The ports of switch `name` whose link is failed."""
        return [p.port for p in self.topo.sw_by_name[name].ports
                if self.topo.link_at(name, p.port).id in self.ctx.state.failed_links]

    # -- capture -----------------------------------------------------------
    def capture(self, name: str, port: int, count: int, snaplen: int, file: Path,
                wait: Wait) -> Captured:
        """The switch writes the file itself (dataplane/capture/): AF_XDP at
        both ends of a veth sends past the kernel's capture taps."""
        sock = self.ctx.sock(name)
        started = control.request(sock, "capture_start", ports=[port], file=str(file),
                                  count=count, snaplen=snaplen)
        if not isinstance(started, dict) or not isinstance(started.get("id"), int):
            raise FabricError(f"capture: {name} answered capture_start without a capture "
                              f"id: {str(started)[:200]} (an ofan-dp of another version?)")
        cid = started["id"]
        try:
            why = wait(lambda: not control.request(sock, "capture_status", id=cid)["active"])
        finally:
            st = control.request(sock, "capture_stop", check=False, id=cid) or {}
        if st.get("error"):
            raise FabricError(f"capture: {name}: {st['error']}")
        return Captured(int(st.get("frames", count_packets(file))), int(st.get("dropped", 0)),
                        why)
