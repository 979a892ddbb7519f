// RegisteredBuffer: zeroed, page-aligned memory registered with a device's
// PD (an ibv_mr), deregistered and freed together.
//
// expects:  bytes > 0 (a buffer nobody uses still gets one page, so that
//           its rkey and address are real), a Device that outlives it
// gives:    the bytes as a span, lkey for local work requests, rkey and the
//           address peers write to (the buffer's virtual address: rxe and
//           the hello both speak in it)
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <span>

#include "common/result.h"
#include "emu/verbs/device.h"

namespace ofan::verbs {

class RegisteredBuffer {
 public:
  // access: IBV_ACCESS_* flags (receive buffers add IBV_ACCESS_REMOTE_WRITE).
  static Result<std::unique_ptr<RegisteredBuffer>> Create(const Device& dev, uint64_t bytes,
                                                          int access);
  ~RegisteredBuffer();
  RegisteredBuffer(const RegisteredBuffer&) = delete;
  RegisteredBuffer& operator=(const RegisteredBuffer&) = delete;

  std::span<uint8_t> bytes() { return {data_, size_}; }
  uint8_t* data() { return data_; }
  uint64_t size() const { return size_; }
  uint32_t lkey() const { return mr_->lkey; }
  uint32_t rkey() const { return mr_->rkey; }
  uint64_t addr() const { return reinterpret_cast<uint64_t>(data_); }

 private:
  RegisteredBuffer() = default;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t mapped_ = 0;
  ibv_mr* mr_ = nullptr;
};

}  // namespace ofan::verbs
