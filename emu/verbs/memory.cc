#include "emu/verbs/memory.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ofan::verbs {

Result<std::unique_ptr<RegisteredBuffer>> RegisteredBuffer::Create(const Device& dev,
                                                                   uint64_t bytes, int access) {
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::unique_ptr<RegisteredBuffer> b(new RegisteredBuffer());
  b->size_ = bytes;
  b->mapped_ = (std::max<uint64_t>(bytes, 1) + page - 1) / page * page;
  // mmap rather than new[]: page-aligned and zeroed, and returned to the OS
  // at once when the run ends.
  void* p = ::mmap(nullptr, b->mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("cannot map {} bytes: {}", b->mapped_, std::strerror(errno)));
  }
  b->data_ = static_cast<uint8_t*>(p);
  b->mr_ = ibv_reg_mr(dev.pd(), p, b->mapped_, access);
  if (!b->mr_) {
    return MakeError(ErrorCode::kIo, fmt::format("{}: ibv_reg_mr of {} bytes: {} (ulimit -l?)",
                                                 dev.name(), b->mapped_, std::strerror(errno)));
  }
  return b;
}

RegisteredBuffer::~RegisteredBuffer() {
  if (mr_) ibv_dereg_mr(mr_);
  if (data_) ::munmap(data_, mapped_);
}

}  // namespace ofan::verbs
