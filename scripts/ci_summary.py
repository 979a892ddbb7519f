#!/usr/bin/python3
"""The end of scripts/test.sh: every suite's time against its timeout, then one verdict line.

usage: ci_summary.py --rc N [--failed-stage NAME]... [--show TEST]... TREE[:MULTIPLIER]...

Reads, for each meson build TREE, meson's own record of the run
(meson-logs/testlog.json: one result per suite) and of the suites
(meson-info/intro-tests.json: each one's timeout); MULTIPLIER is the
--timeout-multiplier that tree's `meson test` ran with (default 1).

Prints the output of each --show TEST that ran (what a passing suite
reports and people want to read in CI's log: the Tofino compiler's figures),
then every suite that ran, slowest first, with its share of its timeout
(a share above a third is marked: CI machines run up to twice as slow as the
one that measured them), then the test cases the junit logs count, then the
verdict. The verdict counts every result that is not OK, EXPECTEDFAIL or SKIP
(FAIL, TIMEOUT, ERROR, UNEXPECTEDPASS, INTERRUPT) as a failure, whatever the
junit log says (meson writes a TIMEOUT of an exit-code test there as neither
a failure nor an error), plus each --failed-stage, plus a missing log. Its last
line starts with PASS or FAIL and exits 0 or 1: scripts/test.sh exits with it,
so the line people read agrees with the exit code. --rc is `meson test`'s
summed exit status: non-zero with no failing record is a failure too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass

OK_RESULTS = frozenset({"OK", "EXPECTEDFAIL", "SKIP"})
# Above this share of its timeout a suite is marked (timeouts are at least 3x:
# tests/emu/meson.build).
MARGIN_SHARE = 1.0 / 3.0


@dataclass(frozen=True)
class SuiteRun:
    """One `meson test` record: a test (a 'suite' in this project's words) in one tree."""

    tree: str
    name: str
    result: str
    seconds: float
    timeout_s: float | None  # None: no timeout (meson's 0)
    stdout: str = ""


@dataclass
class CaseCounts:
    """The junit logs' test cases (a gtest binary is many, an exit-code test one)."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0


class SummaryError(Exception):
    """A log that exists but cannot be read."""


def read_timeouts(tree: str) -> dict[str, float | None]:
    """Each test's timeout in seconds from the tree's introspection (None: none)."""
    path = os.path.join(tree, "meson-info", "intro-tests.json")
    try:
        with open(path, encoding="utf-8") as f:
            tests = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise SummaryError(f"{path}: {e}") from e
    out: dict[str, float | None] = {}
    for t in tests:
        timeout = t.get("timeout", 30)
        out[str(t.get("name"))] = float(timeout) if timeout and timeout > 0 else None
    return out


def read_runs(tree: str, multiplier: float) -> list[SuiteRun]:
    """The tree's testlog.json as SuiteRun records; raises FileNotFoundError if absent."""
    timeouts = read_timeouts(tree)
    path = os.path.join(tree, "meson-logs", "testlog.json")
    runs: list[SuiteRun] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                name = str(rec["name"])
                # With several suites meson names a run "project:suite / test".
                timeout = timeouts.get(name.rsplit(" / ", 1)[-1], 30.0)
                runs.append(
                    SuiteRun(
                        tree=tree,
                        name=name,
                        result=str(rec["result"]),
                        seconds=float(rec["duration"]),
                        timeout_s=None if timeout is None else timeout * multiplier,
                        stdout=str(rec.get("stdout") or ""),
                    )
                )
            except (ValueError, KeyError, TypeError) as e:
                raise SummaryError(f"{path}:{lineno}: not a meson test record ({e})") from e
    return runs


def count_cases(tree: str, counts: CaseCounts) -> None:
    """Adds the tree's junit test cases to counts (a missing file adds nothing)."""
    path = os.path.join(tree, "meson-logs", "testlog.junit.xml")
    if not os.path.exists(path):
        return
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise SummaryError(f"{path}: {e}") from e
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            counts.failed += 1
        elif case.find("skipped") is not None:
            counts.skipped += 1
        else:
            counts.passed += 1


def parse_tree(arg: str) -> tuple[str, float]:
    tree, sep, mult = arg.partition(":")
    if not sep:
        return tree, 1.0
    try:
        value = float(mult)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{arg}: the multiplier is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{arg}: the multiplier must be positive")
    return tree, value


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rc", type=int, default=0, help="meson test's exit status (0: all passed)")
    ap.add_argument("--failed-stage", action="append", default=[], metavar="NAME",
                    help="a stage that failed outside meson (a build, fuzzing)")
    ap.add_argument("--show", action="append", default=[], metavar="TEST",
                    help="print this test's output (every tree it ran in)")
    ap.add_argument("trees", nargs="*", type=parse_tree, metavar="TREE[:MULTIPLIER]")
    args = ap.parse_args(argv)

    reasons: list[str] = [f"{s} failed" for s in args.failed_stage]
    runs: list[SuiteRun] = []
    cases = CaseCounts()
    for tree, mult in args.trees:
        try:
            runs.extend(read_runs(tree, mult))
            count_cases(tree, cases)
        except FileNotFoundError:
            reasons.append(f"{tree}: no test log (its suites did not run)")
        except (OSError, SummaryError) as e:
            reasons.append(f"unreadable log: {e}")

    for name in args.show:
        shown = [r for r in runs if r.name.rsplit(" / ", 1)[-1] == name]
        for r in shown:
            print(f"== {name}'s output ({r.result}, {r.tree})")
            print(r.stdout.rstrip())
        if not shown:
            print(f"== {name}: did not run")
    print("== every suite, slowest first: seconds, timeout, share of it ('!': over a third)")
    for r in sorted(runs, key=lambda r: r.seconds, reverse=True):
        if r.timeout_s is None:
            limit, share, mark = "   none", "    ", " "
        else:
            frac = r.seconds / r.timeout_s
            limit = f"{r.timeout_s:5.0f} s"
            share = f"{frac * 100:3.0f}%"
            mark = "!" if frac > MARGIN_SHARE else " "
        print(f"{r.seconds:6.0f} s of {limit} {share}{mark} {r.result:<14} {r.name} ({r.tree})")

    bad = [r for r in runs if r.result not in OK_RESULTS]
    for r in bad:
        reasons.append(f"{r.result}: {r.name} ({r.tree})")
    if args.rc != 0 and not bad:
        reasons.append(f"meson test exited {args.rc} with no failing record in its log")
    ok = sum(1 for r in runs if r.result in ("OK", "EXPECTEDFAIL"))
    skipped = sum(1 for r in runs if r.result == "SKIP")
    over = sum(1 for r in runs if r.timeout_s and r.seconds / r.timeout_s > MARGIN_SHARE)
    print(f"test cases (junit): {cases.passed} passed, {cases.failed} failed, "
          f"{cases.skipped} skipped; suites above a third of their timeout: {over}")
    for reason in reasons:
        print(f"  failed: {reason}")
    verdict = "FAIL" if reasons else "PASS"
    print(f"{verdict}: {len(runs)} suites, {ok} ok, {len(bad)} failed, {skipped} skipped"
          + (f"; {len(reasons)} failure(s) listed above" if reasons else ""))
    return 1 if reasons else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
