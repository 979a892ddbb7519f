#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, runs the meson test suites
# and prints one 'N passed, N failed' line. Exit code 0 iff everything passed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
rc=0
meson test -C build --print-errorlogs --num-processes 2 "$@" || rc=$?
/usr/bin/python3 - build/meson-logs/testlog.junit.xml <<'PY' || true
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
passed = failed = skipped = 0
for case in root.iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        failed += 1
    elif case.find("skipped") is not None:
        skipped += 1
    else:
        passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $rc
