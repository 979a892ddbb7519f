#!/usr/bin/python3
"""Host links through shared memory (ofan-emu up --host-io shm) end to end.

    host_io_test.py          (root; Debian's /usr/bin/python3)

Checks: up --host-io refuses what cannot run it (the per-switch engine, a
host link with latency, a name it does not know) with exit 2 before
anything is made; a k=4 fat tree on the shared engine with --pfc and
--host-io shm comes up with a ring file and two doorbells per host in its
state directory, and the engine's host ports read them (status: every host
frame with its sender's time); permutations of uroce hosts under Ofan and
ECMP (out-of-order placement) and under RPS (go-back-N, resequenced nowhere:
NAKs allowed) all verify with nothing dropped; down removes the rings with
the rest and leaves nothing.

Exit: 0 pass, 1 fail, 77 skip (not root).
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import SKIP, check, down_at_exit, emu, failures, log  # noqa: E402
from leftovers import leftovers  # noqa: E402

BUILD = Path(os.environ.get("OFAN_BUILD_DIR", REPO / "build"))
OFANCTL = str(BUILD / "control" / "ofanctl" / "ofanctl")
NAME = f"hio{os.getpid() % 10000}"


def refusals() -> None:
    base = (REPO / "emu" / "topologies" / "leafspine-k4.yaml").read_text()
    text = base.replace("- endpoints: [h0, 'l0:0']",
                        "- endpoints: [h0, 'l0:0']\n    latency_us: 200")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    try:
        for args, why in ((["--k", "4", "--engine", "per-switch", "--host-io", "shm"],
                           "--host-io shm: the shared engine"),
                          (["--topology", f.name, "--host-io", "shm"],
                           "host link h0:0--l0:0 has latency"),
                          (["--k", "4", "--host-io", "pipes"],
                           "--host-io pipes: one of veth, shm")):
            p = emu("up", "--name", NAME, *args)
            check(f"up {' '.join(a for a in args if a != f.name)}: exit 2 naming why",
                  p.returncode == 2 and why in p.stderr, f"rc={p.returncode} {p.stderr[-300:]}")
    finally:
        os.unlink(f.name)
    check("... and nothing was made", not any(leftovers(NAME).values()), str(leftovers(NAME)))


def permutation(lb: str, ooo: bool) -> None:
    p = emu("run", "--name", NAME, "--json", "--workload", "perm", "--msg", "1MiB", "--lbs", lb,
            *(["--ooo"] if ooo else []))
    res = json.loads(p.stdout) if p.stdout.strip() else {}
    r = (res.get("runs") or [{}])[0]
    check(f"{lb} permutation{' (--ooo)' if ooo else ''} over shared memory: verified, nothing "
          "dropped",
          p.returncode in (0, 3) and r.get("verified") is True and not r.get("drops")
          and r.get("lossless_drops") == 0,
          f"rc={p.returncode} verified={r.get('verified')} drops={r.get('drops')} "
          f"{p.stderr.strip()[-300:]}")
    log(f"  {lb}: CCT {r.get('cct_us')} us, bound {r.get('cct_lower_bound_us')} us, "
        f"retx {r.get('retransmissions')}")


def main() -> int:
    if os.geteuid() != 0:
        log("SKIP: needs root (namespaces, hugepages)")
        return SKIP
    down_at_exit(NAME)
    refusals()
    if check("up --k 4 --pfc --host-io shm (shared engine)",
             emu("up", "--k", "4", "--name", NAME, "--pfc", "--host-io", "shm").returncode == 0):
        shm = Path(f"/run/ofan-emu/{NAME}/shm")
        files = sorted(p.name for p in shm.iterdir()) if shm.is_dir() else []
        want = sorted(f"h{i}{s}" for i in range(16) for s in ("", ".up", ".down"))
        check("a ring file and two doorbells per host in the state directory", files == want,
              str(files[:6]))
        for lb, ooo in (("ofan", True), ("ecmp", True), ("rps", False)):
            permutation(lb, ooo)
        st = emu("status", "--name", NAME, "--json")
        check("status --json: host_io shm", st.returncode == 0
              and json.loads(st.stdout).get("host_io") == "shm", st.stdout[:200])
        check("status: host_io=shm for people",
              "host_io=shm" in emu("status", "--name", NAME).stdout)
        p = subprocess.run([OFANCTL, "--socket", f"/run/ofan-emu/{NAME}/sock/e0-0.sock", "status",
                            "--json"], capture_output=True, text=True, timeout=30)
        eng = json.loads(p.stdout).get("engine", {}) if p.returncode == 0 else {}
        check("the engine took every host frame with its sender's time",
              (eng.get("host_frames") or 0) > 0
              and eng.get("host_stamped") == eng.get("host_frames"), str(eng)[:300])
    emu("down", "--name", NAME)
    left = leftovers(NAME)
    check("down: no namespace, process, EAL file, ring or state left", not any(left.values()),
          str(left))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
