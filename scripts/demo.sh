#!/usr/bin/env bash
# The main job on a built-in default: an emulated k=4 fat tree of 20 ofan-dp
# switches and 16 uroce hosts in network namespaces, a permutation of real
# RoCEv2 traffic (every buffer verified) under ECMP, RPS, AR, Ofan and POfan,
# the same scenario in ofan-sim beside it, the table and results/emu-demo.png,
# then the fabric torn down. Needs root (namespaces, AF_XDP, hugepages).
# Extra arguments go to `ofan-emu demo`, e.g. `scripts/demo.sh --msg 4MiB`;
# `scripts/demo.sh --rxe`: the soft-RoCE demo (rxe VMs, one per pod).
# The simulator's own reproduction of the paper's queue laws: scripts/sim-demo.sh.
#
# It builds only the binaries the demo runs (emu/fabric/tools.py names their
# places in the build tree), not the tests, benchmarks and fuzzers that
# scripts/build.sh and scripts/test.sh build; each stage's time is printed
# at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(dataplane/ofan-dp control/ofanctl/ofanctl emu/ofan-topo emu/uroce/uroce
         sim/ofan-sim)
for a in "$@"; do
  # The soft-RoCE demo's collectives run ofan-coll over libibverbs in the VMs.
  if [ "$a" = --rxe ]; then targets+=(emu/collective/ofan-coll); fi
done
stages=()
t0=$SECONDS
stage() { stages+=("$(printf '%6d s  %s' $((SECONDS - t0)) "$1")"); t0=$SECONDS; }
report() { printf 'demo stages:\n'; printf '  %s\n' "${stages[@]}"; }
bash scripts/setup.sh --demo
stage "setup (apt: what is missing)"
bash scripts/build.sh "${targets[@]}"
stage "build (${#targets[@]} binaries)"
bash scripts/hugepages.sh
mkdir -p results
rc=0
/usr/bin/python3 emu/ofan-emu demo "$@" || rc=$?
stage "ofan-emu demo"
report
exit "$rc"
