"""The VM hosts' initramfs: busybox, the modules that mount the host's root
over 9p, and an /init that hands over to the guest agent (emu/vm/agent.py).

    initramfs.build(kernel) -> Path      (cached under CACHE_DIR by content)

Expects: Debian's busybox-static (/bin/busybox) and the kernel's modules in
/lib/modules/VERSION (linux-image-amd64). Everything past the 9p mount comes
from the host's own root (modprobe, ip, rdma, python3), so the image holds
only what that mount needs: a few hundred KiB, built in well under a second.
Modifies: writes one file into CACHE_DIR. Next: qemu.Vm boots it.
"""
import gzip
import hashlib
import io
import lzma
import os
import re
import stat
from pathlib import Path
from typing import Iterable

CACHE_DIR = Path(os.environ.get("OFAN_EMU_CACHE", "/var/cache/ofan-emu"))
BUSYBOX = Path("/bin/busybox")
# What mounting a virtio 9p root takes, and the virtio-serial agent channel.
# Dependencies are resolved from modules.dep; built-ins are skipped.
BOOT_MODULES = ["virtio_pci", "virtio_console", "9pnet_virtio", "9p"]
# The 9p export tag, and the agent's virtio-serial port name (qemu.py uses them).
ROOT_TAG = "hostroot"
AGENT_PORT = "ofan.agent"

INIT = r"""#!/bin/busybox sh
# ofan-emu VM init: mount the host's root read-only over 9p, give it writable
# scratch (tmpfs) where programs expect to write, and exec the guest agent.
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /newroot
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.order); do insmod "/modules/$m" || echo "init: insmod $m failed"; done
arg() { sed -n "s/.*\bofan\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
agent=$(arg agent)
shares=$(arg shares | tr , ' ')
if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose \
    @ROOT_TAG@ /newroot; then
  echo "init: cannot mount the host's root (9p tag @ROOT_TAG@)"; poweroff -f
fi
# Host folders under those scratch mounts that the guest must still see (a
# checkout in /tmp: the agent and the test binaries live there) are held
# aside and put back on top.
keep=$(arg keep | tr , ' ')
i=0
for k in $keep; do
  mkdir -p "/keep$i"
  mount --bind "/newroot$k" "/keep$i" || echo "init: cannot hold $k"
  i=$((i+1))
done
for d in tmp run var/tmp; do mount -t tmpfs -o mode=1777 tmpfs "/newroot/$d" 2>/dev/null; done
i=0
for k in $keep; do
  mkdir -p "/newroot$k" && mount --move "/keep$i" "/newroot$k" || echo "init: cannot keep $k"
  i=$((i+1))
done
mount --move /dev /newroot/dev
mkdir -p /newroot/dev/shm /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts 2>/dev/null
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
i=0
for s in $shares; do
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 "share$i" "/newroot$s" ||
    echo "init: share $s failed"
  i=$((i+1))
done
exec switch_root /newroot /usr/bin/python3 -u "$agent"
echo "init: switch_root failed"; poweroff -f
""".replace("@ROOT_TAG@", ROOT_TAG)


class InitramfsError(Exception):
    pass


def kernels() -> list[str]:
    """Kernel versions that have both a /boot/vmlinuz and their modules, newest last."""
    out: list[str] = []
    for v in Path("/boot").glob("vmlinuz-*"):
        ver = v.name[len("vmlinuz-"):]
        if (Path("/lib/modules") / ver / "modules.dep").exists():
            out.append(ver)
    # Numbers compare as numbers (6.10 after 6.9); a part that is not a
    # number sorts after those that are, by its text.
    return sorted(out, key=lambda s: [(0, int(x), "") if x.isdigit() else (1, 0, x)
                                      for x in re.split(r"[.-]", s)])


ModuleTable = dict[str, tuple[str, list[str]]]


def _deps(moddir: Path) -> ModuleTable:
    """module name -> (relative path, [relative paths of its dependencies])."""
    table: ModuleTable = {}
    for line in (moddir / "modules.dep").read_text().splitlines():
        path, _, deps = line.partition(":")
        name = Path(path).name.split(".ko")[0].replace("-", "_")
        table[name] = (path, deps.split())
    return table


def _closure(table: ModuleTable, names: Iterable[str]) -> list[str]:
    """Module paths in load order (dependencies first), skipping built-ins."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(path: str) -> None:
        if path in seen:
            return
        seen.add(path)
        name = Path(path).name.split(".ko")[0].replace("-", "_")
        for d in table[name][1]:
            visit(d)
        order.append(path)

    for n in names:
        if n in table:
            visit(table[n][0])
    return order


def _module_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name.endswith(".ko.xz"):
        return lzma.decompress(data)
    if path.name.endswith(".ko.gz"):
        return gzip.decompress(data)
    if path.name.endswith(".ko.zst"):
        raise InitramfsError(f"{path}: zstd-compressed modules are not supported")
    return data


def _cpio(entries: list[tuple[str, int, bytes | None]]) -> bytes:
    """newc cpio of (name, mode, data or None for a directory)."""
    out = io.BytesIO()
    ino = 1

    def pad(n: int) -> None:
        out.write(b"\0" * ((4 - n % 4) % 4))

    for name, mode, data in entries + [("TRAILER!!!", 0, b"")]:
        body = data or b""
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{x:08x}" for x in (
            ino, mode, 0, 0, 1, 0, len(body), 0, 0, 0, 0, len(nb), 0))
        out.write(hdr.encode())
        out.write(nb)
        pad(110 + len(nb))
        out.write(body)
        pad(len(body))
        ino += 1
    return out.getvalue()


def build(kernel: str) -> Path:
    """The initramfs for `kernel` (a version from kernels()), built once and
    cached by content."""
    moddir = Path("/lib/modules") / kernel
    if not BUSYBOX.exists():
        raise InitramfsError(f"{BUSYBOX} is missing (apt-get install busybox-static)")
    if not (moddir / "modules.dep").exists():
        raise InitramfsError(f"{moddir}/modules.dep is missing (apt-get install linux-image-amd64)")
    table = _deps(moddir)
    missing = [n for n in BOOT_MODULES if n not in table and
               not re.search(rf"/{n}\.ko", (moddir / "modules.builtin").read_text())]
    if missing:
        raise InitramfsError(f"kernel {kernel} has neither a module nor a built-in for {missing}")
    mods = _closure(table, BOOT_MODULES)
    d, f, x = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o644, stat.S_IFREG | 0o755
    entries: list[tuple[str, int, bytes | None]] = [
        ("bin", d, None), ("modules", d, None), ("bin/busybox", x, BUSYBOX.read_bytes()),
        ("init", x, INIT.encode())]
    order: list[str] = []
    for m in mods:
        name = Path(m).name.split(".ko")[0] + ".ko"
        entries.append((f"modules/{name}", f, _module_bytes(moddir / m)))
        order.append(name)
    entries.append(("modules.order", f, ("\n".join(order) + "\n").encode()))
    blob = gzip.compress(_cpio(entries), compresslevel=6, mtime=0)
    digest = hashlib.sha256(blob).hexdigest()[:16]
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    path = CACHE_DIR / f"initramfs-{kernel}-{digest}.cpio.gz"
    if not path.exists():
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(blob)
        tmp.rename(path)
    return path
