"""The PASS/FAIL lines of the Python end-to-end tests, and their tally.

    from checks import check, failures, log      (tests/common on sys.path)

A test calls check(name, ok, detail) for each thing it verifies and exits
1 if `failures` is not empty, 77 when it cannot run here (meson: skipped).
"""
import os
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
        raise RuntimeError(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r


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
