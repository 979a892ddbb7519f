#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, and runs
#   1. all meson test suites on the release build (-Werror);
#   2. the unit, simulator and ring suites again under ASan + UBSan (./build-san, clang);
#   3. each libFuzzer target for a fixed budget (scripts/fuzz.sh).
# Ends with every suite's time against its timeout and one line, PASS or FAIL,
# that agrees with the exit code (scripts/ci_summary.py).
# usage: scripts/test.sh [--quick]   (--quick: step 1 only)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
quick=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "test.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
# Each stage's wall time, printed at the end: CI's budget is 40 minutes.
stages=()
stage_t0=0
stage_start() { stage_t0=$SECONDS; }
stage_end() { stages+=("$(printf '%6d s  %s' $((SECONDS - stage_t0)) "$1")"); }

stage_start
# A stage that stops the run says so as its last line.
bash scripts/setup.sh || { echo "FAIL: scripts/setup.sh could not install what the tests need"; exit 1; }
stage_end "setup"
stage_start
bash scripts/build.sh || { echo "FAIL: the release build failed (above)"; exit 1; }
stage_end "release build"

rc=0
trees=()        # meson trees whose suites ran, as TREE[:TIMEOUT_MULTIPLIER]
extra_stages=() # stages that failed outside meson test
san_pid=
if [ $quick = 0 ]; then
  # One clang tree for the sanitizer suites and the fuzz targets
  # (scripts/build-san.sh), compiled beside the release suites under
  # SCHED_IDLE: it runs only on a core those suites leave idle (VM boots,
  # pings, timers), so it takes nothing from them.
  setsid chrt --idle 0 nice -n 19 bash scripts/build-san.sh >build/build-san.out 2>&1 &
  san_pid=$!
  # Its own process group (setsid), so that an early exit stops ninja too.
  trap '[ -n "$san_pid" ] && kill -- -"$san_pid" 2>/dev/null' EXIT
fi
echo "== release build: all suites"
stage_start
meson test -C build --print-errorlogs --num-processes 2 || rc=1
trees+=(build)
stage_end "release suites (the sanitizer tree compiling beside them)"

if [ $quick = 0 ]; then
  echo "== ASan + UBSan (clang): unit, simulator and ring suites"
  stage_start
  # Not suite py: Python tests whose binaries run a few fixed commands, where
  # a sanitizer finds nothing the release run does not (~75 s saved).
  wait "$san_pid"
  san_rc=$?
  san_pid=
  cat build/build-san.out
  if [ $san_rc = 0 ]; then
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
      meson test -C build-san --no-rebuild --print-errorlogs --num-processes 2 --suite unit --suite sim --suite ring \
      --no-suite py --timeout-multiplier 4 || rc=1
    trees+=(build-san:4)
  else
    echo "sanitizer build failed"; rc=1; extra_stages+=("the sanitizer build")
  fi
  stage_end "sanitizer build (the rest of it) and suites"
  echo "== fuzzing"
  stage_start
  # 8 s per target: ten targets, and the VM and agent suites need the minutes.
  if ! bash scripts/fuzz.sh 8; then rc=1; extra_stages+=(fuzzing); fi
  stage_end "fuzzing"
fi

echo "== wall time per stage (total $SECONDS s)"
printf '%s\n' "${stages[@]}"
# Every suite's time against its timeout, then the verdict as the last line:
# PASS or FAIL, with the exit code to match (scripts/ci_summary.py).
failed_stages=()
for s in "${extra_stages[@]}"; do failed_stages+=(--failed-stage "$s"); done
/usr/bin/python3 scripts/ci_summary.py --rc "$rc" "${failed_stages[@]}" --show tofino-p4-check \
  "${trees[@]}"
