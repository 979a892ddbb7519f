"""One collective per LB policy on a fabric that is up: real RoCEv2 traffic
from uroce hosts, every buffer verified, the switches' queues and counters
pulled before and after, CPU-bound runs flagged, and (--with-sim) the same
scenario in ofan-sim beside it.

expects:  a Fabric (fabric.py) in phase "ready"; uroce and ofan-sim built
gives:    run() -> {"runs": [...], ...} as `ofan-emu run --json` prints it;
          table() the text for people; plot() a PNG
The hosts' processes are their kinds' (nodes/): the uroce ranks one `uroce
collective` (UroceHosts.collective), each VM rank an ofan-coll over
libibverbs in its VM (RxeVmHosts.exec); their results are merged here.

Across servers (a fabric brought up from a plan), each server's part runs
the ranks of its hosts (one uroce process, the other servers' ranks
external to it: ofan-rc-1 connects them, rank 0's go starts them all) and
reports its own switches (run() with the part's Fabric, each record's
"partial" result); merge_parts() makes one run of the parts' reports.

Queues are reported as ofan-sim does: per stage (E->A edge uplinks, A->C agg
uplinks, C->A core ports, A->E agg down ports, E->H edge host ports) and in
data-packet equivalents, max bytes / DATA_FRAME_BYTES.
"""
import json
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable

from . import control, facts, reports
from .fabric import Fabric
from .nodes import rxe_vm
from .topology import HostInfo, SwitchInfo, parse_size
from .tools import FabricError, run as run_cmd, tool

# RoCE MTU 2048 of payload + Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4 and
# FCS 4: ofan-sim's --payload 2048 --header 62, so that a "packet" of queue
# means the same on both sides.
PAYLOAD = 2048
HEADER = 62
DATA_FRAME_BYTES = PAYLOAD + HEADER
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
# reports.check_snapshot); and a run's records, as `ofan-emu run --json`
# prints them.
Snapshot = dict[str, dict[str, Any]]
Record = dict[str, Any]


@dataclass
class VmRanks:
    """The ofan-coll ranks started in VMs (Runner.start_vm_ranks): per rank
    index, what its exec returned (rc, stdout, stderr) or why it failed."""
    hosts: list[HostInfo]
    outs: dict[int, tuple[int, str, str]] = field(default_factory=dict)
    errs: dict[int, str] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)


# The reorder stage's figures in a run row (None where it was off).
REORDER_KEYS = ("reorder_max_bytes", "reorder_max_hold_us", "reorder_timeouts", "reorder_held")


def merge_reorder(rows: list[Record]) -> Record:
    """The reorder figures of several rows as one: maxima of the maxima,
    sums of the counts; None where no row had the stage."""
    on = [r for r in rows if r.get("reorder_max_bytes") is not None]
    if not on:
        return {k: None for k in REORDER_KEYS}
    return {"reorder_max_bytes": max(r["reorder_max_bytes"] for r in on),
            "reorder_max_hold_us": max(r["reorder_max_hold_us"] for r in on),
            "reorder_timeouts": sum(r["reorder_timeouts"] for r in on),
            "reorder_held": sum(r["reorder_held"] for r in on)}


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
        self.cts: Record | None = None  # run --cts: the spec's cts

    # -- switches ----------------------------------------------------------
    def live_switches(self) -> list[SwitchInfo]:
        """The switches this server runs (every one, without a plan) but
        the failed ones."""
        return [s for s in self.fab.ctx.switches if s.name not in self.fab.state.failed_switches]

    def set_policy(self, lb: str) -> None:
        if not self.ofan:
            if lb != "ecmp":
                raise FabricError(f"--lbs {lb}: a --switch kernel fabric runs Linux ECMP only "
                                  "(fib_multipath_hash_policy=1); say --lbs ecmp", code=2)
            return
        policy = lb
        # A mode only for the policy that has modes (Ofan's sharing).
        mode = self.fab.setup.ofan_mode if facts.policy(lb).modes else None
        for s in self.live_switches():
            if s.uplinks:
                control.request(self.fab.ctx.sock(s.name), "set_policy", policy=policy,
                                ofan_mode=mode)

    def snapshot(self) -> Snapshot:
        """Per switch: queues, ports, counters (ofan-dp fabrics)."""
        out: Snapshot = {}
        if not self.ofan:
            return out
        for s in self.live_switches():
            sock = self.fab.ctx.sock(s.name)
            snap = {"queues": control.request(sock, "queues"),
                    "ports": control.request(sock, "ports"),
                    "counters": control.request(sock, "counters"),
                    "status": control.request(sock, "status")}
            out[s.name] = reports.check_snapshot(snap, s.name, nports=len(s.ports))
        return out

    def reset_queues(self) -> None:
        if self.ofan:
            for s in self.live_switches():
                control.request(self.fab.ctx.sock(s.name), "reset_queues")

    def switch_report(self, before: Snapshot, after: Snapshot) -> Record:
        """Queue maxima per stage, ECN marks, drops, and the CPU-bound signals."""
        # Per stage (its egress ports'): the max queue, and with PFC the
        # pause frames those ports received and the time they were paused.
        stages: dict[str, dict[str, Any]] = {
            st: {"max_pkts": 0.0, "max_bytes": 0, "queues": 0, "pause_frames": 0,
                 "paused_us": 0.0} for st in facts.stages()}
        reasons: list[str] = []
        ecn = 0
        pfc_sent = 0
        pfc_paused_us = 0.0
        # The edges' reorder stages (up --reorder; None: off): the most any
        # host port held since reset_queues, frames released by a timeout.
        reorder: dict[str, Any] | None = None
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
                s["queues"] += 1
                s["max_bytes"] = max(s["max_bytes"], q["max_bytes"])
                s["max_pkts"] = max(s["max_pkts"], q["max_bytes"] / DATA_FRAME_BYTES)
                ecn += q["ecn_marked"] - bqueues.get(port, {}).get("ecn_marked", 0)
                f, bf = q.get("pfc"), bqueues.get(port, {}).get("pfc") or {}
                if f:
                    received = f["received"] - bf.get("received", 0)
                    paused = f["paused_us"] - bf.get("paused_us", 0.0)
                    s["pause_frames"] += received
                    s["paused_us"] += paused
                    pfc_sent += f["sent"] - bf.get("sent", 0)
                    pfc_paused_us += paused
                ro, bro = q.get("reorder"), bqueues.get(port, {}).get("reorder") or {}
                if ro:
                    if reorder is None:
                        reorder = {"max_bytes": 0, "max_hold_us": 0.0, "timeouts": 0, "held": 0}
                    reorder["max_bytes"] = max(reorder["max_bytes"], ro["max_bytes"])
                    reorder["max_hold_us"] = max(reorder["max_hold_us"], ro["max_hold_us"])
                    for k in ("timeouts", "held"):
                        reorder[k] += ro[k] - bro.get(k, 0)
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
        engine: dict[str, Any] = {"lag_events": None, "lag_max_us": None}
        if self.shared:
            engine = self.engine_report(before, after, reasons)
        elif lag_worst[0] > SHAPER_LAG_LIMIT:
            reasons.append(f"{lag_worst[1]}: the shaper lost {lag_worst[0]:.1%} of its line "
                           f"time while frames waited (limit {SHAPER_LAG_LIMIT:.0%})")
        qmax = max(s["max_pkts"] for s in stages.values())
        return {"stages": stages, "queue_max_pkts": qmax, "ecn_marks": ecn, "drops": drops,
                "pfc_pause_frames": pfc_sent, "pfc_paused_us": pfc_paused_us,
                "lossless_drops": drops.get("lossless", 0),
                "reorder_max_bytes": None if reorder is None else reorder["max_bytes"],
                "reorder_max_hold_us": None if reorder is None else reorder["max_hold_us"],
                "reorder_timeouts": None if reorder is None else reorder["timeouts"],
                "reorder_held": None if reorder is None else reorder["held"],
                "buffer_max_pct": buffer_max_pct, "buffer_alarms": buffer_alarms,
                "shaper_lag_max_fraction": lag_worst[0], "cpu_reasons": reasons,
                "engine_lag_events": engine["lag_events"],
                "engine_lag_max_us": engine["lag_max_us"]}

    @staticmethod
    def engine_report(before: Snapshot, after: Snapshot, reasons: list[str]) -> dict[str, Any]:
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
        return {"lag_events": events, "lag_max_us": worst}

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
             pace: float, deadline_s: float, hosts: list[HostInfo]) -> Record:
        rate = {h.name: self.topo.link_at(h.name, 0).attrs.rate_gbps for h in hosts}
        rto_us = self.rto_us()
        # The host pacer's bucket: HOST_BURST_FRAMES (ofan-sim gets the same).
        return {"workload": workload, "msg_bytes": msg, "seed": seed, "qps_per_peer": qps,
                "entropy": entropy, "ooo": ooo, "pace_fraction": pace, "mtu": PAYLOAD,
                "deadline_s": deadline_s,
                "burst_bytes": HOST_BURST_FRAMES * (DATA_FRAME_BYTES + facts.wire().gap_bytes),
                "rto_us": rto_us, "incast_senders": self.incast_senders,
                "victim": self.victim, "dcqcn": self.cc == "dcqcn", "cts": self.cts,
                # The shared engine emulates the hosts' NICs, PFC included;
                # on the per-switch engine uroce's MAC obeys its edge's.
                "pfc_priority": None if self.shared else self.fab.setup.pfc_priority,
                "k": self.topo.k, "levels": self.topo.levels,
                "hosts": [{"rank": i, "host": h.id, "name": h.name,
                           "netns": self.fab.ctx.ns(h.name), "ifname": "eth0", "mac": h.mac,
                           "ip": h.addr, "gateway_mac": h.edge_mac,
                           "line_rate_gbps": rate[h.name]}
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
        return ["--cts", "--channels", str(self.cts["channels"]), "--channel-bytes",
                str(self.cts["channel_bytes"]),
                "--cts-class", "prio" if self.cts["priority"] else "data"]

    def finish_vm_ranks(self, job: VmRanks) -> tuple[list[Record], dict[str, int]]:
        """Waits for the VM ranks; their partial results and rxe's counter
        deltas, summed over the VMs."""
        for t in job.threads:
            t.join()
        hosts = job.hosts
        if job.errs:
            raise FabricError("; ".join(f"rank {i} ({hosts[i].name}): {e}"
                                        for i, e in sorted(job.errs.items())))
        partial: list[Record] = []
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

    def merge(self, partial: list[Record]) -> Record:
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
                hosts: list[HostInfo]) -> Record:
        """One collective over VM hosts only."""
        job = self.start_vm_ranks(workload, msg, seed, qps, deadline_s, hosts)
        partial, counters = self.finish_vm_ranks(job)
        return {"result": self.merge(partial), "totals": self.rxe_totals(counters),
                "rxe_counters": counters, "hosts": []}

    def run_mixed(self, spec: Record, workload: str, msg: int, seed: int, qps: int,
                  deadline_s: float, hosts: list[HostInfo]) -> Record:
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
        totals = {k: ures.get("totals", {}).get(k, 0) + rxe[k] for k in rxe}
        return {"result": self.merge([ures["result"]] + partial), "totals": totals,
                "rxe_counters": counters, "hosts": ures.get("hosts", [])}

    def run_hosts(self, spec: Record, timeout: float) -> Record:
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
        return host_report(rc, out, err)

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
            hosts: list[HostInfo], ooo: bool = True, kind: str = "uroce") -> Record | None:
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
        out: Record = {
            "queue_max_pkts": d["queue_max_pkts"],
            "cct_inflation": None if incomplete else d["cct_inflation"],
            "cct_us": None if incomplete else d["cct_us"],
            "cct_lower_bound_us": d["cct_lower_bound_us"],
            "stages": {k: v["max_pkts"] for k, v in d["stages"].items()},
            "link_gbps": rate, "note": "; ".join(([note] if note else []) + notes) or None}
        if "pfc_pause_frames" in d:  # --pfc: the counts the run rows have, per stage too
            out.update(pfc_pause_frames=d["pfc_pause_frames"], pfc_paused_us=d["pfc_paused_us"],
                       lossless_drops=d["lossless_drops"],
                       pfc_stages={k: {"pause_frames": v.get("pause_frames", 0),
                                       "paused_us": v.get("paused_us", 0.0)}
                                   for k, v in d["stages"].items()})
        for key in ("reorder_max_bytes", "reorder_max_hold_us", "reorder_timeouts",
                    "reorder_held", "out_of_seq", "naks"):
            if key in d:
                out[key] = d[key]
        return out


def victim_rate(coll: Record, msg: int, hosts: list[HostInfo], fab: Fabric) -> Record:
    """run --victim: the victim flow's rate (its `msg` over its sender's
    time, first post to last completion) and its share of the sender's
    link; None where the sender's rank did not finish."""
    ranks = coll.get("rank_us") or []
    v = len(hosts) - 1  # the last host sends it (workload::VictimSrc)
    us = ranks[v] if v < len(ranks) else 0
    if not us:
        return {"victim_gbps": None, "victim_share": None}
    gbps = msg * 8 / (us * 1e3)
    line = fab.topo.link_at(hosts[v].name, 0).attrs.rate_gbps
    return {"victim_gbps": gbps, "victim_share": gbps / line}


def exchange_spec(spec: Record, hosts: list[HostInfo], elsewhere: set[str]) -> Record:
    """`spec` (of the collective over `hosts`, in rank order) connecting by
    ofan-rc-1 (uroce's exchange mode), the ranks of the hosts named in
    `elsewhere` external: another process runs them (a VM's ofan-coll,
    another server's uroce), and rank 0's go starts them all."""
    return dict(spec, exchange=True, rc_port=RC_PORT,
                hosts=[{"rank": i, "ip": h.addr, "external": True}
                       if h.name in elsewhere else e
                       for i, (h, e) in enumerate(zip(hosts, spec["hosts"]))])


def merge_results(partial: list[Record], where: str | None = None) -> Record:
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


def host_report(rc: int, out: str, err: str) -> Record:
    """uroce collective --json's report from its exit code and output; a
    FabricError naming uroce when there is none or it is malformed."""
    if not out.strip():
        raise FabricError(f"uroce failed ({rc}) without a report: {last_words(err, 800)}")
    try:
        return reports.parse_host_report(out)
    except FabricError as e:
        raise FabricError(f"uroce (exit {rc}): {e}") from None


def coll_partial(host: str, rc: int, out: str, err: str) -> Record:
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
        cts: Record | None = None) -> Record:
    """incast_senders: with workload incast, how many hosts send to the first
    (0: every other one), spread evenly over the hosts' order. cc: the
    uroce hosts' congestion control (CONGESTION_CONTROLS). victim: with
    the incast, the last host also sends `msg` to the second (the
    receiver's edge neighbour in host order): its rate is the run's
    victim_gbps. cts: receiver-driven admission, the spec's cts
    ({channels, channel_bytes, priority}: cli.cts_from_args), or None."""
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
        per_seed = []
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
            coll = res.get("result", {})
            host_reasons = [f"{h.get('name', '?')}: {h['tx_refused']} sends refused by its socket"
                            for h in res.get("hosts", []) if h.get("tx_refused", 0) > 0]
            totals = res.get("totals", {})
            one = record(lb, s, coll, sw, {k: totals.get(u, 0) for k, u in HOST_COUNTS.items()},
                         sw["cpu_reasons"] + host_reasons, wall, kind)
            if victim:
                one.update(victim_rate(coll, msg, hs, fab))
            if kind != "uroce":
                one["rxe_counters"] = res["rxe_counters"]
                one["duplicates"] = res["totals"]["duplicates"]
            if fab.plan is not None:
                one["partial"] = coll  # this server's ranks': merge_parts() merges them
            if with_sim:
                one["sim"] = r.sim(lb, workload, msg, s, pace, hs, ooo=ooo, kind=kind)
            per_seed.append(one)
            log(f"  cct {one['cct_us'] or 0:.0f} us, max queue {one['queue_max_pkts']:.1f} pkts, "
                f"verified {one['verified']}, retx {one['retransmissions']}"
                + (", CPU-BOUND" if one["cpu_bound"] else ""))
        runs.append(_merge(per_seed))
    return {"fabric": fab.name, "switch": fab.kind.switch, "engine": fab.kind.engine,
            "k": fab.topo.k,
            "levels": fab.topo.levels, "workload": workload, "msg_bytes": msg, "seeds": seeds,
            "qps_per_peer": qps, "entropy": entropy, "ooo": ooo, "pace_fraction": pace,
            "hosts": len(hs), "host_kind": kind, "host_names": [h.name for h in hs],
            "cc": cc, "victim": victim, "cts": cts,
            "runs": runs, "comparison": _compare(runs) if with_sim else None,
            "queue_comparison": queue_compare(runs) if with_sim else None,
            "pfc_comparison": pfc_compare(runs) if with_sim else None,
            "reorder_comparison": reorder_compare(runs) if with_sim else None}


# A run's host counters: its record's name -> uroce's totals' name (rxe's
# in Runner.rxe_totals).
HOST_COUNTS = {"retransmissions": "retransmissions", "naks": "naks_received",
               "out_of_sequence": "out_of_sequence", "timeouts": "timeouts",
               "cnps": "cnps_received"}


def record(lb: str, seed: int, coll: Record, sw: Record, counts: dict[str, int],
           reasons: list[str], wall: float, kind: str) -> Record:
    """One run's record, as `run --json` lists it per seed: the collective's
    result, the switches' report (Runner.switch_report), the hosts'
    counters (HOST_COUNTS' names), and why it was CPU-bound, if it was."""
    one = {"lb": lb, "seed": seed, "cct_us": coll.get("cct_us"),
           "cct_lower_bound_us": coll.get("cct_lower_bound_us"),
           "algbw_gbps": coll.get("algbw_gbps"), "busbw_gbps": coll.get("busbw_gbps"),
           "verified": bool(coll.get("verified")), "error": coll.get("error"),
           "queue_max_pkts": sw["queue_max_pkts"], "stages": sw["stages"],
           "ecn_marks": sw["ecn_marks"], "drops": sw["drops"],
           "pfc_pause_frames": sw["pfc_pause_frames"], "pfc_paused_us": sw["pfc_paused_us"],
           "lossless_drops": sw["lossless_drops"],
           **{k: sw.get(k) for k in REORDER_KEYS},
           "cts_delay_us": coll.get("cts_delay_us"), "cts_wait_us": coll.get("cts_wait_us"),
           "buffer_max_pct": sw.get("buffer_max_pct", 0.0),
           "buffer_alarms": sw.get("buffer_alarms", 0),
           "shaper_lag_max_fraction": sw["shaper_lag_max_fraction"],
           "engine_lag_events": sw["engine_lag_events"],
           "engine_lag_max_us": sw["engine_lag_max_us"], **counts,
           "cpu_bound": bool(reasons), "cpu_bound_reasons": reasons,
           "wall_s": round(wall, 2), "hosts": kind}
    if one["cct_us"] and one["cct_lower_bound_us"]:
        # As ofan-sim and the paper define it: how far above the bound.
        one["cct_inflation"] = one["cct_us"] / one["cct_lower_bound_us"] - 1
    return one


def merge_parts(parts: dict[str, Record], where: str | None = None) -> Record:
    """One `run --json` from every server's part of a run across servers
    (`run --plan FILE --server S --json` on each, by server name): per
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
        diff = [k for k in scenario if p.get(k) != first.get(k)]
        if diff or [r["lb"] for r in p["runs"]] != [r["lb"] for r in first["runs"]]:
            raise FabricError(f"the parts of the run differ ({names[0]} and {n}: "
                              f"{', '.join(diff) or 'lbs'})")
    runs = []
    for i, run0 in enumerate(first["runs"]):
        runs.append(_merge([merge_seed({n: parts[n]["runs"][i]["per_seed"][j] for n in names},
                                       where) for j in range(len(run0["per_seed"]))]))
    with_sim = any(r.get("sim") for r in runs)
    return dict(first, runs=runs, servers=names, comparison=_compare(runs) if with_sim else None,
                queue_comparison=queue_compare(runs) if with_sim else None,
                pfc_comparison=pfc_compare(runs) if with_sim else None,
                reorder_comparison=reorder_compare(runs) if with_sim else None)


def merge_seed(recs: dict[str, Record], where: str | None) -> Record:
    """merge_parts() for one policy and seed: {server: its part's record}."""
    rs = list(recs.values())
    coll = merge_results([r["partial"] for r in rs], where)
    stages = {st: {"max_pkts": max(r["stages"][st]["max_pkts"] for r in rs),
                   "max_bytes": max(r["stages"][st]["max_bytes"] for r in rs),
                   "queues": sum(r["stages"][st]["queues"] for r in rs),
                   "pause_frames": sum(r["stages"][st].get("pause_frames", 0) for r in rs),
                   "paused_us": sum(r["stages"][st].get("paused_us", 0.0) for r in rs)}
              for st in rs[0]["stages"]}
    drops: dict[str, int] = {}
    for r in rs:
        for k, v in r["drops"].items():
            drops[k] = drops.get(k, 0) + v
    lags = {k: [r[k] for r in rs if r.get(k) is not None]
            for k in ("engine_lag_events", "engine_lag_max_us")}
    sw = {"stages": stages, "queue_max_pkts": max(r["queue_max_pkts"] for r in rs),
          "ecn_marks": sum(r["ecn_marks"] for r in rs), "drops": drops,
          "pfc_pause_frames": sum(r.get("pfc_pause_frames", 0) for r in rs),
          "pfc_paused_us": sum(r.get("pfc_paused_us", 0.0) for r in rs),
          "lossless_drops": sum(r.get("lossless_drops", 0) for r in rs),
          **merge_reorder(rs),
          "buffer_max_pct": max(r.get("buffer_max_pct", 0.0) for r in rs),
          "buffer_alarms": sum(r.get("buffer_alarms", 0) for r in rs),
          "shaper_lag_max_fraction": max(r["shaper_lag_max_fraction"] for r in rs),
          **{k: max(v) if v else None for k, v in lags.items()}}
    one = record(rs[0]["lb"], rs[0]["seed"], coll, sw,
                 {k: sum(r[k] for r in rs) for k in HOST_COUNTS},
                 [f"{n}: {why}" for n, r in recs.items() for why in r["cpu_bound_reasons"]],
                 max(r["wall_s"] for r in rs), rs[0]["hosts"])
    one["servers"] = {n: {"ranks": len(r["partial"]["local_ranks"]), "cct_us": r["cct_us"],
                          "cpu_bound": r["cpu_bound"], "cpu_bound_reasons": r["cpu_bound_reasons"],
                          "wall_s": r["wall_s"]} for n, r in recs.items()}
    sim = next((r["sim"] for r in rs if r.get("sim")), None)
    if sim is not None:
        one["sim"] = sim
    return one


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


def _merge(per_seed: list[Record]) -> Record:
    """Mean over seeds of the numbers; any seed's failure fails the run."""
    if len(per_seed) == 1:
        return dict(per_seed[0], per_seed=per_seed)
    out: Record = {"lb": per_seed[0]["lb"], "per_seed": per_seed}
    for k in ("cct_us", "cct_lower_bound_us", "algbw_gbps", "busbw_gbps", "queue_max_pkts",
              "cct_inflation", "shaper_lag_max_fraction", "victim_gbps", "victim_share"):
        vals = [x[k] for x in per_seed if x.get(k) is not None]
        out[k] = statistics.mean(vals) if vals else None
    for k in ("retransmissions", "naks", "out_of_sequence", "timeouts", "ecn_marks", "cnps",
              "pfc_pause_frames", "lossless_drops", "buffer_alarms"):
        out[k] = sum(x.get(k, 0) for x in per_seed)
    out["buffer_max_pct"] = max(x.get("buffer_max_pct", 0.0) for x in per_seed)
    out.update(merge_reorder(per_seed))
    for key in ("cts_delay_us", "cts_wait_us"):
        cts = [x[key] for x in per_seed if x.get(key)]
        out[key] = {q: statistics.mean(c[q] for c in cts) for q in ("p50", "p90")} \
            if cts else None
    out["pfc_paused_us"] = statistics.mean(x.get("pfc_paused_us", 0.0) for x in per_seed)
    out["verified"] = all(x["verified"] for x in per_seed)
    out["hosts"] = per_seed[0].get("hosts")
    if per_seed[0].get("rxe_counters") is not None:
        out["duplicates"] = sum(x.get("duplicates", 0) for x in per_seed)
        out["rxe_counters"] = {}
        for x in per_seed:
            for k, v in x["rxe_counters"].items():
                out["rxe_counters"][k] = out["rxe_counters"].get(k, 0) + v
    out["error"] = next((x["error"] for x in per_seed if x.get("error")), None)
    out["cpu_bound"] = any(x["cpu_bound"] for x in per_seed)
    out["cpu_bound_reasons"] = [r for x in per_seed for r in x["cpu_bound_reasons"]]
    if per_seed[0].get("servers"):  # a run across servers (merge_parts): each one's verdict
        out["servers"] = {n: {"cpu_bound": any(x["servers"][n]["cpu_bound"] for x in per_seed),
                              "cpu_bound_reasons": [r for x in per_seed
                                                    for r in x["servers"][n]["cpu_bound_reasons"]]}
                          for n in per_seed[0]["servers"]}
    out["stages"] = {st: {k: statistics.mean(x["stages"][st].get(k, 0) for x in per_seed)
                          for k in ("max_pkts", "pause_frames", "paused_us")}
                     for st in per_seed[0]["stages"]}  # switch_report's order: facts.stages()
    if per_seed[0].get("sim"):
        sims = [x["sim"] for x in per_seed if x.get("sim")]
        infl = [s["cct_inflation"] for s in sims if s.get("cct_inflation") is not None]
        out["sim"] = {"queue_max_pkts": statistics.mean(s["queue_max_pkts"] for s in sims),
                      "cct_inflation": statistics.mean(infl) if len(infl) == len(sims) else None,
                      "stages": {st: statistics.mean(s["stages"].get(st, 0) for s in sims)
                                 for st in sims[0]["stages"]}}
        if "pfc_stages" in sims[0]:
            out["sim"]["pfc_pause_frames"] = sum(s["pfc_pause_frames"] for s in sims)
            out["sim"]["pfc_paused_us"] = statistics.mean(s["pfc_paused_us"] for s in sims)
            out["sim"]["lossless_drops"] = sum(s["lossless_drops"] for s in sims)
            out["sim"]["pfc_stages"] = {
                st: {k: statistics.mean(s["pfc_stages"][st][k] for s in sims)
                     for k in ("pause_frames", "paused_us")} for st in sims[0]["pfc_stages"]}
    return out


def _compare(runs: list[Record]) -> Record | None:
    """Does the emulated ranking of max queues follow the simulated one?"""
    with_sim = [r for r in runs if r.get("sim")]
    if len(with_sim) < 2:
        return None
    emu_rank = [r["lb"] for r in sorted(with_sim, key=lambda r: r["queue_max_pkts"])]
    sim_rank = [r["lb"] for r in sorted(with_sim, key=lambda r: r["sim"]["queue_max_pkts"])]
    disagree = []
    for i, a in enumerate(with_sim):
        for b in with_sim[i + 1:]:
            e = a["queue_max_pkts"] - b["queue_max_pkts"]
            s = a["sim"]["queue_max_pkts"] - b["sim"]["queue_max_pkts"]
            if e * s < 0:
                disagree.append({"pair": [a["lb"], b["lb"]],
                                 "emu_pkts": [a["queue_max_pkts"], b["queue_max_pkts"]],
                                 "sim_pkts": [a["sim"]["queue_max_pkts"],
                                              b["sim"]["queue_max_pkts"]]})
    return {"emu_ranking": emu_rank, "sim_ranking": sim_rank, "agree": not disagree,
            "disagreements": disagree}


# Emulated vs simulated pause, per stage: paused time within the larger of
# 1 ms and 30 %, pause frames within 30 % (the lossless fabric's fidelity aim).
PAUSE_TIME_SLACK_US = 1000.0
PAUSE_REL_SLACK = 0.30


def pfc_compare(runs: list[Record]) -> list[Record] | None:
    """Per policy and stage, the emulator's pause frames and paused time
    beside the simulator's, and whether each is within the aim; None
    when no run had PFC in both."""
    out = []
    for r in runs:
        s = r.get("sim") or {}
        if "pfc_stages" not in s:
            continue
        for st, e in r["stages"].items():
            m = s["pfc_stages"].get(st)
            if m is None:
                continue
            dt = abs(e.get("paused_us", 0.0) - m["paused_us"])
            df = abs(e.get("pause_frames", 0) - m["pause_frames"])
            out.append({"lb": r["lb"], "stage": st,
                        "emu_pause_frames": e.get("pause_frames", 0),
                        "sim_pause_frames": m["pause_frames"],
                        "emu_paused_us": e.get("paused_us", 0.0), "sim_paused_us": m["paused_us"],
                        "paused_within": dt <= max(PAUSE_TIME_SLACK_US,
                                                   PAUSE_REL_SLACK * m["paused_us"]),
                        "frames_within": df <= PAUSE_REL_SLACK * max(m["pause_frames"], 1)})
    return out or None


# Emulated vs simulated max queue per policy, the mean over its seeds:
# within the larger of three data packets and 30 % (the fidelity aim the
# README states and tests/emu/fabric/fidelity_test.py holds in CI). Per
# seed the two differ more under a randomised policy (RPS, AR): the
# emulator's and the simulator's random draws are not the same ones, and
# one seed's max queue is one most-delayed moment (bench/RESULTS.md).
QUEUE_SLACK_PKTS = 3.0
QUEUE_REL_SLACK = 0.30


def queue_within(emu_pkts: float, sim_pkts: float) -> bool:
    """Is the emulated max queue within the aim of the simulated one?"""
    return abs(emu_pkts - sim_pkts) <= max(QUEUE_SLACK_PKTS, QUEUE_REL_SLACK * sim_pkts)


def queue_compare(runs: list[Record]) -> list[Record] | None:
    """Per policy, the fabric's max queue emulated beside simulated in data
    packets (the mean over the seeds that were simulated, each seed's
    beside it), and whether the means are within the aim; None when no
    run was simulated."""
    out = []
    for r in runs:
        seeds = [{"seed": one.get("seed"), "emu_pkts": one["queue_max_pkts"],
                  "sim_pkts": one["sim"]["queue_max_pkts"]}
                 for one in r.get("per_seed") or [r] if one.get("sim")]
        if not seeds:
            continue
        e = statistics.mean(x["emu_pkts"] for x in seeds)
        m = statistics.mean(x["sim_pkts"] for x in seeds)
        out.append({"lb": r["lb"], "emu_pkts": e, "sim_pkts": m, "within": queue_within(e, m),
                    "seeds": seeds})
    return out or None


# Emulated vs simulated reorder depth (the most a host port held), per
# policy: within the larger of two data frames and 30 % (the aim).
REORDER_SLACK_FRAMES = 2
REORDER_REL_SLACK = 0.30


def reorder_within(emu_bytes: int, sim_bytes: int) -> bool:
    """Is the emulated depth within the aim of the simulated one?"""
    return abs(emu_bytes - sim_bytes) <= max(REORDER_SLACK_FRAMES * (PAYLOAD + HEADER),
                                             REORDER_REL_SLACK * sim_bytes)


def reorder_compare(runs: list[Record]) -> list[Record] | None:
    """Per policy and seed (each seed's run has its simulation), the most
    an edge's host port held in the emulator beside the simulator, and
    whether it is within the aim; None when no run had the edges
    resequencing in both."""
    out = []
    for r in runs:
        for one in r.get("per_seed") or [r]:
            s = one.get("sim") or {}
            e, m = one.get("reorder_max_bytes"), s.get("reorder_max_bytes")
            if e is None or m is None:
                continue
            out.append({"lb": one["lb"], "seed": one.get("seed"), "emu_max_bytes": e,
                        "sim_max_bytes": m, "emu_max_hold_us": one.get("reorder_max_hold_us"),
                        "sim_max_hold_us": s.get("reorder_max_hold_us"),
                        "within": reorder_within(e, m)})
    return out or None


def table(res: Record) -> str:
    sim = any(r.get("sim") for r in res["runs"])
    cc = res.get("cc", "none") != "none"  # run --cc dcqcn: the CNPs the senders heard
    head = (f"{res['workload']} of {res['msg_bytes']} B on {res['hosts']} hosts of a k={res['k']} "
            f"{'fat tree' if res['levels'] == 3 else 'leaf-spine'} ({res['switch']} switches"
            + (f", {res['engine']} engine" if res.get("engine", "kernel") != "kernel" else "")
            + "), "
            f"{res['seeds']} seed(s), {res['qps_per_peer']} QP(s) per peer, "
            + (f"congestion control {res['cc']}, " if cc else "")
            + ("rxe hosts in VMs, NICs at the link rate (retx = go-back-N episodes: NAKs + "
               "timeouts)" if res.get("host_kind") == "vm" else
               f"rxe VMs and uroce hosts (paced at {res['pace_fraction']:.0%}) together"
               if res.get("host_kind") == "mixed" else
               f"uroce hosts paced at {res['pace_fraction']:.0%}"))
    stages = list(res["runs"][0]["stages"]) if res["runs"] else []  # in report order
    # A lossless fabric's (up --pfc): pause frames the switches sent, the
    # ports' paused time, lossless drops (0, or a bug).
    pfc = any(r.get("pfc_pause_frames") or r.get("lossless_drops") for r in res["runs"])
    # The edges' resequencing (up --reorder): the most a host port held,
    # frames a timeout released.
    reorder = any(r.get("reorder_max_bytes") is not None for r in res["runs"])
    cols = ["lb", "cct_us", "bound_us", "infl", "algbw", "busbw", "qmax_pkts"] + \
        stages + ["ecn", "retx", "naks", "oos", "tmo"] + (["cnps"] if cc else []) + \
        (["victim"] if res.get("victim") else []) + \
        (["cts_p50_us", "cts_p90_us", "wait_p90_us"] if res.get("cts") else []) + \
        (["pauses", "paused_ms", "ll_drops"] if pfc else []) + \
        (["reorder_kb", "reorder_tmo"] if reorder else []) + ["verified", "cpu"]
    if sim:
        cols += ["sim_qmax", "sim_infl"] + (["sim_pauses", "sim_paused_ms"] if pfc else []) + \
            (["sim_reorder_kb"] if reorder else [])
    rows = []
    for r in res["runs"]:
        row = [r["lb"], _f(r.get("cct_us"), 0), _f(r.get("cct_lower_bound_us"), 0),
               _f(r.get("cct_inflation"), 2), _f(r.get("algbw_gbps"), 3),
               _f(r.get("busbw_gbps"), 3), _f(r.get("queue_max_pkts"), 1)]
        row += [_f(r["stages"][s]["max_pkts"], 1) for s in stages]
        row += [str(r.get(k, 0)) for k in ("ecn_marks", "retransmissions", "naks",
                                           "out_of_sequence", "timeouts")]
        row += [str(r.get("cnps", 0))] if cc else []
        if res.get("victim"):  # the victim flow's share of its link
            share = r.get("victim_share")
            row += ["-" if share is None else f"{share:.0%}"]
        if res.get("cts"):  # how long ready chunks waited for their slot
            d, wt = r.get("cts_delay_us") or {}, r.get("cts_wait_us") or {}
            row += [_f(d.get("p50"), 0), _f(d.get("p90"), 0), _f(wt.get("p90"), 0)]
        if pfc:
            row += [str(r.get("pfc_pause_frames", 0)),
                    _f(r.get("pfc_paused_us", 0.0) / 1000, 1), str(r.get("lossless_drops", 0))]
        if reorder:
            held = r.get("reorder_max_bytes")
            row += [_f(None if held is None else held / 1024, 1),
                    str(r.get("reorder_timeouts") or 0)]
        row += ["yes" if r["verified"] else "NO", "BOUND" if r["cpu_bound"] else "ok"]
        if sim:
            s = r.get("sim") or {}
            row += [_f(s.get("queue_max_pkts"), 1), _f(s.get("cct_inflation"), 2)]
            if pfc:
                row += [str(s.get("pfc_pause_frames", "-")),
                        _f(s["pfc_paused_us"] / 1000 if "pfc_paused_us" in s else None, 1)]
            if reorder:
                held = s.get("reorder_max_bytes")
                row += [_f(None if held is None else held / 1024, 1)]
        rows.append(row)
    widths = [max(len(c), *(len(x[i]) for x in rows)) for i, c in enumerate(cols)]
    lines = [head, "  ".join(c.rjust(w) for c, w in zip(cols, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in rows]
    cmp_ = res.get("comparison")
    if cmp_:
        lines.append(f"max-queue ranking, emulated: {' < '.join(cmp_['emu_ranking'])}; "
                     f"simulated: {' < '.join(cmp_['sim_ranking'])}"
                     + ("" if cmp_["agree"] else " -- they disagree on " + "; ".join(
                         f"{d['pair'][0]} vs {d['pair'][1]} (emu {d['emu_pkts'][0]:.1f} vs "
                         f"{d['emu_pkts'][1]:.1f}, sim {d['sim_pkts'][0]:.1f} vs "
                         f"{d['sim_pkts'][1]:.1f} pkts)" for d in cmp_["disagreements"])))
    out = [c for c in res.get("queue_comparison") or [] if not c["within"]]
    if res.get("queue_comparison"):
        lines.append("max queue (mean over seeds) within max(3 pkts, 30 %) of ofan-sim's: " + (
            "every policy" if not out else "not " + "; ".join(
                f"{c['lb']} (emu {c['emu_pkts']:.1f}, sim {c['sim_pkts']:.1f})" for c in out)))
    for c in res.get("pfc_comparison") or []:
        if c["emu_pause_frames"] or c["sim_pause_frames"]:
            lines.append(
                f"pause {c['lb']} {c['stage']}: emu {c['emu_pause_frames']} frames "
                f"{c['emu_paused_us'] / 1000:.1f} ms, sim {c['sim_pause_frames']:.0f} frames "
                f"{c['sim_paused_us'] / 1000:.1f} ms"
                + ("" if c["paused_within"] and c["frames_within"] else
                   " -- outside max(1 ms, 30 %) / 30 %"))
    for c in res.get("reorder_comparison") or []:
        lines.append(
            f"reorder {c['lb']} seed {c['seed']}: a host port held at most "
            f"{c['emu_max_bytes']} B emulated, "
            f"{c['sim_max_bytes']} B simulated"
            + ("" if c["within"] else " -- outside max(2 frames, 30 %)"))
    for r in res["runs"]:
        if r.get("servers"):  # across servers: each server's verdict
            lines.append(f"{r['lb']} per server: " + ", ".join(
                f"{n} {'CPU-BOUND' if v['cpu_bound'] else 'ok'}" for n, v in r["servers"].items()))
        for why in r["cpu_bound_reasons"][:3]:
            lines.append(f"CPU-bound ({r['lb']}): {why}")
    return "\n".join(lines)


def _f(v: float | None, nd: int) -> str:
    return "-" if v is None else f"{v:.{nd}f}"


def plot(res: Record, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = res["runs"]
    lbs = [r["lb"] for r in runs]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    x = range(len(lbs))
    emu_q = [r["queue_max_pkts"] for r in runs]
    bars = axes[0].bar([i - 0.2 for i in x], emu_q, 0.4, label="emulated (ofan-emu)")
    # A CPU-bound run's figures do not count: hatched and marked.
    for b, r in zip(bars, runs):
        if r["cpu_bound"]:
            b.set_hatch("//")
            b.set_alpha(0.5)
            axes[0].annotate("CPU-bound", (b.get_x() + b.get_width() / 2, b.get_height()),
                             ha="center", va="bottom", fontsize=7, rotation=90)
    if any(r.get("sim") for r in runs):
        axes[0].bar([i + 0.2 for i in x], [(r.get("sim") or {}).get("queue_max_pkts", 0)
                                           for r in runs], 0.4, label="simulated (ofan-sim)")
    axes[0].set_xticks(list(x), lbs)
    # Ofan's queues are a few packets, ECMP's hundreds: a log axis shows both.
    axes[0].set_yscale("log")
    axes[0].set_ylabel("max switch queue (data packets, log)")
    axes[0].legend()
    axes[1].bar([i - 0.2 for i in x], [r.get("cct_inflation") or 0 for r in runs], 0.4,
                label="emulated")
    if any(r.get("sim") for r in runs):
        axes[1].bar([i + 0.2 for i in x], [(r.get("sim") or {}).get("cct_inflation") or 0
                                           for r in runs], 0.4, label="simulated")
    axes[1].set_xticks(list(x), lbs)
    axes[1].set_ylabel("CCT inflation (CCT / NIC-bound - 1)")
    axes[1].axhline(0.0, color="gray", lw=0.8)
    axes[1].legend()
    engine = f", {res['engine']} engine" if res.get("engine", "kernel") != "kernel" else ""
    fig.suptitle(f"{res['workload']}, {res['msg_bytes']} B, {res['hosts']} hosts, k={res['k']} "
                 f"({res['switch']} switches{engine}); hatched: CPU-bound")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
