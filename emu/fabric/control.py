"""Talking to one ofan-dp through its control socket, by way of ofanctl: the
one client of the protocol (common/protocol/protocol.h, control/client/), so
that ofan-emu never writes the wire format itself.

gives:  request(sock, cmd, **args) -> the reply's "result" (a dict or list),
        or FabricError with the switch's message; with check=False, None
        instead of an error (for polling a switch that is starting);
        request_all(sock_dir, cmd) -> per switch (NAME.sock in the folder)
        its result or its error, from one ofanctl (--fabric) for all
"""
import json
import subprocess
from typing import Any

from .tools import FabricError, tool


def _argv(cmd: str, args: dict[str, Any]) -> tuple[list[str], str | None]:
    if cmd == "load_tables":
        return ["load-tables", "-"], json.dumps({"masks": args["masks"]})
    if cmd == "set_port":
        return (["port", str(args["port"])] + ([args["admin"]] if "admin" in args else [])
                + (["--wire", args["wire"]] if "wire" in args else [])
                + (["--pfc-storm-ms", str(args["pfc_storm_ms"])]
                   if "pfc_storm_ms" in args else [])), None
    if cmd == "set_policy":
        a = ["set-policy", args["policy"]]
        if args.get("ofan_mode"):
            a += ["--ofan-mode", args["ofan_mode"]]
        return a, None
    if cmd == "capture_start":
        a = ["capture-start", "--count", str(args.get("count", 0)),
             "--snaplen", str(args.get("snaplen", 4096))]
        for p in args["ports"]:
            a += ["--port", str(p)]
        return a + [args["file"]], None
    if cmd in ("capture_status", "capture_stop"):
        return [cmd.replace("_", "-")] + (["--id", str(args["id"])] if "id" in args else []), None
    if cmd in ("status", "counters", "ports", "queues", "pointers", "version", "reset_queues"):
        return [cmd.replace("_", "-")], None
    if cmd == "switch_admin":  # the shared engine's: one switch stopped or resumed
        return ["switch", args["admin"]], None
    raise FabricError(f"internal: no ofanctl command for {cmd}")


# The read-only requests ofanctl sends to every switch of a folder at once
# (ofanctl --fabric: control/ofanctl/main.cc FabricCommand).
FABRIC_COMMANDS = ("version", "status", "counters", "ports", "queues", "pointers")


def request_all(sock_dir: str, cmd: str, timeout: float = 10) -> dict[str, tuple[bool, Any]]:
    """`cmd` on every switch whose NAME.sock is in sock_dir, by one ofanctl
    process (a snapshot of a k=4 fabric was 80 processes): per switch name
    (True, its result) or (False, its error). FabricError when ofanctl gave
    no such answer (no socket there, or not JSON)."""
    if cmd not in FABRIC_COMMANDS:
        raise FabricError(f"internal: {cmd} is not asked of a whole fabric")
    full = [tool("ofanctl"), "--fabric", sock_dir, "--json", "--timeout-ms",
            str(int(timeout * 1000)), cmd]
    try:
        # Every switch in turn: each may take the whole timeout.
        p = subprocess.run(full, capture_output=True, text=True, timeout=timeout * 8 + 30)
    except subprocess.TimeoutExpired:
        raise FabricError(f"{sock_dir}: {cmd}: no answer from the switches in time")
    try:
        doc = json.loads(p.stdout)
        return {str(sw["name"]): (True, sw["result"]) if sw.get("ok") else
                (False, str(sw.get("error", "")))
                for sw in doc["switches"]}
    except (ValueError, KeyError, TypeError):
        raise FabricError(f"{sock_dir}: {cmd}: "
                          f"{(p.stderr or p.stdout).strip()[:300] or 'no answer'}")


def request(sock: str, cmd: str, check: bool = True, timeout: float = 10,
            **args: Any) -> Any:
    argv, stdin = _argv(cmd, args)
    full = [tool("ofanctl"), "--socket", sock, "--json", "--timeout-ms",
            str(int(timeout * 1000))] + argv
    try:
        p = subprocess.run(full, capture_output=True, text=True, input=stdin,
                           timeout=timeout + 5)
    except subprocess.TimeoutExpired:
        if not check:
            return None
        raise FabricError(f"{sock}: {cmd}: no answer in {timeout} s")
    if p.returncode != 0:
        if not check:
            return None
        raise FabricError(f"{sock}: {cmd}: {(p.stderr or p.stdout).strip()}")
    try:
        result = json.loads(p.stdout) if p.stdout.strip() else {}
    except ValueError:
        if not check:
            return None
        raise FabricError(f"{sock}: {cmd}: not JSON: {p.stdout[:200]}")
    return result
