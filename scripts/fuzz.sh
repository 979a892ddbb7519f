#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in ./build-san
# (scripts/build-san.sh) and runs each for a fixed budget from its seed corpus.
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 20; FUZZ_JOBS targets at once, 2)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
bash scripts/build-san.sh --fuzz-only || exit 1
# Two targets at a time (each libFuzzer process uses one core; CI has two):
# the same budget per target in half the wall time.
jobs="${FUZZ_JOBS:-2}"
# One target: its corpus copied, its run logged; exit 1 on a finding.
fuzz_one() {
  local exe=$1 target corpus_src work
  target=$(basename "$exe" _fuzz)
  corpus_src="tests/fuzz/corpus/$target"
  work="build-san/corpus-$target"
  mkdir -p "$work"
  cp -n "$corpus_src"/* "$work"/ 2>/dev/null || true
  if ! "./$exe" -max_total_time="$secs" -print_final_stats=0 \
      -artifact_prefix=build-san/ "$work" >"build-san/$target.log" 2>&1; then
    echo "fuzz: $target FAILED (crash reproducer in build-san/, log build-san/$target.log)"
    tail -40 "build-san/$target.log"
    return 1
  fi
  echo "fuzz: $target for ${secs}s: $(grep -E "^(#[0-9]+|Done)" "build-san/$target.log" | tail -1)"
}
status=0
pids=()
# Every target tests/fuzz/meson.build built (those that need DPDK only where it is).
for exe in build-san/tests/fuzz/*_fuzz; do
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
  fuzz_one "$exe" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
