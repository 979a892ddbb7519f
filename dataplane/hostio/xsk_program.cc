#include "dataplane/hostio/xsk_program.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <fmt/format.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

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
constexpr uint8_t kStxDw = BPF_STX | BPF_MEM | BPF_DW;
constexpr uint8_t kJgtX = BPF_JMP | BPF_JGT | BPF_X, kJneK = BPF_JMP | BPF_JNE | BPF_K,
                  kJeqK = BPF_JMP | BPF_JEQ | BPF_K;
constexpr uint8_t kLdImm64 = BPF_LD | BPF_DW | BPF_IMM;
constexpr uint8_t kCall = BPF_JMP | BPF_CALL, kExit = BPF_JMP | BPF_EXIT;

// struct xdp_md's fields (linux/bpf.h).
constexpr int16_t kMdData = 0, kMdDataEnd = 4, kMdRxQueue = 16;

// Instructions with forward jumps to named places, resolved at the end.
class Assembler {
 public:
  enum Label : uint8_t { kRedirect, kPass, kAbort, kLabels };
  void Op(const bpf_insn& i) { code_.push_back(i); }
  void Jump(uint8_t code, uint8_t dst, uint8_t src, int32_t imm, Label to) {
    fixups_.push_back({code_.size(), to});
    code_.push_back(Insn(code, dst, src, 0, imm));
  }
  void Here(Label l) { at_[l] = code_.size(); }
  std::vector<bpf_insn> Done() {
    for (const auto& [insn, to] : fixups_)
      code_[insn].off = static_cast<int16_t>(at_[to] - (insn + 1));
    return code_;
  }

 private:
  std::vector<bpf_insn> code_;
  std::vector<std::pair<size_t, Label>> fixups_;
  std::array<size_t, kLabels> at_{};
};

// r1 = ctx on entry; r6 keeps it (calls clobber r1-r5).
std::vector<bpf_insn> Program(int map_fd, const XskProgramOptions& o) {
  Assembler a;
  a.Op(Insn(kMovX, 6, 1, 0, 0));  // r6 = ctx
  if (o.roce_only) {
    // MAC control frames and Ethernet + IPv4 without options + UDP to 4791
    // go to the socket; the rest to the kernel.
    a.Op(Insn(kLdxW, 2, 6, kMdData, 0));
    a.Op(Insn(kLdxW, 3, 6, kMdDataEnd, 0));
    a.Op(Insn(kMovX, 4, 2, 0, 0));
    a.Op(Insn(kAddK, 4, 0, 0, 42));
    a.Jump(kJgtX, 4, 3, 0, Assembler::kPass);  // shorter than Ethernet + IPv4 + UDP
    a.Op(Insn(kLdxH, 5, 2, 12, 0));            // ethertype
    a.Jump(kJeqK, 5, 0, htons(pkt::ethertype::kMacControl), Assembler::kRedirect);
    a.Jump(kJneK, 5, 0, htons(0x0800), Assembler::kPass);
    a.Op(Insn(kLdxB, 5, 2, 14, 0));  // version, IHL
    a.Jump(kJneK, 5, 0, 0x45, Assembler::kPass);
    a.Op(Insn(kLdxB, 5, 2, 23, 0));  // protocol
    a.Jump(kJneK, 5, 0, 17, Assembler::kPass);
    a.Op(Insn(kLdxH, 5, 2, 36, 0));  // UDP destination port
    a.Jump(kJneK, 5, 0, htons(pkt::kRoceV2Port), Assembler::kPass);
  }
  a.Here(Assembler::kRedirect);
  if (o.stamp) {
    // The receive time in 8 bytes put before the frame (the socket's reader
    // takes them off). bpf_xdp_adjust_head, not _meta: some kernels refuse
    // the metadata helper to XDP programs (6.18 here). Veth's hook and
    // generic XDP both leave 256 bytes of headroom, so this does not fail;
    // if it ever did, the frame is aborted (the xdp:xdp_exception
    // tracepoint shows it), never handed over unmarked.
    a.Op(Insn(kMovX, 1, 6, 0, 0));
    a.Op(Insn(kMovK, 2, 0, 0, -static_cast<int32_t>(kXskStampBytes)));
    a.Op(Insn(kCall, 0, 0, 0, BPF_FUNC_xdp_adjust_head));  // (ctx, -8)
    a.Jump(kJneK, 0, 0, 0, Assembler::kAbort);
    a.Op(Insn(kLdxW, 7, 6, kMdData, 0));  // r7 = data: kept across the call
    a.Op(Insn(kLdxW, 3, 6, kMdDataEnd, 0));
    a.Op(Insn(kMovX, 4, 7, 0, 0));
    a.Op(Insn(kAddK, 4, 0, 0, kXskStampBytes));
    a.Jump(kJgtX, 4, 3, 0, Assembler::kAbort);  // the verifier's bound
    a.Op(Insn(kCall, 0, 0, 0, BPF_FUNC_ktime_get_ns));
    a.Op(Insn(kStxDw, 7, 0, 0, 0));  // *(u64*)data = now
  }
  // To the queue's socket, or to the kernel when the map has none
  // (bpf_redirect_map's flags are the fallback action).
  a.Op(Insn(kLdxW, 2, 6, kMdRxQueue, 0));
  a.Op(Insn(kLdImm64, 1, BPF_PSEUDO_MAP_FD, 0, map_fd));  // r1 = &xsks
  a.Op(Insn(0, 0, 0, 0, 0));                              // (ld_imm64's second half)
  a.Op(Insn(kMovK, 3, 0, 0, XDP_PASS));
  a.Op(Insn(kCall, 0, 0, 0, BPF_FUNC_redirect_map));
  a.Op(Insn(kExit, 0, 0, 0, 0));
  // (The verifier refuses code nothing jumps to: only what is used.)
  if (o.roce_only) {
    a.Here(Assembler::kPass);
    a.Op(Insn(kMovK, 0, 0, 0, XDP_PASS));
    a.Op(Insn(kExit, 0, 0, 0, 0));
  }
  if (o.stamp) {
    a.Here(Assembler::kAbort);
    a.Op(Insn(kMovK, 0, 0, 0, XDP_ABORTED));
    a.Op(Insn(kExit, 0, 0, 0, 0));
  }
  return a.Done();
}

}  // namespace

Result<std::unique_ptr<XskProgram>> XskProgram::Attach(int ifindex, const XskProgramOptions& o) {
  const int map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "ofan_xsks", 4, 4, 64, nullptr);
  if (map_fd < 0)
    return MakeError(ErrorCode::kIo, fmt::format("XSKMAP: {}", std::strerror(-map_fd)));
  const auto insns = Program(map_fd, o);
  std::array<char, 4096> log{};
  // libbpf's LIBBPF_OPTS spelled out (here and below): the macro is a GNU
  // statement expression, which clang's -Wpedantic refuses.
  bpf_prog_load_opts opts{};
  opts.sz = sizeof opts;
  opts.log_level = 1;
  opts.log_size = log.size();
  opts.log_buf = log.data();
  const int prog_fd = bpf_prog_load(BPF_PROG_TYPE_XDP, o.stamp ? "ofan_xsk_stamp" : "ofan_xsk",
                                    "GPL", insns.data(), insns.size(), &opts);
  if (prog_fd < 0) {
    close(map_fd);
    return MakeError(ErrorCode::kIo, fmt::format("loading the AF_XDP socket's XDP program: {}: {}",
                                                 std::strerror(-prog_fd), log.data()));
  }
  // A BPF link, not a netlink attach: the kernel detaches the program when
  // the last descriptor of the link closes, so a process killed by a
  // signal leaves no program behind to refuse the next one.
  bpf_link_create_opts lopts{};
  lopts.sz = sizeof lopts;
  int link_fd = -1, err = 0;
  bool native = false;
  for (const uint32_t mode : {XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE}) {
    if (mode == XDP_FLAGS_DRV_MODE && !o.native_first) continue;
    lopts.flags = mode;
    link_fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &lopts);
    err = errno;
    native = mode == XDP_FLAGS_DRV_MODE;
    if (link_fd >= 0 || err == EBUSY) break;
  }
  if (link_fd < 0) {
    close(prog_fd);
    close(map_fd);
    return MakeError(
        ErrorCode::kIo,
        fmt::format("attaching the AF_XDP socket's XDP program to ifindex {}: {}{}", ifindex,
                    std::strerror(err), err == EBUSY ? " (another XDP program is attached)" : ""));
  }
  return std::unique_ptr<XskProgram>(new XskProgram(map_fd, prog_fd, link_fd, native));
}

void XskProgram::Detach() {
  if (link_fd_ < 0) return;
  close(link_fd_);
  link_fd_ = -1;
}

XskProgram::~XskProgram() {
  Detach();
  close(prog_fd_);
  close(map_fd_);
}

}  // namespace ofan::hostio
