#!/usr/bin/env bash
# Installs every Debian package ofan needs (build, tests, benchmarks, emulation).
# Idempotent and non-interactive: safe to run on every `make`/CI invocation.
set -euo pipefail

PKGS=(
  # build
  build-essential g++ clang lld meson ninja-build pkg-config cmake
  clang-format clang-tidy libclang-rt-14-dev
  # libraries
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev libyaml-cpp-dev
  zlib1g-dev  # CRC-32 of the RoCEv2 ICRC (ofan_packet)
  # dataplane (DPDK and AF_XDP)
  dpdk dpdk-dev libdpdk-dev libnuma-dev libbpf-dev libxdp-dev libpcap-dev
  # bench/run-forwarding: DPDK's l3fwd sources (the peer it builds), callgrind
  # for instructions per packet (this guest has no hardware counters for perf)
  dpdk-doc valgrind
  # emulation and packet checks
  iproute2 iputils-ping traceroute ethtool tshark python3-scapy time python3-pyroute2 python3-yaml
  # the control daemons each switch namespace runs (ofan-agent: docs/emu.md, --control agent;
  # tests/control/agent/capture_daemons.sh); nft drops a silently failed
  # link's control frames at the veth (ofan-emu fail --silent)
  lldpd frr nftables
  # VM hosts and kernel features this one lacks (tc netem, rdma_rxe): Debian's
  # kernel under qemu with a busybox initramfs (emu/vm/); rdma-core's tools
  # and perftest run in the guests, libibverbs/librdmacm build the verbs hosts
  qemu-system-x86 linux-image-amd64 busybox-static kmod
  rdma-core ibverbs-utils perftest libibverbs-dev librdmacm-dev rdmacm-utils
  # plots and reports
  python3 python3-matplotlib python3-numpy
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

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages present"
  exit 0
fi

echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections || true
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
