#!/usr/bin/python3
"""`ofan-emu mpirun` and `ofan-emu app` without a VM: the pairwise tools'
outputs parsed (golden outputs as the tools printed them between two rxe
VMs), any other text a ValueError and never another exception (property
test), the hosts and ranks a job may have, mpirun's command line, the GID
lookup, the launcher's own usage error, and both verbs' bad command lines
(exit 2, one line, no traceback).

    apps_test.py     (no root, no VM; ~5 s)
"""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "emu"))
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import check, failures  # noqa: E402
from fabric import apps, mpi  # noqa: E402
from fabric.cli import lb_list  # noqa: E402
from fabric.tools import FabricError  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

# What the tools printed (ofan-emu app --json's stdout), their result lines.
IB_WRITE_BW = """\
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:02:00:02
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      100           0.024003            0.024003            0.000046
---------------------------------------------------------------------------------------
"""
IB_SEND_LAT = """\
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    \
t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n\
 2       100          564.72         2990.45      796.58   \t       1004.95     \t559.02 \
\t\t2990.45 \t\t2990.45
---------------------------------------------------------------------------------------
"""
QPERF_BW = "rc_bw:\n    bw  =  2.97 MB/sec\n"
QPERF_LAT = "rc_lat:\n    latency  =  1.12 ms\n"
RPING = "".join(f"ping data: rdma-ping-{i}: abcdefg\n" for i in range(5))
UCX = """\
|    Stage     | # iterations | 50.0%ile | average | overall |  average |  overall |  average  |  \
overall  |
+--------------+--------------+----------+---------+---------+----------+----------+-----------+\
-----------+
Final:                   100      2.000 22020.550 22020.550        2.84       2.84          45  \
        45
"""


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def parsers() -> None:
    r = apps.APPS["ib_write_bw"].parse(IB_WRITE_BW)
    check("ib_write_bw: bytes, iterations, peak and average Gb/s, Mpps",
          r == {"bytes": 65536.0, "iterations": 100.0, "bw_peak_gbps": 0.024003,
                "bw_avg_gbps": 0.024003, "msg_rate_mpps": 0.000046}, str(r))
    r = apps.APPS["ib_send_lat"].parse(IB_SEND_LAT)
    check("ib_send_lat: the nine latency columns, microseconds",
          r["t_typical_us"] == 796.58 and r["p999_us"] == 2990.45 and r["bytes"] == 2.0,
          str(r))
    r = apps.APPS["qperf_rc_bw"].parse(QPERF_BW)
    check("qperf rc_bw: 2.97 MB/sec (decimal) = 0.02376 Gb/s",
          close(r["bw_gbps"], 0.02376), str(r))
    r = apps.APPS["qperf_rc_lat"].parse(QPERF_LAT)
    check("qperf rc_lat: 1.12 ms = 1120 us", close(r["latency_us"], 1120.0), str(r))
    r = apps.APPS["rping"].parse(RPING)
    check("rping: 5 pings counted", r == {"pings": 5.0}, str(r))
    r = apps.APPS["ucx_tag_bw"].parse(UCX)
    check("ucx_perftest: 2.84 MB/s (binary) = 0.02382 Gb/s, 100 iterations",
          close(r["bw_avg_gbps"], 2.84 * 8 * 2**20 / 1e9) and r["iterations"] == 100.0 and
          r["t_avg_us"] == 22020.55, str(r))
    for name, app in apps.APPS.items():
        try:
            app.parse("")
            check(f"{name}: empty output is an error", False)
        except ValueError:
            check(f"{name}: empty output is a ValueError", True)
    try:
        apps.APPS["qperf_rc_bw"].parse("bw = 3 furlongs/sec")
        check("qperf: an unknown unit is an error", False)
    except ValueError as e:
        check("qperf: an unknown unit is a ValueError naming it", "furlongs" in str(e), str(e))


GOLDEN = [IB_WRITE_BW, IB_SEND_LAT, QPERF_BW, QPERF_LAT, RPING, UCX]


def mutations(text: str) -> st.SearchStrategy[str]:
    """The text with a slice replaced by random characters."""
    return st.tuples(st.integers(0, len(text)), st.integers(0, 40), st.text(max_size=20)).map(
        lambda t: text[:t[0]] + t[2] + text[t[0] + t[1]:])


@settings(max_examples=600, derandomize=True, deadline=None)
@given(st.sampled_from(sorted(apps.APPS)),
       st.text(max_size=400) | st.sampled_from(GOLDEN).flatmap(mutations))
def parse_any(name: str, text: str) -> None:
    try:
        r = apps.APPS[name].parse(text)
    except ValueError:
        return
    assert isinstance(r, dict) and all(isinstance(v, float) for v in r.values()), r


def hosts_and_ranks() -> None:
    vms = ["h0", "h8"]
    cases = [(lambda: mpi.pick_hosts([], "vm"), "no VM hosts"),
             (lambda: mpi.pick_hosts(vms, "h1"), "not a VM host"),
             (lambda: mpi.pick_hosts(vms, "h0,h0"), "named twice"),
             (lambda: mpi.pick_hosts(vms, "h0,,h8"), "separated by commas"),
             (lambda: mpi.ranks_for(vms, 3, False), "--oversubscribe"),
             (lambda: mpi.ranks_for(vms, 0, False), "at least 1")]
    for f, words in cases:
        try:
            f()
            check(f"refused ({words})", False)
        except FabricError as e:
            check(f"refused, exit 2, saying {words!r}", e.code == 2 and words in str(e), str(e))
    check("--hosts vm: every VM host; names: those", mpi.pick_hosts(vms, "vm") == vms and
          mpi.pick_hosts(vms, "h8") == ["h8"])
    check("-np: one per host by default; more with --oversubscribe",
          mpi.ranks_for(vms, None, False) == 2 and mpi.ranks_for(vms, 5, True) == 5)
    argv = mpi.mpirun_argv(["h0", "h8"], 5, True, [("coll", "^hcoll")], ["A=1"], ["prog", "x"])
    check("mpirun: slots cover the ranks (3 per host for 5 on 2), the launcher, the "
          "management network, UCX over rxe in the lossless class (DSCP 26, ECT(0): 106), "
          "the user's --mca and -x, the program last",
          argv[:4] == ["mpirun", "--allow-run-as-root", "-np", "5"] and "h0:3,h8:3" in argv and
          str(mpi.RSH) in argv and mpi.rxe_vm.MGMT_NET in argv and
          "UCX_NET_DEVICES=rxe0:1" in argv and "UCX_IB_TRAFFIC_CLASS=106" in argv and
          "--oversubscribe" in argv and
          argv[argv.index("coll") + 1] == "^hcoll" and "A=1" in argv and
          argv[-2:] == ["prog", "x"], " ".join(argv))
    check("the launcher exists and is executable", os.access(mpi.RSH, os.X_OK), str(mpi.RSH))
    p = subprocess.run([str(mpi.RSH), "h0", "true"], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "OFAN_EMU_MPI_FABRIC"})
    check("the launcher without OFAN_EMU_MPI_FABRIC: exit 2 and its usage",
          p.returncode == 2 and "usage" in p.stderr, p.stderr)
    s = apps.gid_index_script("10.2.0.2")
    check("the GID lookup looks for ::ffff:10.2.0.2 of type RoCE v2",
          "0000:0000:0000:0000:0000:ffff:0a02:0002" in s and "RoCE v2" in s, s)
    check("--lbs: names checked, aliases made names", lb_list("ecmp,rsq") == ["ecmp", "rps"]
          and lb_list(None) == [None])
    for bad in ("ecmp,", "nope"):
        try:
            lb_list(bad)
            check(f"--lbs {bad!r} refused", False)
        except FabricError as e:
            check(f"--lbs {bad!r} refused, exit 2", e.code == 2, str(e))


def command_lines() -> None:
    emu = str(REPO / "emu" / "ofan-emu")
    for args, words in (
            (["mpirun", "-np", "2"], "no program"),
            (["mpirun", "prog"], "options go before"),
            (["mpirun", "--timeout", "-1", "--", "prog"], "seconds > 0"),
            (["mpirun", "-np", "x", "--", "prog"], "invalid int"),
            (["app", "nosuch"], "invalid choice"),
            (["app", "rping", "--iters", "0"], "at least 1"),
            (["app", "rping", "--tool-args", "'unclosed"], "--tool-args"),
            (["app", "rping", "--seconds", "0"], "seconds > 0")):
        p = subprocess.run([emu, *args], capture_output=True, text=True)
        check(f"ofan-emu {' '.join(args)}: exit 2, {words!r}, no traceback",
              p.returncode == 2 and words in p.stderr and "Traceback" not in p.stderr,
              p.stderr.strip()[-300:])


def main() -> int:
    parsers()
    try:
        parse_any()
        check("every parser: a dict of floats or a ValueError, for any text", True)
    except Exception as e:  # the falsifying example, as a failure
        check("every parser: a dict of floats or a ValueError, for any text", False, repr(e))
    hosts_and_ranks()
    command_lines()
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
