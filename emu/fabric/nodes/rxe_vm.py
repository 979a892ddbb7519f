"""The rxe VM host kind: a host slot of the fabric taken by a qemu VM running
Debian's kernel with soft-RoCE (rdma_rxe), instead of a uroce host.

expects:  the fabric's host namespace ofe-NAME-hX with eth0 linked to its
          edge switch, as for any host, but with no address (the VM has it);
          VMs can run here (emu/vm/qemu.check())
modifies: in that namespace: the tap vm0 that qemu opens, spliced onto eth0
          both ways by tc mirred (the namespace becomes a wire), and a tbf at
          the link's rate on the VM's way out (its NIC's speed); one qemu per
          VM host, started inside the namespace (so `down` finds and kills it
          there) and recorded in the state file as "vm-hX" before it starts;
          the VM's directory /run/ofan-emu/NAME/vm/hX/ (agent socket,
          console log); the management network: a namespace ofe-NAME-mgmt
          with a bridge, and per VM a second NIC (tap mg0) spliced onto a
          veth into that bridge
gives:    up(): the VMs booted (all at once) and spliced onto their links;
          configure(): each guest's eth0 holding the host's planned MAC,
          address, gateway neighbour and default route, and an rxe device
          rxe0 on it whose active MTU fits the fabric; its eth1 on the
          management network (mgmt_addr) and its hostname the host's name;
          attach(host): the running VM, to exec commands in it

The management network is a cluster's front end: what launches and wires up
a job (Open MPI's daemons and their TCP, emu/fabric/mpi.py) goes over it,
off the fabric's measured links, as it would on a real RoCE cluster.
"""
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from vm import qemu

from ..context import NodeContext
from .. import facts, netns, teardown
from ..state import ProcessRecord, VmBoot, proc_start_time
from ..tools import FabricError
from ..topology import HostInfo
from .base import HostKind, HostStatus


TAP = "vm0"
RXE_DEV = "rxe0"
DEFAULT_MEM_MB = 512
BOOT_TIMEOUT_S = 300
# The VM's NIC-rate shaper's queue: deep, never the drop point.
NIC_QUEUE_BYTES = 4 << 20
# The management network: its namespace (ctx.ns(MGMT_NODE)), bridge and
# subnet, off the fabric's 10.0.0.0/8; the management namespace holds
# MGMT_GATEWAY, each VM mgmt_addr(host) on its eth1.
MGMT_NODE = "mgmt"
MGMT_BRIDGE = "br0"
MGMT_TAP = "mg0"     # the VM's second NIC, in its host's namespace
MGMT_VETH = "mg1"    # that namespace's end of the wire to the bridge
MGMT_NET = "172.31.0.0/16"
MGMT_PREFIX_LEN = 16
MGMT_GATEWAY = "172.31.255.254"
MGMT_MTU = 1500


def key(host: str) -> str:
    """The VM's process record's key in the state file."""
    return f"vm-{host}"


def mgmt_addr(h: HostInfo) -> str:
    """Host h's VM's address on the management network, by host id."""
    n = h.id + 1
    if n >= 0xFFFE:
        raise FabricError(f"VM host {h.name}: host id {h.id} is beyond the management "
                          f"network's {MGMT_NET}", code=2)
    return f"172.31.{n >> 8}.{n & 0xFF}"


# Which end of host h's management wire a MAC is (mgmt_mac's second byte).
MGMT_NIC, MGMT_VETH_HOST, MGMT_VETH_BRIDGE = 0x6D, 0x6E, 0x6F


def mgmt_mac(h: HostInfo, end: int = MGMT_NIC) -> str:
    """A MAC on host h's management wire, locally administered, by host id:
    the VM's NIC (the default) or an end of the veth to the bridge."""
    return (f"02:{end:02x}:00:{(h.id >> 16) & 0xFF:02x}:{(h.id >> 8) & 0xFF:02x}:"
            f"{h.id & 0xFF:02x}")


def guest_setup_script(h: HostInfo, mtu: int) -> str:
    """What makes the guest the host the fabric's plan says (the same facts
    the uroce kind gives a host's namespace), and its rxe device."""
    return "\n".join([
        "set -e",
        f"hostname {h.name}",
        f"ip link set eth1 mtu {MGMT_MTU} up",
        f"ip addr add {mgmt_addr(h)}/{MGMT_PREFIX_LEN} dev eth1",
        "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1",
        f"ip link set eth0 mtu {mtu} up",
        f"ip addr add {h.addr}/32 dev eth0",
        f"ip neigh replace {h.gateway} lladdr {h.edge_mac} dev eth0 nud permanent",
        f"ip route replace default via {h.gateway} dev eth0 onlink",
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


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time a process has used (qemu: its VM's cost)."""
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return round((int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK"), 2)
    except (OSError, ValueError, IndexError):
        return None


class RxeVmHosts(HostKind):
    kind = "vm"

    def __init__(self, ctx: NodeContext, names: Sequence[str], mem_mb: int | None = None) -> None:
        super().__init__(ctx, names)
        self.mem_mb = mem_mb or DEFAULT_MEM_MB
        self._vms: dict[str, qemu.Vm] = {}  # between up() and configure()

    def vm_dir(self, host: str) -> Path:
        return self.ctx.state.dir / "vm" / host

    def _vm(self, h: HostInfo, mtu: int) -> qemu.Vm:
        return qemu.Vm(f"{self.ctx.prefix}{h.name}", self.vm_dir(h.name),
                       mem_mb=self.mem_mb, cpus=1,
                       nics=[qemu.Nic(TAP, h.mac, mtu), qemu.Nic(MGMT_TAP, mgmt_mac(h), MGMT_MTU)],
                       netns=self.ctx.ns(h.name))

    def mgmt_ns(self) -> str:
        return self.ctx.ns(MGMT_NODE)

    def _mgmt_up(self) -> None:
        """The management network's namespace and bridge, and each VM
        host's veth into it (the VM's tap is spliced on at _splice)."""
        ns = self.mgmt_ns()
        netns.create(ns)
        netns.bridge(ns, MGMT_BRIDGE, MGMT_GATEWAY, MGMT_PREFIX_LEN)
        for name in self.names:
            h = self.host(name)
            port = f"m{name}"
            netns.veth(self.ctx.ns(name), MGMT_VETH, mgmt_mac(h, MGMT_VETH_HOST), ns, port,
                       mgmt_mac(h, MGMT_VETH_BRIDGE), MGMT_MTU)
            netns.enslave(ns, port, MGMT_BRIDGE)

    def up(self) -> None:
        """Boots one VM per host, all at once, splices each onto its link and
        waits until its agent answers."""
        if not self.names:
            return
        c = qemu.check()
        if not c["ok"]:
            raise FabricError(f"VM hosts cannot run here: {c['why']}", code=3)
        ctx, mtu, log = self.ctx, facts.netdev_mtu(), self.ctx.log
        log(f"VM hosts: booting {len(self.names)} ({c['accel']}, {self.mem_mb} MiB each, "
            f"kernel {c['kernel']})")
        self._mgmt_up()
        vms = self._vms
        for name in self.names:
            v = self._vm(self.host(name), mtu)
            # The record first (the VM's directory and the namespace are known
            # to down already), then the process.
            ctx.writer.process(key(name), ProcessRecord(kind="vm", host=name))
            pid = v.start()
            ctx.writer.process_update(key(name), pid=pid, start=proc_start_time(pid))
            vms[name] = v

        def name_of(v: qemu.Vm) -> str:
            return next(n for n, x in vms.items() if x is v)

        def record(v: qemu.Vm) -> None:
            # KVM made no progress: the VM runs again under TCG, a new qemu.
            name = name_of(v)
            ctx.writer.process_update(key(name), pid=v.pid, start=proc_start_time(v.pid))
            log(f"VM host {name}: no progress under KVM; restarted under TCG")

        def restarted(v: qemu.Vm) -> None:
            record(v)
            self._splice(name_of(v), mtu, v)  # and a new tap

        # All at once: the VMs started together, so a KVM that hangs costs one
        # KVM_PROGRESS_S, not one per VM; and before the taps are spliced, since
        # a qemu stuck in KVM may never open its tap.
        for v in vms.values():
            v.ensure_progress(on_restart=record)
        for name, v in vms.items():
            self._splice(name, mtu, v)
        for v in vms.values():
            v.wait_ready(timeout=BOOT_TIMEOUT_S, on_restart=restarted)

    def configure(self) -> None:
        """Each booted guest (up()) set up as its host, with rxe; its boot
        recorded."""
        mtu = facts.netdev_mtu()
        for name, v in self._vms.items():
            rc, out, err = v.exec(["sh", "-c", guest_setup_script(self.host(name), mtu)],
                                  timeout=120)
            if rc != 0:
                raise FabricError(f"VM host {name}: setting up its network and rxe failed "
                                  f"({rc}): {(err or out).strip()[-400:]}")
            active_mtu = None
            for line in out.splitlines():
                if line.startswith("active_mtu "):
                    active_mtu = int(line.split()[1])
            if "ACTIVE" not in out:
                raise FabricError(f"VM host {name}: {RXE_DEV} did not become ACTIVE: "
                                  f"{out.strip()}")
            boot = VmBoot(boot_s=v.boot_s or 0.0, mem_mb=self.mem_mb, accel=v.accel or "",
                          active_mtu=active_mtu)
            self.ctx.writer.process_update(key(name), boot=boot, start=proc_start_time(v.pid))
            v.detach()
            self.ctx.log(f"VM host {name}: up in {boot.boot_s:.1f} s, {RXE_DEV} active MTU "
                         f"{active_mtu}")
        self._vms = {}

    def _splice(self, name: str, mtu: int, v: qemu.Vm, timeout: float = 30) -> None:
        """qemu opens the taps at start; once they are there, up and
        spliced: the fabric's onto eth0, the management one onto its veth."""
        ns = self.ctx.ns(name)
        end = time.monotonic() + timeout
        while not (netns.has_link(ns, TAP) and netns.has_link(ns, MGMT_TAP)):
            rc = v._exited()
            if rc is not None:
                v._fail(f"qemu exited ({rc}) before opening its tap")
            if time.monotonic() > end:
                raise FabricError(f"VM host {name}: qemu opened no taps {TAP}, {MGMT_TAP} "
                                  f"within {timeout} s")
            time.sleep(0.05)
        # A VM restarted under TCG (up()) has new taps: the splices of the
        # first, from this namespace's side, go first.
        for dev in ("eth0", MGMT_VETH):
            netns.run_in(ns, ["tc", "qdisc", "del", "dev", dev, "ingress"], check=False)
        netns.set_mtu_up(ns, MGMT_TAP, MGMT_MTU)
        netns.redirect(ns, MGMT_TAP, MGMT_VETH)
        netns.redirect(ns, MGMT_VETH, MGMT_TAP)
        netns.set_mtu_up(ns, TAP, mtu)
        # The VM's NIC sends at its link's rate, as a NIC does (uroce hosts pace
        # themselves): without this the guest pushes into the edge switch at
        # memory speed and the first queue holds what a NIC would not have sent.
        # A deep limit, because a NIC's TX ring holds back rather than drops.
        rate = self.topo.link_at(name, 0).attrs.rate_mbps
        netns.tc(ns, ["qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", f"{rate}mbit",
                      "burst", "16kb", "limit", str(NIC_QUEUE_BYTES)])
        netns.redirect(ns, "eth0", TAP)
        netns.redirect(ns, TAP, "eth0")

    def record(self, name: str) -> ProcessRecord | None:
        return self.ctx.state.processes.get(key(name))

    def status(self, name: str) -> HostStatus:
        s = self.base_status(name)
        rec = self.record(name) or ProcessRecord()
        s.alive = rec.pid is not None and rec.alive()
        if s.alive and rec.pid is not None:
            s.cpu_s = _cpu_seconds(rec.pid)
        s.pid, s.boot = rec.pid, rec.boot
        s.mgmt = mgmt_addr(self.host(name))
        return s

    def attach(self, name: str) -> qemu.Vm:
        """The running VM of host `name`, connected for exec."""
        rec = self.record(name)
        if rec is None:
            raise FabricError(f"{name} is not a VM host (ofan-emu status)", code=2)
        if rec.pid is None or not rec.alive():
            raise FabricError(f"VM host {name} is not running (its qemu is gone; see "
                              f"{self.vm_dir(name)}/console.log)")
        v = qemu.Vm(f"{self.ctx.prefix}{name}", self.vm_dir(name), netns=self.ctx.ns(name))
        v.pid = rec.pid
        v.attach()
        return v

    def exec(self, name: str, argv: list[Any], timeout: float | None = None,
             on_output: Callable[[int, str], None] | None = None) -> tuple[int, str, str]:
        """A command in host `name`'s VM: its exit code, stdout and stderr."""
        v = self.attach(name)
        try:
            return v.exec(argv, timeout=timeout, on_output=on_output)
        finally:
            v.detach()

    def shell(self, name: str, script: str, timeout: float) -> str:
        return self.exec(name, ["sh", "-c", script], timeout=timeout)[1]

    def down(self) -> list[int]:
        return teardown.kill_processes(
            rec.pid for n in self.names if (rec := self.record(n)) is not None
            and rec.pid is not None and rec.alive())
