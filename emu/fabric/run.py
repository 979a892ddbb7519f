"""One collective per LB policy on a fabric that is up: real RoCEv2 traffic
from uroce hosts, every buffer verified, the switches' queues and counters
pulled before and after, CPU-bound runs flagged, and (--with-sim) the same
scenario in ofan-sim beside it.

expects:  a Fabric (fabric.py) in phase "ready"; uroce and ofan-sim built
gives:    run() -> RunResult (run_rows.py: its to_json() is what `ofan-emu
          run --json` prints: per policy a PolicyRuns of RunRows); table()
          the text for people; plot() a PNG
The hosts' processes are their kinds' (nodes/): the uroce ranks one `uroce
collective` (UroceHosts.collective), each VM rank an ofan-coll over
libibverbs in its VM (RxeVmHosts.exec); their results are merged here.

Across servers (a fabric brought up from a plan), each server's part runs
the ranks of its hosts (one uroce process, the other servers' ranks
external to it: ofan-rc-1 connects them, rank 0's go starts them all) and
reports its own switches (run() with the part's Fabric, each RunRow's
partial result); merge_runs() makes one run of the parts' reports
(parts_from_json reads them back; merge_parts, the same on JSON).

Queues are reported as ofan-sim does: per stage (E->A edge uplinks, A->C agg
uplinks, C->A core ports, A->E agg down ports, E->H edge host ports) and in
data-packet equivalents, max bytes / DATA_FRAME_BYTES.
"""
import dataclasses
import json
import math
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable

from . import control, facts, reports
from .fabric import Fabric
from .nodes import rxe_vm
from .run_rows import (
    DATA_FRAME_BYTES, HEADER, PAYLOAD, SIM_EXTRA_KEYS, Cts, Doc, EngineLag, HostCounts,
    HostsResult, PauseFigures, PolicyRuns, Reorder, RunResult, RunRow, RxeCounts, ServerPart,
    SimPfc, SimRow, StageQueues, SwitchReport, VictimRate, merge_reorder)
from .topology import HostInfo, SwitchInfo, parse_size
from .tools import FabricError, run as run_cmd, tool

# The uroce host pacer's bucket, in data frames; ofan-sim --host-burst gets
# the same. Two (as the switches have) paced smoothly but lost 30% of the
# line time to late wakeups on two shared cores; 32 KiB opened every run
# with a 16-frame burst. Eight: CCT within ~10% of the NIC bound, catch-up
# bursts of at most 8.
HOST_BURST_FRAMES = 8
# ofan-rc-1's TCP port (emu/rcx/rc_exchange.h kDefaultPort, perftest's).
RC_PORT = 18515
# A run on the per-switch engine is CPU-bound when a switch's shaper lost
# more than this fraction of the line time its port used: the link then ran
# that much below its rate (scheduling jitter on two shared cores loses a
# little everywhere, about 1% at the default 25 Mb/s; more than this and the
# queues are the CPU's). On the shared engine time is emulated: a run is
# CPU-bound when the engine says so (its status: engine.cpu_bound, reason).
SHAPER_LAG_LIMIT = 0.05
WORKLOADS = ("perm", "a2a", "allgather", "reducescatter", "incast")
# run --cc: the uroce hosts' congestion control (uroce's dcqcn.h).
CONGESTION_CONTROLS = ("none", "dcqcn")
# Per switch: its {queues, ports, counters} as ofanctl gives them (checked by
# reports.check_snapshot).
Snapshot = dict[str, dict[str, Any]]


@dataclass
class VmRanks:
    """The ofan-coll ranks started in VMs (Runner.start_vm_ranks): per rank
    index, what its exec returned (rc, stdout, stderr) or why it failed."""
    hosts: list[HostInfo]
    outs: dict[int, tuple[int, str, str]] = field(default_factory=dict)
    errs: dict[int, str] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)


def stage_of(sw: SwitchInfo, port: int) -> str:
    """ofan-sim's stage of a switch's egress port, as ofan-topo describes it
    (dataplane/lb/fat_tree.h: FatTree::stage_of)."""
    stage: str = sw.ports[port].stage
    return stage


class Runner:
    def __init__(self, fab: Fabric, log: Callable[[str], None],
                 rto_us: int | None = None) -> None:
        self.fab = fab
        self.log = log
        self.rto_override_us = rto_us  # run --rto-us
        self.topo = fab.topo
        self.ofan = fab.kind.switch == "ofan"
        self.shared = fab.kind.engine == "shared"
        self.bad_progress = 0  # malformed "progress" lines from uroce, skipped
        self.incast_senders = 0  # run --incast-senders (0: every other host)
        self.cc = "none"  # run --cc
        self.victim = False  # run --victim
        self.send_log_dir: str | None = None  # run --send-log: this run's folder
        self.cts: Cts | None = None  # run --cts

    # -- switches ----------------------------------------------------------
    def live_switches(self) -> list[SwitchInfo]:
        """The switches this server runs (every one, without a plan) but
        the failed ones."""
        return self.fab.live_switches()

    def set_policy(self, lb: str) -> None:
        self.fab.set_policy(lb)

    def snapshot(self) -> Snapshot:
        """Per switch: queues, ports, counters (ofan-dp fabrics), each asked
        of every switch by one ofanctl; a failed switch's answer (or its
        silence) is not asked for, a live one's error is the run's."""
        if not self.ofan:
            return {}
        raw = self.fab.ask_live(("queues", "ports", "counters", "status"))
        return {s.name: reports.check_snapshot(raw[s.name], s.name, nports=len(s.ports))
                for s in self.live_switches()}

    def reset_queues(self) -> None:
        if self.ofan:
            for s in self.live_switches():
                control.request(self.fab.ctx.sock(s.name), "reset_queues")

    def switch_report(self, before: Snapshot, after: Snapshot) -> SwitchReport:
        """Queue maxima per stage, ECN marks, drops, and the CPU-bound signals."""
        # Per stage (its egress ports'): the max queue, and with PFC the
        # pause frames those ports received and the time they were paused.
        stages = {st: StageQueues() for st in facts.stages()}
        reasons: list[str] = []
        ecn = 0
        pfc_sent = 0
        pfc_paused_us = 0.0
        # The edges' reorder stages (up --reorder; None: off): the most any
        # host port held since reset_queues, frames released by a timeout.
        reorder: Reorder | None = None
        drops: dict[str, int] = {}
        lag_worst: tuple[float, str | None] = (0.0, None)
        for name, a in after.items():
            b = before.get(name, {})
            sw = self.topo.sw_by_name[name]
            bports = {p["port"]: p for p in b.get("ports", [])}
            bqueues = {q["port"]: q for q in b.get("queues", [])}
            queues = {q["port"]: q for q in a["queues"]}
            for port, q in queues.items():
                s = stages[stage_of(sw, port)]
                s.queues += 1
                s.max_bytes = max(s.max_bytes, q["max_bytes"])
                s.max_pkts = max(s.max_pkts, q["max_bytes"] / DATA_FRAME_BYTES)
                ecn += q["ecn_marked"] - bqueues.get(port, {}).get("ecn_marked", 0)
                f, bf = q.get("pfc"), bqueues.get(port, {}).get("pfc") or {}
                if f:
                    received = f["received"] - bf.get("received", 0)
                    paused = f["paused_us"] - bf.get("paused_us", 0.0)
                    s.pause_frames += received
                    s.paused_us += paused
                    pfc_sent += f["sent"] - bf.get("sent", 0)
                    pfc_paused_us += paused
                ro, bro = q.get("reorder"), bqueues.get(port, {}).get("reorder") or {}
                if ro:
                    was = reorder or Reorder(0, 0.0, 0, 0)
                    reorder = Reorder(max(was.max_bytes, ro["max_bytes"]),
                                      max(was.max_hold_us, ro["max_hold_us"]),
                                      was.timeouts + ro["timeouts"] - bro.get("timeouts", 0),
                                      was.held + ro["held"] - bro.get("held", 0))
            for p in a["ports"]:
                bp = bports.get(p["port"], {})
                missed = p.get("rx_missed", 0) - bp.get("rx_missed", 0)
                if missed > 0:
                    reasons.append(f"{name} port {p['port']}: {missed} frames dropped before "
                                   "the switch polled them (rx_missed)")
                sent = p["tx_bytes"] - bp.get("tx_bytes", 0)
                lag = queues.get(p["port"], {}).get("shaper_lag_bytes", 0)
                if sent > 0 and lag / sent > lag_worst[0]:
                    lag_worst = (lag / sent, f"{name} port {p['port']}")
            for k, v in a["counters"].get("drops", {}).items():
                d = v - b.get("counters", {}).get("drops", {}).get(k, 0)
                if d:
                    drops[k] = drops.get(k, 0) + d
        # The switches' buffers: the most any held (of its capacity, since
        # reset_queues) and the 80 % alarms raised during the run.
        buffer_max_pct = 0.0
        buffer_alarms = 0
        for name, a in after.items():
            ba = a.get("status", {}).get("buffer")
            if not ba:
                continue
            bb = before.get(name, {}).get("status", {}).get("buffer") or {}
            buffer_alarms += ba["alarms"] - bb.get("alarms", 0)
            if ba["capacity_bytes"]:
                buffer_max_pct = max(buffer_max_pct, 100.0 * ba["max_bytes"] / ba["capacity_bytes"])
        engine = None
        if self.shared:
            engine = self.engine_report(before, after, reasons)
        elif lag_worst[0] > SHAPER_LAG_LIMIT:
            reasons.append(f"{lag_worst[1]}: the shaper lost {lag_worst[0]:.1%} of its line "
                           f"time while frames waited (limit {SHAPER_LAG_LIMIT:.0%})")
        return SwitchReport(
            stages=stages, queue_max_pkts=max(s.max_pkts for s in stages.values()),
            ecn_marks=ecn, drops=drops, pfc_pause_frames=pfc_sent, pfc_paused_us=pfc_paused_us,
            lossless_drops=drops.get("lossless", 0), reorder=reorder,
            buffer_max_pct=buffer_max_pct, buffer_alarms=buffer_alarms,
            shaper_lag_max_fraction=lag_worst[0],
            engine_lag_events=None if engine is None else engine.events,
            engine_lag_max_us=None if engine is None else engine.max_us, cpu_reasons=reasons)

    @staticmethod
    def engine_report(before: Snapshot, after: Snapshot, reasons: list[str]) -> EngineLag:
        """The shared engine's verdict over a run: CPU-bound when a switch's
        engine says cpu_bound and fell behind during the run (lag_events
        grew), or said nothing before it; each reason once, with the
        switches that gave it. Adds to `reasons`; returns the lag events
        during the run and the largest lag."""
        by_reason: dict[str, list[str]] = {}
        events = 0
        worst = 0.0
        for name, a in after.items():
            e = reports.engine_stats(a)
            if e is None:
                by_reason.setdefault("its status says nothing of the engine's lag (an "
                                     "ofan-dp without engine stats?)", []).append(name)
                continue
            b = reports.engine_stats(before.get(name, {}))
            grew = e.lag_events - (b.lag_events if b else 0)
            events = max(events, grew)
            worst = max(worst, e.lag_max_us)
            if e.cpu_bound and (b is None or not b.cpu_bound or grew > 0):
                why = e.reason or (f"the engine fell behind the wall clock ({grew} lag events, "
                                   f"max {e.lag_max_us:.0f} us)")
                by_reason.setdefault(why, []).append(name)
        for why, names in by_reason.items():
            who = names[0] if len(names) == 1 else f"{names[0]} and {len(names) - 1} more"
            reasons.append(f"shared engine, {who}: {why}")
        return EngineLag(events, worst)

    def _show_progress(self, err_f: IO[bytes], seen: int) -> int:
        """The hosts' latest "progress DONE TOTAL" line, as a percentage.
        err_f is uroce's stderr, opened in binary; seen, how many bytes of it
        were read before. Returns the new count. Never raises on what uroce
        wrote: a malformed progress line (or bytes that are not UTF-8) is
        skipped and counted in self.bad_progress."""
        err_f.seek(seen)
        chunk = err_f.read()
        chunk = chunk[:chunk.rfind(b"\n") + 1]  # a line still being written: next time
        last = None
        for line in chunk.decode("utf-8", "replace").splitlines():
            if line.split()[:1] != ["progress"]:
                continue  # the hosts' log lines, shown when the run ends
            got = reports.parse_progress(line)
            if got is None:
                self.bad_progress += 1
            else:
                last = got
        if last:
            done, total = last
            msg = f"  {100 * done / total:5.1f}% of {total / 2**20:.1f} MiB delivered"
            if sys.stderr.isatty():
                print("\r" + msg, end="", file=sys.stderr, flush=True)
            else:
                self.log(msg)
        return seen + len(chunk)

    def dead_switches(self) -> list[str]:
        self.sync_failures()
        return self.fab.kind.dead()

    def sync_failures(self) -> None:
        """The failures and processes as the state file has them now: `ofan-emu
        fail` and `restore` change them while a run goes on (a switch failed
        under traffic is not one that died, and its socket is not asked for
        the run's counters)."""
        self.fab.writer.reload()

    # -- hosts ---------------------------------------------------------------
    def rto_us(self) -> int:
        """The retransmission timeout both host stacks get. It scales with
        the links: at 25 Mb/s a data frame takes 0.7 ms, and one full 256 KiB
        buffer 84 ms; a timeout shorter than the queues can hold fires on
        packets that are only late (an all-to-all's incast fills them). 100
        frame times (about rxe's default 67 ms at 25 Mb/s), twice the deepest
        buffer's drain time, and at least 20 ms. uroce asks for ACKs every
        quarter of it. run --rto-us overrides it: a silent failure blackholes
        a path until BFD sees it (0.9 s at 300 ms x 3), longer than the
        seven retries of a timeout this short last.

        With PFC (up --pfc) nothing is dropped, but a port's lossless
        backlog is bounded by its ingress ports' shares, not its buffer:
        up to k - 1 buffers per hop, every switch hop of the longest path
        at once (a congestion tree). A timeout below that fires on packets
        that are only paused, and their copies feed the tree (measured: a
        15-to-1 incast of 256 KiB at 25 Mb/s, 8,796 retransmissions at
        168 ms, none and the bound's CCT at 2.5 s). Twice that bound."""
        if self.rto_override_us is not None:
            return self.rto_override_us
        slowest = min(li.attrs.rate_mbps for li in self.topo.links)
        drain_us = max(parse_size(li.attrs.buffer, "buffer") * 8 / li.attrs.rate_mbps
                       for li in self.topo.links)
        if self.fab.setup.pfc_priority is not None:
            switch_hops = 5 if self.topo.levels == 3 else 3
            drain_us *= (self.topo.k - 1) * switch_hops
        return int(max(20000, 100 * DATA_FRAME_BYTES * 8 / slowest, 2 * drain_us))

    def spec(self, workload: str, msg: int, seed: int, qps: int, entropy: str, ooo: bool,
             pace: float, deadline_s: float, hosts: list[HostInfo]) -> Doc:
        """The collective's spec for uroce (its collective mode's JSON)."""
        rate = {h.name: self.topo.link_at(h.name, 0).attrs.rate_gbps for h in hosts}
        rto_us = self.rto_us()
        # up --host-io shm: the engine's rings (a VM host is never in a uroce spec).
        shm = self.fab.setup.host_io == "shm"
        # The host pacer's bucket: HOST_BURST_FRAMES (ofan-sim gets the same).
        return {"workload": workload, "msg_bytes": msg, "seed": seed, "qps_per_peer": qps,
                "entropy": entropy, "ooo": ooo, "pace_fraction": pace, "mtu": PAYLOAD,
                "deadline_s": deadline_s,
                "burst_bytes": HOST_BURST_FRAMES * (DATA_FRAME_BYTES + facts.wire().gap_bytes),
                "rto_us": rto_us, "incast_senders": self.incast_senders,
                "victim": self.victim, "dcqcn": self.cc == "dcqcn",
                "cts": None if self.cts is None else self.cts.to_json(),
                # The shared engine emulates the hosts' NICs, PFC included;
                # on the per-switch engine uroce's MAC obeys its edge's.
                "pfc_priority": None if self.shared else self.fab.setup.pfc_priority,
                "k": self.topo.k, "levels": self.topo.levels,
                **({"send_log_dir": self.send_log_dir} if self.send_log_dir else {}),
                "hosts": [{"rank": i, "host": h.id, "name": h.name,
                           "netns": self.fab.ctx.ns(h.name), "ifname": "eth0", "mac": h.mac,
                           "ip": h.addr, "gateway_mac": h.edge_mac,
                           "line_rate_gbps": rate[h.name],
                           **({"shm": self.fab.state.shm_link(h.name)} if shm else {})}
                          for i, h in enumerate(hosts)]}

    def start_vm_ranks(self, workload: str, msg: int, seed: int, qps: int, deadline_s: float,
                       hosts: list[HostInfo]) -> VmRanks:
        """Starts one ofan-coll rank (libibverbs) in every VM among `hosts`
        (the collective's ranks, in order), at once, through the agents;
        they connect by ofan-rc-1 over the fabric itself, to each other and
        to any uroce ranks, and start together on rank 0's go. Returns what
        finish_vm_ranks() collects."""
        coll = tool("ofan-coll")
        vms = set(self.fab.vms.names)
        rate = min(self.topo.link_at(h.name, 0).attrs.rate_gbps for h in hosts)
        # The IB local ACK timeout is 4.096 us x 2^N: the first N at or above
        # the timeout uroce gets (168 ms at 25 Mb/s -> N = 16, 268 ms).
        ack_exp = min(31, max(1, math.ceil(math.log2(self.rto_us() / 4.096))))
        base = [coll, "--transport", "verbs", "--device", rxe_vm.RXE_DEV,
                "--ack-timeout", str(ack_exp), "--rc-port", str(RC_PORT),
                "--ranks", str(len(hosts)), "--addrs", ",".join(h.addr for h in hosts),
                "--workload", workload, "--msg", str(msg), "--qps", str(qps),
                "--incast-senders", str(self.incast_senders),
                *(["--victim"] if self.victim else []), *self.cts_args(),
                "--seed", str(seed), "--deadline-ms", str(int(deadline_s * 1000)),
                "--link-gbps", f"{rate:g}", "--rho", "1",
                "--k", str(self.topo.k), "--levels", str(self.topo.levels),
                "--hosts", ",".join(str(h.id) for h in hosts), "--json"]
        job = VmRanks(hosts)

        def rank(i: int, h: HostInfo) -> None:
            try:
                job.outs[i] = self.fab.vms.exec(h.name, base + ["--rank", str(i)],
                                                timeout=deadline_s + 120)
            except Exception as e:  # reported by finish_vm_ranks, with the rank
                job.errs[i] = str(e)

        for i, h in enumerate(hosts):
            if h.name in vms:
                job.threads.append(threading.Thread(target=rank, args=(i, h)))
                job.threads[-1].start()
        return job

    def cts_args(self) -> list[str]:
        """ofan-coll's flags for the run's CTS (none without it)."""
        if self.cts is None:
            return []
        return ["--cts", "--channels", str(self.cts.channels), "--channel-bytes",
                str(self.cts.channel_bytes), "--cts-class", "prio" if self.cts.priority else "data"]

    def finish_vm_ranks(self, job: VmRanks) -> tuple[list[Doc], dict[str, int]]:
        """Waits for the VM ranks; their partial results and rxe's counter
        deltas, summed over the VMs."""
        for t in job.threads:
            t.join()
        hosts = job.hosts
        if job.errs:
            raise FabricError("; ".join(f"rank {i} ({hosts[i].name}): {e}"
                                        for i, e in sorted(job.errs.items())))
        partial: list[Doc] = []
        problems: list[str] = []
        for i, (rc, out, err) in sorted(job.outs.items()):
            try:
                partial.append(coll_partial(hosts[i].name, rc, out, err))
            except FabricError as e:
                problems.append(str(e))
        if problems:
            raise FabricError("; ".join(problems))
        counters: dict[str, int] = {}
        for pj in partial:
            for k, v in pj.get("rxe_counters", {}).items():
                counters[k] = counters.get(k, 0) + v
        return partial, counters

    def merge(self, partial: list[Doc]) -> Doc:
        """One result from the partial results of the processes of one run."""
        return merge_results(partial, str(self.fab.state.dir))

    @staticmethod
    def rxe_totals(counters: dict[str, int]) -> dict[str, int]:
        """What uroce's totals mean, in rxe's words: a sequence-error NAK and
        a timeout both send the requester back N."""
        return {"naks_received": counters.get("rcvd_seq_err", 0),
                "timeouts": counters.get("completer_retry_err", 0),
                "retransmissions": counters.get("rcvd_seq_err", 0)
                + counters.get("completer_retry_err", 0),
                "out_of_sequence": counters.get("out_of_seq_request", 0),
                "duplicates": counters.get("duplicate_request", 0),
                "cnps_received": 0}  # rxe is no DCQCN reaction point

    def run_vms(self, workload: str, msg: int, seed: int, qps: int, deadline_s: float,
                hosts: list[HostInfo]) -> HostsResult:
        """One collective over VM hosts only."""
        job = self.start_vm_ranks(workload, msg, seed, qps, deadline_s, hosts)
        partial, counters = self.finish_vm_ranks(job)
        return HostsResult(self.merge(partial), self.rxe_totals(counters), [], counters)

    def run_mixed(self, spec: Doc, workload: str, msg: int, seed: int, qps: int,
                  deadline_s: float, hosts: list[HostInfo]) -> HostsResult:
        """One collective over VM hosts and uroce hosts together: the uroce
        ranks in one uroce process connecting by ofan-rc-1 (its exchange
        mode; the VM ranks are external to it), the VM ranks as in
        run_vms; the two sides' partial results merged."""
        spec = exchange_spec(spec, hosts, set(self.fab.vms.names))
        job = self.start_vm_ranks(workload, msg, seed, qps, deadline_s, hosts)
        try:
            ures = self.run_hosts(spec, timeout=deadline_s + 60)
        finally:
            partial, counters = self.finish_vm_ranks(job)
        rxe = self.rxe_totals(counters)
        totals = {k: ures.totals.get(k, 0) + rxe[k] for k in rxe}
        return HostsResult(self.merge([ures.result] + partial), totals, ures.hosts, counters)

    def run_hosts(self, spec: Doc, timeout: float) -> HostsResult:
        """One collective over the uroce hosts of `spec` (their kind runs
        the process), its progress shown and the switches watched."""
        self.bad_progress = 0
        seen = 0

        def poll(err_f: IO[bytes]) -> None:
            # Watch the switches while the hosts run: one that dies ends the
            # run at once, with its name, instead of at the hosts' deadline.
            nonlocal seen
            seen = self._show_progress(err_f, seen)
            dead = self.dead_switches()
            if dead:
                raise FabricError(f"switch(es) {', '.join(dead)} died during the run (logs in "
                                  f"{self.fab.state.dir / 'logs'}); the hosts were stopped")

        rc, out, err = self.fab.uroce_hosts.collective(spec, timeout, poll)
        if sys.stderr.isatty() and seen:
            print(file=sys.stderr)
        for line in err.splitlines():
            if line.strip() and line.split()[:1] != ["progress"]:
                self.log(f"  uroce: {line.strip()}")
        if self.bad_progress:
            self.log(f"  uroce: {self.bad_progress} malformed progress line(s) skipped")
        return HostsResult.of_report(host_report(rc, out, err))

    # -- simulator -----------------------------------------------------------
    def sim_link_gbps(self) -> tuple[float, str | None]:
        """The one link rate ofan-sim runs the scenario at: the fabric's, as
        its links have it (a file's per-link values and --link-mbps included,
        not only the defaults). ofan-sim has one rate for every link: where
        the links differ it gets the slowest, and a note says so."""
        rates = sorted({li.attrs.rate_gbps for li in self.topo.links})
        note = None
        if len(rates) > 1:
            note = (f"ofan-sim runs every link at {rates[0]:g} Gb/s (the slowest); the "
                    f"fabric's links run at {', '.join(f'{r:g}' for r in rates)} Gb/s")
        return rates[0], note

    def sim_link_args(self) -> tuple[list[str], list[str]]:
        """ofan-sim's buffer, ECN threshold and latency: the fabric's links',
        so that both see the same ports (ofan-sim has one value of each for
        every link: where the links differ, the smallest, and a note)."""
        args: list[str] = []
        notes: list[str] = []

        def value(key: str, v: Any) -> float:
            return float(v) if key == "latency_us" else float(parse_size(v, key))

        for key, flag in (("buffer", "--buffer"), ("ecn", "--ecn"),
                          ("latency_us", "--latency-us")):
            vals = sorted({value(key, getattr(li.attrs, key)) for li in self.topo.links})
            if len(vals) > 1:
                notes.append(f"ofan-sim runs every link with {key} {vals[0]:.0f} (the smallest "
                             f"of {', '.join(f'{v:.0f}' for v in vals)})")
            args += [flag, f"{vals[0]:g}" if key == "latency_us" else str(int(vals[0]))]
        return args, notes

    def sim(self, lb: str, workload: str, msg: int, seed: int, pace: float,
            hosts: list[HostInfo], ooo: bool = True, kind: str = "uroce") -> SimRow | None:
        """The same scenario in ofan-sim, like for like: the fabric's link
        rate, buffers, ECN threshold and latency, the hosts' pacer (rate
        and bucket), PFC with its watchdog and the edges' resequencing
        where the fabric has them (up --pfc, --reorder), receivers that go
        back N (--receiver gbn) where the hosts have no out-of-order
        placement (uroce without --ooo, rxe), and the hosts' timeout
        (--rto-us): what a buffer drops, ofan-sim's hosts send again as
        the emulated ones do, so a lossy ECMP run gets its CCT too."""
        if workload not in ("perm", "a2a", "incast"):
            return None
        if workload == "incast" and [h.name for h in hosts] != [
                h.name for h in self.topo.hosts]:
            # ofan-sim's host i is the fabric's i-th: the ranks must be all of them.
            self.log("  sim: the incast runs in ofan-sim over every host (--hosts all) only")
            return None
        rate, note = self.sim_link_gbps()
        link_args, notes = self.sim_link_args()
        if self.cc != "none":
            notes.append(f"ofan-sim has no {self.cc}: its hosts send at the pacer's rate")
        if self.cts is not None:
            notes.append("ofan-sim has no CTS admission: its hosts send without clear-to-send")
        gbn = not ooo or kind == "vm"
        if ooo and kind == "mixed":
            notes.append("ofan-sim's receivers are of one kind: all place early packets (the "
                         "rxe hosts' go-back-N is not modelled)")
        for n in ([note] if note else []) + notes:
            self.log(f"  sim: {n}")
        sim_msg = msg if workload != "a2a" else max(1, msg // len(hosts))
        cmd = [tool("ofan-sim"), "--k", str(self.topo.k), "--levels", str(self.topo.levels),
               "--lb", lb, "--workload", workload, "--msg", str(sim_msg), "--seed", str(seed),
               "--link-gbps", str(rate), "--payload", str(PAYLOAD), "--header", str(HEADER),
               "--load", str(pace), "--host-burst", str(HOST_BURST_FRAMES), *link_args,
               "--json", "--no-progress"]
        if workload == "incast" and self.incast_senders:
            cmd += ["--incast-senders", str(self.incast_senders)]
        if self.victim:
            cmd.append("--victim")
        setup = self.fab.setup
        if setup.pfc_priority is not None:
            cmd.append("--pfc")
            for flag, v in (("--pfcwd-detect-ms", setup.pfcwd_detect_ms),
                            ("--pfcwd-restore-ms", setup.pfcwd_restore_ms),
                            ("--pfcwd-action", setup.pfcwd_action)):
                if v is not None:
                    cmd += [flag, str(v)]
        if setup.reorder_kb is not None:
            cmd += ["--reorder", "--reorder-kb", str(setup.reorder_kb)]
            if setup.reorder_timeout_us is not None:
                cmd += ["--reorder-timeout-us", str(setup.reorder_timeout_us)]
        if gbn:
            cmd += ["--receiver", "gbn"]
        cmd += ["--rto-us", str(self.rto_us())]  # ofan-sim's hosts run --cca none
        p = run_cmd(cmd, check=False, timeout=600)
        if p.returncode not in (0, 3):
            raise FabricError(f"ofan-sim failed ({p.returncode}): {last_words(p.stderr)}")
        d = reports.parse_sim_report(p.stdout)
        incomplete = d.get("flows_incomplete", 0) > 0
        if incomplete:
            notes.append(f"ofan-sim left {d['flows_incomplete']} flows incomplete (a flow "
                         "dropped past its hosts' retries?): its CCT is not comparable")
        pfc = None
        if "pfc_pause_frames" in d:  # --pfc: the counts the run rows have, per stage too
            pfc = SimPfc(d["pfc_pause_frames"], d["pfc_paused_us"], d["lossless_drops"],
                         {k: PauseFigures(v.get("pause_frames", 0), v.get("paused_us", 0.0))
                          for k, v in d["stages"].items()})
        return SimRow(
            queue_max_pkts=d["queue_max_pkts"],
            cct_inflation=None if incomplete else d["cct_inflation"],
            cct_us=None if incomplete else d["cct_us"],
            cct_lower_bound_us=d["cct_lower_bound_us"],
            stages={k: v["max_pkts"] for k, v in d["stages"].items()}, link_gbps=rate,
            note="; ".join(([note] if note else []) + notes) or None, pfc=pfc,
            **{k: d.get(k) for k in SIM_EXTRA_KEYS})


def victim_rate(coll: Doc, msg: int, hosts: list[HostInfo], fab: Fabric) -> VictimRate:
    """run --victim: the victim flow's rate (its `msg` over its sender's
    time, first post to last completion) and its share of the sender's
    link; None where the sender's rank did not finish."""
    ranks = coll.get("rank_us") or []
    v = len(hosts) - 1  # the last host sends it (workload::VictimSrc)
    us = ranks[v] if v < len(ranks) else 0
    if not us:
        return VictimRate(None, None)
    gbps = msg * 8 / (us * 1e3)
    line = fab.topo.link_at(hosts[v].name, 0).attrs.rate_gbps
    return VictimRate(gbps, gbps / line)


def exchange_spec(spec: Doc, hosts: list[HostInfo], elsewhere: set[str]) -> Doc:
    """`spec` (of the collective over `hosts`, in rank order) connecting by
    ofan-rc-1 (uroce's exchange mode), the ranks of the hosts named in
    `elsewhere` external: another process runs them (a VM's ofan-coll,
    another server's uroce), and rank 0's go starts them all."""
    return dict(spec, exchange=True, rc_port=RC_PORT,
                hosts=[{"rank": i, "ip": h.addr, "external": True}
                       if h.name in elsewhere else e
                       for i, (h, e) in enumerate(zip(hosts, spec["hosts"]))])


def merge_results(partial: list[Doc], where: str | None = None) -> Doc:
    """One collective's result from the partial results of the processes
    that ran it (ofan-coll merge; temporary files in `where`): verified
    only if every part was; FabricError if they are not one collective."""
    with tempfile.TemporaryDirectory(dir=where) as d:
        paths = []
        for i, pj in enumerate(partial):
            paths.append(os.path.join(d, f"part{i}.json"))
            with open(paths[-1], "w") as f:
                json.dump(pj, f)
        p = run_cmd([tool("ofan-coll"), "merge", *paths], check=False)
    try:
        if p.returncode not in (0, 1):
            raise FabricError(f"exit {p.returncode}")
        return reports.parse_coll_result(p.stdout, "ofan-coll merge's result")
    except FabricError:  # no result: not one collective, or no merge at all
        raise FabricError(f"ofan-coll merge: {last_words(p.stderr)}") from None


def last_words(err: str, n: int = 300) -> str:
    """The end of a program's stderr, on one line (for an error message)."""
    text = " / ".join(line.strip() for line in err.splitlines() if line.strip())
    return ("..." + text[-n:]) if len(text) > n else (text or "(nothing on stderr)")


def host_report(rc: int, out: str, err: str) -> Doc:
    """uroce collective --json's report from its exit code and output; a
    FabricError naming uroce when there is none or it is malformed."""
    if not out.strip():
        raise FabricError(f"uroce failed ({rc}) without a report: {last_words(err, 800)}")
    try:
        return reports.parse_host_report(out)
    except FabricError as e:
        raise FabricError(f"uroce (exit {rc}): {e}") from None


def coll_partial(host: str, rc: int, out: str, err: str) -> Doc:
    """One VM rank's partial result: the last line ofan-coll --json printed;
    a FabricError naming the host and ofan-coll when there is none or it is
    malformed."""
    lines = out.strip().splitlines()
    if not lines:
        raise FabricError(f"{host}: ofan-coll exited {rc} without a result: {last_words(err)}")
    return reports.parse_coll_result(lines[-1], f"{host}: ofan-coll's result (exit {rc})")


def run(fab: Fabric, workload: str, msg: int, lbs: list[str], seeds: int = 1, seed: int = 1,
        qps: int = 1, entropy: str = "qp", ooo: bool = False, pace: float = 0.8,
        with_sim: bool = False, deadline_s: float = 120, hosts: str | None = None,
        log: Callable[[str], None] = print, rto_us: int | None = None,
        incast_senders: int = 0, cc: str = "none", victim: bool = False,
        cts: Cts | None = None, send_log: str | None = None) -> RunResult:
    """incast_senders: with workload incast, how many hosts send to the first
    (0: every other one), spread evenly over the hosts' order. cc: the
    uroce hosts' congestion control (CONGESTION_CONTROLS). victim: with
    the incast, the last host also sends `msg` to the second (the
    receiver's edge neighbour in host order): its rate is the run's
    victim_gbps. cts: receiver-driven admission (cli.cts_from_args), or
    None. send_log: a folder where the uroce hosts write each frame they
    send with its send time, LB-sSEED/HOST.tsv (uroce's collective_mode.h)."""
    if cc not in CONGESTION_CONTROLS:
        raise FabricError(f"--cc {cc}: one of {', '.join(CONGESTION_CONTROLS)}", code=2)
    if workload not in WORKLOADS:
        raise FabricError(f"--workload {workload}: one of {', '.join(WORKLOADS)}", code=2)
    if incast_senders and workload != "incast":
        raise FabricError("--incast-senders: with --workload incast", code=2)
    known = facts.emu_policies()  # ofanctl --list-policies: the one list
    for lb in lbs:
        if lb not in known:
            raise FabricError(f"--lbs {lb}: one of {', '.join(known)}", code=2)
    if fab.state.phase != "ready":
        raise FabricError(f"fabric {fab.name} is not ready (phase {fab.state.phase})")
    r = Runner(fab, log, rto_us)
    hs = pick_hosts(fab, hosts)
    if victim and workload != "incast":
        raise FabricError("--victim: with --workload incast", code=2)
    if victim and len(hs) < 4:
        raise FabricError(f"--victim: 4 hosts or more (the receiver, its neighbour, a sender "
                          f"and the victim's), not {len(hs)}", code=2)
    most = len(hs) - (3 if victim else 1)
    if incast_senders and not 1 <= incast_senders <= most:
        raise FabricError(f"--incast-senders {incast_senders}: 1 to {most} of the "
                          f"{len(hs)} hosts (the first receives"
                          + ("; the victim's two ends do not send to it)" if victim else ")"),
                          code=2)
    r.incast_senders = incast_senders
    r.victim = victim
    kinds = {fab.host_kind(h.name).kind for h in hs}  # uroce, vm or both
    kind = kinds.pop() if len(kinds) == 1 else "mixed"
    if cc != "none" and kind == "vm":
        raise FabricError(f"--cc {cc}: uroce's; rxe (the VM hosts) has no DCQCN reaction point",
                          code=2)
    if cc != "none" and kind == "mixed":
        log(f"--cc {cc}: the uroce hosts only; the rxe VM hosts send at their NICs' rate")
    r.cc = cc
    if cts is not None and kind == "mixed":
        raise FabricError("--cts: uroce hosts or VM hosts, not both in one run (uroce marks "
                          "each clear-to-send's class, rxe a whole QP's: a VM rank sends them "
                          "on a QP of their own, which uroce's ranks do not open)", code=2)
    r.cts = cts
    if send_log is not None and kind != "uroce":
        raise FabricError("--send-log: the uroce hosts' (rxe keeps no send times)", code=2)
    if send_log is not None and fab.plan is not None:
        raise FabricError("--send-log: a fabric on one server", code=2)
    if kind == "vm" and (entropy != "qp" or ooo):
        raise FabricError("--entropy and --ooo are uroce's: rxe has one UDP port per QP pair "
                          "and no out-of-order placement", code=2)
    # On a server's part of a plan: the ranks of the other servers' hosts
    # are their parts' (run --plan FILE --server S on each).
    elsewhere = {h.name for h in hs if not fab.ctx.here(h.name)}
    if len(elsewhere) == len(hs):
        raise FabricError(f"--hosts: none of them is on {fab.server}; every server of a run "
                          "across servers runs some of its ranks", code=2)
    runs = []
    for lb in lbs:
        r.set_policy(lb)
        per_seed: list[RunRow] = []
        for s in range(seed, seed + seeds):
            log(f"run {workload} {msg} B on {len(hs)} hosts, lb {lb}, seed {s}")
            r.reset_queues()
            before = r.snapshot()
            t0 = time.monotonic()
            if kind == "vm":
                res = r.run_vms(workload, msg, s, qps, deadline_s, hs)
            elif kind == "mixed":
                res = r.run_mixed(r.spec(workload, msg, s, qps, entropy, ooo, pace, deadline_s,
                                         hs), workload, msg, s, qps, deadline_s, hs)
            else:
                if send_log is not None:
                    r.send_log_dir = send_log_folder(send_log, lb, s)
                spec = r.spec(workload, msg, s, qps, entropy, ooo, pace, deadline_s, hs)
                if fab.plan is not None:  # the other servers' parts run their hosts' ranks
                    spec = exchange_spec(spec, hs, elsewhere)
                res = r.run_hosts(spec, timeout=deadline_s + 60)
            wall = time.monotonic() - t0
            dead = r.dead_switches()
            if dead:
                raise FabricError(f"switch(es) {', '.join(dead)} died during the run "
                                  f"(logs in {fab.state.dir / 'logs'}); the fabric is broken: "
                                  f"ofan-emu down --name {fab.name}")
            after = r.snapshot()
            sw = r.switch_report(before, after)
            coll = res.result
            host_reasons = [f"{h.get('name', '?')}: {h['tx_refused']} sends refused by its socket"
                            for h in res.hosts if h.get("tx_refused", 0) > 0]
            rxe = None
            if kind != "uroce":
                rxe = RxeCounts(res.rxe_counters or {}, res.totals["duplicates"])
            one = record(lb, s, coll, sw, HostCounts.of_totals(res.totals),
                         sw.cpu_reasons + host_reasons, wall, kind,
                         victim=victim_rate(coll, msg, hs, fab) if victim else None, rxe=rxe,
                         # this server's ranks': merge_runs() merges them
                         partial=coll if fab.plan is not None else None, with_sim=with_sim,
                         sim=r.sim(lb, workload, msg, s, pace, hs, ooo=ooo, kind=kind)
                         if with_sim else None)
            per_seed.append(one)
            log(f"  cct {one.cct_us or 0:.0f} us, max queue {one.queue_max_pkts:.1f} pkts, "
                f"verified {one.verified}, retx {one.counts.retransmissions}"
                + (", CPU-BOUND" if one.cpu_bound else ""))
        runs.append(PolicyRuns.of(per_seed))
    return RunResult(fabric=fab.name, switch=fab.kind.switch, engine=fab.kind.engine,
                     k=fab.topo.k, levels=fab.topo.levels, workload=workload, msg_bytes=msg,
                     seeds=seeds, qps_per_peer=qps, entropy=entropy, ooo=ooo,
                     pace_fraction=pace, hosts=len(hs), host_kind=kind,
                     host_names=[h.name for h in hs], cc=cc, victim=victim, cts=cts, runs=runs)


def send_log_folder(root: str, lb: str, seed: int) -> str:
    """run --send-log ROOT: ROOT/LB-sSEED, made (FabricError, exit 2, where
    it cannot be)."""
    d = Path(root).resolve() / f"{lb}-s{seed}"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FabricError(f"--send-log {root}: cannot make {d}: {e.strerror}", code=2) from e
    return str(d)


def record(lb: str, seed: int, coll: Doc, sw: SwitchReport, counts: HostCounts,
           reasons: list[str], wall: float, kind: str, victim: VictimRate | None = None,
           rxe: RxeCounts | None = None, partial: Doc | None = None,
           servers: dict[str, ServerPart] | None = None, with_sim: bool = False,
           sim: SimRow | None = None) -> RunRow:
    """One run's row, as `run --json` lists it per seed: the collective's
    result, the switches' report (Runner.switch_report), the hosts'
    counters, and why it was CPU-bound, if it was; the rest as RunRow
    has it."""
    cct, bound = coll.get("cct_us"), coll.get("cct_lower_bound_us")
    return RunRow(
        lb=lb, seed=seed, cct_us=cct, cct_lower_bound_us=bound,
        algbw_gbps=coll.get("algbw_gbps"), busbw_gbps=coll.get("busbw_gbps"),
        verified=bool(coll.get("verified")), error=coll.get("error"),
        queue_max_pkts=sw.queue_max_pkts, stages=sw.stages, ecn_marks=sw.ecn_marks,
        drops=sw.drops, pfc_pause_frames=sw.pfc_pause_frames, pfc_paused_us=sw.pfc_paused_us,
        lossless_drops=sw.lossless_drops, reorder=sw.reorder,
        cts_delay_us=coll.get("cts_delay_us"), cts_wait_us=coll.get("cts_wait_us"),
        buffer_max_pct=sw.buffer_max_pct, buffer_alarms=sw.buffer_alarms,
        shaper_lag_max_fraction=sw.shaper_lag_max_fraction,
        engine_lag_events=sw.engine_lag_events, engine_lag_max_us=sw.engine_lag_max_us,
        counts=counts, cpu_bound=bool(reasons), cpu_bound_reasons=reasons,
        wall_s=round(wall, 2), hosts=kind,
        # As ofan-sim and the paper define it: how far above the bound.
        cct_inflation=cct / bound - 1 if cct and bound else None,
        victim=victim, rxe=rxe, partial=partial, servers=servers, with_sim=with_sim, sim=sim)


def parts_from_json(parts: dict[str, Any]) -> dict[str, RunResult]:
    """The `run --json` documents of a run's parts (by server name) read
    back: FabricError naming the server and the place in the first that
    is not one."""
    return {n: RunResult.from_json(d, f"server {n}'s run") for n, d in parts.items()}


def merge_parts(parts: dict[str, Any], where: str | None = None) -> Doc:
    """merge_runs() of the parts' `run --json` documents, as its JSON."""
    return merge_runs(parts_from_json(parts), where).to_json()


def merge_runs(parts: dict[str, RunResult], where: str | None = None) -> RunResult:
    """One run from every server's part of a run across servers (`run
    --plan FILE --server S --json` on each, by server name): per
    policy and seed, the parts' ranks merged into one result (ofan-coll
    merge), their switches' queues and counters into one report (maxima
    of the queues and lags, sums of the marks, drops and host counters),
    CPU-bound if any server's part was (its reasons prefixed with the
    server; per server in "servers"); the simulator's figures from the
    part that ran it. FabricError if the parts did not run one scenario."""
    names = list(parts)
    first = parts[names[0]]
    scenario = ("fabric", "workload", "msg_bytes", "seeds", "qps_per_peer", "host_names")
    for n in names:
        p = parts[n]
        diff = [k for k in scenario if getattr(p, k) != getattr(first, k)]
        if diff or [(r.lb, len(r.per_seed)) for r in p.runs] != \
                [(r.lb, len(r.per_seed)) for r in first.runs]:
            raise FabricError(f"the parts of the run differ ({names[0]} and {n}: "
                              f"{', '.join(diff) or 'lbs'})")
    runs = [PolicyRuns.of([merge_seed({n: parts[n].runs[i].per_seed[j] for n in names}, where)
                           for j in range(len(run0.per_seed))])
            for i, run0 in enumerate(first.runs)]
    return dataclasses.replace(first, runs=runs, servers=names)


def merge_seed(recs: dict[str, RunRow], where: str | None) -> RunRow:
    """merge_runs() for one policy and seed: {server: its part's row}."""
    rs = list(recs.values())
    partial: list[Doc] = []
    for n, r in recs.items():
        if r.partial is None or list(r.stages) != list(rs[0].stages):
            raise FabricError(f"{n}'s part of the run: seed {r.seed} of {r.lb} "
                              + ("has no partial result (not run with --plan --server?)"
                                 if r.partial is None else "has other stages"))
        partial.append(r.partial)
    coll = merge_results(partial, where)
    stages = {st: StageQueues(max(r.stages[st].max_pkts for r in rs),
                              max(r.stages[st].max_bytes for r in rs),
                              sum(r.stages[st].queues for r in rs),
                              sum(r.stages[st].pause_frames for r in rs),
                              sum(r.stages[st].paused_us for r in rs))
              for st in rs[0].stages}
    drops: dict[str, int] = {}
    for r in rs:
        for k, v in r.drops.items():
            drops[k] = drops.get(k, 0) + v
    lag_events = [r.engine_lag_events for r in rs if r.engine_lag_events is not None]
    lag_max_us = [r.engine_lag_max_us for r in rs if r.engine_lag_max_us is not None]
    sw = SwitchReport(
        stages=stages, queue_max_pkts=max(r.queue_max_pkts for r in rs),
        ecn_marks=sum(r.ecn_marks for r in rs), drops=drops,
        pfc_pause_frames=sum(r.pfc_pause_frames for r in rs),
        pfc_paused_us=sum(r.pfc_paused_us for r in rs),
        lossless_drops=sum(r.lossless_drops for r in rs),
        reorder=merge_reorder(r.reorder for r in rs),
        buffer_max_pct=max(r.buffer_max_pct for r in rs),
        buffer_alarms=sum(r.buffer_alarms for r in rs),
        shaper_lag_max_fraction=max(r.shaper_lag_max_fraction for r in rs),
        engine_lag_events=max(lag_events) if lag_events else None,
        engine_lag_max_us=max(lag_max_us) if lag_max_us else None)
    servers = {n: ServerPart(len((r.partial or {})["local_ranks"]), r.cct_us, r.cpu_bound,
                             r.cpu_bound_reasons, r.wall_s) for n, r in recs.items()}
    sim = next((r.sim for r in rs if r.sim is not None), None)
    return record(rs[0].lb, rs[0].seed, coll, sw, HostCounts.total(r.counts for r in rs),
                  [f"{n}: {why}" for n, r in recs.items() for why in r.cpu_bound_reasons],
                  max(r.wall_s for r in rs), rs[0].hosts, servers=servers,
                  with_sim=sim is not None, sim=sim)


def pick_hosts(fab: Fabric, hosts: str | None) -> list[HostInfo]:
    """--hosts: vm, uroce, all, or names; None: the uroce hosts, or the VM
    hosts where there are no others."""
    every = fab.topo.hosts
    if hosts is None:
        hosts = "uroce" if fab.uroce_hosts.names else "vm"
    if hosts in ("vm", "uroce"):  # the host kinds' names
        hs = [h for h in every if fab.host_kind(h.name).kind == hosts]
    elif hosts == "all":
        hs = list(every)
    else:
        names = [x for x in hosts.split(",") if x]
        unknown = [x for x in names if x not in fab.topo.host_by_name]
        if unknown:
            raise FabricError(f"--hosts: {', '.join(unknown)}: no such host (ofan-emu status)",
                              code=2)
        hs = [h for h in every if h.name in names]
    if len(hs) < 2:
        raise FabricError(f"--hosts {hosts}: a collective needs at least two hosts "
                          f"(this fabric has {len(fab.vms.names)} VM host(s))", code=2)
    return hs


def table(res: RunResult) -> str:
    rows_ = [r.row for r in res.runs]
    sim = any(r.sim is not None for r in rows_)
    cc = res.cc != "none"  # run --cc dcqcn: the CNPs the senders heard
    head = (f"{res.workload} of {res.msg_bytes} B on {res.hosts} hosts of a k={res.k} "
            f"{'fat tree' if res.levels == 3 else 'leaf-spine'} ({res.switch} switches"
            + (f", {res.engine} engine" if res.engine != "kernel" else "")
            + "), "
            f"{res.seeds} seed(s), {res.qps_per_peer} QP(s) per peer, "
            + (f"congestion control {res.cc}, " if cc else "")
            + ("rxe hosts in VMs, NICs at the link rate (retx = go-back-N episodes: NAKs + "
               "timeouts)" if res.host_kind == "vm" else
               f"rxe VMs and uroce hosts (paced at {res.pace_fraction:.0%}) together"
               if res.host_kind == "mixed" else
               f"uroce hosts paced at {res.pace_fraction:.0%}"))
    stages = list(rows_[0].stages) if rows_ else []  # in report order
    # A lossless fabric's (up --pfc): pause frames the switches sent, the
    # ports' paused time, lossless drops (0, or a bug).
    pfc = any(r.pfc_pause_frames or r.lossless_drops for r in rows_)
    # The edges' resequencing (up --reorder): the most a host port held,
    # frames a timeout released.
    reorder = any(r.reorder is not None for r in rows_)
    cols = ["lb", "cct_us", "bound_us", "infl", "algbw", "busbw", "qmax_pkts"] + \
        stages + ["ecn", "retx", "naks", "oos", "tmo"] + (["cnps"] if cc else []) + \
        (["victim"] if res.victim else []) + \
        (["cts_p50_us", "cts_p90_us", "wait_p90_us"] if res.cts else []) + \
        (["pauses", "paused_ms", "ll_drops"] if pfc else []) + \
        (["reorder_kb", "reorder_tmo"] if reorder else []) + ["verified", "cpu"]
    if sim:
        cols += ["sim_qmax", "sim_infl"] + (["sim_pauses", "sim_paused_ms"] if pfc else []) + \
            (["sim_reorder_kb"] if reorder else [])
    rows = []
    for r in rows_:
        n = r.counts
        row = [r.lb, _f(r.cct_us, 0), _f(r.cct_lower_bound_us, 0), _f(r.cct_inflation, 2),
               _f(r.algbw_gbps, 3), _f(r.busbw_gbps, 3), _f(r.queue_max_pkts, 1)]
        row += [_f(r.stages[s].max_pkts, 1) for s in stages]
        row += [str(v) for v in (r.ecn_marks, n.retransmissions, n.naks, n.out_of_sequence,
                                 n.timeouts)]
        row += [str(n.cnps)] if cc else []
        if res.victim:  # the victim flow's share of its link
            share = r.victim.share if r.victim else None
            row += ["-" if share is None else f"{share:.0%}"]
        if res.cts:  # how long ready chunks waited for their slot
            d, wt = r.cts_delay_us or {}, r.cts_wait_us or {}
            row += [_f(d.get("p50"), 0), _f(d.get("p90"), 0), _f(wt.get("p90"), 0)]
        if pfc:
            row += [str(r.pfc_pause_frames), _f(r.pfc_paused_us / 1000, 1), str(r.lossless_drops)]
        if reorder:
            ro = r.reorder
            row += [_f(None if ro is None else ro.max_bytes / 1024, 1),
                    str(ro.timeouts if ro else 0)]
        row += ["yes" if r.verified else "NO", "BOUND" if r.cpu_bound else "ok"]
        if sim:
            s = r.sim
            row += [_f(None if s is None else s.queue_max_pkts, 1),
                    _f(None if s is None else s.cct_inflation, 2)]
            if pfc:
                sp = s.pfc if s else None
                row += ["-" if sp is None else str(sp.pause_frames),
                        _f(None if sp is None else sp.paused_us / 1000, 1)]
            if reorder:
                held = s.reorder_max_bytes if isinstance(s, SimRow) else None
                row += [_f(None if held is None else held / 1024, 1)]
        rows.append(row)
    widths = [max(len(c), *(len(x[i]) for x in rows)) for i, c in enumerate(cols)]
    lines = [head, "  ".join(c.rjust(w) for c, w in zip(cols, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in rows]
    cmp_ = res.comparison()
    if cmp_:
        lines.append(f"max-queue ranking, emulated: {' < '.join(cmp_.emu_ranking)}; "
                     f"simulated: {' < '.join(cmp_.sim_ranking)}"
                     + ("" if cmp_.agree else " -- they disagree on " + "; ".join(
                         f"{d.pair[0]} vs {d.pair[1]} (emu {d.emu_pkts[0]:.1f} vs "
                         f"{d.emu_pkts[1]:.1f}, sim {d.sim_pkts[0]:.1f} vs "
                         f"{d.sim_pkts[1]:.1f} pkts)" for d in cmp_.disagreements)))
    queues = res.queue_comparison()
    out = [c for c in queues or [] if not c.within]
    if queues:
        lines.append("max queue (mean over seeds) within max(3 pkts, 30 %) of ofan-sim's: " + (
            "every policy" if not out else "not " + "; ".join(
                f"{c.lb} (emu {c.emu_pkts:.1f}, sim {c.sim_pkts:.1f})" for c in out)))
    for p in res.pfc_comparison() or []:
        if p.emu_pause_frames or p.sim_pause_frames:
            lines.append(
                f"pause {p.lb} {p.stage}: emu {p.emu_pause_frames} frames "
                f"{p.emu_paused_us / 1000:.1f} ms, sim {p.sim_pause_frames:.0f} frames "
                f"{p.sim_paused_us / 1000:.1f} ms"
                + ("" if p.paused_within and p.frames_within else
                   " -- outside max(1 ms, 30 %) / 30 %"))
    for o in res.reorder_comparison() or []:
        lines.append(
            f"reorder {o.lb} seed {o.seed}: a host port held at most "
            f"{o.emu_max_bytes} B emulated, "
            f"{o.sim_max_bytes} B simulated"
            + ("" if o.within else " -- outside max(2 frames, 30 %)"))
    for r in rows_:
        if r.servers:  # across servers: each server's verdict
            lines.append(f"{r.lb} per server: " + ", ".join(
                f"{n} {'CPU-BOUND' if v.cpu_bound else 'ok'}" for n, v in r.servers.items()))
        for why in r.cpu_bound_reasons[:3]:
            lines.append(f"CPU-bound ({r.lb}): {why}")
    return "\n".join(lines)


def _f(v: float | None, nd: int) -> str:
    return "-" if v is None else f"{v:.{nd}f}"


def plot(res: RunResult, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = [r.row for r in res.runs]
    lbs = [r.lb for r in runs]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    x = range(len(lbs))
    emu_q = [r.queue_max_pkts for r in runs]
    bars = axes[0].bar([i - 0.2 for i in x], emu_q, 0.4, label="emulated (ofan-emu)")
    # A CPU-bound run's figures do not count: hatched and marked.
    for b, r in zip(bars, runs):
        if r.cpu_bound:
            b.set_hatch("//")
            b.set_alpha(0.5)
            axes[0].annotate("CPU-bound", (b.get_x() + b.get_width() / 2, b.get_height()),
                             ha="center", va="bottom", fontsize=7, rotation=90)
    sims = [r.sim for r in runs]
    if any(s is not None for s in sims):
        axes[0].bar([i + 0.2 for i in x], [0 if s is None else s.queue_max_pkts for s in sims],
                    0.4, label="simulated (ofan-sim)")
    axes[0].set_xticks(list(x), lbs)
    # Ofan's queues are a few packets, ECMP's hundreds: a log axis shows both.
    axes[0].set_yscale("log")
    axes[0].set_ylabel("max switch queue (data packets, log)")
    axes[0].legend()
    axes[1].bar([i - 0.2 for i in x], [r.cct_inflation or 0 for r in runs], 0.4,
                label="emulated")
    if any(s is not None for s in sims):
        axes[1].bar([i + 0.2 for i in x], [(s.cct_inflation if s else None) or 0 for s in sims],
                    0.4, label="simulated")
    axes[1].set_xticks(list(x), lbs)
    axes[1].set_ylabel("CCT inflation (CCT / NIC-bound - 1)")
    axes[1].axhline(0.0, color="gray", lw=0.8)
    axes[1].legend()
    engine = f", {res.engine} engine" if res.engine != "kernel" else ""
    fig.suptitle(f"{res.workload}, {res.msg_bytes} B, {res.hosts} hosts, k={res.k} "
                 f"({res.switch} switches{engine}); hatched: CPU-bound")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
