#!/usr/bin/env bash
# Type-checks pofan.p4 with p4c's p4test front end against the TNA headers.
#
#   P4TEST=/path/to/p4test TNA_INCLUDE=/dir/holding/tna.p4 bash tofino_p4/check.sh
#
# p4c is not packaged for Debian, and neither it nor the TNA headers may be
# committed here; where they are not given this says so and exits 77 (what
# meson counts as a skipped test). With them it checks the program for
# Tofino 1 and Tofino 2 and exits 0, or 1 with p4test's messages.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ -z "${P4TEST:-}" || -z "${TNA_INCLUDE:-}" ]]; then
  echo "tofino_p4/check.sh: SKIPPED: pofan.p4 was not type-checked: set P4TEST to p4c's p4test" \
       "and TNA_INCLUDE to the folder holding tna.p4 (tofino_p4/README.md says how to get both)"
  exit 77
fi
for f in "$P4TEST" "$TNA_INCLUDE/tna.p4"; do
  if [[ ! -e "$f" ]]; then
    echo "tofino_p4/check.sh: $f does not exist" >&2
    exit 1
  fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0
for target in 1 2; do
  header=tna.p4
  [[ $target == 2 ]] && header=t2na.p4
  if [[ ! -e "$TNA_INCLUDE/$header" ]]; then
    echo "tofino_p4/check.sh: no $header in $TNA_INCLUDE: Tofino $target not checked"
    continue
  fi
  if (cd "$work" && "$P4TEST" --std p4-16 -D__TARGET_TOFINO__=$target -I "$TNA_INCLUDE" \
        -I "$here" "$here/pofan.p4" >"$work/out.$target" 2>&1); then
    echo "tofino_p4/check.sh: pofan.p4 type-checks for Tofino $target ($P4TEST)"
    # Warnings are shown, not fatal.
    [[ -s "$work/out.$target" ]] && cat "$work/out.$target"
  else
    echo "tofino_p4/check.sh: pofan.p4 fails p4test for Tofino $target:" >&2
    cat "$work/out.$target" >&2
    status=1
  fi
done
exit $status
