// TrapStats: what a port's XDP trap (trap.bpf.c) sent where, read by ofan-dp's
// control thread for `ports` (the per-switch engine's counterpart of the
// shared engine's TAP counters, exception/kernel_ports.h).
//
// expects:  the port's interface in the caller's network namespace with
//           trap.bpf.o attached (DPDK's af_xdp PMD attaches it directly, no
//           libxdp dispatcher: bpf_xdp_query_id finds it); CAP_BPF (root)
// gives:    ReadTrapStats(ifname): each class's frames summed over CPUs
//           (trap_classes.h), or kNotFound (no such interface, no XDP
//           program, no trap_stats map: not our trap) / kIo (the bpf(2)
//           calls failed). ReadTrapStatsMap reads an fd already held (the
//           tests', which run the program with BPF_PROG_TEST_RUN).
// why:      the issue asks for per-port counters of what went where. The
//           program is the PMD's object: its maps are reached through the
//           attached program's map ids, with no pinning to clean up.
//           Control path only (a few syscalls per port per request).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "dataplane/xdp/trap_classes.h"

namespace ofan::dp {

inline constexpr size_t kTrapClasses = OFAN_TRAP_NUM_CLASSES;
inline constexpr const char* kTrapStatsMap = "trap_stats";

struct TrapStats {
  std::array<uint64_t, kTrapClasses> frames{};
  uint64_t to_kernel() const;  // the classes the program passes to the kernel
};

// The class's name ("arp", "lldp", ..., "dataplane", "no_socket") and
// whether its frames go to the kernel.
std::string_view TrapClassName(size_t c);
bool TrapClassToKernel(size_t c);

Result<TrapStats> ReadTrapStats(const std::string& ifname);
Result<TrapStats> ReadTrapStatsMap(int map_fd);

}  // namespace ofan::dp
