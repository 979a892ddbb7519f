#!/usr/bin/env bash
# Builds the sanitizer tree ./build-san: clang++ with ASan + UBSan and
# libFuzzer's coverage (-Dfuzz=true), -O1 with line tables, asserts on. One
# tree serves both the sanitizer test suites (scripts/test.sh) and the fuzz
# targets (scripts/fuzz.sh): a gcc ASan tree beside a clang fuzz tree cost
# CI about 3.5x the compile time of this one (bench/RESULTS.md, "CI").
# usage: scripts/build-san.sh [--fuzz-only]
#   builds what the unit, sim and ring suites run (but the tests also in
#   suite py: Python that only reads a binary's fixed output) and every
#   fuzz target;
#   --fuzz-only: the fuzz targets alone.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_only=0
for a in "$@"; do
  case "$a" in
    --fuzz-only) fuzz_only=1 ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) echo "build-san.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
dir=build-san
if [ ! -f "$dir/build.ninja" ]; then
  CXX=clang++ CXX_LD=lld meson setup "$dir" -Dfuzz=true -Dtests=true -Dbench=false \
    -Dbuildtype=plain "-Dcpp_args=-O1 -gline-tables-only" -Db_ndebug=false \
    -Db_lundef=false -Dwerror=true >/dev/null
fi
# Regenerated first, so that the list knows targets added since setup.
ninja -C "$dir" build.ninja >/dev/null 2>&1 || true
suites=(unit sim ring)
[ $fuzz_only = 1 ] && suites=()
mapfile -t targets < <(meson introspect --tests --targets "$dir" | /usr/bin/python3 -c '
import json, os, sys
d = json.load(sys.stdin)
root = os.path.abspath(sys.argv[1])
suites = {"ofan:" + s for s in sys.argv[2:]} | set(sys.argv[2:])
by_id = {t["id"]: t["filename"] for t in d["targets"]}
out = set()
for t in d["tests"]:
    if suites & set(t["suite"]) and "ofan:py" not in t["suite"]:
        for i in t["depends"]:
            out.update(by_id.get(i, []))
        if t["cmd"][0].startswith(root + "/"):
            out.add(t["cmd"][0])
for t in d["targets"]:
    out.update(f for f in t["filename"] if "/tests/fuzz/" in f and f.endswith("_fuzz"))
print("\n".join(sorted(os.path.relpath(f, root) for f in out)))
' "$dir" "${suites[@]}" | grep .)
if ! ninja -C "$dir" "${targets[@]}" >"$dir/build.log" 2>&1; then
  echo "build-san: building ${#targets[@]} targets FAILED ($dir/build.log):"
  grep -E "error|FAILED" "$dir/build.log" | head -20
  exit 1
fi
