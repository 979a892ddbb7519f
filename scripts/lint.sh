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
#   scripts/lint.sh --lengths       no C++ or Python function over 150 lines
#                                   unless a comment just above it (or its
#                                   docstring) says "long on purpose" and why
#   scripts/lint.sh --fix           reformats the C++ and C files in place
#   scripts/lint.sh --tidy [FILE..] clang-tidy (.clang-tidy's checks) over FILEs,
#                                   default every tracked .cc outside tests/ and
#                                   bench/ (about 15 minutes on 2 cores), with
#                                   build/compile_commands.json
#   scripts/lint.sh --tidy --record the same over every file and, with zero
#                                   findings, HEAD recorded in scripts/tidy-clean
#   scripts/lint.sh --tidy --changed only the .cc files changed since the commit
#                                   in scripts/tidy-clean, and the .cc beside a
#                                   changed .h (the lint suite's tidy test: the
#                                   whole tree is over CI's time budget)
# The lint suite's tests run --format, --python, --shell, --cites,
# --lengths and --tidy --changed one each.
# Exit codes: 0 clean, 1 findings (listed), 2 usage or missing tool.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
mode=all
all_py=0
tidy_scope=given  # --tidy: the files given (default all), --record or --changed
files=()
for a in "$@"; do
  case "$a" in
    --fix) mode=fix ;;
    --tidy) mode=tidy ;;
    --format) mode=format ;;
    --python) mode=python ;;
    --shell) mode=shell ;;
    --cites) mode=cites ;;
    --lengths) mode=lengths ;;
    --all) all_py=1 ;;
    --record) tidy_scope=record ;;
    --changed) tidy_scope=changed ;;
    -h|--help) sed -n 2,31p "$0"; exit 0 ;;
    -*) echo "lint.sh: unknown option $a" >&2; exit 2 ;;
    *) files+=("$a") ;;
  esac
done

need() {
  command -v "$1" >/dev/null || { echo "lint.sh: $1 not found (scripts/setup.sh installs it)" >&2; exit 2; }
}

# The production sources clang-tidy checks: tests, benchmarks and fuzzers
# are held by -Werror and the sanitizer suites instead (scripts/test.sh).
tidy_sources() {
  git ls-files '*.cc' | grep -v -E '^(tests|bench)/'
}

# The .cc files changed since the recorded clean commit (and the .cc beside
# each changed .h), among tidy_sources. Exit 77 (a skip) without git history.
tidy_changed() {
  local base f
  base=$(grep -v '^#' scripts/tidy-clean 2>/dev/null | head -1)
  if [ -z "$base" ] || ! git cat-file -e "$base^{commit}" 2>/dev/null; then
    echo "lint.sh: --changed: no recorded commit in scripts/tidy-clean that this clone has" \
      "(a shallow clone?); run lint.sh --tidy for the whole tree" >&2
    exit 77
  fi
  for f in $(git diff --name-only "$base" -- '*.cc' '*.h'); do
    case "$f" in *.h) f="${f%.h}.cc" ;; esac
    [ -f "$f" ] && echo "$f"
  done | sort -u | grep -xF -f <(tidy_sources) || true
}

if [ "$mode" = tidy ]; then
  need clang-tidy
  [ -f build/compile_commands.json ] || { echo "lint.sh: no build/compile_commands.json (run scripts/build.sh)" >&2; exit 2; }
  if [ "$tidy_scope" = record ]; then
    # What is recorded is a commit: the sources checked must be it, from
    # the start of the run to its end.
    head=$(git rev-parse HEAD)
    git diff --quiet HEAD -- '*.cc' '*.h' ||
      { echo "lint.sh: --record: commit the C++ changes first" >&2; exit 2; }
  fi
  case "$tidy_scope" in
    changed)
      changed=$(tidy_changed) || exit $?
      [ -z "$changed" ] || mapfile -t files <<< "$changed" ;;
    record|given) [ ${#files[@]} = 0 ] && mapfile -t files < <(tidy_sources) ;;
  esac
  if [ ${#files[@]} = 0 ]; then
    echo "lint.sh: clang-tidy: no file changed since scripts/tidy-clean's commit"
    exit 0
  fi
  out=$(mktemp /tmp/ofan-lint-tidy.XXXXXX)
  # One process per file: a crash in one (clang-tidy 14 has some) names it
  # and the others are still checked.
  for f in "${files[@]}"; do
    if ! clang-tidy -p build --quiet "$f" > "$out.one" 2>/dev/null; then
      grep -qE "warning:|error:" "$out.one" || echo "$f: error: clang-tidy failed on it" >> "$out.one"
    fi
    cat "$out.one" >> "$out"
  done
  grep -E "warning:|error:" "$out" | sed 's|^/[^ ]*/build/\.\./||; s|^\.\./||' | sort -u |
    tee "$out.found"
  n=$(wc -l < "$out.found")
  rm -f "$out" "$out.one" "$out.found"
  echo "lint.sh: clang-tidy: $n findings in ${#files[@]} files"
  [ "$n" = 0 ] || exit 1
  if [ "$tidy_scope" = record ]; then
    git diff --quiet "$head" -- '*.cc' '*.h' ||
      { echo "lint.sh: --record: the C++ sources changed during the run; not recorded" >&2; exit 1; }
    { echo "# The last commit whose production sources had zero clang-tidy findings"
      echo "# (scripts/lint.sh --tidy --record); --changed checks what changed since."
      echo "$head"; } > scripts/tidy-clean
    echo "lint.sh: recorded ${head:0:7} in scripts/tidy-clean (commit it)"
  fi
  exit 0
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

# Functions longer than kMaxLines, by universal-ctags' end lines; one that
# must stay long says why in the comment above it (C++: the 12 lines before
# its name; Python: those and its docstring's first lines).
max_lines=150
lint_lengths() {
  need ctags
  local cpp py scripts long f line end name n=0 bad=0
  mapfile -t cpp < <(tracked '*.cc' '*.h' | grep -E '\.(cc|h)$')
  mapfile -t py < <(tracked '*.py' | grep -E '\.py$')
  mapfile -t scripts < <(scripts_of python)
  long=$({
    ctags -x --_xformat='%{end} %{line} %F %N' --fields=+ne --kinds-C++=f --languages=C++ \
      "${cpp[@]}"
    ctags -x --_xformat='%{end} %{line} %F %N' --fields=+ne --kinds-Python=fm \
      --languages=Python "${py[@]}"
    [ ${#scripts[@]} = 0 ] || ctags -x --_xformat='%{end} %{line} %F %N' --fields=+ne \
      --kinds-Python=fm --language-force=Python "${scripts[@]}"
  } 2>/dev/null | awk -v max=$max_lines '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && $1 - $2 + 1 > max')
  while read -r end line f name; do
    [ -n "$f" ] || continue
    n=$((n + 1))
    if sed -n "$((line > 12 ? line - 12 : 1)),$((line + 4))p" "$f" |
        grep -qi 'long on purpose'; then
      continue
    fi
    echo "$f:$line: $name is $((end - line + 1)) lines (over $max_lines): split it, or say" \
      "why it is \"long on purpose\" in the comment above it"
    bad=$((bad + 1))
  done <<< "$long"
  echo "lint.sh: $n functions over $max_lines lines, $bad without a reason"
  [ "$bad" = 0 ]
}

case "$mode" in
  lengths) lint_lengths ;;
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
    lint_lengths || rc=1
    exit $rc ;;
esac
