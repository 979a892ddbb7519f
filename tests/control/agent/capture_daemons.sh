#!/usr/bin/env bash
# The agent's fixtures from real daemons: Debian's lldpd and FRR 8.4.4 in
# throwaway network namespaces (ofa-<pid>-*) joined by veths.
#
#   capture_daemons.sh --write [DIR]   capture into DIR (default: fixtures/
#                                      next to this script)
#   capture_daemons.sh --check [DIR]   capture into a temporary folder and
#                                      compare the JSON shapes (keys, types,
#                                      list lengths where they are counts of
#                                      neighbours or next hops; never values
#                                      such as MACs, ages or timers) with DIR's
#
# LLDP: agg a0-0 of a k=4 fat tree, its ports p0..p3 cabled to e0-0 p2, e0-1 p2,
# c0 p0 and c1 p0; `lldpcli -f json0 show neighbors` with 0, 1, 2 and 4
# neighbours heard (lldp_a0-0_<n>.json) and plain -f json with one
# (lldp_a0-0_1_plain.json: the shape json0 avoids).
# FRR: leaves l0, l1 and spines s0, s1 of a k=4 leaf-spine, each running zebra,
# bgpd and bfdd with the golden config frr_k4_ls_<name>.conf (what
# control/agent/frr_config.h writes), each daemon in its own UTS namespace so
# that `hostname` holds. Checked: vtysh shows the config, all sessions
# Established over IPv6 link-locals, BFD up; captured: l0's `ip -j route show`
# with its ECMP route to l1's hosts (routes_k4_ls_l0.json) and bgpd's neighbour
# summary (bgp_summary_k4_ls_l0.json).
#
# Needs root, lldpd, lldpcli, FRR (/usr/lib/frr), vtysh and Debian's python3;
# exits 77 (skipped) without them, 1 on a failed check, 0 otherwise. Whatever
# it made (namespaces, daemons, /run/frr/ofa-*, /etc/frr/ofa-*) goes on every
# exit.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
mode="${1:---check}"
dir="${2:-$here/fixtures}"
case "$mode" in
  --write|--check) ;;
  -h|--help) sed -n 2,28p "$0"; exit 0 ;;
  *) echo "capture_daemons.sh: unknown mode $mode (--write or --check)" >&2; exit 2 ;;
esac

skip() { echo "capture_daemons.sh: skipped: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
for tool in lldpd lldpcli vtysh ip unshare /usr/bin/python3 /usr/lib/frr/zebra \
    /usr/lib/frr/bgpd /usr/lib/frr/bfdd; do
  command -v "$tool" >/dev/null || skip "$tool not installed (scripts/setup.sh installs it)"
done

prefix="ofa-$$"
work="$(mktemp -d "/tmp/$prefix.XXXXXX")"
chmod 755 "$work"  # lldpd's unprivileged half opens its socket there
namespaces=()
frr_names=()

cleanup() {
  local pf ns
  for pf in "$work"/*.pid /run/frr/"$prefix"-*/*.pid; do
    if [ -f "$pf" ]; then kill "$(cat "$pf")" 2>/dev/null || true; fi
  done
  sleep 0.5
  for pf in "$work"/*.pid /run/frr/"$prefix"-*/*.pid; do
    if [ -f "$pf" ]; then kill -9 "$(cat "$pf")" 2>/dev/null || true; fi
  done
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  for ns in "${frr_names[@]}"; do rm -rf "/run/frr/$ns" "/etc/frr/$ns"; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

netns() {
  ip netns add "$prefix-$1"
  namespaces+=("$prefix-$1")
  ip -n "$prefix-$1" link set lo up
}

# cable A PA B PB: a veth from port PA of A to port PB of B, both up.
cable() {
  ip -n "$prefix-$1" link add "$2" type veth peer name "$4" netns "$prefix-$3"
  ip -n "$prefix-$1" link set "$2" up
  ip -n "$prefix-$3" link set "$4" up
}

# Polls `$2` (a command) until its output has $1 lines matching $3, 20 s at most.
wait_count() {
  local want="$1" cmd="$2" pattern="$3" _
  for _ in $(seq 1 100); do
    if [ "$(eval "$cmd" 2>/dev/null | grep -c -- "$pattern" || true)" -ge "$want" ]; then
      return 0
    fi
    sleep 0.2
  done
  echo "capture_daemons.sh: waited 20 s for $want of '$pattern' in: $cmd" >&2
  eval "$cmd" >&2 || true
  return 1
}

out="$work/out"
mkdir -p "$out"

# ---- lldpd ----
lldp_start() {  # NAME (a switch name; the namespace is $prefix-NAME)
  printf 'configure system hostname %s\nconfigure lldp tx-interval 1\nconfigure lldp portidsubtype ifname\n' \
    "$1" >"$work/$1.lldpd.conf"
  ip netns exec "$prefix-$1" lldpd -u "$work/$1.lldpd.sock" -p "$work/$1.lldpd.pid" \
    -O "$work/$1.lldpd.conf" -I 'p*'
}
lldp_show() {  # NAME FORMAT
  ip netns exec "$prefix-$1" lldpcli -u "$work/$1.lldpd.sock" -f "$2" show neighbors
}

for n in a0-0 e0-0 e0-1 c0 c1; do netns "$n"; done
cable a0-0 p0 e0-0 p2
cable a0-0 p1 e0-1 p2
cable a0-0 p2 c0 p0
cable a0-0 p3 c1 p0
lldp_start a0-0
sleep 2
lldp_show a0-0 json0 >"$out/lldp_a0-0_0.json"
lldp_start e0-0
wait_count 1 "lldp_show a0-0 json0" '"via": "LLDP"'
lldp_show a0-0 json0 >"$out/lldp_a0-0_1.json"
lldp_show a0-0 json >"$out/lldp_a0-0_1_plain.json"
lldp_start e0-1
wait_count 2 "lldp_show a0-0 json0" '"via": "LLDP"'
lldp_show a0-0 json0 >"$out/lldp_a0-0_2.json"
lldp_start c0
lldp_start c1
wait_count 4 "lldp_show a0-0 json0" '"via": "LLDP"'
lldp_show a0-0 json0 >"$out/lldp_a0-0_4.json"
echo "capture_daemons.sh: lldpd: 0, 1, 2 and 4 neighbours captured"

# ---- FRR ----
frr_start() {  # NAME: zebra, bfdd, bgpd in $prefix-NAME, config loaded by vtysh
  local name="$1" ns="$prefix-$1" d
  frr_names+=("$ns")
  mkdir -p "/run/frr/$ns" "/etc/frr/$ns"
  chown frr:frr "/run/frr/$ns"
  cp "$dir/frr_k4_ls_$name.conf" "/etc/frr/$ns/frr.conf"
  : >"/etc/frr/$ns/vtysh.conf"
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 \
    net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
  for d in zebra bfdd bgpd; do
    ip netns exec "$ns" unshare --uts sh -c \
      "hostname $name && exec /usr/lib/frr/$d -d -N $ns -F datacenter -A 127.0.0.1"
    if [ "$d" = zebra ]; then wait_count 1 "ls /run/frr/$ns" 'zserv.api'; fi
  done
  wait_count 3 "ls /run/frr/$ns" '\.vty$'
}
vty() {  # NAME COMMAND (vtysh too in a UTS namespace named NAME: its own
  # hostname is part of what show running-config prints)
  # shellcheck disable=SC2016 # sh expands them, from the arguments after vty
  unshare --uts sh -c 'hostname "$1" && exec vtysh -N "$2" -c "$3"' vty "$1" "$prefix-$1" "$2"
}

for n in l0 l1 s0 s1; do netns "$n"; done
cable l0 p2 s0 p0
cable l0 p3 s1 p0
cable l1 p2 s0 p1
cable l1 p3 s1 p1
for n in l0 l1 s0 s1; do frr_start "$n"; done
for n in l0 l1 s0 s1; do
  # shellcheck disable=SC2016 # as in vty()
  unshare --uts sh -c 'hostname "$1" && exec vtysh -N "$2" -b' vty "$n" "$prefix-$n" \
    >"$work/$n.boot.log" 2>&1 || {
    echo "capture_daemons.sh: FRR refused the config of $n:" >&2
    cat "$work/$n.boot.log" >&2
    exit 1
  }
done
status=0
for n in l0 l1 s0 s1; do
  vty "$n" 'show running-config' >"$work/$n.running"
  if [ "$(grep -c '^hostname ' "$work/$n.running")" != 1 ]; then
    echo "capture_daemons.sh: $n: a daemon does not hold the hostname" >&2
    status=1
  fi
  for line in "hostname $n" "no zebra nexthop kernel enable" "bgp bestpath as-path multipath-relax" \
      "neighbor fabric bfd profile fabric" " profile fabric"; do
    grep -q -- "$line" "$work/$n.running" || {
      echo "capture_daemons.sh: $n's running config lacks '$line'" >&2
      status=1
    }
  done
done
# Established on both sessions of each switch, BFD up on both.
for n in l0 l1 s0 s1; do
  wait_count 2 "vty $n 'show bgp ipv4 unicast summary json'" '"state":"Established"' ||
    wait_count 2 "vty $n 'show bgp ipv4 unicast summary json'" '"state": "Established"' || status=1
  wait_count 2 "vty $n 'show bfd peers brief'" ' up ' || status=1
done
# l0 reaches l1's hosts over both spines: the ECMP route.
wait_count 2 "ip -n $prefix-l0 route show 10.0.1.0/24" 'dev p[23]' || status=1
wait_count 1 "vty l0 'show bgp ipv4 unicast summary json'" 'ipv6 link-local\|fe80::\|"hostname":"s' ||
  true
ip -n "$prefix-l0" -j route show >"$out/routes_k4_ls_l0.json"
vty l0 'show bgp ipv4 unicast summary json' >"$out/bgp_summary_k4_ls_l0.json"
vty l0 'show bfd peers json' >"$out/bfd_peers_k4_ls_l0.json"
vty s0 'show bgp neighbors p0 json' >"$work/s0.neighbor.json"
grep -q '"hostname":"l0"\|"hostname": "l0"' "$work/s0.neighbor.json" || {
  echo "capture_daemons.sh: s0 does not see l0's hostname (UTS namespace not honoured)" >&2
  status=1
}
if [ "$status" != 0 ]; then
  echo "capture_daemons.sh: FRR checks FAILED; l0's running config:" >&2
  cat "$work/l0.running" >&2
  exit 1
fi
echo "capture_daemons.sh: FRR: 4 switches, 8 sessions Established, BFD up, ECMP route captured"

# ---- write or compare ----
if [ "$mode" = --write ]; then
  for f in "$out"/*.json; do
    /usr/bin/python3 -m json.tool --indent 2 "$f" >"$dir/$(basename "$f")"
  done
  echo "capture_daemons.sh: wrote $(find "$out" -name '*.json' | wc -l) fixtures to $dir"
  exit 0
fi
/usr/bin/python3 - "$out" "$dir" <<'EOF'
"""Compares the shapes of fresh captures with the committed fixtures."""
import json
import os
import sys

# Lists whose length is a count that the scenario fixes (neighbours, next
# hops, sessions); other lists are compared by their elements' shapes only.
COUNTED = {"interface", "nexthops"}


def shape(v, key=""):
    if isinstance(v, dict):
        return {k: shape(x, k) for k, x in sorted(v.items())
                if not k.startswith(("fe80", "169.254"))}
    if isinstance(v, list):
        shapes = []
        for x in v:
            s = shape(x, key)
            if s not in shapes:
                shapes.append(s)
        return {"list": shapes, "len": len(v) if key in COUNTED else None}
    return type(v).__name__


def routes(v):
    return sorted((r.get("dst"), sorted(h.get("dev", "") for h in r.get("nexthops", [])))
                  for r in v if r.get("protocol") == "bgp")


fresh, committed = sys.argv[1], sys.argv[2]
bad = 0
for name in sorted(os.listdir(fresh)):
    with open(os.path.join(fresh, name)) as f:
        a = json.load(f)
    path = os.path.join(committed, name)
    if not os.path.exists(path):
        print(f"capture_daemons.sh: no committed fixture {name}")
        bad += 1
        continue
    with open(path) as f:
        b = json.load(f)
    same = shape(a) == shape(b)
    if name.startswith("routes_"):
        same = same and routes(a) == routes(b)
    if not same:
        print(f"capture_daemons.sh: {name}: the daemons' output changed shape")
        print("  fresh:    " + json.dumps(shape(a))[:400])
        print("  committed:" + json.dumps(shape(b))[:400])
        bad += 1
    else:
        print(f"capture_daemons.sh: {name}: same shape")
sys.exit(1 if bad else 0)
EOF
