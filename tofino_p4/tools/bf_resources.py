#!/usr/bin/env python3
"""Sums up what bf-p4c says pofan.p4 uses, from the compiler's own report.

    bf_resources.py [--json] [--tables] [--indent N]
                    [--readme README --edges N [--target tofino|tofino2]] OUTPUT_DIR

OUTPUT_DIR is what `p4c-barefoot -g -o OUTPUT_DIR` wrote: its resources.json
(per MAU stage: crossbar bytes, hash bits, gateways, RAMs, map RAMs, TCAMs,
VLIW instructions, stateful and statistics ALUs, logical tables; the schema
is p4c's backends/tofino/compiler_interfaces/schemas/resources_schema.py, the
sums are those of its tools/create_mau_resources.py, which writes the SDE's
mau.resources.log) and its phv.json (the PHV containers holding a field).
Every figure is per pipe. tofino_p4/check.sh prints this after each compile;
tofino_p4/README.md's resource table is made of it, and --readme holds the
table's column for this target (default: phv.json's) and N edge switches
to these figures (how a cell is read: "README's resource table" below).

Exit codes: 0 ok (or the README has no such column, which it says), 1 a
figure of the README differs from the compiler's (each one named, with
both numbers), 2 a missing or unreadable report or README, or bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

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
    # Crossbar bytes that feed a table's match key or a stateful ALU's input
    # (the rest feed gateways and the addresses of registers and counters).
    key_xbar_bytes: int = 0


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
        if any(str(u.get("used_for", "")).endswith("match") or u.get("used_for") == "stateful_alu"
               for u in b.get("usages", [])):
            report.key_xbar_bytes += 1
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
        f"{t.ternary_xbar_bytes} B ternary ({r.key_xbar_bytes} B for keys: the tables' "
        "and the stateful ALUs')",
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


# ------------------------------------------------- README's resource table
# tofino_p4/README.md's table "| per pipe | ... |": a row per resource, a
# column per target and network ("Tofino 1, 64 edges"). A cell's figures
# are read as follows: its first number is the use; "of N" the pipe's
# amount; in the ALU row a second number is the statistics ALUs. Text in
# parentheses is comment, but for these figures: "N B for" (match crossbar:
# the bytes of keys), "N KiB" (SRAM: its size) and "N × W" (PHV: N
# containers of W bits; every width the compiler uses, listed). A number
# the checker cannot place is an error, so that no figure goes unchecked.

TABLE_CORNER = "per pipe"
TARGET_NAMES = {"tofino": "Tofino 1", "tofino2": "Tofino 2"}
RAM_KIB = 16  # an SRAM: 1,024 words of 128 bits (Tofino 1 and 2)
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?!\d)|\d+")
_COLUMN = re.compile(r"(Tofino \d), ([\d,]+) edges")


class ReadmeError(Exception):
    """The README's resource table cannot be read."""


@dataclass
class Row:
    """What a row's figures are in the compiler's report."""
    used: Callable[[Report], int]
    available: Callable[[Report], int] | None = None
    second: tuple[str, Callable[[Report], int]] | None = None


ROWS: dict[str, Row] = {
    "stages": Row(lambda r: r.stages_used, lambda r: r.stages_available),
    "match crossbar": Row(lambda r: r.total.exact_xbar_bytes,
                          lambda r: r.available.exact_xbar_bytes),
    "meter (stateful) ALUs": Row(lambda r: r.total.meter_alus, lambda r: r.available.meter_alus,
                                 ("statistics ALUs", lambda r: r.total.stats_alus)),
    "gateways": Row(lambda r: r.total.gateways, lambda r: r.available.gateways),
    "SRAM": Row(lambda r: r.total.srams, lambda r: r.available.srams),
    "map RAM": Row(lambda r: r.total.map_rams, lambda r: r.available.map_rams),
    "TCAM": Row(lambda r: r.total.tcams, lambda r: r.available.tcams),
    "VLIW instructions": Row(lambda r: r.total.vliw_instructions,
                             lambda r: r.available.vliw_instructions),
    "hash bits": Row(lambda r: r.total.hash_bits, lambda r: r.available.hash_bits),
    "PHV containers": Row(lambda r: r.phv_containers, lambda r: r.phv_available),
    "logical tables": Row(lambda r: r.total.logical_tables, lambda r: r.available.logical_tables),
}


@dataclass
class Figure:
    """One figure of the README beside the compiler's."""
    what: str
    readme: int
    compiler: int


def _numbers(text: str) -> list[int]:
    return [int(n.replace(",", "")) for n in _NUMBER.findall(text)]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def read_table(path: str) -> tuple[list[str], list[list[str]]]:
    """The resource table's header and rows, each a list of cells."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise ReadmeError(f"{path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ReadmeError(f"{path}: not UTF-8 ({e})") from None
    for i, line in enumerate(lines):
        if line.startswith("|") and _cells(line)[0] == TABLE_CORNER:
            header = _cells(line)
            rows: list[list[str]] = []
            for n, row in enumerate(lines[i + 1:], i + 2):
                if not row.startswith("|"):
                    break
                cells = _cells(row)
                if all(set(c) <= set("-: ") for c in cells):
                    continue  # the separator
                if len(cells) != len(header):
                    raise ReadmeError(f"{path}:{n}: {len(cells)} cells in a table of "
                                      f"{len(header)} columns")
                rows.append(cells)
            if not rows:
                raise ReadmeError(f"{path}:{i + 1}: the resource table has no rows")
            return header, rows
    raise ReadmeError(f"{path}: no resource table (a table whose first column is headed "
                      f"{TABLE_CORNER!r})")


def column_of(header: list[str], target: str, edges: int) -> int | None:
    """The column of target at edges edge switches, None where there is none."""
    for i, h in enumerate(header):
        m = _COLUMN.fullmatch(h)
        if m and m.group(1) == TARGET_NAMES[target] and int(m.group(2).replace(",", "")) == edges:
            return i
    return None


def _cell_figures(label: str, row: Row, cell: str, r: Report) -> list[Figure]:
    """The figures of one cell beside the compiler's; ValueError if unreadable."""
    comments = re.findall(r"\(([^()]*)\)", cell)
    text = re.sub(r"\([^()]*\)", " ", cell)
    if "(" in text or ")" in text:
        raise ValueError("unbalanced parentheses")
    figs: list[Figure] = []
    m = re.search(r"\bof\s+(" + _NUMBER.pattern + r")", text)
    if m:
        if row.available is None:
            raise ValueError("an 'of N' this row does not have")
        figs.append(Figure(f"{label}, available", _numbers(m.group(1))[0], row.available(r)))
        text = text[:m.start()] + " " + text[m.end():]
    nums = _numbers(text)
    if not nums:
        raise ValueError("no figure")
    if len(nums) > 1 + (row.second is not None):
        raise ValueError(f"more numbers than the row's figures: {nums}")
    figs.insert(0, Figure(label, nums[0], row.used(r)))
    if len(nums) == 2 and row.second is not None:
        figs.append(Figure(row.second[0], nums[1], row.second[1](r)))
    for c in comments:
        rest = c
        if label == "match crossbar":
            for n in re.findall(r"(\d+) B for", rest):
                figs.append(Figure(f"{label}, bytes for keys", int(n), r.key_xbar_bytes))
            rest = re.sub(r"\d+ B for", "", rest)
        elif label == "SRAM":
            for n in re.findall(r"(" + _NUMBER.pattern + r") KiB", rest):
                figs.append(Figure(f"{label}, KiB", _numbers(n)[0], row.used(r) * RAM_KIB))
            rest = re.sub(r"(" + _NUMBER.pattern + r") KiB", "", rest)
        elif label == "PHV containers":
            pairs = re.findall(r"(\d+)\s*[×x]\s*(\d+)", rest)
            if pairs:
                readme = {int(w): int(n) for n, w in pairs}
                for w in sorted(set(readme) | set(r.phv_bits)):
                    figs.append(Figure(f"{label} of {w} bits", readme.get(w, 0),
                                       r.phv_bits.get(w, 0)))
            rest = re.sub(r"(\d+)\s*[×x]\s*(\d+)", "", rest)
        if _numbers(rest):
            raise ValueError(f"a number in '({c})' the checker does not know")
    return figs


def compare(readme: str, r: Report, target: str, edges: int) -> list[Figure] | None:
    """Every figure of the README's column for target at edges beside the
    compiler's; None where the table has no such column."""
    header, rows = read_table(readme)
    col = column_of(header, target, edges)
    if col is None:
        return None
    figs: list[Figure] = []
    for cells in rows:
        label = cells[0]
        row = ROWS.get(label)
        if row is None:
            raise ReadmeError(f"{readme}: resource table: row {label!r} is not one the checker "
                              f"knows ({', '.join(ROWS)}): teach it tools/bf_resources.py")
        try:
            figs += _cell_figures(label, row, cells[col], r)
        except ValueError as e:
            raise ReadmeError(f"{readme}: resource table, column {header[col]!r}, {label}: "
                              f"cannot read {cells[col]!r}: {e}") from None
    return figs


def check_readme(readme: str, r: Report, target: str, edges: int, indent: str) -> int:
    """Prints the comparison; 0 when the README agrees, 1 when it does not."""
    figs = compare(readme, r, target, edges)
    where = f"{TARGET_NAMES[target]}, {edges:,} edges"
    if figs is None:
        print(f"{indent}README: its resource table has no column {where!r}: not compared")
        return 0
    wrong = [f for f in figs if f.readme != f.compiler]
    if not wrong:
        print(f"{indent}README: its resource table's column {where!r} agrees with these "
              f"({len(figs)} figures)")
        return 0
    for f in wrong:
        print(f"bf_resources.py: {readme}: resource table, column {where!r}, {f.what}: "
              f"the README says {f.readme:,}, the compiler {f.compiler:,}", file=sys.stderr)
    print(f"bf_resources.py: {len(wrong)} of the README's {len(figs)} figures in column {where!r} "
          "differ from the compiler's: make the table say what the compiler does", file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", help="bf-p4c's output folder (-o), compiled with -g")
    ap.add_argument("--json", action="store_true", help="the figures as JSON")
    ap.add_argument("--tables", action="store_true", help="and each table's share")
    ap.add_argument("--indent", type=int, default=0, help="spaces before each line")
    ap.add_argument("--readme", help="compare this README's resource table with the figures")
    ap.add_argument("--target", choices=sorted(TARGET_NAMES),
                    help="the column's target (default: phv.json's)")
    ap.add_argument("--edges", type=int, help="the column's edge switches (with --readme)")
    args = ap.parse_args(argv)
    if args.readme is not None and args.edges is None:
        ap.error("--readme needs --edges")
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
    if args.readme is None:
        return 0
    target = args.target or r.target
    if target not in TARGET_NAMES:
        print(f"bf_resources.py: {args.out_dir}: no target in phv.json ({target!r}): give "
              "--target", file=sys.stderr)
        return 2
    if args.target and r.target and r.target != args.target:
        print(f"bf_resources.py: {args.out_dir}: the report is for {r.target}, not "
              f"{args.target}", file=sys.stderr)
        return 2
    try:
        return check_readme(args.readme, r, target, args.edges, " " * args.indent)
    except ReadmeError as e:
        print(f"bf_resources.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
