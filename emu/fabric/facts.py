"""What ofan-emu asks the C++ binaries instead of keeping a copy
(docs/design.md, rule 7): each fact lives in one place in C++, and here it
is read from the binary that owns it, once per process.

gives:    policies() -> the LB policies, as `ofanctl --list-policies --json`
          lists them (from dataplane/lb/policy_list.h);
          emu_policies() -> the names a fabric of ofan-dp switches can run;
          netdev_mtu() -> every fabric link's MTU, as ofan-dp sets it on its
          ports (dataplane/packet/frame_budget.h; `ofan-topo facts`);
          stages() -> the queue stages in report order, as ofan-sim reports
          them (dataplane/lb/fat_tree.h; `ofan-topo facts`; `ofan-topo
          describe` gives each switch port's)
errors:   FabricError naming the binary when it is missing (tools.tool says
          where it looked) or answers something that is not the list
"""
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .tools import FabricError, run, tool


@dataclass(frozen=True)
class Policy:
    """One row of the list of LB policies."""
    name: str
    aliases: tuple[str, ...]
    queue_aware: bool
    host_chooses: bool  # follows the source host's choice (needs hosts that make one)
    help: str


def _ask_json(name: str, argv: list[str]) -> Any:
    exe = tool(name)
    p = run([exe] + argv, check=False, timeout=30)
    if p.returncode != 0:
        raise FabricError(f"{exe} {' '.join(argv)} failed ({p.returncode}): "
                          f"{(p.stderr or p.stdout).strip()[:400]}")
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise FabricError(f"{exe} {' '.join(argv)}: not JSON: {p.stdout[:200]!r}")


@lru_cache(maxsize=None)
def policies() -> tuple[Policy, ...]:
    argv = ["--list-policies", "--json"]
    d = _ask_json("ofanctl", argv)
    try:
        out = tuple(Policy(name=str(p["name"]), aliases=tuple(str(a) for a in p["aliases"]),
                           queue_aware=bool(p["queue_aware"]),
                           host_chooses=bool(p["host_chooses"]), help=str(p["help"]))
                    for p in d)
    except (KeyError, TypeError) as e:
        raise FabricError(f"ofanctl {' '.join(argv)}: not a list of policies ({e})")
    if not out:
        raise FabricError(f"ofanctl {' '.join(argv)}: an empty list of policies")
    return out


def emu_policies() -> tuple[str, ...]:
    """The policies a fabric's switches can run on their own: not those that
    follow a choice the source host made (uroce and rxe hosts make none)."""
    return tuple(p.name for p in policies() if not p.host_chooses)


@lru_cache(maxsize=None)
def _topo_facts() -> tuple[int, tuple[str, ...]]:
    d = _ask_json("ofan-topo", ["facts"])
    try:
        mtu, stages = int(d["netdev_mtu"]), tuple(str(x) for x in d["stages"])
    except (KeyError, TypeError, ValueError) as e:
        raise FabricError(f"ofan-topo facts: not the facts ofan-emu needs ({e})")
    if mtu < 1280 or not stages:
        raise FabricError(f"ofan-topo facts: MTU {mtu}, stages {stages}: not usable")
    return mtu, stages


def netdev_mtu() -> int:
    return _topo_facts()[0]


def stages() -> tuple[str, ...]:
    return _topo_facts()[1]
