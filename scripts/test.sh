#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, and runs
#   1. all meson test suites on the release build (-Werror);
#   2. the unit and simulator suites again under ASan + UBSan (./build-asan);
#   3. each libFuzzer target for a fixed budget (scripts/fuzz.sh).
# Ends with one 'N passed, N failed' line; exit code 0 iff everything passed.
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
bash scripts/setup.sh || exit 1
bash scripts/build.sh || exit 1

rc=0
logs=()
echo "== release build: all suites"
meson test -C build --print-errorlogs --num-processes 2 || rc=1
logs+=(build/meson-logs/testlog.junit.xml)

extra_failed=0
if [ $quick = 0 ]; then
  echo "== ASan + UBSan: unit and simulator suites"
  if [ ! -f build-asan/build.ninja ]; then
    meson setup build-asan -Dbuildtype=debugoptimized -Db_sanitize=address,undefined \
      -Db_lundef=false -Dbench=false -Dwerror=true >/dev/null || rc=1
  fi
  # Only what the sanitizer suites run: building the whole tree (the
  # emulator's hosts and collectives too) under ASan took CI past its budget.
  asan_suites=(unit sim ring)
  mapfile -t asan_targets < <(meson introspect --tests --targets build-asan | /usr/bin/python3 -c '
import json, os, sys
d = json.load(sys.stdin)
suites = {"ofan:" + s for s in sys.argv[1:]} | set(sys.argv[1:])
by_id = {t["id"]: t["filename"] for t in d["targets"]}
root = os.path.abspath("build-asan")
out = set()
for t in d["tests"]:
    if not suites & set(t["suite"]):
        continue
    for i in t["depends"]:
        out.update(by_id.get(i, []))
    if t["cmd"][0].startswith(root + "/"):
        out.add(t["cmd"][0])
print("\n".join(sorted(os.path.relpath(f, root) for f in out)))
' "${asan_suites[@]}" | grep .)
  if [ ${#asan_targets[@]} -gt 0 ] && ninja -C build-asan "${asan_targets[@]}" >/dev/null; then
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
      meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 --suite unit --suite sim --suite ring \
      --timeout-multiplier 4 || rc=1
    logs+=(build-asan/meson-logs/testlog.junit.xml)
  else
    echo "ASan build failed"; rc=1; extra_failed=$((extra_failed + 1))
  fi
  echo "== fuzzing"
  # 8 s per target: ten targets, and the VM and agent suites need the minutes.
  if ! bash scripts/fuzz.sh 8; then rc=1; extra_failed=$((extra_failed + 1)); fi
fi

/usr/bin/python3 - "$extra_failed" "${logs[@]}" <<'PY' || true
import os, sys, xml.etree.ElementTree as ET
passed = failed = skipped = 0
failed += int(sys.argv[1])
for path in sys.argv[2:]:
    if not os.path.exists(path):
        failed += 1
        continue
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $rc
