"""Node kinds, in the spirit of Containerlab's nodes/<kind>: what runs a
fabric's switches, behind one interface (base.SwitchKind), and what runs its
hosts, behind another (base.HostKind). The fabric (fabric.py) makes the
namespaces and the links and hands the nodes to their kinds.

    switches
    ofan, per-switch   ofan_per_switch.OfanPerSwitch: one ofan-dp per switch
    ofan, shared       ofan_shared.OfanShared: every switch in one ofan-dp,
                       links between switches in memory
    kernel             kernel.Kernel: Linux routers, multipath routes
    hosts
    uroce              uroce.UroceHosts: a namespace each, one uroce process
                       per run driving them all
    vm                 rxe_vm.RxeVmHosts: a qemu VM each, soft-RoCE (rxe)

gives:    make(ctx, switch, engine) -> the switch kind; hosts(ctx, vm_hosts)
          -> the host kinds, each with its hosts (ctx: the fabric's
          NodeContext, context.py)
"""
from typing import Sequence

from ..context import NodeContext
from ..tools import FabricError
from .base import HostKind, HostStatus, SwitchKind, SwitchStatus, host_if, port_if
from .kernel import Kernel
from .ofan_per_switch import OfanPerSwitch
from .ofan_shared import OfanShared
from .rxe_vm import RxeVmHosts
from .uroce import UroceHosts


__all__ = ["ENGINES", "DEFAULT_ENGINE", "HostKind", "HostStatus", "RxeVmHosts", "SwitchKind",
           "SwitchStatus", "UroceHosts", "host_if", "hosts", "make", "port_if"]

# ofan-dp's engines, as `up --engine` takes them.
ENGINES = ("per-switch", "shared")
# The shared engine: every switch in one process, time emulated (it keeps
# its fabrics link-bound where the per-switch engine cannot: bench/RESULTS.md,
# "The fabric engine"). --engine per-switch keeps a process per switch.
DEFAULT_ENGINE = "shared"
_OFAN = {"per-switch": OfanPerSwitch, "shared": OfanShared}


def make(ctx: NodeContext, switch: str, engine: str | None) -> SwitchKind:
    """The kind for --switch SWITCH [--engine ENGINE] (None: the default)."""
    if switch == "kernel":
        if engine not in (None, "kernel"):
            raise FabricError(f"--engine {engine}: an engine of ofan-dp; --switch kernel "
                              "runs Linux routers", code=2)
        return Kernel(ctx)
    if switch != "ofan":
        raise FabricError(f"--switch {switch}: ofan or kernel", code=2)
    cls = _OFAN.get(engine or DEFAULT_ENGINE)
    if cls is None:
        raise FabricError(f"--engine {engine}: one of {', '.join(ENGINES)}", code=2)
    return cls(ctx)


def hosts(ctx: NodeContext, vm_hosts: Sequence[str],
          vm_mem_mb: int | None = None) -> tuple[UroceHosts, RxeVmHosts]:
    """The fabric's host kinds: rxe VMs on the slots named, uroce on the rest."""
    vms = set(vm_hosts)
    return (UroceHosts(ctx, [h.name for h in ctx.hosts if h.name not in vms]),
            RxeVmHosts(ctx, [h.name for h in ctx.hosts if h.name in vms],
                       mem_mb=vm_mem_mb))
