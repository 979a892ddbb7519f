#!/usr/bin/python3
"""The uroce command line: help, exit codes, error messages (no root needed).

    uroce_cli_test.py PATH/TO/uroce

Exit codes: 0 ok, 1 the run failed, 2 bad command line (uroce's main.cc).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
from checks import check, failures  # noqa: E402


def run(*args):
    return subprocess.run([UROCE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=60)


def main():
    r = run("--help")
    check("--help exits 0 and names the modes", r.returncode == 0 and
          all(m in r.stdout for m in ("pair", "peer", "loopback", "collective")), r.stdout[:200])
    r = run("peer", "--help")
    check("peer --help lists the pair check's options", r.returncode == 0 and
          all(o in r.stdout for o in ("--listen", "--connect", "--rc-port", "--op", "--count",
                                      "--size", "--qps", "--direction", "--json", "--netns",
                                      "--iface", "--io", "--next-hop-mac")), r.stdout[:200])
    r = run("pair", "--help")
    check("pair --help lists its options", r.returncode == 0 and "--a-netns" in r.stdout and
          "--ooo" in r.stdout and "--entropy" in r.stdout)
    for args, why in [((), "no mode"), (("pair", "--bogus"), "unknown option"),
                      (("pair", "--io", "nope"), "bad --io"),
                      (("pair", "--entropy", "x"), "bad --entropy"),
                      (("pair", "--mtu", "1500"), "bad --mtu"),
                      (("pair", "--dscp", "64"), "DSCP over 63"),
                      (("pair", "-s", "0"), "zero size"),
                      (("pair", "-s", "3GiB"), "size over 2 GiB"),
                      (("collective",), "no --spec"),
                      (("peer",), "peer without --listen or --connect"),
                      (("peer", "--listen", "--connect", "10.0.0.1"), "peer with both"),
                      (("peer", "--listen", "--op", "read"), "peer --op read"),
                      (("peer", "--listen", "--size", "0"), "peer --size 0"),
                      (("peer", "--listen", "--count", "0"), "peer --count 0"),
                      (("peer", "--listen", "--direction", "up"), "peer --direction up"),
                      (("peer", "--listen", "--psn", "16777216"), "peer --psn past 24 bits"),
                      (("peer", "--connect", "10.0.0.1", "--next-hop-mac", "zz"),
                       "peer --next-hop-mac zz")]:
        r = run(*args)
        check(f"{why} exits 2", r.returncode == 2, f"rc {r.returncode} {r.stderr.strip()[:120]}")
    r = run("peer", "--listen", "--netns", f"no-such-ns-{os.getpid()}")
    check("peer: a missing namespace fails the run (1) and says so",
          r.returncode == 1 and "no-such-ns" in r.stderr, r.stderr.strip())
    r = run("pair", "--a-netns", f"no-such-ns-{os.getpid()}", "--b-netns", "x")
    check("a missing namespace fails the run (1) and says so",
          r.returncode == 1 and "no-such-ns" in r.stderr, r.stderr.strip())
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "s.json")
        with open(p, "w") as f:
            f.write("{not json")
        r = run("collective", "--spec", p)
        check("a spec that is not JSON exits 2", r.returncode == 2 and "s.json" in r.stderr,
              r.stderr.strip()[:160])
        with open(p, "w") as f:
            json.dump({"workload": "perm", "msg_bytes": 1024, "hosts": [
                {"rank": 1, "netns": "a", "ip": "10.0.0.2", "gateway_mac": "02:00:00:00:00:01"},
                {"rank": 0, "netns": "b", "ip": "10.0.0.3",
                 "gateway_mac": "02:00:00:00:00:01"}]}, f)
        r = run("collective", "--spec", p)
        check("ranks out of order exit 2", r.returncode == 2 and "rank" in r.stderr,
              r.stderr.strip()[:160])
    r = run("loopback", "--json")
    try:
        j = json.loads(r.stdout)
    except ValueError:
        j = {}
    check("loopback --json: ok, one NAK and one CNP at B", r.returncode == 0 and j.get("ok") and
          sum(q["naks_tx"] for q in j["b"]["qps"]) == 1 and
          sum(q["cnps_tx"] for q in j["b"]["qps"]) == 1, r.stdout[:200])
    print(f"{len(failures)} failure(s)" if failures else "all CLI checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    UROCE = sys.argv[1]
    sys.exit(main())
