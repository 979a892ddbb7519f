#include "dataplane/xdp/trap_stats.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <net/if.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace ofan::dp {

namespace {

#define OFAN_TRAP_NAME(id, name, kernel) std::string_view{name},
#define OFAN_TRAP_KERNEL(id, name, kernel) bool{kernel},
constexpr std::array<std::string_view, kTrapClasses> kNames = {OFAN_TRAP_CLASSES(OFAN_TRAP_NAME)};
constexpr std::array<bool, kTrapClasses> kToKernel = {OFAN_TRAP_CLASSES(OFAN_TRAP_KERNEL)};
#undef OFAN_TRAP_NAME
#undef OFAN_TRAP_KERNEL

// An fd closed when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

Error BpfError(const std::string& what) {
  return MakeError(ErrorCode::kIo, fmt::format("{}: {}", what, std::strerror(errno)));
}

}  // namespace

uint64_t TrapStats::to_kernel() const {
  uint64_t n = 0;
  for (size_t c = 0; c < kTrapClasses; ++c) {
    if (kToKernel[c]) n += frames[c];
  }
  return n;
}

std::string_view TrapClassName(size_t c) { return c < kTrapClasses ? kNames[c] : "?"; }
bool TrapClassToKernel(size_t c) { return c < kTrapClasses && kToKernel[c]; }

Result<TrapStats> ReadTrapStatsMap(int map_fd) {
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return BpfError("libbpf_num_possible_cpus");
  std::vector<uint64_t> per_cpu(static_cast<size_t>(cpus));
  TrapStats s;
  for (uint32_t c = 0; c < kTrapClasses; ++c) {
    if (bpf_map_lookup_elem(map_fd, &c, per_cpu.data()) != 0) {
      return BpfError(fmt::format("reading {}[{}]", kTrapStatsMap, c));
    }
    for (uint64_t v : per_cpu) s.frames[c] += v;
  }
  return s;
}

Result<TrapStats> ReadTrapStats(const std::string& ifname) {
  const unsigned ifindex = if_nametoindex(ifname.c_str());
  if (ifindex == 0) {
    return MakeError(ErrorCode::kNotFound, fmt::format("no interface {}", ifname));
  }
  uint32_t prog_id = 0;
  if (bpf_xdp_query_id(static_cast<int>(ifindex), 0, &prog_id) != 0) {
    return BpfError(fmt::format("querying {}'s XDP program", ifname));
  }
  if (prog_id == 0) {
    return MakeError(ErrorCode::kNotFound, fmt::format("{} has no XDP program", ifname));
  }
  const Fd prog(bpf_prog_get_fd_by_id(prog_id));
  if (prog.fd < 0) return BpfError(fmt::format("opening XDP program {} of {}", prog_id, ifname));
  std::array<uint32_t, 16> map_ids{};
  bpf_prog_info info{};
  info.nr_map_ids = map_ids.size();
  info.map_ids = reinterpret_cast<uintptr_t>(map_ids.data());
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(prog.fd, &info, &len) != 0) {
    return BpfError(fmt::format("reading XDP program {} of {}", prog_id, ifname));
  }
  const uint32_t n = std::min<uint32_t>(info.nr_map_ids, map_ids.size());
  for (uint32_t i = 0; i < n; ++i) {
    const Fd map(bpf_map_get_fd_by_id(map_ids[i]));
    if (map.fd < 0) continue;
    bpf_map_info mi{};
    uint32_t mlen = sizeof(mi);
    if (bpf_obj_get_info_by_fd(map.fd, &mi, &mlen) != 0) continue;
    if (std::string_view(mi.name) != kTrapStatsMap) continue;
    if (mi.max_entries != kTrapClasses || mi.value_size != sizeof(uint64_t)) {
      return MakeError(
          ErrorCode::kNotFound,
          fmt::format("{}'s {} has {} entries of {} bytes, not {} of 8: another "
                      "build's trap.bpf.o?",
                      ifname, kTrapStatsMap, mi.max_entries, mi.value_size, kTrapClasses));
    }
    return ReadTrapStatsMap(map.fd);
  }
  return MakeError(ErrorCode::kNotFound,
                   fmt::format("{}'s XDP program {} has no {} map: not ofan's trap", ifname,
                               prog_id, kTrapStatsMap));
}

}  // namespace ofan::dp
