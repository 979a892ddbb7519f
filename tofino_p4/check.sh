#!/usr/bin/env bash
# Checks pofan.p4 with p4c: its p4test front and mid end (P4's rules), and
# its open Tofino back end bf-p4c (whether Tofino can run it, and with what).
#
#   [P4TEST=/path/to/p4test TNA_INCLUDE=/dir/holding/tna.p4] \
#   [BF_P4C=/path/to/p4c-barefoot] [BF_P4C_INCLUDE=/dir1:/dir2] [BFAS=/path/to/bfas] \
#   [BF_P4C_EDGES="64 2048"] [BF_P4C_KEEP=/dir] bash tofino_p4/check.sh
#
# p4test: for Tofino 1 (tna.p4) and Tofino 2 (t2na.p4).
# bf-p4c: `p4c-barefoot --target tofino --arch tna` and `--target tofino2
# --arch t2na`, with -g for its resources.json, at the table sizes of each
# network in BF_P4C_EDGES (default 64 and 2,048 edge switches of 32 uplinks:
# the paper's Table 2 and the program's own sizes), then its assembler bfas
# (BFAS, or the bfas beside p4c-barefoot) where there is one, over the
# OUT/pipe/pofan.bfa it wrote, into OUT/pipe (tofino.bin, tofino2.bin: what
# bf-p4c's own driver does). For each it prints the compiler's figures
# (stages, RAMs, hash bits, crossbar bytes, gateways, ALUs, PHV containers;
# tools/bf_resources.py) and fails where tofino_p4/README.md's resource table
# gives other figures for that target and size. BF_P4C_INCLUDE names the folders holding core.p4
# and tna.p4/t2na.p4 when p4c-barefoot does not find them itself (default:
# TNA_INCLUDE). BF_P4C_KEEP keeps each compile's output and logs there
# (bf-p4c.log, bfas.log), failed or not.
#
# Without BF_P4C, the project's prebuilt bf-p4c is used where it is:
# ../shared/tools/bf-p4c from the repository's root (CI's machines; its
# p4include and tofino-p4include folders unless BF_P4C_INCLUDE is set, its
# bfas unless BFAS is). BF_P4C set but empty compiles nothing.
#
# p4c is not packaged for Debian, and neither it, nor anything built from it,
# nor the TNA headers may be committed here; tofino_p4/README.md says how they
# were built. A check whose tools are not given says that it skipped; with
# neither given this exits 77 (what meson counts as a skipped test).
# Otherwise it exits 0 when every check that ran passed, 1 with the
# compiler's messages when one failed, 2 on a bad setting.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
me=tofino_p4/check.sh

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0
ran=0

# --------------------------------------------------------------- p4test
run_p4test() {
  local target header
  for f in "$P4TEST" "$TNA_INCLUDE/tna.p4"; do
    if [[ ! -e "$f" ]]; then
      echo "$me: $f does not exist" >&2
      exit 2
    fi
  done
  for target in 1 2; do
    header=tna.p4
    [[ $target == 2 ]] && header=t2na.p4
    if [[ ! -e "$TNA_INCLUDE/$header" ]]; then
      echo "$me: no $header in $TNA_INCLUDE: Tofino $target not checked by p4test"
      continue
    fi
    if (cd "$work" && "$P4TEST" --std p4-16 -D__TARGET_TOFINO__="$target" -I "$TNA_INCLUDE" \
          -I "$here" "$here/pofan.p4" >"$work/p4test.$target" 2>&1); then
      echo "$me: pofan.p4 type-checks for Tofino $target ($P4TEST)"
      # Warnings are shown, not fatal.
      if [[ -s "$work/p4test.$target" ]]; then cat "$work/p4test.$target"; fi
    else
      echo "$me: pofan.p4 fails p4test for Tofino $target:" >&2
      cat "$work/p4test.$target" >&2
      status=1
    fi
  done
}

# --------------------------------------------------------------- bf-p4c
# BF_P4C_KEEP/NAME: a copy of one compile's output and logs, failed or not.
keep_output() {
  [[ -n "${BF_P4C_KEEP:-}" ]] || return 0
  mkdir -p "$BF_P4C_KEEP"
  rm -rf "${BF_P4C_KEEP:?}/$2"
  cp -r "$1" "$BF_P4C_KEEP/$2"
}

run_bf_p4c() {
  local bfas="${BFAS:-$(dirname "$BF_P4C")/bfas}"
  local edges_list="${BF_P4C_EDGES:-64 2048}"
  local incs=() dir t target arch name edges out
  if [[ ! -x "$BF_P4C" ]]; then
    echo "$me: BF_P4C=$BF_P4C is not an executable" >&2
    exit 2
  fi
  IFS=: read -r -a dirs <<<"${BF_P4C_INCLUDE:-${TNA_INCLUDE:-}}"
  for dir in "${dirs[@]}"; do
    [[ -z "$dir" ]] && continue
    if [[ ! -d "$dir" ]]; then
      echo "$me: include folder $dir does not exist" >&2
      exit 2
    fi
    incs+=(-I "$dir")
  done
  for edges in $edges_list; do
    if ! [[ "$edges" =~ ^[1-9][0-9]*$ ]] || ((edges > 2048)); then
      echo "$me: BF_P4C_EDGES: $edges is not a number of edge switches from 1 to 2048" >&2
      exit 2
    fi
  done
  if [[ -n "${BFAS:-}" && ! -x "$BFAS" ]]; then
    echo "$me: BFAS=$BFAS is not an executable" >&2
    exit 2
  fi
  if [[ ! -x "$bfas" ]]; then
    echo "$me: no bfas (BFAS, or beside $BF_P4C): bf-p4c's output is not assembled"
    bfas=""
  fi
  for t in 1 2; do
    target=tofino arch=tna name="Tofino 1"
    [[ $t == 2 ]] && target=tofino2 arch=t2na name="Tofino 2"
    for edges in $edges_list; do
      out="$work/bf.$target.$edges"
      mkdir -p "$out"   # for the logs, kept with the output (BF_P4C_KEEP)
      # The table sizes that grow with the network follow from the count of
      # edge switches (include/pofan_defs.h has the rule).
      if ! "$BF_P4C" --std p4-16 --target "$target" --arch "$arch" -g \
             -D__TARGET_TOFINO__="$t" -DOFAN_P4_EDGE_SWITCHES="$edges" "${incs[@]}" -I "$here" \
             -o "$out" "$here/pofan.p4" >"$out/bf-p4c.log" 2>&1; then
        echo "$me: pofan.p4 fails bf-p4c for $name at $edges edge switches:" >&2
        cat "$out/bf-p4c.log" >&2
        if grep -q "error while loading shared libraries" "$out/bf-p4c.log"; then
          echo "$me: $BF_P4C lacks a runtime library: scripts/setup.sh installs them" >&2
        fi
        status=1
        keep_output "$out" "$target.$edges"
        continue
      fi
      # bf-p4c writes a pipe's assembly to OUT/PIPE/pofan.bfa (PIPE: the
      # Pipeline's name in main, `pipe`); bfas writes the binary and its
      # context.json beside it, as bf-p4c's own driver runs it.
      if [[ -n "$bfas" ]]; then
        if [[ ! -f "$out/pipe/pofan.bfa" ]]; then
          echo "$me: bf-p4c wrote no $out/pipe/pofan.bfa for $name at $edges edge switches;" \
               "it wrote:" >&2
          (cd "$out" && find . -type f | sort) >&2
          status=1
          keep_output "$out" "$target.$edges"
          continue
        fi
        if ! "$bfas" --target "$target" -o "$out/pipe" "$out/pipe/pofan.bfa" \
               >"$out/bfas.log" 2>&1 || [[ ! -s "$out/pipe/$target.bin" ]]; then
          echo "$me: bfas fails on bf-p4c's output for $name at $edges edge switches:" >&2
          cat "$out/bfas.log" >&2
          status=1
          keep_output "$out" "$target.$edges"
          continue
        fi
      fi
      echo "$me: pofan.p4 compiles with bf-p4c for $name ($target/$arch) at $edges edge" \
           "switches${bfas:+ and assembles}, with no error; the compiler's figures per pipe:"
      # Warnings are shown, not fatal; bfas's (parser matches it finds
      # shadowed by earlier ones) are counted, and in its log.
      grep -i "warning:" "$out/bf-p4c.log" | sort -u || true
      if [[ -n "$bfas" ]] && grep -q "warning:" "$out/bfas.log"; then
        echo "bfas: $(grep "warning:" "$out/bfas.log" | grep -vc ": warning: here$") warnings" \
             "(bfas.log; BF_P4C_KEEP keeps it)"
      fi
      # The figures, and the README's resource table held to them.
      if ! python3 "$here/tools/bf_resources.py" --indent 2 --readme "$here/README.md" \
             --target "$target" --edges "$edges" "$out"; then
        echo "$me: tofino_p4/README.md's resource table does not hold for $name at $edges" \
             "edge switches (above)" >&2
        status=1
      fi
      keep_output "$out" "$target.$edges"
    done
  done
}

if [[ -n "${P4TEST:-}" && -n "${TNA_INCLUDE:-}" ]]; then
  ran=1
  run_p4test
else
  echo "$me: SKIPPED p4test: pofan.p4 was not type-checked: set P4TEST to p4c's p4test" \
       "and TNA_INCLUDE to the folder holding tna.p4 (tofino_p4/README.md says how to get both)"
fi
# The project's prebuilt bf-p4c, when BF_P4C is not set: CI clones the
# repository to X/main beside X/shared, so it is ../shared/tools/bf-p4c from
# the repository's root, with p4c's and bf-p4c's include folders and bfas.
shared_bf="$here/../../shared/tools/bf-p4c"
if [[ -z "${BF_P4C+set}" && -x "$shared_bf/p4c-barefoot" ]]; then
  shared_bf="$(cd "$shared_bf" && pwd)"
  BF_P4C="$shared_bf/p4c-barefoot"
  BF_P4C_INCLUDE="${BF_P4C_INCLUDE-$shared_bf/p4include:$shared_bf/tofino-p4include}"
  echo "$me: bf-p4c: $BF_P4C (beside the repository; BF_P4C, BF_P4C_INCLUDE and BFAS" \
       "choose others)"
fi
if [[ -n "${BF_P4C:-}" ]]; then
  ran=1
  run_bf_p4c
elif [[ -n "${BF_P4C+set}" ]]; then
  echo "$me: SKIPPED bf-p4c: pofan.p4 was not compiled for Tofino: BF_P4C is empty"
else
  echo "$me: SKIPPED bf-p4c: pofan.p4 was not compiled for Tofino: no ../shared/tools/bf-p4c" \
       "beside the repository, and BF_P4C not set: set it to p4c's p4c-barefoot (and" \
       "BF_P4C_INCLUDE to the folders of core.p4 and tna.p4 if it does not find them;" \
       "tofino_p4/README.md says how to build it)"
fi
((ran)) || exit 77
exit $status
