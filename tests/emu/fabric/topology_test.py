#!/usr/bin/python3
"""ofan-emu's topology files: the canonical ones are what `ofan-emu topology`
prints, they load, and every kind of bad file gets a message that names what
is wrong (ofan-emu's exit code for them is 2).

    topology_test.py          (no root needed; needs build/emu/ofan-topo)
"""
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import check, failures  # noqa: E402
sys.path.insert(0, str(REPO / "emu"))
from fabric.topology import TopologyError, load_file  # noqa: E402

EMU = str(REPO / "emu" / "ofan-emu")


def main():
    for fname, k, levels in (("fattree-k4.yaml", 4, 3), ("leafspine-k4.yaml", 4, 2)):
        path = REPO / "emu" / "topologies" / fname
        p = subprocess.run([EMU, "topology", "--k", str(k), "--levels", str(levels)],
                           capture_output=True, text=True)
        check(f"{fname} is what ofan-emu topology prints", p.returncode == 0
              and p.stdout == path.read_text(), "regenerate: ofan-emu topology ... > " + fname)
        name, topo = load_file(path)
        check(f"{fname} loads", topo.k == k and topo.levels == levels and
              len(topo.links) == (48 if levels == 3 else 16), f"{name} {len(topo.links)} links")

    base = (REPO / "emu" / "topologies" / "leafspine-k4.yaml").read_text()
    good_override = base.replace("- endpoints: [h0, 'l0:0']",
                                 "- endpoints: [h0, 'l0:0']\n    latency_us: 500\n"
                                 "    rate_mbps: 50")
    bad = {
        "not a map": ("- a\n", "expected a map with a 'topology' map"),
        "unknown top key": ("topology: {k: 4}\nnodes: {}\n", "unknown top-level keys: nodes"),
        "bad kind": ("topology: {kind: ring, k: 4}\n", "topology.kind: 'ring'"),
        "odd k": ("topology: {k: 5}\n", "even number from 4 to 64"),
        "k not int": ("topology: {k: four}\n", "topology.k: an even integer"),
        "unknown attr": ("topology: {k: 4, defaults: {speed: 1}}\n",
                         "unknown link attribute 'speed'"),
        "negative rate": ("topology: {k: 4, defaults: {rate_mbps: -5}}\n", "out of range"),
        "bad size": ("topology: {k: 4, defaults: {buffer: lots}}\n", "is not a size"),
        "reorder without delay": ("topology: {k: 4, defaults: {reorder_pct: 10}}\n",
                                  "reorder_pct needs latency_us > 0"),
        "not wired": (base.replace("['l0:2', 's0:0']", "['l0:2', 's1:0']"),
                      "l0:2 and s1:0 are not linked in a k=4 leaf-spine (l0:2 is wired to s0:0)"),
        "no such node": (base.replace("['l0:2', 's0:0']", "['l9:2', 's0:0']"),
                         "no node 'l9'"),
        "port out of range": (base.replace("['l0:2', 's0:0']", "['l0:7', 's0:0']"),
                              "l0 has ports 0..3, not 7"),
        "listed twice": (base.replace("- endpoints: [h1, 'l0:1']", "- endpoints: [h0, 'l0:0']"),
                         "is listed twice"),
        "missing link": (base.replace("  - endpoints: [h1, 'l0:1']\n", ""),
                         "links lists 15 of the 16 links"),
    }
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "ok.yaml"
        p.write_text(good_override)
        try:
            _, topo = load_file(p)
            link = topo.link_at("h0", 0)
            check("a per-link override applies to that link only",
                  link.attrs.latency_us == 500 and link.attrs.rate_mbps == 50
                  and link.netem()
                  and topo.link_at("h1", 0).attrs.latency_us == 0)
        except TopologyError as e:
            check("a per-link override loads", False, str(e))
        for what, (text, says) in bad.items():
            p = Path(d) / "bad.yaml"
            p.write_text(text)
            try:
                load_file(p)
                check(f"bad file ({what}) is refused", False, "accepted")
            except TopologyError as e:
                check(f"bad file ({what}): {says!r}", says in str(e) and e.code == 2, str(e))
        r = subprocess.run([EMU, "up", "--topology", str(Path(d) / "bad.yaml")],
                           capture_output=True, text=True)
        check("ofan-emu up --topology BAD exits 2 with the message",
              r.returncode == 2 and "links lists 15" in r.stderr, r.stderr.strip())
    r = subprocess.run([EMU, "up", "--k", "5"], capture_output=True, text=True)
    check("ofan-emu up --k 5 exits 2", r.returncode == 2 and "even number" in r.stderr, r.stderr)
    r = subprocess.run([EMU, "frobnicate"], capture_output=True, text=True)
    check("an unknown verb exits 2", r.returncode == 2, r.stderr)
    r = subprocess.run([EMU, "--help"], capture_output=True, text=True)
    check("--help documents the verbs", r.returncode == 0 and all(
        v in r.stdout for v in ("up", "status", "down", "fail", "restore", "--all")))
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
