#!/usr/bin/env bash
# Checks the C++ sources against the repository's style (.clang-format,
# .clang-tidy).
#   scripts/lint.sh                 formatting of every tracked .cc/.h file (fast;
#                                   also the 'format' test of the lint suite)
#   scripts/lint.sh --fix           reformats them in place
#   scripts/lint.sh --tidy [FILE..] clang-tidy over FILEs (default: every tracked
#                                   .cc, tests and benchmarks included), with
#                                   build/compile_commands.json; slow (~6 minutes)
# Exit codes: 0 clean, 1 findings (listed), 2 usage or missing tool.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=check
files=()
for a in "$@"; do
  case "$a" in
    --fix) mode=fix ;;
    --tidy) mode=tidy ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
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

need clang-format
if [ ${#files[@]} = 0 ]; then
  # Tracked files; outside a git checkout, the source folders.
  mapfile -t files < <(git ls-files '*.cc' '*.h' 2>/dev/null ||
    find bench common control dataplane emu sim tests -name '*.cc' -o -name '*.h' 2>/dev/null)
fi
if [ "$mode" = fix ]; then
  clang-format -i --style=file "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f  (scripts/lint.sh --fix)"
    bad=$((bad + 1))
  fi
done
echo "lint.sh: ${#files[@]} files checked, $bad not formatted"
[ $bad = 0 ]
