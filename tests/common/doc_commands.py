"""The command lines the docs show: every line of a fenced code block in
README.md and docs/*.md that runs one of a set of programs, as argument
lists, for tests that check each still parses (tests/emu/fabric/
parsers_test.py for ofan-emu, tests/cli/doc_commands_test.py for the C++
binaries).

A line may say [OPTIONAL] parts (checked with and without), a|b
alternatives in a word (each checked), shell around it (; | && & > and #
comments: each command of the line checked alone), a trailing \\ (the next
line continues it) and quotes over several lines. <NAME> placeholders and
$VARIABLES get sample values (one without a sample is reported); a variant
holding "..." (more options, unnamed) is skipped, and counted.
"""
import re
import shlex
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
ELLIPSIS = "..."


def fenced_commands(text: str, source: str, starts: "re.Pattern[str]") -> list[tuple[str, str]]:
    """(file:line, the command line) of every line that `starts` matches in
    a fenced code block of markdown `text`, continuations joined."""
    out: list[tuple[str, str]] = []
    lines = text.splitlines()
    fence = False
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if line.startswith("```"):
            fence = not fence
            continue
        if not fence or not starts.match(line):
            continue
        where = f"{source}:{i}"
        while i < len(lines) and (line.endswith("\\") or not balanced(line)):
            line = line.removesuffix("\\") + " " + lines[i].strip()
            i += 1
        out.append((where, line))
    return out


def documented(starts: "re.Pattern[str]") -> list[tuple[str, str]]:
    """fenced_commands over README.md and docs/*.md."""
    return [c for f in DOC_FILES
            for c in fenced_commands(f.read_text(), str(f.relative_to(REPO)), starts)]


def balanced(line: str) -> bool:
    """Are the line's quotes closed (a shell word may span lines)?"""
    try:
        shlex.split(line, comments=True)
        return True
    except ValueError:
        return False


def variants(line: str) -> list[str]:
    """The line with each [OPTIONAL] part in and out, and each a|b word as
    a, then b (not a | between spaces: that is a pipe)."""
    m = re.search(r"\[([^\[\]]*)\]", line)
    if m:
        return [v for part in (m.group(1), "") for v in
                variants(line[:m.start()] + part + line[m.end():])]
    words = line.split(" ")
    for i, w in enumerate(words):
        if "|" in w and w.strip("|"):
            return [v for alt in w.split("|")
                    for v in variants(" ".join(words[:i] + [alt] + words[i + 1:]))]
    return [line]


def program_argvs(line: str, names: Callable[[str], bool]) -> list[tuple[str, list[str]]]:
    """(program, its arguments) of every command in a shell line whose
    program (sudo aside) `names` accepts."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
    lex.whitespace_split = True
    out: list[tuple[str, list[str]]] = []
    cmd: list[str] = []
    for tok in [*lex, ";"]:
        if tok and set(tok) <= set(";&|<>"):
            words = cmd[1:] if cmd[:1] == ["sudo"] else cmd
            if words and names(words[0]):
                out.append((words[0], words[1:]))
            cmd = []
        else:
            cmd.append(tok)
    return out


def problems(commands: list[tuple[str, str]], names: Callable[[str], bool],
             samples: dict[str, str],
             why_not: Callable[[str, list[str]], str | None]) -> tuple[list[str], int, int]:
    """(file:line and why, for each documented command that why_not(program,
    argv) refuses; how many commands were checked; how many variants were
    skipped for "...")."""
    bad: list[str] = []
    checked = skipped = 0
    for where, line in commands:
        for v in variants(line):
            unknown = [ph for ph in re.findall(r"<[^<>\s]+>|\$\w+", v) if ph not in samples]
            if unknown:
                bad.append(f"{where}: placeholder {unknown[0]}: no sample value for it")
                continue
            for ph, sample in samples.items():
                v = v.replace(ph, sample)
            for prog, argv in program_argvs(v, names):
                if ELLIPSIS in argv:
                    skipped += 1
                    continue
                checked += 1
                why = why_not(prog, argv)
                if why:
                    bad.append(f"{where}: {Path(prog).name} {shlex.join(argv)}: {why}")
    return bad, checked, skipped
