"""The PASS/FAIL lines of the Python end-to-end tests, and their tally.

    from checks import check, failures, log      (tests/common on sys.path)

A test calls check(name, ok, detail) for each thing it verifies and exits
1 if `failures` is not empty (verdict()), 77 when it cannot run here (meson:
skipped). Cleanup removes what it made on every exit path.
"""
import atexit
import json
import os
import signal
import subprocess
import sys

SKIP = 77
failures = []


def log(msg):
    print(msg, flush=True)


def check(name, ok, detail=""):
    log(f"{'PASS' if ok else 'FAIL'}: {name}{(' -- ' + detail) if detail else ''}")
    if not ok:
        failures.append(name)
    return ok


def run(cmd, timeout=20, check_rc=True):
    """Runs cmd (a list) with text output; raises with its output if it fails."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if check_rc and r.returncode != 0:
        raise RuntimeError(
            f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r


EMU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "emu", "ofan-emu")


def emu(*args, timeout=300, ok_codes=(0, 3)):
    """ofan-emu ARGS, its output as text; logged (stdout's and stderr's
    tails) when it exits with a code not in ok_codes (3: a run flagged
    CPU-bound); ok_codes None: never logged (the caller checks the exit)."""
    p = subprocess.run([EMU, *args], capture_output=True, text=True, timeout=timeout)
    if ok_codes is not None and p.returncode not in ok_codes:
        log(f"  ofan-emu {' '.join(args)} -> {p.returncode}\n  stdout: {p.stdout[-2000:]}\n"
            f"  stderr: {p.stderr[-2500:]}")
    return p


def down_at_exit(*names):
    """The fabrics `names` taken down at exit, and SIGTERM, SIGHUP, SIGINT
    turned into exit 1 (so that they are)."""
    atexit.register(lambda: [subprocess.run([EMU, "down", "--name", n], capture_output=True,
                                            timeout=120) for n in names])
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, lambda *_: sys.exit(1))


def has_netem():
    """Whether tc netem works in this kernel (emu/fabric/netns.py's probe)."""
    emu = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "emu")
    if emu not in sys.path:
        sys.path.insert(0, emu)
    from fabric.netns import has_netem as probe
    return probe()


def has_shared_engine(build):
    """Does the ofan-dp in build (a Path) host a whole fabric (-- --fabric)?
    Until it does, a test skips the shared engine's checks, and says so."""
    p = subprocess.run([str(build / "dataplane" / "ofan-dp"), "--", "--help"],
                       capture_output=True, text=True, timeout=30)
    if "--fabric" in p.stdout + p.stderr:
        return True
    log("SKIP: the shared engine's checks: this ofan-dp has no --fabric")
    return False


def last_json(out):
    """The JSON object on the last line of a program's output, or None."""
    try:
        return json.loads(out.strip().splitlines()[-1]) if out.strip() else None
    except (json.JSONDecodeError, IndexError):
        return None


def verdict(what):
    """The exit code of a test whose checks are done: 1 with the failures
    listed, else 0 with "all WHAT checks passed"."""
    if failures:
        log(f"{len(failures)} failure(s): {failures}")
        return 1
    log(f"all {what} checks passed")
    return 0


class Cleanup:
    """The namespaces and processes a test made, removed once: when called,
    at exit, and on SIGINT/SIGTERM (then the test exits 128 + signal).
    Processes in `procs` are killed first, then the namespaces deleted."""

    def __init__(self, namespaces):
        self.namespaces = list(namespaces)
        self.procs = []
        self.done = False
        atexit.register(self)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum, _frame):
        self()
        sys.exit(128 + signum)

    def __call__(self):
        if self.done:
            return
        self.done = True
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
        delete_netns(self.namespaces)


def bridge_hosts(bridge_ns, hosts, mtu=2200):
    """hosts: {host namespace: "ADDR/LEN"}. Each gets an eth0 (lo up, `mtu`,
    the address) whose other end, p0, p1, ... in that order, is a port of
    br0 in bridge_ns. The namespaces must exist. Returns the port names."""
    run(["ip", "-n", bridge_ns, "link", "add", "br0", "type", "bridge"])
    ports = []
    for i, (ns, addr) in enumerate(hosts.items()):
        port = f"p{i}"
        # Created in the bridge namespace (no clash with the root's names),
        # the host end moved.
        run(["ip", "-n", bridge_ns, "link", "add", port, "type", "veth", "peer", "name", "eth0",
             "netns", ns])
        run(["ip", "-n", bridge_ns, "link", "set", port, "mtu", str(mtu), "master", "br0", "up"])
        run(["ip", "-n", ns, "link", "set", "eth0", "mtu", str(mtu), "up"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        run(["ip", "-n", ns, "addr", "add", addr, "dev", "eth0"])
        ports.append(port)
    run(["ip", "-n", bridge_ns, "link", "set", "br0", "up"])
    return ports


def delete_netns(names):
    """Deletes the named network namespaces that exist; logs a FAIL line for
    any still there afterwards, and returns those."""
    for ns in names:
        if os.path.exists(f"/run/netns/{ns}"):
            subprocess.run(["ip", "netns", "del", ns], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=20)
    left = [ns for ns in names if os.path.exists(f"/run/netns/{ns}")]
    if left:
        log(f"FAIL: namespaces left behind: {left}")
    return left


def rerun_in_vm(why, argv, mem_mb=1024, cpus=2):
    """Runs `sys.executable argv` again inside a VM with Debian's kernel and
    this machine's root (ofan-emu vm run, emu/vm/), for a kernel feature this
    one lacks (`why` names it). Returns the exit code to exit with: the run's,
    or SKIP when VMs cannot run here either (and says why). Inside the VM,
    OFAN_IN_VM is set: a test that still lacks the feature there must fail."""
    emu = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "emu", "ofan-emu")
    if os.environ.get("OFAN_IN_VM"):
        log(f"FAIL: {why}, in the VM too")
        return 1
    c = subprocess.run([emu, "vm", "check"], capture_output=True, text=True)
    if c.returncode != 0:
        log(f"SKIP: {why}, and VMs cannot run here: {c.stdout.strip()}")
        return SKIP
    log(f"{why}: running this test again in a VM with Debian's kernel")
    return subprocess.run([emu, "vm", "run", "--cpus", str(cpus), "--mem", str(mem_mb), "--",
                           sys.executable, *argv]).returncode
