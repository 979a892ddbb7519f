#!/usr/bin/env bash
# The main job on a built-in default: an emulated k=4 fat tree of 20 ofan-dp
# switches and 16 uroce hosts in network namespaces, a permutation of real
# RoCEv2 traffic (every buffer verified) under ECMP, RPS, AR, Ofan and POfan,
# the same scenario in ofan-sim beside it, the table and results/emu-demo.png,
# then the fabric torn down. Needs root (namespaces, AF_XDP, hugepages).
# Extra arguments go to `ofan-emu demo`, e.g. `scripts/demo.sh --msg 4MiB`;
# `scripts/demo.sh --rxe`: the soft-RoCE demo (rxe VMs, one per pod).
# The simulator's own reproduction of the paper's queue laws: scripts/sim-demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
bash scripts/hugepages.sh
mkdir -p results
exec /usr/bin/python3 emu/ofan-emu demo "$@"
