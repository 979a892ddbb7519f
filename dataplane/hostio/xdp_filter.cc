#include "dataplane/hostio/xdp_filter.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <fmt/format.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "dataplane/packet/roce.h"

namespace ofan::hostio {
namespace {

bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xF;
  i.src_reg = src & 0xF;
  i.off = off;
  i.imm = imm;
  return i;
}

constexpr uint8_t kMovX = BPF_ALU64 | BPF_MOV | BPF_X, kMovK = BPF_ALU64 | BPF_MOV | BPF_K;
constexpr uint8_t kAddK = BPF_ALU64 | BPF_ADD | BPF_K;
constexpr uint8_t kLdxW = BPF_LDX | BPF_MEM | BPF_W, kLdxH = BPF_LDX | BPF_MEM | BPF_H,
                  kLdxB = BPF_LDX | BPF_MEM | BPF_B;
constexpr uint8_t kJgtX = BPF_JMP | BPF_JGT | BPF_X, kJneK = BPF_JMP | BPF_JNE | BPF_K,
                  kJeqK = BPF_JMP | BPF_JEQ | BPF_K;
constexpr uint8_t kLdImm64 = BPF_LD | BPF_DW | BPF_IMM;
constexpr uint8_t kCall = BPF_JMP | BPF_CALL, kExit = BPF_JMP | BPF_EXIT;

// r1 = ctx (struct xdp_md: data at 0, data_end at 4, rx_queue_index at 16).
// MAC control frames (PFC, PAUSE: the host's NIC obeys them, uroce's
// Host) and Ethernet + IPv4 without options + UDP to 4791 go to the queue's
// socket, or to the kernel when the map has none (bpf_redirect_map's flags
// are the fallback action); the rest jump to `pass` (XDP_PASS).
std::array<bpf_insn, 23> Program(int map_fd) {
  constexpr int16_t kRedirect = 15;  // index of the redirect's first instruction
  constexpr int16_t kPass = 21;      // index of the XDP_PASS exit
  auto to_pass = [](int16_t at) { return static_cast<int16_t>(kPass - (at + 1)); };
  auto to_redirect = [](int16_t at) { return static_cast<int16_t>(kRedirect - (at + 1)); };
  return {
      Insn(kMovX, 6, 1, 0, 0),                                                // 0: r6 = ctx
      Insn(kLdxW, 2, 6, 0, 0),                                                // 1: r2 = data
      Insn(kLdxW, 3, 6, 4, 0),                                                // 2: r3 = data_end
      Insn(kMovX, 4, 2, 0, 0),                                                // 3
      Insn(kAddK, 4, 0, 0, 42),                                               // 4: r4 = data + 42
      Insn(kJgtX, 4, 3, to_pass(5), 0),                                       // 5: shorter: pass
      Insn(kLdxH, 5, 2, 12, 0),                                               // 6: ethertype
      Insn(kJeqK, 5, 0, to_redirect(7), htons(pkt::ethertype::kMacControl)),  // 7
      Insn(kJneK, 5, 0, to_pass(8), htons(0x0800)),                           // 8
      Insn(kLdxB, 5, 2, 14, 0),                                               // 9: version, IHL
      Insn(kJneK, 5, 0, to_pass(10), 0x45),                                   // 10
      Insn(kLdxB, 5, 2, 23, 0),                                               // 11: protocol
      Insn(kJneK, 5, 0, to_pass(12), 17),                                     // 12
      Insn(kLdxH, 5, 2, 36, 0),                                               // 13: UDP dport
      Insn(kJneK, 5, 0, to_pass(14), htons(pkt::kRoceV2Port)),                // 14
      Insn(kLdxW, 2, 6, 16, 0),                                               // 15: rx_queue_index
      Insn(kLdImm64, 1, BPF_PSEUDO_MAP_FD, 0, map_fd),                        // 16: r1 = &xsks
      Insn(0, 0, 0, 0, 0),                                                    // 17: (ld_imm64)
      Insn(kMovK, 3, 0, 0, XDP_PASS),                                         // 18: fallback
      Insn(kCall, 0, 0, 0, BPF_FUNC_redirect_map),                            // 19
      Insn(kExit, 0, 0, 0, 0),                                                // 20
      Insn(kMovK, 0, 0, 0, XDP_PASS),                                         // 21: pass
      Insn(kExit, 0, 0, 0, 0),                                                // 22
  };
}

}  // namespace

Result<std::unique_ptr<RoceXdpFilter>> RoceXdpFilter::Attach(int ifindex) {
  const int map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "uroce_xsks", 4, 4, 64, nullptr);
  if (map_fd < 0)
    return MakeError(ErrorCode::kIo, fmt::format("XSKMAP: {}", std::strerror(-map_fd)));
  const auto insns = Program(map_fd);
  std::array<char, 4096> log{};
  // libbpf's LIBBPF_OPTS spelled out (here and below): the macro is a GNU
  // statement expression, which clang's -Wpedantic refuses.
  bpf_prog_load_opts opts{};
  opts.sz = sizeof opts;
  opts.log_level = 1;
  opts.log_size = log.size();
  opts.log_buf = log.data();
  const int prog_fd =
      bpf_prog_load(BPF_PROG_TYPE_XDP, "uroce_roce", "GPL", insns.data(), insns.size(), &opts);
  if (prog_fd < 0) {
    close(map_fd);
    return MakeError(ErrorCode::kIo, fmt::format("loading the RoCE XDP filter: {}: {}",
                                                 std::strerror(-prog_fd), log.data()));
  }
  // A BPF link, not a netlink attach: the kernel detaches the program when
  // the last descriptor of the link closes, so a uroce killed by a signal
  // leaves no program behind to refuse the next one.
  bpf_link_create_opts lopts{};
  lopts.sz = sizeof lopts;
  lopts.flags = XDP_FLAGS_SKB_MODE;
  const int link_fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &lopts);
  if (link_fd < 0) {
    const int err = errno;
    close(prog_fd);
    close(map_fd);
    return MakeError(
        ErrorCode::kIo,
        fmt::format("attaching the RoCE XDP filter to ifindex {}: {}{}", ifindex,
                    std::strerror(err), err == EBUSY ? " (another XDP program is attached)" : ""));
  }
  return std::unique_ptr<RoceXdpFilter>(new RoceXdpFilter(map_fd, prog_fd, link_fd));
}

void RoceXdpFilter::Detach() {
  if (link_fd_ < 0) return;
  close(link_fd_);
  link_fd_ = -1;
}

RoceXdpFilter::~RoceXdpFilter() {
  Detach();
  close(prog_fd_);
  close(map_fd_);
}

}  // namespace ofan::hostio
