#!/usr/bin/env python3
"""ofan-p4 end to end: help and exit codes, tables as JSON and as a bfrt_python
script (which must be valid Python), an update script, vectors --check on the
committed vectors and on a changed copy, and the PTF
test (which must at least compile: it runs only where the SDE is).

Usage: ofan_p4_cli_test.py PATH/TO/ofan-p4   (OFAN_SOURCE_ROOT: the source tree)
"""
import json
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile

BIN = sys.argv[1]
ROOT = os.environ["OFAN_SOURCE_ROOT"]
VECTORS = os.path.join(ROOT, "tofino_p4", "vectors")
failures = []


def run(*args, timeout=120):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout)


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def main():
    r = run("--help")
    check(r.returncode == 0 and "tables" in r.stdout and "vectors" in r.stdout, "--help")
    r = run("--version")
    check(r.returncode == 0 and r.stdout.strip(), "--version")
    r = run()
    check(r.returncode == 2, "no subcommand: exit 2")
    r = run("tables", "--k", "7")
    check(r.returncode == 2 and "k must be an even number" in r.stderr,
          "tables --k 7: exit 2, says why")
    r = run("tables", "--switch", "zz")
    check(r.returncode == 2 and "no switch 'zz'" in r.stderr, "tables --switch zz: exit 2")
    r = run("tables", "--failed", "99999")
    check(r.returncode == 2 and "no link 99999" in r.stderr, "tables --failed 99999: exit 2")
    r = run("tables", "--k", "8", "--pipe-size", "1")
    check(r.returncode == 2 and "pipes" in r.stderr, "tables --pipe-size 1 at k=8: exit 2")
    r = run("tables", "--format", "yaml")
    check(r.returncode == 2, "tables --format yaml: exit 2")
    r = run("vectors")
    check(r.returncode == 2 and "--out DIR or --check DIR" in r.stderr, "vectors alone: exit 2")

    r = run("tables", "--k", "8", "--switch", "a0-0", "--pipe-size", "2", "--format", "json")
    check(r.returncode == 0, "tables --format json: exit 0")
    j = json.loads(r.stdout)
    check(j["format"] == "ofan-p4-tables-1" and j["switch"]["name"] == "a0-0",
          "json: format, switch")
    tables = {t["name"]: t for t in j["tables"]}
    check(len(tables["pipe.Ingress.route"]["entries"]) == 128,
          "json: a route entry per host (agg: no gateway)")
    check(len(tables["pipe.Ingress.pofan_key"]["entries"]) == 16, "json: 8 pods x 2 classes")
    check(len(j["registers"][0]["pipes"]) == 4, "json: the register of 4 pipes")
    check(j["options"]["policy"] == "pofan", "json: the policy, pofan by default")

    # Ofan: one pointer table for the switch, so every port in one pipe.
    r = run("tables", "--k", "8", "--switch", "a0-0", "--policy", "ofan", "--format", "json")
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    regs = j.get("registers", [{}])[0].get("pipes", [])
    check(r.returncode == 0 and j["options"]["policy"] == "ofan"
          and j["options"]["pipe_size"] == 8
          and all(p >> 7 == 0 for p in j["options"]["dev_ports"])
          and any(regs[0]) and not any(any(x) for x in regs[1:]),
          "tables --policy ofan: pipe size k, every port and the one register in pipe 0")
    r = run("tables", "--k", "8", "--policy", "ofan", "--pipe-size", "4")
    check(r.returncode == 2 and "every fat-tree port must sit in one pipe" in r.stderr,
          "tables --policy ofan --pipe-size 4: exit 2, says why")
    r = run("tables", "--policy", "ecmp")
    check(r.returncode == 2 and "balances with the Ofan pointer only" in r.stderr,
          "tables --policy ecmp: exit 2, says why")
    r = run("tables", "--policy", "frob")
    check(r.returncode == 2 and "--policy" in r.stderr, "tables --policy frob: exit 2")

    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "load.py")
        r = run("tables", "--k", "8", "--switch", "e0-0", "--pipe-size", "2", "--failed", "26",
                "-o", script)
        check(r.returncode == 0 and os.path.getsize(script) > 1000, "tables -o FILE (bfrt_python)")
        try:
            py_compile.compile(script, doraise=True)
            check(True, "the bfrt_python script is valid Python")
        except py_compile.PyCompileError as e:
            check(False, "the bfrt_python script is valid Python: %s" % e)
        r = run("tables", "--k", "8", "--switch", "e0-0", "--pipe-size", "2", "--failed", "26",
                "--update-from", "none")
        lines = [line for line in r.stdout.splitlines() if line.startswith("ig.")]
        check(r.returncode == 0 and len(lines) == 8
              and sum("pofan_key.mod_with_set_key_degraded(dest=0x6" in line
                      for line in lines) == 2
              and sum("uplink_list.add_with_set_uplink(ptr=" in line for line in lines) == 6
              and not any("pointers" in line for line in lines),
              "an update from no failure to link 26: 6 list entries, dest 6's 2 keys, no register")
        r = run("tables", "--update-from", "2x")
        check(r.returncode == 2 and "not a link id" in r.stderr, "--update-from 2x: exit 2")
        upd = os.path.join(tmp, "update.py")
        with open(upd, "w") as f:
            f.write(r.stdout)
        py_compile.compile(upd, doraise=True)

        r = run("vectors", "--check", VECTORS)
        check(r.returncode == 0 and r.stdout.count("ok  ") == 8,
              "vectors --check on the committed vectors")
        copy = os.path.join(tmp, "vectors")
        shutil.copytree(VECTORS, copy)
        path = os.path.join(copy, "edge_k8.golden")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("out ", "out 9", 1))
        r = run("vectors", "--check", copy)
        check(r.returncode == 1 and "edge_k8.golden is not what the model makes now" in r.stderr,
              "vectors --check finds a changed vector: exit 1")
        os.remove(os.path.join(copy, "agg_k8.tables.json"))
        r = run("vectors", "--check", copy)
        check(r.returncode == 1 and "is missing" in r.stderr,
              "vectors --check finds a missing file")
        r = run("vectors", "--check", copy, "--json")
        rep = json.loads(r.stdout) if r.stdout.strip() else []
        check(r.returncode == 1 and {e["status"] for e in rep} == {"ok", "differs", "missing"},
              "vectors --check --json: ok, differs, missing")
        out = os.path.join(tmp, "fresh")
        r = run("vectors", "--out", out)
        check(r.returncode == 0 and len(os.listdir(out)) == 8, "vectors --out writes 8 files")

    r = run("resources")
    check(r.returncode == 2, "resources (gone: bf-p4c's report is the figure): exit 2")

    ptf = os.path.join(ROOT, "tofino_p4", "ptf", "pofan_vectors_test.py")
    try:
        with tempfile.TemporaryDirectory() as pyc_dir:  # nothing left in /tmp
            py_compile.compile(ptf, cfile=os.path.join(pyc_dir, "ofan_ptf_check.pyc"),
                               doraise=True)
        check(True, "the PTF test compiles")
    except py_compile.PyCompileError as e:
        check(False, "the PTF test compiles: %s" % e)

    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
