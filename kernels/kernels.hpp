// The kernels scenarios launch through RunContext, callable from plain C++ (no CUDA types).
// A build without CUDA links no_kernels.cpp, whose functions throw Error(no_device).
#pragma once

#include <cstddef>
#include <cstdint>

#include "oomlab/allocator.hpp"
#include "oomlab/scenario.hpp"

namespace oomlab::kernels {

// Managed memory lands on the device page by page as it is touched; 4 KiB is the smallest page.
inline constexpr std::size_t kTouchStride = 4096;

// Loads the kernels' module now: with lazy loading, the first launch would otherwise take device
// memory in the middle of a run, after the ballast has left only the budget.
void preload();

// One write every kTouchStride bytes.
void touch(void* ptr, std::size_t bytes, Stream stream);
// Every whole 8-byte word gets a value derived from `seed` and its address.
void fill(void* ptr, std::size_t bytes, std::uint64_t seed, Stream stream);

// count fp32 values from `source` converted to `precision` into `target` (CUDA's conversions:
// round to nearest even; fp8 e4m3 saturates to ±448 and keeps NaN).
void cast(const float* source, void* target, std::size_t count, Precision precision, Stream stream);

// Returns once every kernel launched on `stream` so far has run.
void wait(Stream stream);

// A device-side counter for verify(), allocated before the run so that checking data needs no
// memory from the budget.
class MismatchCounter {
 public:
  MismatchCounter();
  ~MismatchCounter();
  MismatchCounter(const MismatchCounter&) = delete;
  MismatchCounter& operator=(const MismatchCounter&) = delete;
  MismatchCounter(MismatchCounter&&) = delete;
  MismatchCounter& operator=(MismatchCounter&&) = delete;

  // The count of whole 8-byte words of [ptr, ptr + bytes) that do not hold fill()'s value for
  // `seed`. Waits for the stream.
  std::uint64_t verify(const void* ptr, std::size_t bytes, std::uint64_t seed, Stream stream);

 private:
  std::uint64_t* device_count_ = nullptr;
};

}  // namespace oomlab::kernels
