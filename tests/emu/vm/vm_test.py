#!/usr/bin/python3
"""`ofan-emu vm`: throwaway VMs with Debian's kernel over this machine's root.

    vm_test.py          (root; 77 = skipped where VMs cannot run, and why)

Checks: bad command lines exit 2 and a missing command says so; one boot
runs a command that needs the guest's own kernel (tc netem, rdma_rxe's
device), sees the host's files at the same paths, streams stdout and stderr
apart, and returns the command's exit code; --timeout kills the command and
exits 124; a SIGKILL of `ofan-emu vm run` while its VM boots leaves a qemu
that `ofan-emu down --all` removes, with its directory.
"""
import functools
import glob
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common"))
from checks import EMU, SKIP, check, emu as checks_emu, failures, log  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
VM_DIR = os.environ.get("OFAN_EMU_RUN_DIR", "/run/ofan-emu") + "/_vm"


# ofan-emu ARGS (checks.emu) with this test's timeout; ok_codes None: no log
# of a failing exit (the test checks it).
emu = functools.partial(checks_emu, timeout=300, ok_codes=None)


def qemus(run_dir=None):
    """pids of running qemu processes named like throwaway VMs (ofe-vm-*),
    of any run directory or of `run_dir`'s; zombies do not count (here,
    PID 1 may never reap what it inherits)."""
    out = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            stat = open(f"{d}/stat").read()
            if (stat.split("(", 1)[1].startswith("ofe-vm-")
                    and stat.rsplit(")", 1)[1].split()[0] != "Z"
                    and (run_dir is None
                         or f"{run_dir}/_vm/".encode() in open(f"{d}/cmdline", "rb").read())):
                out.append(int(d[6:]))
        except OSError:
            pass
    return out


def main():
    if os.geteuid() != 0:
        log("SKIP: needs root")
        return SKIP
    r = emu("vm", "run")
    check("vm run without a command: exit 2 and says so", r.returncode == 2 and
          "no command" in r.stderr, r.stderr.strip())
    r = emu("vm", "run", "--mem", "16", "--", "true")
    check("vm run --mem 16: exit 2", r.returncode == 2, r.stderr.strip())
    # Host folders the guest's scratch tmpfs would hide (a checkout under
    # /tmp: the agent and the binaries under test) are kept visible.
    sys.path.insert(0, os.path.join(REPO, "emu"))
    from vm.qemu import kept_paths  # noqa: E402
    check("kept_paths: below /tmp, /run, /var/tmp only",
          kept_paths(["/tmp/ci/repo", "/work/x", "/tmp", "/run/a", "/var/tmp/b", "/tmp/ci/repo"])
          == ["/tmp/ci/repo", "/run/a", "/var/tmp/b"])
    r = emu("vm", "check", "--json")
    c = json.loads(r.stdout) if r.stdout.strip() else {}
    if r.returncode != 0:
        log(f"SKIP: VMs cannot run here: {c.get('why', r.stderr.strip())}")
        return SKIP
    log(f"VMs: {c}")

    marker = os.path.join(REPO, "emu", "vm", "agent.py")
    script = ("tc qdisc add dev lo root netem delay 1ms && tc qdisc show dev lo && "
              "ip link add v0 type veth peer name v1 && ip link set v0 up && "
              "rdma link add rxe0 type rxe netdev v0 && rdma link show rxe0/1 && "
              f"test -f {marker} && echo to-stderr >&2 && pwd && exit 7")
    t0 = time.monotonic()
    r = emu("vm", "run", "--json", "--", "sh", "-c", script)
    lines = r.stdout.strip().splitlines()
    facts = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    check("vm run: the command's exit code (7)", r.returncode == 7,
          f"rc {r.returncode}: {r.stderr.strip()[-400:]}")
    check("vm run: netem in the guest's kernel", "qdisc netem" in r.stdout, r.stdout[:300])
    check("vm run: an rxe device in the guest", "rxe0/1" in r.stdout, r.stdout[:300])
    check("vm run: the caller's working directory", os.getcwd() in lines, str(lines))
    check("vm run: stderr apart from stdout", "to-stderr" in r.stderr and
          "to-stderr" not in r.stdout)
    check("vm run --json: rc, kernel, accel, boot time", facts.get("rc") == 7 and
          facts.get("accel") in ("kvm", "tcg") and facts.get("boot_s", 0) > 0, str(facts))
    log(f"  one boot and command: {time.monotonic() - t0:.1f} s")
    check("vm run: no qemu and no VM directory left", not qemus() and not os.listdir(VM_DIR)
          if os.path.isdir(VM_DIR) else not qemus())

    r = emu("vm", "run", "--timeout", "2", "--", "sleep", "60")
    check("vm run --timeout 2 -- sleep 60: exit 124", r.returncode == 124,
          f"rc {r.returncode} {r.stderr.strip()[-300:]}")

    # A VM of another run directory (a second server's part on this machine)
    # whose caller lives on: down --all here must leave it alone.
    other_dir = f"/run/ofan-emu-vmtest{os.getpid()}"
    other = subprocess.Popen([EMU, "vm", "run", "--", "sleep", "120"],
                             env={**os.environ, "OFAN_EMU_RUN_DIR": other_dir},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    p = subprocess.Popen([EMU, "vm", "run", "--", "sleep", "60"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    end = time.monotonic() + 30
    while time.monotonic() < end and not (qemus(VM_DIR[:-4]) and qemus(other_dir)):
        time.sleep(0.1)
    p.send_signal(signal.SIGKILL)
    p.wait()
    time.sleep(0.5)
    left = qemus(VM_DIR[:-4])
    check("SIGKILL of vm run: its qemu is still there to clean", bool(left), str(left))
    r = emu("down", "--all", "--json")
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    time.sleep(0.5)
    check("down --all removes the throwaway VM and its directory",
          r.returncode == 0 and d.get("vms") and not qemus(VM_DIR[:-4]) and
          not (os.path.isdir(VM_DIR) and os.listdir(VM_DIR)), f"{d.get('vms')} {qemus()}")
    check("down --all leaves another run directory's VM alone (its caller lives)",
          bool(qemus(other_dir)) and other.poll() is None, str(qemus(other_dir)))
    other.send_signal(signal.SIGTERM)  # its own exit path removes its VM
    try:
        other.wait(timeout=60)
    except subprocess.TimeoutExpired:
        other.kill()
        other.wait()
    r = subprocess.run([EMU, "down", "--all"], env={**os.environ, "OFAN_EMU_RUN_DIR": other_dir},
                       capture_output=True, text=True, timeout=120)
    check("the other run directory's VM is gone after its caller's exit",
          not qemus(other_dir), str(qemus(other_dir)))
    for pid in qemus():  # never leave one behind, whatever the checks said
        os.kill(pid, signal.SIGKILL)
    subprocess.run(["rm", "-rf", other_dir])
    log(f"{len(failures)} failure(s)" + (": " + "; ".join(failures) if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
