"""Switch kinds, in the spirit of Containerlab's nodes/<kind>: what runs a
fabric's switches, behind one interface (base.SwitchKind). The fabric
(fabric.py) makes the namespaces and the links and hands the switches to its
kind.

    ofan, per-switch   ofan_per_switch.OfanPerSwitch: one ofan-dp per switch
    ofan, shared       ofan_shared.OfanShared: every switch in one ofan-dp,
                       links between switches in memory
    kernel             kernel.Kernel: Linux routers, multipath routes

gives:    make(fab, switch, engine) -> the kind; engine_of(state) -> the
          fabric's engine as status reports it: per-switch | shared | kernel
"""
from typing import TYPE_CHECKING, Any, Mapping

from ..tools import FabricError
from .base import SwitchKind, SwitchStatus, host_if, port_if
from .kernel import Kernel
from .ofan_per_switch import OfanPerSwitch
from .ofan_shared import OfanShared

if TYPE_CHECKING:
    from ..fabric import Fabric

__all__ = ["ENGINES", "DEFAULT_ENGINE", "SwitchKind", "SwitchStatus", "engine_of", "host_if",
           "make", "port_if"]

# ofan-dp's engines, as `up --engine` takes them.
ENGINES = ("per-switch", "shared")
# The shared engine: every switch in one process, time emulated (it keeps
# its fabrics link-bound where the per-switch engine cannot: bench/RESULTS.md,
# "The fabric engine"). --engine per-switch keeps a process per switch.
DEFAULT_ENGINE = "shared"
_OFAN = {"per-switch": OfanPerSwitch, "shared": OfanShared}


def make(fab: "Fabric", switch: str, engine: str | None) -> SwitchKind:
    """The kind for --switch SWITCH [--engine ENGINE] (None: the default)."""
    if switch == "kernel":
        if engine not in (None, "kernel"):
            raise FabricError(f"--engine {engine}: an engine of ofan-dp; --switch kernel "
                              "runs Linux routers", code=2)
        return Kernel(fab)
    if switch != "ofan":
        raise FabricError(f"--switch {switch}: ofan or kernel", code=2)
    cls = _OFAN.get(engine or DEFAULT_ENGINE)
    if cls is None:
        raise FabricError(f"--engine {engine}: one of {', '.join(ENGINES)}", code=2)
    return cls(fab)


def engine_of(state: Mapping[str, Any]) -> str:
    """A state file's engine; one written before engines existed ran
    per-switch (or kernel)."""
    engine = state.get("engine")
    if isinstance(engine, str):
        return engine
    # Not DEFAULT_ENGINE: that is today's default, not the one it was made with.
    return "kernel" if state.get("switch") == "kernel" else "per-switch"
