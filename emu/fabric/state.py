"""The state file: every object a fabric created, written before the object
is, so that a crash at any point leaves a record that `down` can act on.

expects:  root (the directory is under /run)
gives:    State (a dict saved atomically on every change), the fabric's
          prefix, and the list of fabrics that have a state file

Naming (the contract with `down --all`): every network namespace of fabric
NAME is "ofe-NAME-<node>", every ofan-dp runs inside one of them, every EAL
file prefix is "ofe-NAME-<node>". Nothing else is ever touched.
"""
import json
import os
import re
import time
from pathlib import Path

RUN_DIR = Path(os.environ.get("OFAN_EMU_RUN_DIR", "/run/ofan-emu"))
NS_PREFIX = "ofe-"
NAME_RE = re.compile(r"^[a-z0-9]{1,10}$")


def prefix(name):
    return f"{NS_PREFIX}{name}-"


def fabric_dir(name):
    return RUN_DIR / name


def valid_name(name):
    return bool(NAME_RE.match(name))


class State(dict):
    def __init__(self, name, data=None):
        super().__init__(data or {})
        self.name = name
        self.dir = fabric_dir(name)
        self.setdefault("name", name)
        self.setdefault("namespaces", [])
        self.setdefault("processes", {})

    @property
    def path(self):
        return self.dir / "state.json"

    def save(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self, indent=1, sort_keys=True))
        os.replace(tmp, self.path)

    def add_ns(self, ns):
        if ns not in self["namespaces"]:
            self["namespaces"].append(ns)
            self.save()

    @classmethod
    def load(cls, name):
        p = fabric_dir(name) / "state.json"
        try:
            return cls(name, json.loads(p.read_text()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            # A torn or unreadable file still names the fabric: down works
            # from the naming convention alone.
            return cls(name, {"corrupt": True})

    @staticmethod
    def names():
        try:
            # A fabric's directory holds its state file from the start; other
            # directories here are not fabrics (throwaway VMs: _vm/).
            return sorted(d.name for d in RUN_DIR.iterdir()
                          if d.is_dir() and valid_name(d.name) and (d / "state.json").exists())
        except FileNotFoundError:
            return []


def _stat(pid):
    """/proc/PID/stat after the command name: state first, start time 20th."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def proc_start_time(pid):
    """The process's start time in clock ticks since boot (field 22 of
    /proc/PID/stat): with the pid, it names one process even after reuse."""
    f = _stat(pid)
    return int(f[19]) if f else None


def running(pid):
    """Not gone and not a zombie (whose parent, maybe not an init that reaps,
    has yet to wait for it)."""
    f = _stat(pid)
    return f is not None and f[0] not in ("Z", "X")


def alive(rec):
    """rec = {"pid", "start"}: is that very process still running?"""
    f = _stat(rec["pid"])
    return f is not None and f[0] not in ("Z", "X") and int(f[19]) == rec.get("start")


def now():
    return time.time()
