#!/bin/sh
# rxe-local.sh N [MTU]: N soft-RoCE devices rxe0..rxe(N-1) in THIS kernel's
# initial network namespace, able to reach each other over real veths, for
# running several verbs hosts in one VM (emu/ofan-emu vm run).
#
# Why it is built this way (kernel 6.1's rxe, checked in a VM):
# - rxe's UDP socket (port 4791) lives in init_net only, so every rxe netdev
#   must be in the initial namespace; a veth end moved into another netns
#   gets no RoCE traffic. So all N addresses are local to one stack.
# - Between two local addresses Linux routes over lo, and rxe then finds no
#   rxe device for the arriving packet (it looks it up by skb->dev): RDMA
#   hangs while TCP and ping work. Policy routing sends what an address
#   originates out of its own veth instead ("from A iif lo" -> table of A),
#   with the local table moved below those rules so that arriving packets
#   are still delivered locally, accept_local so that a local source
#   arriving on a wire is not a martian, and arp_ignore/arp_announce so
#   that each veth answers ARP for its own address only. An address talking
#   to itself stays local ("from A to A lookup local": TCP to oneself).
# - vaI carries 10.9.0.(I+1)/24 and rxeI; its peer vbI is a port of bridge
#   br-rxe, so any two of them are one hop apart. MTU (default 4500) makes
#   rxe's active MTU 4096; 2200 gives 2048 (what a fabric carries).
#
# modifies: links vaI/vbI and br-rxe, ip rules 5.., 10.., 1000 and tables
#           100.., the sysctls above, rxe devices rxeI (all gone with the VM)
# Exit: 0 set up, 1 a step failed (its error is printed), 2 usage.
set -eu
help() { sed -n '2,/^# Exit:/p' "$0"; }
case "${1:-}" in
  -h|--help) help; exit 0;;
  "") help >&2; exit 2;;
esac
n=$1
mtu=${2:-4500}
case "$n" in *[!0-9]*) echo "rxe-local.sh: N must be a number, not $n" >&2; exit 2;; esac
case "$mtu" in *[!0-9]*) echo "rxe-local.sh: MTU must be a number, not $mtu" >&2; exit 2;; esac
if [ "$n" -lt 1 ] || [ "$n" -gt 200 ]; then echo "rxe-local.sh: N must be 1..200" >&2; exit 2; fi
trap 'echo "rxe-local.sh: failed (see the command above)" >&2' EXIT
sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
  net.ipv4.conf.all.accept_local=1 net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
ip link add br-rxe mtu "$mtu" type bridge
ip link set br-rxe up
i=0
while [ "$i" -lt "$n" ]; do
  a=10.9.0.$((i + 1))
  ip link add "va$i" mtu "$mtu" type veth peer name "vb$i" mtu "$mtu"
  sysctl -qw "net.ipv4.conf.va$i.rp_filter=0" "net.ipv4.conf.va$i.accept_local=1" \
    "net.ipv4.conf.va$i.arp_ignore=1" "net.ipv4.conf.va$i.arp_announce=2"
  ip link set "vb$i" master br-rxe
  ip link set "vb$i" up
  ip addr add "$a/24" dev "va$i"
  ip link set "va$i" up
  ip rule add pref $((5 + i)) from "$a" to "$a" lookup local
  ip rule add pref $((10 + n + i)) from "$a" iif lo lookup $((100 + i))
  ip route add 10.9.0.0/24 dev "va$i" src "$a" table $((100 + i))
  rdma link add "rxe$i" type rxe netdev "va$i"
  i=$((i + 1))
done
ip rule add pref 1000 lookup local
ip rule del pref 0
trap - EXIT
