#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in ./build-fuzz and
# runs each for a fixed budget from its seed corpus.
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
if [ ! -f build-fuzz/build.ninja ]; then
  CXX=clang++ CXX_LD=lld meson setup build-fuzz -Dfuzz=true -Dtests=false -Dbench=false \
    -Dbuildtype=debugoptimized -Db_lundef=false >/dev/null
fi
# Only the fuzz targets (and what they link), not the whole tree under clang;
# regenerated first, so that the list knows targets added since setup.
ninja -C build-fuzz build.ninja >/dev/null 2>&1 || true
mapfile -t targets < <(meson introspect --targets build-fuzz | /usr/bin/python3 -c '
import json, os, sys
root = os.path.abspath("build-fuzz")
print("\n".join(os.path.relpath(f, root) for t in json.load(sys.stdin)
                for f in t["filename"] if "/tests/fuzz/" in f and f.endswith("_fuzz")))' | grep .)
if ! ninja -C build-fuzz "${targets[@]}" >build-fuzz/build.log 2>&1; then
  echo "fuzz: building the fuzz targets FAILED (build-fuzz/build.log):"
  grep -E "error|FAILED" build-fuzz/build.log | head -20
  exit 1
fi
status=0
# Every target tests/fuzz/meson.build built (those that need DPDK only where it is).
for exe in build-fuzz/tests/fuzz/*_fuzz; do
  target=$(basename "$exe" _fuzz)
  corpus_src="tests/fuzz/corpus/$target"
  work="build-fuzz/corpus-$target"
  mkdir -p "$work"
  cp -n "$corpus_src"/* "$work"/ 2>/dev/null || true
  echo "fuzz: $target for ${secs}s"
  if ! "./$exe" -max_total_time="$secs" -print_final_stats=0 \
      -artifact_prefix=build-fuzz/ "$work" >"build-fuzz/$target.log" 2>&1; then
    echo "fuzz: $target FAILED (crash reproducer in build-fuzz/, log build-fuzz/$target.log)"
    tail -40 "build-fuzz/$target.log"
    status=1
  else
    grep -E "^(#[0-9]+|Done)" "build-fuzz/$target.log" | tail -1 || true
  fi
done
exit $status
