#!/usr/bin/env bash
# Checks the sources against the repository's style: C++ (.clang-format,
# .clang-tidy), Python (.flake8, mypy.ini) and shell (shellcheck).
#   scripts/lint.sh                 all the fast checks: --format, --python, --shell
#   scripts/lint.sh --format        formatting of every tracked .cc/.h/.c file (P4:
#                                   no formatter in Debian 12, see lint_format)
#   scripts/lint.sh --python        flake8 and mypy over every tracked Python file
#                                   and the Python scripts without an extension,
#                                   but those in scripts/lint-python-pending.txt
#                                   (--python --all: those too)
#   scripts/lint.sh --shell         shellcheck over every tracked shell script
#   scripts/lint.sh --cites         no tracked file cites an issue of this project
#                                   by number (a reader of the repository cannot
#                                   open it: cite a doc, a paper section, a file)
#   scripts/lint.sh --fix           reformats the C++ and C files in place
#   scripts/lint.sh --tidy [FILE..] clang-tidy over FILEs (default: every tracked
#                                   .cc, tests and benchmarks included), with
#                                   build/compile_commands.json; slow (~6 minutes)
# The lint suite's tests run --format, --python, --shell and --cites one each.
# Exit codes: 0 clean, 1 findings (listed), 2 usage or missing tool.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
mode=all
all_py=0
files=()
for a in "$@"; do
  case "$a" in
    --fix) mode=fix ;;
    --tidy) mode=tidy ;;
    --format) mode=format ;;
    --python) mode=python ;;
    --shell) mode=shell ;;
    --cites) mode=cites ;;
    --all) all_py=1 ;;
    -h|--help) sed -n 2,20p "$0"; exit 0 ;;
    -*) echo "lint.sh: unknown option $a" >&2; exit 2 ;;
    *) files+=("$a") ;;
  esac
done

need() {
  command -v "$1" >/dev/null || { echo "lint.sh: $1 not found (scripts/setup.sh installs it)" >&2; exit 2; }
}

if [ "$mode" = tidy ]; then
  need clang-tidy
  [ -f build/compile_commands.json ] || { echo "lint.sh: no build/compile_commands.json (run scripts/build.sh)" >&2; exit 2; }
  if [ ${#files[@]} = 0 ]; then
    mapfile -t files < <(git ls-files '*.cc')
  fi
  clang-tidy -p build --quiet "${files[@]}" 2>/dev/null | tee /tmp/ofan-lint-tidy.$$ | grep -E "warning:|error:" 
  n=$(grep -cE "warning:|error:" /tmp/ofan-lint-tidy.$$)
  rm -f /tmp/ofan-lint-tidy.$$
  echo "lint.sh: clang-tidy: $n findings in ${#files[@]} files"
  [ "$n" = 0 ]
  exit $?
fi

# Tracked files of a kind; outside a git checkout, found under the folders.
tracked() {
  git ls-files "$@" 2>/dev/null || find bench common control dataplane emu scripts sim tests \
    tofino_p4 -type f 2>/dev/null
}

# Scripts without an extension, by their first line (python or bash).
scripts_of() {
  local f
  for f in $(tracked); do
    case "$f" in *.*) continue ;; esac
    [ -f "$f" ] && head -1 "$f" | grep -q "$1" && echo "$f"
  done
}

lint_format() {
  need clang-format
  local fs=("$@") bad=0 f bad_files=()
  if [ ${#fs[@]} = 0 ]; then
    # C++ and C (the XDP program). Not P4: no formatter for P4-16 ships in
    # Debian 12 (p4c's p4fmt came after its 1.2.4.2), so tofino_p4/pofan.p4
    # is checked by bf-p4c and tofino_p4/check.sh, not for layout.
    mapfile -t fs < <(tracked '*.cc' '*.h' '*.c' | grep -E '\.(cc|h|c)$')
  fi
  if [ "$mode" = fix ]; then
    clang-format -i --style=file "${fs[@]}"
    return 0
  fi
  # One clang-format over every file (one process per file took 50 s of CPU
  # on a loaded CI machine: bench/RESULTS.md, CI); it names each file that differs in a
  # "FILE:LINE:COL: error: code should be clang-formatted" line.
  local out rc
  out=$(clang-format --style=file --dry-run -Werror --ferror-limit=1 "${fs[@]}" 2>&1)
  rc=$?
  mapfile -t bad_files < <(printf '%s\n' "$out" |
    sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
  for f in "${bad_files[@]}"; do
    echo "not formatted: $f  (scripts/lint.sh --fix)"
  done
  bad=${#bad_files[@]}
  if [ $rc != 0 ] && [ "$bad" = 0 ]; then
    # Not a formatting finding: a missing file, a bad .clang-format.
    printf '%s\n' "$out" >&2
    echo "lint.sh: clang-format failed (exit $rc)" >&2
    return 2
  fi
  echo "lint.sh: ${#fs[@]} files checked, $bad not formatted"
  [ "$bad" = 0 ]
}

lint_python() {
  need flake8
  need mypy
  local py scripts rc=0 pending=scripts/lint-python-pending.txt skip=()
  if [ $all_py = 0 ] && [ -f $pending ]; then
    mapfile -t skip < <(grep -v '^#' $pending | grep .)
  fi
  mapfile -t py < <(tracked '*.py' | grep -E '\.py$' | grep -vxF -f <(printf '%s\n' "${skip[@]}"))
  mapfile -t scripts < <(scripts_of python | grep -vxF -f <(printf '%s\n' "${skip[@]}"))
  flake8 "${py[@]}" "${scripts[@]}" || rc=1
  # One mypy run for the modules and the scripts, each script a module named
  # by its file (otherwise they are all __main__ and need a run each: 11 s
  # instead of 7.6 s: bench/RESULTS.md, CI).
  mypy --no-error-summary --scripts-are-modules "${py[@]}" "${scripts[@]}" || rc=1
  echo "lint.sh: flake8 and mypy over ${#py[@]} Python files and ${#scripts[@]} scripts:" \
    "$([ $rc = 0 ] && echo clean || echo findings above)" \
    "(${#skip[@]} not yet checked: $pending)"
  return $rc
}

lint_shell() {
  need shellcheck
  local sh
  mapfile -t sh < <({ tracked '*.sh' | grep -E '\.sh$'; scripts_of bash; scripts_of '/bin/sh'; } |
    sort -u)
  if shellcheck "${sh[@]}"; then
    echo "lint.sh: shellcheck over ${#sh[@]} shell scripts: clean"
  else
    echo "lint.sh: shellcheck over ${#sh[@]} shell scripts: findings above"
    return 1
  fi
}

# The word issue followed by a number names this project's tracker, which
# the repository does not carry. Other projects' threads (owner/repo#N, a
# URL) are citable.
lint_cites() {
  local hits
  hits=$(tracked | grep -vE '\.(png|svg|pcap|bin|o|json)$' |
    xargs -d '\n' grep -n -i -I -E '\bissues? #?[0-9]+\b' 2>/dev/null |
    grep -v -E 'https?://|[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#[0-9]+')
  if [ -n "$hits" ]; then
    printf '%s\n' "$hits"
    echo "lint.sh: the lines above cite an issue by number: cite a doc, a paper section or a file"
    return 1
  fi
  echo "lint.sh: no issue cited by number"
}

case "$mode" in
  format|fix) lint_format "${files[@]}" ;;
  python) lint_python ;;
  shell) lint_shell ;;
  cites) lint_cites ;;
  all)
    rc=0
    lint_format || rc=1
    lint_python || rc=1
    lint_shell || rc=1
    lint_cites || rc=1
    exit $rc ;;
esac
