#!/usr/bin/python3
"""`ofan-emu up --control agent`: every switch learns its neighbours and
routes from real daemons (lldpd, FRR with BGP unnumbered and BFD) through
ofan-agent, on both engines.

    agent_test.py      (root; Debian's /usr/bin/python3, lldpd, FRR, nft)

On a k=4 leaf-spine with two cables miswired at up (l0:2 and l1:3 swapped:
l0 reaches s1, l1 reaches s0), and on a k=4 fat tree (20 switches) per
engine:
  - the topology is learned: each agent's neighbours place it where it is,
    every usable fabric port has an Established BGP session with BFD up, the
    miswire is reported by the four switches it reaches and never used, and
    every switch's live masks equal the brute-force valid sets (verify-masks,
    with the miswired links counted out of service);
  - under a uroce permutation, an agg-core link fails by carrier loss and an
    edge-agg link silently (carrier up, frames lost): the masks converge to
    the brute force again, and the collective completes with every buffer
    verified; both restored, the masks converge back;
  - an agent killed (SIGKILL) and restarted under traffic: its switch's
    tables are never reloaded (the generation does not move) and the
    collective verifies; FRR's bgpd stopped and started again, empty: its
    agent gives it frr.conf again (BFD once the sessions are up), the
    sessions, BFD and masks come back, and no switch's tables were
    reloaded meanwhile (graceful restart); an agg switch failed and
    restored: the masks follow;
  - bad requests exit 2 with one line; after down no namespace, daemon,
    FRR directory or crash-log directory of the fabric is left.
Convergence times are printed (bench/RESULTS.md has the figures); nothing
here asserts a duration.

Exit: 0 pass, 1 fail, 77 skip (not root, no AF_XDP / hugepages, no daemons).
"""
import atexit
import functools
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import (  # noqa: E402
    EMU, SKIP, check, emu as checks_emu, failures, has_shared_engine, log)

BUILD = Path(os.environ.get("OFAN_BUILD_DIR", REPO / "build"))
PID = os.getpid()
NAMES = {"per-switch": f"ap{PID % 100000}", "shared": f"as{PID % 100000}",
         "miswire": f"am{PID % 100000}"}
MISWIRE = "l0:2,l1:3"
# Who sees a neighbour the leaf-spine does not place there, and on which port.
MISWIRED = {"l0": [2], "l1": [3], "s0": [0], "s1": [1]}
# A silent failure blackholes a path until BFD (300 ms x 3) sees it and BGP
# withdraws it, while the lost links' traffic congests the rest: the hosts'
# seven retries must outlast that. Convergence took 2-4 s after the fail
# commands here (bench/RESULTS.md), and a QP ran out of seven 0.5 s retries
# in a loaded CI run on the shared engine too.
RTO_US = {"per-switch": 1500000, "shared": 1500000}
# The per-switch engine is link-bound at k=4 only on slow links (bench/
# RESULTS.md): twenty processes and the daemons share two cores.
LINK_MBPS = {"per-switch": 25, "shared": 100}
CONVERGE_S = 60


# ofan-emu ARGS (checks.emu) with this test's timeout; ok_codes None: no log
# of a failing exit (the test checks it).
emu = functools.partial(checks_emu, timeout=300, ok_codes=None)


def cleanup() -> None:
    for n in NAMES.values():
        subprocess.run([EMU, "down", "--name", n], capture_output=True, timeout=180)


def status(name: str) -> dict[str, Any]:
    r = emu("status", "--name", name, "--json")
    try:
        d: dict[str, Any] = json.loads(r.stdout)
        return d
    except ValueError:
        return {}


def wait_masks(name: str, what: str) -> bool:
    """verify-masks until it passes; logs how long it took."""
    t0 = time.monotonic()
    last = ""
    while time.monotonic() - t0 < CONVERGE_S:
        r = emu("verify-masks", "--name", name)
        if r.returncode == 0:
            log(f"  {what}: masks equal the brute force {time.monotonic() - t0:.1f} s later")
            return True
        last = (r.stdout + r.stderr).strip()
        time.sleep(0.3)
    log(f"  {what}: masks still differ after {CONVERGE_S} s: {last[-400:]}")
    return False


class Run:
    """A uroce permutation in the background."""

    def __init__(self, name: str, msg: str, rto_us: int) -> None:
        self.err_path = f"/tmp/ofan-agent-test-{name}.err"
        self.err = open(self.err_path, "w")
        self.p = subprocess.Popen([EMU, "run", "--name", name, "--workload", "perm", "--msg", msg,
                                   "--lbs", "ofan", "--rto-us", str(rto_us), "--json"],
                                  stdout=subprocess.PIPE, stderr=self.err, text=True)

    def wait_started(self) -> bool:
        """Until the hosts report progress (traffic flows)."""
        end = time.monotonic() + 60
        while time.monotonic() < end and self.p.poll() is None:
            if "delivered" in open(self.err_path).read():
                return True
            time.sleep(0.1)
        return False

    def result(self) -> tuple[bool, str]:
        out, _ = self.p.communicate(timeout=300)
        self.err.close()
        tail = open(self.err_path).read().strip().splitlines()[-2:]
        os.unlink(self.err_path)
        try:
            runs = json.loads(out)["runs"]
            ok = self.p.returncode in (0, 3) and all(r["verified"] for r in runs)
            return ok, f"verified {[r['verified'] for r in runs]}, " + " | ".join(tail)
        except (ValueError, KeyError, TypeError):
            return False, f"exit {self.p.returncode}: " + " | ".join(tail)


def unlearned(s: dict, miswired: dict[str, list[int]]) -> list[str]:
    """What in status `s` is not yet as a converged control plane has it."""
    wrong = []
    for w in s.get("switches", []):
        a = (w.get("control") or {}).get("agent") or {}
        procs = (w.get("control") or {}).get("processes", {})
        # k=4: an edge has two ports to switches, the others four.
        fabric_ports = (2 if w["role"] == "edge" else 4) - len(miswired.get(w["name"], []))
        if not all(procs.values()):
            wrong.append(f"{w['name']}: processes {procs}")
        elif a.get("identity") != w["name"]:
            wrong.append(f"{w['name']}: neighbours place it as {a.get('identity')!r}")
        elif not (len(a["usable_fabric_ports"]) == a["bgp_established"] == a["bfd_up"]
                  == fabric_ports) or not a["converged"]:
            wrong.append(f"{w['name']}: {a}")
    return wrong


def learned(name: str, what: str, miswired: dict[str, list[int]]) -> None:
    s = status(name)
    check(f"{what}: status says control agent", s.get("control") == "agent", str(s)[:200])
    # An agent reports converged once BGP is; a BFD session may come up a
    # detection interval later (seen once in CI: bfd_up 0 of 1 on l1). Wait
    # for it, bounded.
    wrong = unlearned(s, miswired)
    end = time.monotonic() + 15
    while wrong and time.monotonic() < end:
        time.sleep(0.5)
        s = status(name)
        wrong = unlearned(s, miswired)
    sws = s.get("switches", [])
    check(f"{what}: every switch's neighbours place it where it is, sessions Established and "
          "BFD up on every usable fabric port", bool(sws) and not wrong, "; ".join(wrong[:3]))
    mis = {w["name"]: [m["port"] for m in ((w.get("control") or {}).get("agent") or {})
                       .get("miswires", [])] for w in sws}
    check(f"{what}: " + ("the swapped cables are reported as miswires, by the four switches "
                         "they reach" if miswired else "no miswire reported"),
          {k: v for k, v in mis.items() if v} == miswired,
          str({k: v for k, v in mis.items() if v}))
    # What the operator's tool shows: the agent's last report, kept by its switch.
    sw0 = sws[0]["name"] if sws else "?"
    r = subprocess.run([str(BUILD / "control/ofanctl/ofanctl"), "--socket",
                        f"/run/ofan-emu/{name}/sock/{sw0}.sock", "--json", "agent"],
                       capture_output=True, text=True, timeout=30)
    try:
        rep = json.loads(r.stdout)["report"] or {}
    except (ValueError, KeyError, TypeError):
        rep = {}
    check(f"{what}: ofanctl agent on {sw0} shows its agent's last report",
          rep.get("switch") == sw0 and rep.get("converged") is True
          and len(rep.get("bgp") or []) > 0, (r.stdout + r.stderr)[-300:])
    # Across the fabric: one JSON, every switch's report, the routes its masks came from.
    ctl = str(BUILD / "control/ofanctl/ofanctl")
    r = subprocess.run([ctl, "--fabric", f"/run/ofan-emu/{name}/sock", "--json", "agent"],
                       capture_output=True, text=True, timeout=60)
    try:
        every = {x["name"]: (x.get("result") or {}).get("report") or {}
                 for x in json.loads(r.stdout)["switches"]}
    except (ValueError, KeyError, TypeError):
        every = {}

    def routed(rep: dict[str, Any]) -> bool:
        rts = rep.get("routes") or []
        return bool(rts) and all(rt.get("protocol") == "bgp" and rt.get("nexthops") for rt in rts)

    bad = [n for n, rep in every.items()
           if not rep.get("converged") or (n[0] in "el" and not routed(rep))]
    check(f"{what}: ofanctl --fabric agent: every switch converged, every edge's (leaf's) keys "
          "on BGP routes with next hops", r.returncode == 0 and len(every) == len(sws) and not bad,
          (str(bad[:3]) if every else (r.stdout + r.stderr)[-300:]))
    # What each fabric port's kernel interface took: LLDP, BGP and BFD reached the kernel.
    r = subprocess.run([ctl, "--fabric", f"/run/ofan-emu/{name}/sock", "--json", "ports"],
                       capture_output=True, text=True, timeout=60)
    short = []
    try:
        for x in json.loads(r.stdout)["switches"]:
            for p in x["result"]:
                k = p.get("kernel")
                if k is None and p["direction"] == "down":
                    continue  # a host port: no kernel interface
                # A miswired port has LLDP only: the agent keeps it out of FRR.
                classes = ("lldp",) if p["port"] in miswired.get(x["name"], []) else (
                    "lldp", "bgp", "bfd")
                by = (k or {}).get("to_kernel_by_class")
                if not k or k.get("to_kernel", 0) <= 0 or "error" in k or (
                        by is not None and not all(by[c] for c in classes)):
                    short.append(f"{x['name']} p{p['port']}: {k}")
    except (ValueError, KeyError, TypeError) as e:
        short.append(f"{e}: {(r.stdout + r.stderr)[-300:]}")
    check(f"{what}: ofanctl ports: every fabric port's kernel interface took control frames"
          " (per-switch: LLDP, BGP and BFD counted by the XDP trap)", not short,
          "; ".join(short[:3]))
    r = emu("verify-masks", "--name", name, "--json")
    check(f"{what}: verify-masks: every switch holds the brute-force valid sets"
          + (", the miswired cables out of service" if miswired else ""),
          r.returncode == 0, (r.stdout + r.stderr)[-400:])


def generation(name: str, sw: str) -> int | None:
    sock = f"/run/ofan-emu/{name}/sock/{sw}.sock"
    r = subprocess.run([str(BUILD / "control/ofanctl/ofanctl"), "--socket", sock, "--json",
                        "status"], capture_output=True, text=True, timeout=30)
    try:
        return int(json.loads(r.stdout)["generation"])
    except (ValueError, KeyError, TypeError):
        return None


def frr_crash_logs() -> set[str]:
    """FRR's per-process crash-log directories (DAEMON.PID)."""
    return set(os.listdir("/var/tmp/frr")) if os.path.isdir("/var/tmp/frr") else set()


FRR_LOGS_BEFORE = frr_crash_logs()


def leftovers(name: str) -> list[str]:
    left = [n for n in os.listdir("/var/run/netns") if n.startswith(f"ofe-{name}-")] \
        if os.path.isdir("/var/run/netns") else []
    # Ours, as far as this process can tell: whatever appeared since it began
    # (the tests run one at a time).
    left += sorted(f"/var/tmp/frr/{d}" for d in frr_crash_logs() - FRR_LOGS_BEFORE)
    left += glob.glob(f"/etc/frr/ofe-{name}-*") + glob.glob(f"/run/frr/ofe-{name}-*")
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes()
            st = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"ofe-{name}-".encode() in cmd and st not in ("Z", "X"):
            shown = cmd.replace(b"\0", b" ")[:80]
            left.append(f"pid {d.name}: {shown!r}")
    return left


def fabric(engine: str) -> None:
    name = NAMES[engine]
    what = f"k=4 fat tree, {engine} engine, agents"
    t0 = time.monotonic()
    r = emu("up", "--k", "4", "--levels", "3", "--name", name, "--engine", engine,
            "--control", "agent", "--link-mbps", str(LINK_MBPS[engine]))
    if not check(f"{what}: up", r.returncode == 0, r.stderr[-600:]):
        return
    log(f"  up with every agent converged in {time.monotonic() - t0:.1f} s")
    learned(name, what, {})

    # Failures under traffic.
    run = Run(name, "16MiB" if engine == "shared" else "2MiB", RTO_US[engine])
    started = run.wait_started()
    check(f"{what}: a permutation runs", started, "")
    # Both at once: two ofan-emu commands on one fabric take turns (its lock).
    fails = [(args, subprocess.Popen([EMU, "fail", "--name", name, *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
             for args in (["--link", "a2-0:3"], ["--link", "e1-0:2", "--silent"])]
    for args, f in fails:
        _, err = f.communicate(timeout=120)
        check(f"{what}: fail {' '.join(args)} under traffic", f.returncode == 0, err[-300:])
    check(f"{what}: both links failed while the permutation was still sending",
          run.p.poll() is None, "the run had ended: give it more bytes")
    check(f"{what}: after an agg-core link lost its carrier and an edge-agg link went silent, "
          "every switch's masks converge to the brute force",
          wait_masks(name, "agg-core carrier + edge-agg silent"), "")
    ok, detail = run.result()
    check(f"{what}: the permutation across both failures completes, every buffer verified",
          ok, detail)
    for link in ("a2-0:3", "e1-0:2"):
        r = emu("restore", "--name", name, "--link", link)
        check(f"{what}: restore --link {link}", r.returncode == 0, r.stderr[-300:])
    check(f"{what}: restored, the masks converge back", wait_masks(name, "both restored"), "")

    # The agent killed and restarted under traffic.
    run = Run(name, "8MiB" if engine == "shared" else "1MiB", RTO_US[engine])
    run.wait_started()
    gen = generation(name, "e0-0")  # after the run set its policy (a new generation)
    r = emu("agent", "restart", "e0-0", "--name", name, "--json")
    check(f"{what}: agent restart e0-0 under traffic", r.returncode == 0, r.stderr[-300:])
    check(f"{what}: the agent was back while the permutation was still sending",
          run.p.poll() is None, "the run had ended: give it more bytes")
    ok, detail = run.result()
    check(f"{what}: the permutation across the agent's restart verifies", ok, detail)
    end = time.monotonic() + CONVERGE_S
    a: dict[str, Any] = {}
    while time.monotonic() < end:
        sw = [w for w in status(name).get("switches", []) if w["name"] == "e0-0"]
        a = ((sw[0].get("control") or {}).get("agent") or {}) if sw else {}
        if a.get("converged"):
            break
        time.sleep(0.3)
    after = generation(name, "e0-0")
    check(f"{what}: the restarted agent resynchronised without reloading e0-0's tables",
          a.get("converged") is True and gen is not None and after == gen,
          f"generation {gen} -> {after}, agent {a}")

    # FRR's bgpd stopped and started again, empty: the agent sees its new pid
    # and applies frr.conf again; the sessions and the masks come back.
    # Graceful restart: its peers keep its routes meanwhile, and BFD is given
    # back only once the sessions are up, so no switch reloads its tables.
    names = [w["name"] for w in status(name).get("switches", [])]
    gens = {sw: generation(name, sw) for sw in names}
    r = emu("frr", "restart", "e0-0", "--daemon", "bgpd", "--name", name)
    check(f"{what}: frr restart e0-0 --daemon bgpd", r.returncode == 0, r.stderr[-300:])
    # Asked of the new bgpd itself (the agent's status may still be the
    # last cycle's): it started empty, so peers mean the agent gave it
    # frr.conf again.
    ps = f"ofe-{name}-e0-0"
    end = time.monotonic() + CONVERGE_S
    peers: dict[str, Any] = {}
    while time.monotonic() < end:
        r = subprocess.run(["ip", "netns", "exec", ps, "vtysh", "-N", ps, "-c",
                            "show bgp summary json"], capture_output=True, text=True, timeout=30)
        try:
            doc = json.loads(r.stdout)
            peers = doc.get("peers", doc.get("ipv4Unicast", {}).get("peers", {}))
        except ValueError:
            peers = {}
        if len(peers) == 2 and all(p.get("state") == "Established" for p in peers.values()):
            break
        time.sleep(0.3)
    check(f"{what}: the restarted bgpd got its configuration again, both sessions back",
          len(peers) == 2 and all(p.get("state") == "Established" for p in peers.values()),
          str({k: v.get("state") for k, v in peers.items()}))
    check(f"{what}: after bgpd's restart the masks equal the brute force",
          wait_masks(name, "bgpd restarted"), "")
    end = time.monotonic() + CONVERGE_S
    bfd: list[Any] = []
    while time.monotonic() < end:
        r = subprocess.run(["ip", "netns", "exec", ps, "vtysh", "-N", ps, "-c",
                            "show bfd peers json"], capture_output=True, text=True, timeout=30)
        try:
            bfd = json.loads(r.stdout)
        except ValueError:
            bfd = []
        if len(bfd) == 2 and all(b.get("status") == "up" for b in bfd):
            break
        time.sleep(0.3)
    check(f"{what}: the restarted bgpd's sessions have BFD again, up",
          len(bfd) == 2 and all(b.get("status") == "up" for b in bfd),
          str([b.get("status") for b in bfd]))
    moved = {sw: (g, generation(name, sw)) for sw, g in gens.items()}
    moved = {sw: v for sw, v in moved.items() if v[0] is None or v[0] != v[1]}
    check(f"{what}: graceful restart: no switch reloaded its tables across bgpd's restart",
          not moved, str(moved))

    # A switch dies with its daemons: its neighbours lose the carrier and
    # withdraw at once (its routes are not kept as a restart's); back, its
    # daemons start from nothing and every mask returns.
    for verb in ("fail", "restore"):
        r = emu(verb, "--switch", "a1-1", "--name", name)
        check(f"{what}: {verb} --switch a1-1", r.returncode == 0, r.stderr[-300:])
        check(f"{what}: after {verb} --switch a1-1 the masks equal the brute force",
              wait_masks(name, f"switch a1-1 {verb}"), "")

    r = emu("down", "--name", name)
    check(f"{what}: down", r.returncode == 0, r.stderr[-300:])
    left = leftovers(name)
    check(f"{what}: nothing left after down (namespaces, daemons, FRR directories)",
          not left, str(left[:5]))


def miswire() -> None:
    """A leaf-spine with two cables swapped: found, reported, never used."""
    name = NAMES["miswire"]
    what = f"k=4 leaf-spine, miswired {MISWIRE}, agents"
    r = emu("up", "--k", "4", "--levels", "2", "--name", name, "--engine", "per-switch",
            "--control", "agent", "--miswire", MISWIRE, "--bfd-ms", "250", "--bfd-multiplier", "4")
    if check(f"{what}: up", r.returncode == 0, r.stderr[-600:]):
        learned(name, what, MISWIRED)
        conf = Path(f"/etc/frr/ofe-{name}-l0/frr.conf")
        text = conf.read_text() if conf.exists() else ""
        check(f"{what}: up --bfd-ms 250 --bfd-multiplier 4 reached FRR's configuration",
              "transmit-interval 250" in text and "detect-multiplier 4" in text, str(conf))
    emu("down", "--name", name)
    check(f"{what}: nothing left after down", not leftovers(name), str(leftovers(name)[:5]))


def bad_requests() -> None:
    """Cheap refusals, on no fabric or a tables one: exit 2, one line."""
    name = f"at{PID % 100000}"
    for args, why in ((["up", "--k", "4", "--levels", "2", "--name", name, "--switch", "kernel",
                        "--control", "agent"], "--control agent"),
                      (["up", "--k", "4", "--levels", "2", "--name", name, "--control", "nope"],
                       "invalid choice"),
                      (["up", "--k", "4", "--levels", "2", "--name", name, "--miswire",
                        "e0-0:2"], "--miswire"),
                      (["up", "--k", "4", "--levels", "2", "--name", name, "--miswire",
                        "l0:0,l1:2"], "host"),
                      (["up", "--k", "4", "--levels", "2", "--name", name, "--miswire",
                        "l0:2,s0:0"], "one cable"),
                      (["up", "--k", "4", "--levels", "2", "--name", name, "--bfd-ms", "300"],
                       "--control agent")):
        r = emu(*args)
        check(f"ofan-emu {' '.join(args[5:])}: exit 2 naming the problem",
              r.returncode == 2 and why in r.stderr and "Traceback" not in r.stderr,
              r.stderr.strip()[-300:])
    r = emu("up", "--k", "4", "--levels", "2", "--name", name, "--engine", "shared")
    if not check("a tables leaf-spine: up", r.returncode == 0, r.stderr[-300:]):
        return
    for args, why in ((["agent", "restart", "l0"], "runs no agents"),
                      (["fail", "--link", "h0", "--silent"], "inter-switch"),
                      (["fail", "--switch", "l0", "--silent"], "--silent")):
        r = emu(*args, "--name", name)
        check(f"ofan-emu {' '.join(args)} on a tables fabric: exit 2, one line",
              r.returncode == 2 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1,
              r.stderr.strip()[-300:])
    r = emu("verify-masks", "--name", name, "--json")
    try:
        ok = json.loads(r.stdout)["ok"] is True
    except (ValueError, KeyError):
        ok = False
    check("verify-masks on a tables fabric: the pushed tables are the brute force",
          r.returncode == 0 and ok, (r.stdout + r.stderr)[-300:])
    emu("down", "--name", name)


def main() -> int:
    if os.geteuid() != 0:
        log("SKIP: needs root (namespaces, AF_XDP, hugepages)")
        return SKIP
    for t in ("lldpd", "lldpcli", "vtysh", "nft"):
        if not shutil.which(t):
            log(f"SKIP: no {t} (bash scripts/setup.sh installs lldpd, frr, nftables)")
            return SKIP
    for b in ("dataplane/ofan-dp", "control/ofanctl/ofanctl", "emu/ofan-topo", "emu/uroce/uroce",
              "control/agent/ofan-agent", "dataplane/xdp/trap.bpf.o"):
        if not (BUILD / b).exists():
            log(f"FAIL: {b} is not built")
            return 1
    atexit.register(cleanup)
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, lambda *_: sys.exit(1))
    bad_requests()
    miswire()
    fabric("per-switch")
    if has_shared_engine(BUILD):
        fabric("shared")
    log(f"{len(failures)} failure(s)" + (": " + "; ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
