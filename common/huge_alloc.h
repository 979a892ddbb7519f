// HugeAllocator: a std::allocator for large arrays read at random (the
// simulator's ports, flows, hosts and event chunks), backed by transparent
// huge pages where the kernel offers them on request.
//
// expects:   nothing; on kernels whose THP setting is "madvise" (Debian's
//            default) memory gets huge pages only when asked, and "never"
//            or a non-Linux build simply leaves the request unanswered
// modifies:  nothing but the memory it hands out
// next:      at k=64 ofan-sim touches 1.2 GB at random; with 4 KiB pages
//            nearly every access also missed the TLB (bench/RESULTS.md
//            "Simulator speed": 2 MiB pages took ~5 % off the run)
//
// Arrays under 2 MiB come from operator new as usual.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ofan {

inline constexpr size_t kHugePage = size_t{2} << 20;

// Bytes from the huge-page path (rounded up to whole huge pages), or null.
inline void* HugeAllocate(size_t bytes) {
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(p, rounded, MADV_HUGEPAGE);  // a hint: refusal changes nothing
#endif
  return p;
}

template <class T>
struct HugeAllocator {
  using value_type = T;
  HugeAllocator() = default;
  template <class U>
  explicit HugeAllocator(const HugeAllocator<U>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= kHugePage) return static_cast<T*>(HugeAllocate(bytes));
    return static_cast<T*>(::operator new (bytes, std::align_val_t{alignof(T)}));
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) >= kHugePage) {
      std::free(p);
    } else {
      ::operator delete (p, std::align_val_t{alignof(T)});
    }
  }
  template <class U>
  bool operator==(const HugeAllocator<U>&) const {
    return true;
  }
};

}  // namespace ofan
