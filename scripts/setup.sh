#!/usr/bin/env bash
# Installs every Debian package ofan needs (build, tests, benchmarks, emulation).
# Idempotent and non-interactive: safe to run on every `make`/CI invocation.
# `setup.sh --demo`: only what scripts/demo.sh needs (the build, the
# fabric in namespaces, the plot): no qemu, kernel image, clang, FRR, tshark,
# valgrind or lint tools, so a fresh machine reaches the demo's table sooner.
set -euo pipefail

group=all
case "${1:-}" in
  "") ;;
  --demo) group=demo ;;
  -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "setup.sh: unknown argument '$1' (usage: setup.sh [--demo])" >&2; exit 2 ;;
esac

# What scripts/demo.sh builds and runs: the five binaries it builds (meson
# asks for GoogleTest and Google Benchmark when it configures the tree),
# the namespaces, AF_XDP and pyroute2 of `ofan-emu up`, the table's plot.
DEMO_PKGS=(
  build-essential g++ meson ninja-build pkg-config
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev libyaml-cpp-dev
  zlib1g-dev  # CRC-32 of the RoCEv2 ICRC (ofan_packet)
  libdpdk-dev libnuma-dev libbpf-dev libxdp-dev libpcap-dev
  iproute2 ethtool python3 python3-pyroute2 python3-yaml
  python3-matplotlib python3-numpy
)

# Everything else: the tests, the benchmarks, the VM hosts, the lint.
PKGS=(
  "${DEMO_PKGS[@]}"
  # build: clang for the fuzz build, cmake for meson's lookups
  clang lld cmake
  clang-format clang-tidy libclang-rt-14-dev
  # dataplane: DPDK's own tools (dpdk-testpmd, the peer of bench/run-forwarding)
  dpdk dpdk-dev
  # bench/run-forwarding: DPDK's l3fwd sources (the peer it builds), callgrind
  # for instructions per packet (this guest has no hardware counters for perf)
  dpdk-doc valgrind
  # bench/run-forwarding's OVS-DPDK row: Debian's DPDK build of ovs-vswitchd
  # (run with its own database in a temporary folder; the packaged service
  # is not used)
  openvswitch-switch-dpdk
  # emulation and packet checks
  iputils-ping traceroute tshark python3-scapy time
  # the control daemons each switch namespace runs (ofan-agent: docs/emu.md, --control agent;
  # tests/control/agent/capture_daemons.sh); nft drops a silently failed
  # link's control frames at the veth (ofan-emu fail --silent)
  lldpd frr nftables
  # VM hosts and kernel features this one lacks (tc netem, rdma_rxe): Debian's
  # kernel under qemu with a busybox initramfs (emu/vm/); rdma-core's tools
  # and perftest run in the guests, libibverbs/librdmacm build the verbs hosts
  qemu-system-x86 linux-image-amd64 busybox-static kmod
  rdma-core ibverbs-utils perftest libibverbs-dev librdmacm-dev rdmacm-utils
  # RDMA applications in the VM hosts (ofan-emu mpirun, docs/verbs.md): Open MPI
  # over UCX (libopenmpi-dev builds ofan-mpi-bench), UCX's tools, qperf
  openmpi-bin libopenmpi-dev libucx0 ucx-utils qperf
  # Python and shell lint (scripts/lint.sh --python, --shell; stubs for yaml
  # and the standard library's gaps), property tests of the parsers
  flake8 mypy python3-typeshed shellcheck python3-hypothesis
  # ofan-emu export's Containerlab topologies checked against (a subset of)
  # Containerlab's JSON schema (tests/emu/fabric/plan_test.py)
  python3-jsonschema
  # fabrics across servers: the coordinator's ssh, and an sshd in the test's
  # second namespace "server" (tests/emu/fabric/multiserver_test.py)
  openssh-client openssh-server
  # what the project's prebuilt Tofino compiler needs at run time
  # (../shared/tools/bf-p4c/README.md; tofino_p4/check.sh runs it): its
  # libraries, and the C preprocessor it runs over pofan.p4. Never a p4c build.
  libboost-iostreams1.74.0 libgc1 libz3-4 cpp
)

if [ "$group" = demo ]; then PKGS=("${DEMO_PKGS[@]}"); fi
missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages present ($group)"
  exit 0
fi

echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections || true
# The daemons among these packages (lldpd, FRR, sshd, Open vSwitch) are
# started by ofan's tools and benchmarks in their own namespaces and
# folders, never as the machine's services: where nothing says otherwise
# (a policy-rc.d; container images have one), their services are not
# started by the install (invoke-rc.d asks policy-rc.d; 101: not allowed).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  trap '$SUDO rm -f "$policy"' EXIT
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
