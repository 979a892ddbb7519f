#!/usr/bin/env python3
"""Sums up what bf-p4c says pofan.p4 uses, from the compiler's own report.

    bf_resources.py [--json] [--tables] [--indent N] OUTPUT_DIR

OUTPUT_DIR is what `p4c-barefoot -g -o OUTPUT_DIR` wrote: its resources.json
(per MAU stage: crossbar bytes, hash bits, gateways, RAMs, map RAMs, TCAMs,
VLIW instructions, stateful and statistics ALUs, logical tables; the schema
is p4c's backends/tofino/compiler_interfaces/schemas/resources_schema.py, the
sums are those of its tools/create_mau_resources.py, which writes the SDE's
mau.resources.log) and its phv.json (the PHV containers holding a field).
Every figure is per pipe. tofino_p4/check.sh prints this after each compile;
tofino_p4/README.md's resource table is made of it.

Exit codes: 0 ok, 2 a missing or unreadable report.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

Json = dict[str, Any]


@dataclass
class Usage:
    """One table's use (or a pipe's, summed), in the report's units."""
    exact_xbar_bytes: int = 0
    ternary_xbar_bytes: int = 0
    hash_bits: int = 0
    gateways: int = 0
    srams: int = 0
    map_rams: int = 0
    tcams: int = 0
    vliw_instructions: int = 0
    meter_alus: int = 0
    stats_alus: int = 0
    logical_tables: int = 0

    def add(self, other: Usage) -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)


@dataclass
class Report:
    target: str = ""
    stages_available: int = 0
    stages_used: int = 0
    total: Usage = field(default_factory=Usage)
    available: Usage = field(default_factory=Usage)
    # (table, stage) -> use; a table split over stages has a row per stage.
    tables: dict[str, Usage] = field(default_factory=dict)
    phv_containers: int = 0
    phv_bits: dict[int, int] = field(default_factory=dict)  # width -> containers
    phv_available: int = 0


def _find(out_dir: str, name: str) -> str | None:
    for root, _dirs, files in os.walk(out_dir):
        if name in files:
            return os.path.join(root, name)
    return None


def _users(unit: Json, key: str = "used_by") -> list[str]:
    return [str(u[key]) for u in unit.get("usages", []) if key in u]


def _count(report: Report, stage: int, name: str, attr: str, n: int = 1) -> None:
    if name == "--UNUSED--":
        return
    row = report.tables.setdefault(f"{name}@{stage}", Usage())
    setattr(row, attr, getattr(row, attr) + n)


def _stage(report: Report, st: Json) -> None:
    s = int(st["stage_number"])
    tot, av = report.total, report.available
    xbar = st["xbar_bytes"]
    av.exact_xbar_bytes += int(xbar.get("exact_size", 0))
    av.ternary_xbar_bytes += int(xbar.get("ternary_size", 0))
    for b in xbar.get("bytes", []):
        attr = "exact_xbar_bytes" if b.get("byte_type") == "exact" else "ternary_xbar_bytes"
        setattr(tot, attr, getattr(tot, attr) + 1)
        for u in _users(b):
            _count(report, s, u, attr)
    hb = st["hash_bits"]
    av.hash_bits += int(hb.get("nBits", 0)) * int(hb.get("nFunctions", 0))
    for b in hb.get("bits", []):
        tot.hash_bits += 1
        _count(report, s, str(b.get("used_by_table", "")), "hash_bits")
    units: list[tuple[str, str, str, str, str]] = [
        # (section, list, attr, rows key, columns key)
        ("gateways", "gateways", "gateways", "nRows", "nUnits"),
        ("rams", "srams", "srams", "nRows", "nColumns"),
        ("map_rams", "maprams", "map_rams", "nRows", "nUnits"),
        ("tcams", "tcams", "tcams", "nRows", "nColumns"),
    ]
    for section, lst, attr, rows, cols in units:
        sec = st.get(section, {})
        setattr(av, attr, getattr(av, attr) + int(sec.get(rows, 0)) * int(sec.get(cols, 0)))
        for unit in sec.get(lst, []):
            setattr(tot, attr, getattr(tot, attr) + 1)
            for u in set(_users(unit)):
                _count(report, s, u, attr)
    for section, lst, attr in (("meter_alus", "meters", "meter_alus"),
                               ("statistic_alus", "stats", "stats_alus")):
        sec = st.get(section, {})
        setattr(av, attr, getattr(av, attr) + int(sec.get("nAlus", 0)))
        for unit in sec.get(lst, []):
            setattr(tot, attr, getattr(tot, attr) + 1)
            for u in set(_users(unit)):
                _count(report, s, u, attr)
    vliw = st.get("vliw", {})
    av.vliw_instructions += int(vliw.get("size", 0))
    for ins in vliw.get("instructions", []):
        tot.vliw_instructions += 1
        users = {str(u["used_by"]) for c in ins.get("color_usages", [])
                 for u in c.get("usages", []) if "used_by" in u}
        for u in users:
            _count(report, s, u, "vliw_instructions")
    lt = st.get("logical_tables", {})
    av.logical_tables += int(lt.get("size", 0))
    ids = lt.get("ids", [])
    tot.logical_tables += len(ids)
    for i in ids:
        _count(report, s, str(i.get("table_name", "")), "logical_tables")
    if ids:
        report.stages_used = max(report.stages_used, s + 1)


class ReportError(Exception):
    """The compiler's report is missing or is not what bf-p4c writes."""


def _load(path: str) -> Json:
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise ReportError(f"{path}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: not a JSON object")
    return data


def _why(e: Exception) -> str:
    if isinstance(e, KeyError):
        return f"no field {e.args[0]!r}"
    return f"{type(e).__name__}: {e}"


def read_report(out_dir: str) -> Report:
    if not os.path.isdir(out_dir):
        raise ReportError(f"{out_dir}: no such folder")
    res_path = _find(out_dir, "resources.json")
    if res_path is None:
        raise ReportError(f"no resources.json under {out_dir} (compile with -g)")
    res = _load(res_path)
    report = Report()
    try:
        mau = res["resources"]["mau"]
        report.stages_available = int(mau["nStages"])
        for st in mau["mau_stages"]:
            _stage(report, st)
        avail = res["resources"].get("phv_containers", {})
        for kind in ("normal", "mocha", "dark"):
            for t in avail.get(kind, []):
                report.phv_available += int(t.get("units", 0))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ReportError(f"{res_path}: not bf-p4c's resources.json: {_why(e)}") from None
    phv_path = _find(out_dir, "phv.json")
    if phv_path is not None:
        phv = _load(phv_path)
        try:
            report.target = str(phv.get("target", ""))
            for c in phv.get("containers", []):
                if c.get("slices"):
                    report.phv_containers += 1
                    w = int(c.get("bit_width", 0))
                    report.phv_bits[w] = report.phv_bits.get(w, 0) + 1
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ReportError(f"{phv_path}: not bf-p4c's phv.json: {_why(e)}") from None
    return report


def summary_lines(r: Report, tables: bool) -> list[str]:
    t, a = r.total, r.available
    phv = ", ".join(f"{n} x {w}b" for w, n in sorted(r.phv_bits.items()))
    lines = [
        f"stages {r.stages_used} of {r.stages_available}",
        f"SRAM {t.srams} RAMs of {a.srams}, map RAM {t.map_rams}, TCAM {t.tcams}",
        f"hash bits {t.hash_bits} of {a.hash_bits}",
        f"match crossbar {t.exact_xbar_bytes} B exact of {a.exact_xbar_bytes}, "
        f"{t.ternary_xbar_bytes} B ternary",
        f"gateways {t.gateways} of {a.gateways}",
        f"VLIW instructions {t.vliw_instructions} of {a.vliw_instructions}",
        f"stateful (meter) ALUs {t.meter_alus}, statistics ALUs {t.stats_alus}",
        f"logical tables {t.logical_tables}",
        f"PHV containers {r.phv_containers}" + (f" ({phv})" if phv else "")
        + (f" of {r.phv_available}" if r.phv_available else ""),
    ]
    if tables:
        lines.append("per table (name@stage: RAMs, hash bits, exact crossbar B, gateways, VLIW):")
        for name in sorted(r.tables, key=lambda k: (int(k.rsplit("@", 1)[1]), k)):
            u = r.tables[name]
            lines.append(f"  {name}: {u.srams}, {u.hash_bits}, {u.exact_xbar_bytes}, "
                         f"{u.gateways}, {u.vliw_instructions}")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", help="bf-p4c's output folder (-o), compiled with -g")
    ap.add_argument("--json", action="store_true", help="the figures as JSON")
    ap.add_argument("--tables", action="store_true", help="and each table's share")
    ap.add_argument("--indent", type=int, default=0, help="spaces before each line")
    args = ap.parse_args(argv)
    try:
        r = read_report(args.out_dir)
    except ReportError as e:
        print(f"bf_resources.py: cannot read the compiler's report: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(asdict(r), indent=1, sort_keys=True))
    else:
        for line in summary_lines(r, args.tables):
            print(" " * args.indent + line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
