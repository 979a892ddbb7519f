#!/usr/bin/env bash
# The main job on a built-in default: reproduce the paper's queue-growth laws
# (Fig. 4b, §3.5's three groups) with ofan-sim on a k=8 fat tree (128 hosts) for
# 256 KiB, 1 MiB and 4 MiB permutations: ECMP; SimpleRR, JSQ and CONGA (near
# linear); RSQ, AR and REPS (about sqrt m); DRB, Ethereal, 4Ofan and Ofan
# (bounded). Prints the tables and writes results/sweep.png (+ .json).
# Extra arguments go to ofan-sim, e.g. `scripts/sim-demo.sh --k 12 --seeds 3`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
mkdir -p results
exec ./build/sim/ofan-sim --sweep --k 8 --msgs 256KiB,1MiB,4MiB \
  --lbs ecmp,rr,jsq,conga,rsq,ar,reps,drb,ethereal,4ofan,ofan --seeds 2 \
  --plot results/sweep.png "$@"
