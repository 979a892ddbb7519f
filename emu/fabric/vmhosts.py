"""VM hosts: a host slot of the fabric taken by a qemu VM running Debian's
kernel with soft-RoCE (rdma_rxe), instead of a uroce host.

expects:  the fabric's host namespace ofe-NAME-hX with eth0 linked to its
          edge switch, as for any host, but with no address (the VM has it);
          VMs can run here (emu/vm/qemu.check())
modifies: in that namespace: the tap vm0 that qemu opens, spliced onto eth0
          both ways by tc mirred (the namespace becomes a wire), and a tbf at
          the link's rate on the VM's way out (its NIC's speed); one qemu per
          VM host, started inside the namespace (so `down` finds and kills it
          there) and recorded in the state file as "vm-hX"; the VM's
          directory /run/ofan-emu/NAME/vm/hX/ (agent socket, console log)
gives:    start(fabric, hosts): VMs booted, each guest's eth0 holding the
          host's planned MAC, address, gateway neighbour and default route,
          and an rxe device rxe0 on it whose active MTU fits the fabric;
          attach(fabric, host): the running VM, to exec commands in it

The fabric (fabric.py) imports this module and hands it what it needs (the
netdev MTU among them); nothing here imports fabric.py back.
"""
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from vm import qemu

from . import netns
from .state import alive, proc_start_time
from .tools import FabricError
from .topology import HostInfo

if TYPE_CHECKING:  # for the annotations only: fabric.py imports this module
    from .fabric import Fabric

TAP = "vm0"
RXE_DEV = "rxe0"
DEFAULT_MEM_MB = 512
BOOT_TIMEOUT_S = 300
# The VM's NIC-rate shaper's queue: deep, never the drop point.
NIC_QUEUE_BYTES = 4 << 20


def vm_dir(fab: "Fabric", host: str) -> Path:
    return fab.state.dir / "vm" / host


def _vm(fab: "Fabric", h: HostInfo, mem_mb: int, mtu: int) -> qemu.Vm:
    return qemu.Vm(f"{fab.prefix}{h['name']}", vm_dir(fab, h["name"]), mem_mb=mem_mb, cpus=1,
                   nics=[qemu.Nic(TAP, h["mac"], mtu)], netns=fab.ns(h["name"]))


def guest_setup_script(h: HostInfo, mtu: int) -> str:
    """What makes the guest the host the fabric's plan says (the same facts
    fabric.up gives a uroce host's namespace), and its rxe device."""
    return "\n".join([
        "set -e",
        "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1",
        f"ip link set eth0 mtu {mtu} up",
        f"ip addr add {h['addr']}/32 dev eth0",
        f"ip neigh replace {h['gateway']} lladdr {h['edge_mac']} dev eth0 nud permanent",
        f"ip route replace default via {h['gateway']} dev eth0 onlink",
        # An AF_XDP switch forwards frames as they are: no partial checksums.
        "ethtool -K eth0 tx off rx off tso off gso off gro off >/dev/null 2>&1 || true",
        f"rdma link add {RXE_DEV} type rxe netdev eth0",
        # rxe's port goes ACTIVE once the netdev is up with an address.
        f"for i in $(seq 50); do rdma link show {RXE_DEV}/1 | grep -q 'state ACTIVE' && break; "
        "sleep 0.2; done",
        f"rdma link show {RXE_DEV}/1",
        f"cat /sys/class/infiniband/{RXE_DEV}/ports/1/state",
        f"ibv_devinfo -d {RXE_DEV} | "
        "sed -n 's/.*active_mtu:[[:space:]]*\\([0-9]*\\).*/active_mtu \\1/p'",
    ])


def start(fab: "Fabric", hosts: list[str], mtu: int, mem_mb: int = DEFAULT_MEM_MB,
          log: Callable[[str], None] = print) -> dict[str, dict[str, Any]]:
    """Boots one VM per host (all at once), splices each onto its link and
    configures it; mtu: the fabric's netdev MTU (its veths'). Returns
    {host: facts}."""
    c = qemu.check()
    if not c["ok"]:
        raise FabricError(f"VM hosts cannot run here: {c['why']}", code=3)
    t = fab.topo
    vms = {}
    log(f"VM hosts: booting {len(hosts)} ({c['accel']}, {mem_mb} MiB each, kernel {c['kernel']})")
    for name in hosts:
        h = t.host_by_name[name]
        v = _vm(fab, h, mem_mb, mtu)
        key = f"vm-{name}"
        # The record first (the VM's directory and the namespace are known
        # to down already), then the process.
        fab.state["processes"][key] = {"kind": "vm", "host": name}
        fab.state.save()
        pid = v.start()
        fab.state["processes"][key].update({"pid": pid, "start": proc_start_time(pid)})
        fab.state.save()
        vms[name] = v

    def name_of(v: qemu.Vm) -> str:
        return next(n for n, x in vms.items() if x is v)

    def record(v: qemu.Vm) -> None:
        # KVM made no progress: the VM runs again under TCG, a new qemu.
        name = name_of(v)
        fab.state["processes"][f"vm-{name}"].update({"pid": v.pid,
                                                     "start": proc_start_time(v.pid)})
        fab.state.save()
        log(f"VM host {name}: no progress under KVM; restarted under TCG")

    def restarted(v: qemu.Vm) -> None:
        record(v)
        _splice(fab, name_of(v), mtu, v)  # and a new tap

    # All at once: the VMs started together, so a KVM that hangs costs one
    # KVM_PROGRESS_S, not one per VM; and before the taps are spliced, since
    # a qemu stuck in KVM may never open its tap.
    for v in vms.values():
        v.ensure_progress(on_restart=record)
    for name, v in vms.items():
        _splice(fab, name, mtu, v)
    facts = {}
    for name, v in vms.items():
        h = t.host_by_name[name]
        v.wait_ready(timeout=BOOT_TIMEOUT_S, on_restart=restarted)
        rc, out, err = v.exec(["sh", "-c", guest_setup_script(h, mtu)], timeout=120)
        if rc != 0:
            raise FabricError(f"VM host {name}: setting up its network and rxe failed ({rc}): "
                              f"{(err or out).strip()[-400:]}")
        active_mtu = None
        for line in out.splitlines():
            if line.startswith("active_mtu "):
                active_mtu = int(line.split()[1])
        if "ACTIVE" not in out:
            raise FabricError(f"VM host {name}: {RXE_DEV} did not become ACTIVE: {out.strip()}")
        facts[name] = {"boot_s": v.boot_s, "mem_mb": mem_mb, "accel": v.accel,
                       "kernel": v.kernel, "rxe": RXE_DEV, "active_mtu": active_mtu,
                       "pid": v.pid}
        fab.state["processes"][f"vm-{name}"].update(
            {k: facts[name][k] for k in ("boot_s", "mem_mb", "accel", "active_mtu")})
        fab.state["processes"][f"vm-{name}"]["start"] = proc_start_time(v.pid)
        fab.state.save()
        v.detach()
        log(f"VM host {name}: up in {v.boot_s:.1f} s, {RXE_DEV} active MTU {active_mtu}")
    return facts


def _splice(fab: "Fabric", name: str, mtu: int, v: qemu.Vm, timeout: float = 30) -> None:
    """qemu opens the tap at start; once it is there, up and spliced."""
    ns = fab.ns(name)
    end = time.monotonic() + timeout
    while not netns.has_link(ns, TAP):
        rc = v._exited()
        if rc is not None:
            v._fail(f"qemu exited ({rc}) before opening its tap")
        if time.monotonic() > end:
            raise FabricError(f"VM host {name}: qemu opened no tap {TAP} within {timeout} s")
        time.sleep(0.05)
    netns.set_mtu_up(ns, TAP, mtu)
    # The VM's NIC sends at its link's rate, as a NIC does (uroce hosts pace
    # themselves): without this the guest pushes into the edge switch at
    # memory speed and the first queue holds what a NIC would not have sent.
    # A deep limit, because a NIC's TX ring holds back rather than drops.
    rate = fab.topo.link_at(name, 0).attrs["rate_mbps"]
    netns.tc(ns, ["qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", f"{rate}mbit",
                  "burst", "16kb", "limit", str(NIC_QUEUE_BYTES)])
    netns.redirect(ns, "eth0", TAP)
    netns.redirect(ns, TAP, "eth0")


def attach(fab: "Fabric", name: str) -> qemu.Vm:
    """The running VM of host `name`, connected for exec."""
    rec = fab.state["processes"].get(f"vm-{name}")
    if rec is None:
        raise FabricError(f"{name} is not a VM host (ofan-emu status)", code=2)
    if "pid" not in rec or not alive(rec):
        raise FabricError(f"VM host {name} is not running (its qemu is gone; see "
                          f"{vm_dir(fab, name)}/console.log)")
    v = qemu.Vm(f"{fab.prefix}{name}", vm_dir(fab, name), netns=fab.ns(name))
    v.pid = rec["pid"]
    v.attach()
    return v
