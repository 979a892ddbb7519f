#!/usr/bin/python3
"""The facts ofan-emu asks the C++ binaries for instead of keeping a copy
(emu/fabric/facts.py; docs/design.md, rule 7): the LB policies, the netdev
MTU, the queue stages; the one Mb/s -> Gb/s conversion; and that --with-sim
runs ofan-sim at the fabric's link rate, not the topology's default.

    facts_test.py          (no root needed; needs ofan-topo, ofanctl, ofan-sim)
"""
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import check, failures, log  # noqa: E402
sys.path.insert(0, str(REPO / "emu"))
from fabric import facts, run  # noqa: E402
from fabric.tools import FabricError, tool  # noqa: E402
from fabric.topology import LinkAttrs, Topology  # noqa: E402


def the_lists():
    rows = json.loads(subprocess.run([tool("ofanctl"), "--list-policies", "--json"],
                                     capture_output=True, text=True, check=True).stdout)
    names = [p.name for p in facts.policies()]
    check("facts.policies() is ofanctl's list, in order", names == [r["name"] for r in rows],
          str(names))
    check("the emulator runs every policy but those that follow the host's choice",
          list(facts.emu_policies()) == [r["name"] for r in rows if not r["host_chooses"]]
          and "source" not in facts.emu_policies() and "ofan" in facts.emu_policies(),
          str(facts.emu_policies()))
    check("a policy by any of its names; only Ofan has modes (ofan-dp's lb.ofan_mode)",
          facts.policy("rsq").name == "rps" and facts.policy("ofan").modes ==
          ("atomic", "combined") and not any(p.modes for p in facts.policies()
                                             if p.name != "ofan"))
    for bad in ("frob", "source"):
        try:
            facts.policy(bad)
            check(f"facts.policy({bad!r}) refused", False)
        except FabricError as e:
            check(f"facts.policy({bad!r}) refused (exit 2, naming the choices)",
                  e.code == 2 and "one of ecmp" in str(e), str(e))
    for exe in ("ofan-sim", "ofan-dp"):
        try:
            p = subprocess.run([tool(exe), "--list-policies", "--json"], capture_output=True,
                               text=True)
        except FabricError:
            log(f"SKIP: {exe} is not built here")
            continue
        check(f"{exe} --list-policies --json lists the same policies",
              p.returncode == 0 and json.loads(p.stdout) == rows, p.stderr)

    mtu = facts.netdev_mtu()
    check("the netdev MTU is ofan-dp's (frame_budget.h) and carries RoCE MTU 2048",
          mtu == 3438 and mtu >= 2048 + 62 + 18, str(mtu))
    w = facts.wire()
    check("the wire overhead is frame_budget.h's: preamble+SFD 8, FCS 4, IFG 12 = 24; 20 "
          "beyond a frame that counts its FCS (ofan-sim's --gap-bytes default)",
          (w.preamble_sfd_bytes, w.fcs_bytes, w.ifg_bytes, w.overhead_bytes, w.gap_bytes)
          == (8, 4, 12, 24, 20), str(w))
    hs = facts.host_stamps()
    check("the shared engine's host stamps are host_stamp.h's, kernel by default",
          hs.names == ("kernel", "poll") and hs.default == "kernel", str(hs))

    sim = json.loads(subprocess.run([tool("ofan-sim"), "--no-progress", "--k", "4", "--msg",
                                     "16KiB", "--json"], capture_output=True, text=True,
                                    check=True).stdout)
    check("the stages are ofan-sim's (its JSON sorts them)",
          sorted(sim["stages"]) == sorted(facts.stages()) and len(set(facts.stages())) == 5,
          f"{list(sim['stages'])} vs {facts.stages()}")
    topo = Topology(4, 3)
    got = {(s.role, p.up): p.stage for s in topo.switches for p in s.ports}
    check("ofan-topo describe gives each port its stage",
          got == {("edge", True): "E->A", ("edge", False): "E->H", ("agg", True): "A->C",
                  ("agg", False): "A->E", ("core", False): "C->A"}, str(got))
    spine = {p.stage for s in Topology(4, 2).switches if s.role == "agg"
             for p in s.ports}
    check("a spine's ports are A->E", spine == {"A->E"}, str(spine))


def missing_binary():
    facts.policies.cache_clear()
    old = os.environ.get("OFAN_OFANCTL")
    os.environ["OFAN_OFANCTL"] = "/nonexistent/ofanctl"
    try:
        facts.policies()
        check("a missing ofanctl is a FabricError", False, "no error")
    except FabricError as e:
        check("a missing ofanctl is a FabricError naming it", "ofanctl" in str(e), str(e))
    finally:
        if old is None:
            del os.environ["OFAN_OFANCTL"]
        else:
            os.environ["OFAN_OFANCTL"] = old
        facts.policies.cache_clear()


def sim_rate():
    check("rate_gbps converts Mb/s", LinkAttrs(rate_mbps=25.0).rate_gbps == 0.025)
    calls = []

    def fake_run(cmd, check=False, timeout=60):
        calls.append(cmd)
        out = {"queue_max_pkts": 1.0, "cct_inflation": 0.1, "cct_us": 10.0,
               "cct_lower_bound_us": 9.0, "stages": {s: {"max_pkts": 1.0}
                                                     for s in facts.stages()}}
        return SimpleNamespace(returncode=0, stdout=json.dumps(out), stderr="")

    real = run.run_cmd
    run.run_cmd = fake_run
    try:
        def gbps_passed(topo, setup=None, workload="perm", ooo=True):
            calls.clear()
            lines = []
            fab = SimpleNamespace(topo=topo, kind=SimpleNamespace(switch="ofan", engine="shared"),
                                  setup=setup or SimpleNamespace(pfc_priority=None,
                                                                 reorder_kb=None,
                                                                 reorder_timeout_us=None))
            res = run.Runner(fab, lines.append).sim("ofan", workload, 65536, 1, 0.8, topo.hosts,
                                                    ooo=ooo)
            argv = calls[-1] if calls else []
            return (float(argv[argv.index("--link-gbps") + 1]) if argv else 0.0), res, lines

        # `ofan-emu up --topology FILE --link-mbps 100` sets every link's rate,
        # the file's defaults stay 25: ofan-sim used to get 0.025 Gb/s.
        topo = Topology(4, 3)
        for li in topo.links:
            li.attrs = li.attrs.with_({"rate_mbps": 100}, "command line")
        g, res, _ = gbps_passed(topo)
        check("--with-sim runs ofan-sim at the links' rate, not the defaults'",
              g == 0.1 and res.link_gbps == 0.1 and res.note is None,
              f"--link-gbps {g}, defaults {topo.defaults.rate_mbps} Mb/s")
        # A fabric with PFC (up --pfc) runs ofan-sim with PFC and its watchdog.
        pfc = SimpleNamespace(pfc_priority=3, pfcwd_detect_ms=5000, pfcwd_restore_ms=None,
                              pfcwd_action="alert", reorder_kb=None, reorder_timeout_us=None)
        gbps_passed(topo, pfc, "incast")
        argv = calls[-1]
        check("--with-sim on a PFC fabric: ofan-sim --pfc with the fabric's watchdog",
              "--pfc" in argv and argv[argv.index("--pfcwd-detect-ms") + 1] == "5000"
              and argv[argv.index("--pfcwd-action") + 1] == "alert"
              and "--pfcwd-restore-ms" not in argv
              and argv[argv.index("--workload") + 1] == "incast"
              and "--reorder" not in argv and "--receiver" not in argv, " ".join(argv))
        # The edges resequencing (up --reorder, default wait) and hosts without
        # out-of-order placement: ofan-sim --reorder with the buffer, and
        # go-back-N receivers.
        ro = SimpleNamespace(pfc_priority=None, reorder_kb=128, reorder_timeout_us=None)
        gbps_passed(topo, ro, ooo=False)
        argv = calls[-1]
        check("--with-sim on a resequencing fabric with go-back-N hosts: ofan-sim --reorder "
              "--reorder-kb 128 --receiver gbn, its default wait",
              "--reorder" in argv and argv[argv.index("--reorder-kb") + 1] == "128"
              and "--reorder-timeout-us" not in argv
              and argv[argv.index("--receiver") + 1] == "gbn", " ".join(argv))

        topo = Topology(4, 3)
        topo.links[0].attrs = topo.links[0].attrs.with_({"rate_mbps": 10}, "test")
        g, res, lines = gbps_passed(topo)
        check("links of several rates: ofan-sim gets the slowest, and a note says so",
              g == 0.01 and res.note and "0.01" in res.note and lines, str(res))
    finally:
        run.run_cmd = real


def policy_checked_at_up() -> None:
    """up refuses a policy the switches do not run before it needs root or
    makes anything, naming the list it asked ofanctl for."""
    emu = str(REPO / "emu" / "ofan-emu")
    for bad in ("frob", "source"):
        r = subprocess.run([emu, "up", "--k", "4", "--policy", bad, "--name", "zz"],
                           capture_output=True, text=True, timeout=60)
        check(f"up --policy {bad}: exit 2, one line with the policies",
              r.returncode == 2 and "ofan, pofan" in r.stderr
              and len(r.stderr.strip().splitlines()) == 1, r.stderr.strip())


def main():
    the_lists()
    policy_checked_at_up()
    missing_binary()
    sim_rate()
    if failures:
        log(f"{len(failures)} failed: {', '.join(failures)}")
        sys.exit(1)
    log("all passed")


if __name__ == "__main__":
    main()
