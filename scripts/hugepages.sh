#!/usr/bin/env bash
# Makes 2 MiB hugepages available to DPDK (idempotent; needs root):
# mounts hugetlbfs on /dev/hugepages and reserves at least N pages (default 512).
# ofan-dp runs with --in-memory, so it leaves no hugepage files behind.
set -euo pipefail
want="${1:-512}"
if [ "$(id -u)" -ne 0 ]; then echo "hugepages.sh: needs root" >&2; exit 1; fi
if ! mountpoint -q /dev/hugepages; then
  mkdir -p /dev/hugepages
  mount -t hugetlbfs nodev /dev/hugepages
fi
have=$(cat /proc/sys/vm/nr_hugepages)
if [ "$have" -lt "$want" ]; then
  echo "$want" > /proc/sys/vm/nr_hugepages
fi
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
total=$(cat /proc/sys/vm/nr_hugepages)
echo "hugepages: $total reserved, $free free (2 MiB each) on /dev/hugepages"
if [ "$total" -lt "$want" ]; then
  echo "hugepages.sh: only $total of $want pages could be reserved (memory fragmented?)" >&2
  exit 1
fi
