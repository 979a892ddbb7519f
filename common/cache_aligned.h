// An allocator for data that one lcore writes while others read or write
// their own: the storage starts on a cache line and is padded to whole lines,
// so that nothing else on the heap shares a line with it (no false sharing).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace ofan {

inline constexpr size_t kCacheLine = 64;

template <class T>
struct CacheAlignedAllocator {
  using value_type = T;
  CacheAlignedAllocator() = default;
  template <class U>
  explicit CacheAlignedAllocator(const CacheAlignedAllocator<U>& /*other*/) {}

  static size_t Padded(size_t n) {
    return (n * sizeof(T) + kCacheLine - 1) / kCacheLine * kCacheLine;
  }
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new (Padded(n), std::align_val_t{kCacheLine}));
  }
  void deallocate(T* p, size_t /*n*/) noexcept {
    // Unsized: clang declares the sized aligned form only with
    // -fsized-deallocation.
    ::operator delete (p, std::align_val_t{kCacheLine});
  }
  template <class U>
  bool operator==(const CacheAlignedAllocator<U>& /*other*/) const {
    return true;
  }
};

template <class T>
using CacheAlignedVector = std::vector<T, CacheAlignedAllocator<T>>;

}  // namespace ofan
