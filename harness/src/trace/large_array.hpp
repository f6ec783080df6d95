// An allocator for the arrays of tens of megabytes that a reader fills once (a pickle's values
// and items). Past 2 MiB it asks Linux for transparent huge pages (madvise): a large snapshot's
// values fault in 2 MiB at a time instead of 4 KiB, and those faults were a third of its load.
// Elsewhere, or below 2 MiB, it is plain new and delete. resize() does not zero what it adds.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace oomlab::trace {

template <typename T>
struct LargeArrayAllocator {
  using value_type = T;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20U;

  LargeArrayAllocator() = default;
  template <typename U>
  LargeArrayAllocator(const LargeArrayAllocator<U>& /*other*/) {}

  [[nodiscard]] T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
#if defined(__linux__)
    if (bytes >= kHugePage) {
      const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
      void* p = std::aligned_alloc(kHugePage, rounded);
      if (p == nullptr) throw std::bad_alloc();
      (void)madvise(p, rounded, MADV_HUGEPAGE);  // a hint: without it, small pages
      return static_cast<T*>(p);
    }
#endif
    return static_cast<T*>(::operator new(bytes));
  }
  void deallocate(T* p, std::size_t n) {
#if defined(__linux__)
    if (n * sizeof(T) >= kHugePage) return std::free(p);
#endif
    ::operator delete(p);  // unsized: clang before 19 declares sized delete only on request
  }
  // Default-initialised, not zeroed: resize() leaves the new elements for the reader to fill.
  template <typename U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  friend bool operator==(const LargeArrayAllocator&, const LargeArrayAllocator&) = default;
};

template <typename T>
using LargeArray = std::vector<T, LargeArrayAllocator<T>>;

}  // namespace oomlab::trace
