"""One VM: Debian's kernel under qemu, the host's root read-only over 9p, the
guest agent (agent.py) as PID 1, and a command channel to it.

    v = Vm("ofe-f-h0", Path(dir), nics=[Nic("vm0", mac, mtu)], netns="ofe-f-h0")
    v.start(); v.wait_ready()                  # ~12 s under TCG
    rc, out, err = v.exec(["rdma", "link"])    # output may also stream to a callback
    v.stop()

expects:  qemu-system-x86, linux-image-amd64, busybox-static (scripts/setup.sh);
          root (9p export of /, taps)
modifies: DIR (agent socket, console log); a tap per NIC, created by qemu
          in `netns` when one is given (it goes with the namespace); the
          qemu process, named after the VM (-name ...,process=) so that it
          can be found and killed by its name
Accelerator: KVM only when a probe guest under KVM shows progress (the
kernel's first console line on a serial port within PROBE_S), else TCG. On
machines of this kind KVM either aborts at once ("failed to set MSR") or
hangs without running a guest instruction; qemu staying alive proves
nothing. A VM started under KVM that prints nothing within KVM_PROGRESS_S
is restarted once under TCG and the probe's cache says "tcg" from then on
(Vm.ensure_progress).
"""
import itertools
import json
import os
import queue
import secrets
import select
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, NoReturn

from . import agent, initramfs

AGENT = Path(__file__).resolve().parent / "agent.py"
# The guest mounts fresh tmpfs on these (initramfs.INIT); host folders below
# them that the guest needs are kept visible (ofan.keep).
GUEST_SCRATCH = ("/tmp", "/run", "/var/tmp")


def kept_paths(paths: Iterable[str | Path]) -> list[str]:
    """Those of paths (resolved) that the guest's scratch mounts would hide."""
    out: list[str] = []
    for p in paths:
        r = str(Path(p).resolve())
        if any(r == d or r.startswith(d + "/") for d in GUEST_SCRATCH) and r not in GUEST_SCRATCH:
            if any(c in r for c in " ,\t\n"):
                raise VmError(f"{r!r}: a path the VM must see may not hold spaces or commas")
            if r not in out:
                out.append(r)
    return out


PROBE_FILE = Path(os.environ.get("OFAN_EMU_RUN_DIR", "/run/ofan-emu")) / "kvm-probe.json"


class VmError(Exception):
    pass


@dataclass
class Nic:
    tap: str   # the tap's name (on the host side, in the VM's namespace)
    mac: str   # the guest's MAC
    mtu: int = 1500


def qemu_binary() -> str:
    q = os.environ.get("OFAN_EMU_QEMU") or shutil.which("qemu-system-x86_64")
    if not q:
        raise VmError("qemu-system-x86_64 is not installed (bash scripts/setup.sh)")
    return q


def kernel() -> str:
    ks = initramfs.kernels()
    if not ks:
        raise VmError("no kernel with modules in /boot and /lib/modules "
                      "(apt-get install linux-image-amd64: bash scripts/setup.sh)")
    return ks[-1]


KVM_DEV = "/dev/kvm"
# The line a booting kernel prints first on an early serial console: the
# guest ran instructions. A working KVM prints it well under a second, even
# on a loaded machine; TCG, which is not probed, takes ~10 s to get there.
PROGRESS_MARK = b"Linux version"
PROBE_S = 6.0
# A VM started under KVM must show PROGRESS_MARK on its console by then.
KVM_PROGRESS_S = 15.0
# What makes a kernel under KVM show PROGRESS_MARK at once (Vm adds it too).
EARLY_CONSOLE = "console=ttyS0 earlyprintk=serial,ttyS0"


def probe_kvm(qemu: str, kernel_image: str | Path, timeout: float = PROBE_S) -> tuple[str, str]:
    """('kvm' | 'tcg', why): boots kernel_image under KVM with no root and an
    early serial console on stdout, and accepts KVM only if PROGRESS_MARK
    shows within `timeout`. qemu aborting, exiting, or saying nothing all
    mean TCG. The probe's qemu is killed on every path."""
    try:
        p = subprocess.Popen([qemu, "-accel", "kvm", "-cpu", "host", "-m", "128",
                              "-nodefaults", "-display", "none", "-no-reboot", "-monitor", "none",
                              "-serial", "stdio", "-kernel", str(kernel_image),
                              "-append", f"{EARLY_CONSOLE} panic=-1"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as e:
        return "tcg", f"qemu did not start under KVM: {e}"
    seen = b""
    end = time.monotonic() + timeout
    why = f"no console output from the guest within {timeout:g} s"
    assert p.stdout is not None  # stdout=PIPE
    try:
        fd = p.stdout.fileno()
        while True:
            left = end - time.monotonic()
            if left <= 0:
                break
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                p.wait()
                why = f"qemu exited ({p.returncode}) before the guest printed anything"
                if seen:
                    why = f"qemu exited ({p.returncode}) before the kernel's first line"
                break
            seen = (seen + chunk)[-4096:]
            if PROGRESS_MARK in seen:
                return "kvm", "the guest's kernel printed its first line"
    finally:
        _kill_group(p)
        p.stdout.close()
    return "tcg", why


def _kill_group(p: "subprocess.Popen[bytes]") -> None:
    """Kills a qemu started in its own session, and reaps it if it goes."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            p.kill()
    try:
        p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass  # stuck in the kernel; it goes when KVM lets it, and the caller moves on


def accelerator() -> str:
    """'kvm' or 'tcg', as probe_kvm found it; cached for the boot in
    PROBE_FILE (and corrected there by Vm.ensure_progress)."""
    env = os.environ.get("OFAN_EMU_ACCEL")
    if env in ("kvm", "tcg"):
        return env
    if not os.access(KVM_DEV, os.R_OK | os.W_OK):
        return "tcg"
    try:
        cached = json.loads(PROBE_FILE.read_text())
        if cached.get("boot_id") == _boot_id() and cached.get("accel") in ("kvm", "tcg"):
            accel: str = cached["accel"]
            return accel
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    found, why = probe_kvm(qemu_binary(), f"/boot/vmlinuz-{kernel()}")
    _record_accel(found, why)
    return found


def _record_accel(accel: str, why: str) -> None:
    try:
        PROBE_FILE.parent.mkdir(parents=True, exist_ok=True)
        PROBE_FILE.write_text(json.dumps({"boot_id": _boot_id(), "accel": accel, "why": why}))
    except OSError:
        pass


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def check() -> dict[str, Any]:
    """Whether VMs can run here: {"ok", "why", "kernel", "accel", "qemu"}."""
    try:
        q = qemu_binary()
        k = kernel()
        initramfs.build(k)
        if os.geteuid() != 0:
            raise VmError("VM hosts need root (9p export of /, taps)")
        ver = subprocess.run([q, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        return {"ok": True, "why": "", "kernel": k, "accel": accelerator(), "qemu": ver}
    except (VmError, initramfs.InitramfsError) as e:
        return {"ok": False, "why": str(e)}


class Vm:
    def __init__(self, name: str, dir: str | Path, mem_mb: int = 512, cpus: int = 1,
                 nics: Iterable[Nic] = (), netns: str | None = None,
                 shares: Iterable[str | Path] = (), kernel_version: str | None = None,
                 append: str = "") -> None:
        self.name, self.dir = name, Path(dir)
        self.mem_mb, self.cpus, self.nics, self.netns = mem_mb, cpus, list(nics), netns
        self.shares = [str(Path(s).resolve()) for s in shares]
        for s in self.shares:
            if any(c in s for c in " ,\t\n"):
                raise VmError(f"share {s!r}: the path may not hold spaces or commas")
        self.kernel = kernel_version or kernel()
        self.append = append
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None
        self.sock: socket.socket | None = None
        self.ready: dict[str, Any] | None = None
        self.boot_s: float | None = None
        # Request ids unique across connections, not from 1 for each: the
        # agent's reply to a request of an earlier connection (a command
        # that ended after its caller went away, such as an orted of
        # `ofan-emu mpirun`) waits in the channel for the next one, which
        # must not take it for its own.
        self._ids = itertools.count(secrets.randbits(40) << 12 | 1)
        self._waiters: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._reader: threading.Thread | None = None
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.accel: str | None = None  # what this boot runs under (start() decides)
        self._progressed = False   # PROGRESS_MARK seen on this boot's console

    @property
    def socket_path(self) -> Path:
        return self.dir / "agent.sock"

    @property
    def console_path(self) -> Path:
        return self.dir / "console.log"

    def command(self, accel: str | None = None) -> list[str]:
        initrd = initramfs.build(self.kernel)
        accel = accel or accelerator()
        keep = kept_paths([AGENT.parents[2], os.getcwd()])
        cmd = [qemu_binary(), "-name", f"{self.name},process={self.name}",
               "-accel", accel, "-cpu", "host" if accel == "kvm" else "max",
               "-m", str(self.mem_mb), "-smp", str(self.cpus),
               "-nodefaults", "-display", "none", "-no-reboot", "-monitor", "none",
               "-kernel", f"/boot/vmlinuz-{self.kernel}", "-initrd", str(initrd),
               "-append", " ".join(x for x in (
                   # Under KVM the kernel's first line is the proof of progress
                   # (ensure_progress); under TCG a quiet console saves time.
                   f"{EARLY_CONSOLE} panic=-1 net.ifnames=0" if accel == "kvm" else
                   "console=ttyS0 panic=-1 quiet loglevel=3 net.ifnames=0",
                   # Less to probe and check under emulation: ~1 s of a boot.
                   "mitigations=off i8042.noaux=1 i8042.nokbd=1 i8042.nopnp=1 "
                   "cryptomgr.notests random.trust_cpu=on no_timer_check tsc=reliable",
                   f"ofan.agent={AGENT}",
                   f"ofan.shares={','.join(self.shares)}" if self.shares else "",
                   # The checkout (the agent, the binaries under test) and the
                   # working directory, where the guest's tmpfs would hide them.
                   f"ofan.keep={','.join(keep)}" if keep else "",
                   self.append) if x),
               "-serial", f"file:{self.console_path}",
               "-virtfs", f"local,path=/,mount_tag={initramfs.ROOT_TAG},security_model=none,"
                          "readonly=on,multidevs=remap",
               "-device", "virtio-serial-pci",
               "-chardev", f"socket,id=agent,path={self.socket_path},server=on,wait=off",
               "-device", f"virtserialport,chardev=agent,name={initramfs.AGENT_PORT}"]
        if accel == "tcg":
            cmd[cmd.index("-accel") + 1] = "tcg,thread=multi"
        for i, s in enumerate(self.shares):
            cmd += ["-virtfs", f"local,path={s},mount_tag=share{i},security_model=none,"
                               "multidevs=remap"]
        for i, n in enumerate(self.nics):
            # No offloads either way: the fabric's switches forward frames as
            # they are, so checksums must be whole and no frame above the MTU.
            offloads = ",".join(f"{o}=off" for o in (
                "csum", "guest_csum", "gso", "host_tso4", "host_tso6", "host_ecn", "host_ufo",
                "guest_tso4", "guest_tso6", "guest_ecn", "guest_ufo"))
            cmd += ["-netdev", f"tap,id=n{i},ifname={n.tap},script=no,downscript=no",
                    "-device", f"virtio-net-pci,netdev=n{i},mac={n.mac},host_mtu={n.mtu},"
                               f"{offloads}"]
        return cmd

    def start(self, accel: str | None = None) -> int:
        self.dir.mkdir(parents=True, exist_ok=True)
        for p in (self.socket_path, self.console_path):
            if p.exists():
                p.unlink()
        self.accel = accel or accelerator()
        self._progressed = self.accel != "kvm"
        cmd = self.command(self.accel)
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        self._t0 = time.monotonic()
        with open(self.dir / "qemu.log", "w") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=log, start_new_session=True)
        self.pid = self.proc.pid
        return self.proc.pid

    def ensure_progress(self, on_restart: Callable[["Vm"], None] | None = None) -> bool:
        """Under KVM: waits until the guest's kernel has printed its first
        console line. If it has not within KVM_PROGRESS_S of the start (KVM
        that hangs), or qemu died first (KVM that aborts), qemu is killed,
        the probe's cache is set to TCG, the VM starts again under TCG, and
        on_restart(vm) is called (its tap is new: splice it again). Returns
        True if it restarted. Under TCG, or once progress was seen: at once."""
        if self._progressed or self.proc is None:
            return False
        end = self._t0 + KVM_PROGRESS_S
        while True:
            try:
                with open(self.console_path, "rb") as f:
                    if PROGRESS_MARK in f.read(1 << 16):
                        self._progressed = True
                        return False
            except OSError:
                pass
            rc = self.proc.poll()
            if rc is not None:
                why = f"qemu exited ({rc}) under KVM before the guest printed anything"
                break
            if time.monotonic() >= end:
                why = f"no console line from the guest under KVM within {KVM_PROGRESS_S:g} s"
                break
            time.sleep(0.1)
        _kill_group(self.proc)
        self.detach()
        _record_accel("tcg", why)
        self.start(accel="tcg")
        with open(self.dir / "qemu.log", "a") as log:
            log.write(f"ofan-emu: {why}; restarted under TCG\n")
        if on_restart is not None:
            on_restart(self)
        return True

    def _exited(self) -> int | None:
        """qemu's exit status if it is gone (None while it runs); for a VM
        this process attached to, -1 once its pid is gone."""
        if self.proc is not None:
            return self.proc.poll()
        if self.pid is None:
            return None
        try:
            st = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            return -1 if st in ("Z", "X") else None
        except OSError:
            return -1

    def _connect(self, end: float, why_not: Callable[[], str | None]) -> None:
        """Connects to the agent socket and starts the reader; until the
        deadline `end`, retried while why_not() says nothing is wrong."""
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(str(self.socket_path))
                break
            except OSError as e:
                s.close()
                problem = why_not()
                if problem:
                    self._fail(problem)
                if time.monotonic() > end:
                    self._fail(f"cannot reach its agent at {self.socket_path}: {e}")
                time.sleep(0.1)
        self.sock = s
        self._file = s.makefile("rb")
        self._events = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def attach(self, timeout: float = 10) -> None:
        """Connects to the agent of a VM that is already up (another ofan-emu
        process booted it). qemu serves one client at a time: a second
        attach waits until the first has detached."""
        self._connect(time.monotonic() + timeout,
                      lambda: "its qemu is gone" if self._exited() is not None else None)

    def detach(self) -> None:
        """Leaves the VM running; closes this process's channel to it."""
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()
            self.sock = None

    def _fail(self, why: str) -> NoReturn:
        tail = ""
        for p in (self.dir / "qemu.log", self.console_path):
            try:
                lines = p.read_text(errors="replace").strip().splitlines()[-8:]
                if lines:
                    tail += f"\n  {p.name}: " + "\n  ".join(lines)
            except OSError:
                pass
        raise VmError(f"VM {self.name}: {why}{tail}")

    def wait_ready(self, timeout: float = 240,
                   on_restart: Callable[["Vm"], None] | None = None) -> dict[str, Any]:
        """Connects to the agent and waits for its ready event (after
        ensure_progress, which may restart the VM under TCG)."""
        self.ensure_progress(on_restart)
        if self.proc is None:
            self._fail("not started")
        proc: subprocess.Popen[bytes] = self.proc  # not None in the lambda either
        end = time.monotonic() + timeout
        self._connect(end, lambda: f"qemu exited ({proc.returncode}) before its agent "
                      "was up" if proc.poll() is not None else None)
        while True:
            if proc.poll() is not None:
                self._fail(f"qemu exited ({proc.returncode}) during boot")
            if time.monotonic() > end:
                self._fail(f"its agent did not say ready within {timeout} s")
            try:
                msg = self._events.get(timeout=0.5)
            except queue.Empty:
                continue
            if msg.get("event") == "ready":
                break
            if msg.get("event") == "closed":
                self._fail("the agent channel closed during boot")
        self.ready = msg
        self.boot_s = round(time.monotonic() - self._t0, 2)
        return msg

    def _read(self) -> None:
        for line in self._file:
            msg = agent.parse_message(line)  # None: not a message of the agent's
            if msg is None:
                continue
            if "event" in msg:
                self._events.put(msg)
                continue
            with self._lock:
                q = self._waiters.get(msg["id"])
            if q is not None:
                q.put(msg)
        self._events.put({"event": "closed"})
        with self._lock:
            for q in self._waiters.values():
                q.put({"error": "its agent channel closed"})

    def _send(self, obj: dict[str, Any]) -> None:
        if self.sock is None:
            raise VmError(f"VM {self.name} is not connected")
        with self._send_lock:
            self.sock.sendall((json.dumps(obj) + "\n").encode())

    def exec(self, argv: list[Any], timeout: float | None = None,
             env: dict[str, str] | None = None, cwd: str | None = None,
             on_output: Callable[[int, str], None] | None = None) -> tuple[int, str, str]:
        """Runs argv in the guest. Returns (rc, stdout, stderr); rc -9 when
        it ran past `timeout` and was killed. on_output(fd, text) sees the
        output as it comes."""
        if self.sock is None:
            raise VmError(f"VM {self.name} is not up")
        rid = next(self._ids)
        q: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._waiters[rid] = q
        out: dict[int, list[str]] = {1: [], 2: []}
        try:
            self._send({"id": rid, "op": "exec", "argv": [str(a) for a in argv], "env": env or {},
                        "cwd": cwd, "timeout": timeout})
            while True:
                try:
                    msg = q.get(timeout=5)
                except queue.Empty:
                    if self._exited() is not None:
                        self._fail(f"qemu exited ({self._exited()}) while running {argv}")
                    continue
                if "data" in msg:
                    out[msg["fd"]].append(msg["data"])
                    if on_output:
                        on_output(msg["fd"], msg["data"])
                elif "rc" in msg:
                    return msg["rc"], "".join(out[1]), "".join(out[2])
                elif "error" in msg:
                    self._fail(msg["error"])  # with qemu's and the console's last lines
        finally:
            with self._lock:
                self._waiters.pop(rid, None)

    def stop(self, timeout: float = 10) -> None:
        """Powers the guest off (its root is read-only: nothing to flush but
        the shares), then kills qemu if it is still there."""
        if self.proc is None:
            return
        if self.sock is not None and self.proc.poll() is None:
            try:
                self._send({"id": 0, "op": "poweroff"})
            except OSError:
                pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.sock is not None:
            self.sock.close()
            self.sock = None
