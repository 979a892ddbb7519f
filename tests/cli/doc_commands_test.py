"""Every command line README.md and docs/*.md show for a C++ binary of ofan
(ofan-sim, ofan-dp, ofanctl, uroce, ofan-coll, ofan-p4, ofan-topo,
ofan-agent) still parses: each is run with OFAN_PARSE_ONLY=1, which makes
the program stop with 0 right after its command line parsed
(common/cli.h), so nothing runs and no root is needed. A line that no
longer parses is reported with its file and line, and so is a
placeholder without a sample value (tests/common/doc_commands.py reads
the lines). The check is shown able to fail on a made-up page.

    OFAN_BUILD_DIR=build python3 tests/cli/doc_commands_test.py
"""
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "common"))
from checks import check, failures, log  # noqa: E402
import doc_commands  # noqa: E402

BUILD = Path(os.environ.get("OFAN_BUILD_DIR", REPO / "build")).resolve()
# Each binary's place in the build tree, by the name the docs call it.
BINARIES = {
    "ofan-sim": "sim/ofan-sim",
    "ofan-dp": "dataplane/ofan-dp",
    "ofanctl": "control/ofanctl/ofanctl",
    "uroce": "emu/uroce/uroce",
    "ofan-coll": "emu/collective/ofan-coll",
    "ofan-p4": "tofino_p4/ofan-p4",
    "ofan-topo": "emu/ofan-topo",
    "ofan-agent": "control/agent/ofan-agent",
}
STARTS = re.compile(r"(sudo\s+)?(\./)?(build/\S*/)?(" + "|".join(map(re.escape, BINARIES))
                    + r")(\s|$)")
# What the docs' placeholders and shell variables stand for.
SAMPLES = {"$r": "0", "$SDE": "/opt/sde", "<host>": "h0", "<switch>": "e0-0",
           "<file>": "x.json", "<name>": "ofan"}


def program(word: str) -> str | None:
    """The binary a documented program word names (build/sim/ofan-sim,
    ./build/..., ofan-sim), or None."""
    name = Path(word).name
    if name not in BINARIES:
        return None
    spellings = (name, f"build/{BINARIES[name]}", f"./build/{BINARIES[name]}")
    return name if word in spellings else None


def why_not(prog: str, argv: list[str]) -> str | None:
    """None when the binary parses argv; otherwise its complaint."""
    name = program(prog)
    assert name is not None
    p = subprocess.run([str(BUILD / BINARIES[name]), *argv], capture_output=True, text=True,
                       timeout=30, env={**os.environ, "OFAN_PARSE_ONLY": "1"})
    if p.returncode == 0:
        return None
    return f"exit {p.returncode}: " + (p.stderr.strip().splitlines() or ["(no message)"])[0]


def main() -> int:
    missing = [n for n, rel in BINARIES.items() if not (BUILD / rel).exists()]
    if missing:
        log(f"SKIP: not built in {BUILD}: {', '.join(missing)}")
        return 77
    commands = doc_commands.documented(STARTS)
    bad, checked, skipped = doc_commands.problems(
        commands, lambda w: program(w) is not None, SAMPLES, why_not)
    check(f"every documented command line of the C++ binaries parses ({len(commands)} lines, "
          f"{checked} commands; {skipped} with '...' skipped)",
          not bad and checked >= 25, "\n".join(bad))
    wrong = ("```sh\n./build/sim/ofan-sim --k 4 [--json]   # fine, twice\n"
             "build/emu/uroce/uroce pair --no-such-option\n"
             "ofan-p4 tables --k <radix>\n```\n")
    bad, checked, skipped = doc_commands.problems(
        doc_commands.fenced_commands(wrong, "wrong.md", STARTS),
        lambda w: program(w) is not None, SAMPLES, why_not)
    check("a wrong documented line is reported with its file and line",
          checked == 3 and len(bad) == 2 and bad[0].startswith("wrong.md:3: uroce pair ")
          and bad[1].startswith("wrong.md:4: placeholder <radix>"), str(bad))
    log(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
