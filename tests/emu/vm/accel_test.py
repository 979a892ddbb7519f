#!/usr/bin/python3
"""KVM or TCG: the probe and the boot watchdog of emu/vm/qemu.py, against
stand-in qemus (no root, no real VM).

    accel_test.py

Machines of this kind differ: qemu under KVM aborts at once on some and
hangs without running the guest on others. Checks: a qemu that hangs, one
that aborts and one whose guest prints nothing useful all come out "tcg",
within a few seconds; one whose guest prints the kernel's first line comes
out "kvm"; accelerator() caches what it found; a VM started under KVM that
makes no progress is restarted once under TCG, its restart hook is called,
the stuck qemu is gone and the cache says "tcg" from then on. Finally the
real qemu on this machine is probed once and what it chose is logged.
"""
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "common"))
sys.path.insert(0, str(HERE.parents[2] / "emu"))
from checks import check, failures, log  # noqa: E402
from vm import initramfs, qemu  # noqa: E402

# A liveness bound, not a performance figure: a probe that waited for a
# hanging qemu would take minutes.
FEW_S = qemu.PROBE_S + 10

STUBS = {
    "hangs": "exec sleep 600\n",
    "aborts": "echo 'error: failed to set MSR 0x10a' >&2\nexit 134\n",
    "silent-guest": "echo 'Probing EDD (edd=off to disable)... ok'\nexec sleep 600\n",
    "boots": "echo 'Decompressing Linux...'\n"
             "echo '[    0.000000] Linux version 6.1.0 (stub)'\nexec sleep 600\n",
    # For Vm: hangs under KVM; under TCG the guest writes its first line to
    # the -serial file, as Vm's console.
    "vm": """accel=; serial=
while [ $# -gt 0 ]; do
  case "$1" in
    -accel) accel=$2; shift ;;
    -serial) serial=${2#file:}; shift ;;
  esac
  shift
done
case "$accel" in kvm*) exec sleep 600 ;; esac
echo '[    0.000000] Linux version 6.1.0 (stub)' > "$serial"
exec sleep 600
""",
}


def stub(d, name):
    p = Path(d) / f"qemu-{name}"
    p.write_text("#!/bin/sh\n" + STUBS[name])
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def alive(pid):
    try:
        st = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return st not in ("Z", "X")
    except OSError:
        return False


def main():
    d = tempfile.mkdtemp(prefix="ofan-accel-")
    try:
        for name, what, want in (("hangs", "hangs", "tcg"), ("aborts", "aborts", "tcg"),
                                 ("silent-guest", "prints no kernel line", "tcg"),
                                 ("boots", "boots", "kvm")):
            t0 = time.monotonic()
            accel, why = qemu.probe_kvm(stub(d, name), "/nonexistent/vmlinuz")
            dt = time.monotonic() - t0
            check(f"probe: a qemu that {what}: {want}, within {FEW_S:g} s",
                  accel == want and dt < FEW_S, f"{accel} after {dt:.1f} s ({why})")
        accel, why = qemu.probe_kvm("/nonexistent/qemu", "/nonexistent/vmlinuz")
        check("probe: a qemu that cannot start: tcg", accel == "tcg", why)

        # accelerator(): the probe, then its cache.
        kvm_dev = Path(d) / "kvm"
        kvm_dev.write_text("")
        qemu.KVM_DEV = str(kvm_dev)
        qemu.PROBE_FILE = Path(d) / "run" / "kvm-probe.json"
        qemu.kernel = lambda: "stub"
        os.environ.pop("OFAN_EMU_ACCEL", None)
        for name, want in (("hangs", "tcg"), ("aborts", "tcg"), ("boots", "kvm")):
            os.environ["OFAN_EMU_QEMU"] = stub(d, name)
            qemu.PROBE_FILE.unlink(missing_ok=True)
            t0 = time.monotonic()
            got = qemu.accelerator()
            dt = time.monotonic() - t0
            cached = json.loads(qemu.PROBE_FILE.read_text())
            check(f"accelerator(), qemu that {name}: {want}, cached with a reason",
                  got == want and cached["accel"] == want and cached.get("why")
                  and dt < FEW_S, f"{got} after {dt:.1f} s; cache {cached}")
        os.environ["OFAN_EMU_QEMU"] = stub(d, "hangs")
        t0 = time.monotonic()
        got = qemu.accelerator()
        check("accelerator(): the cache answers without a probe",
              got == "kvm" and time.monotonic() - t0 < 1, got)
        os.environ["OFAN_EMU_ACCEL"] = "tcg"
        check("OFAN_EMU_ACCEL overrides the cache", qemu.accelerator() == "tcg")
        del os.environ["OFAN_EMU_ACCEL"]

        # A VM under KVM (the cache says so) whose guest never prints: one
        # restart under TCG, the hook called, the cache corrected.
        os.environ["OFAN_EMU_QEMU"] = stub(d, "vm")
        initramfs.build = lambda k: Path("/dev/null")
        qemu.KVM_PROGRESS_S = 1.0
        vm = qemu.Vm("ofe-accel-test", Path(d) / "vm", kernel_version="stub")
        first = vm.start()
        check("Vm.start: KVM, as the cache says", vm.accel == "kvm", str(vm.accel))
        hooks = []
        t0 = time.monotonic()
        restarted = vm.ensure_progress(on_restart=lambda v: hooks.append(v.pid))
        dt = time.monotonic() - t0
        cached = json.loads(qemu.PROBE_FILE.read_text())
        check("ensure_progress: restarted under TCG, within a few seconds",
              restarted and vm.accel == "tcg" and dt < FEW_S, f"{vm.accel} after {dt:.1f} s")
        check("ensure_progress: the restart hook saw the new qemu",
              hooks == [vm.pid] and vm.pid != first, f"{hooks} vs {vm.pid}")
        time.sleep(0.2)
        check("ensure_progress: the stuck qemu is gone", not alive(first))
        check("ensure_progress: the probe's cache says tcg, with the reason",
              cached["accel"] == "tcg" and "KVM" in cached.get("why", ""), str(cached))
        check("ensure_progress: a second call returns at once, no restart",
              vm.ensure_progress(on_restart=lambda v: hooks.append(v.pid)) is False
              and len(hooks) == 1)
        check("qemu.log says why it restarted",
              "restarted under TCG" in (vm.dir / "qemu.log").read_text())
        second = vm.pid
        vm.stop(timeout=0.5)
        check("stop: the TCG qemu is gone", not alive(second))
        vm2 = qemu.Vm("ofe-accel-test2", Path(d) / "vm2", kernel_version="stub")
        vm2.start()
        check("the next VM starts under TCG at once (corrected cache)",
              vm2.accel == "tcg" and vm2.ensure_progress() is False, str(vm2.accel))
        vm2.stop(timeout=0.5)
    finally:
        shutil.rmtree(d, ignore_errors=True)

    # The real qemu, if this machine has one and /dev/kvm: what the probe
    # chooses here (either is right; the point is that it answers).
    real = shutil.which("qemu-system-x86_64")
    ks = initramfs.kernels()
    if real and ks and os.access("/dev/kvm", os.R_OK | os.W_OK):
        t0 = time.monotonic()
        accel, why = qemu.probe_kvm(real, f"/boot/vmlinuz-{ks[-1]}")
        dt = time.monotonic() - t0
        log(f"this machine: {accel} ({why}), {dt:.1f} s")
        check(f"the real qemu's probe answers within {FEW_S:g} s", dt < FEW_S, f"{dt:.1f} s")
    else:
        log("this machine: no qemu, kernel or /dev/kvm to probe for real")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
