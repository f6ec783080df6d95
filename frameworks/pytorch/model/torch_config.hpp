// The settings of PyTorch's CUDA caching allocator that change where memory goes
// (PYTORCH_CUDA_ALLOC_CONF), typed, and the size rules that follow from them: how a request is
// rounded and how large a segment it asks the device for. Learnt from PyTorch 2.x
// (c10/cuda/CUDACachingAllocator.cpp, c10/core/AllocatorConfig.*) and checked against PyTorch
// 2.11 on an H100 (tests/data/pytorch/rules.jsonl).
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "oomlab/units.hpp"

namespace oomlab::torch {

inline constexpr std::uint64_t kMinBlockBytes = 512;        // every block a multiple of this
inline constexpr std::uint64_t kSmallRequestBytes = 1_MiB;  // the small pool's largest request
inline constexpr std::uint64_t kSmallSegmentBytes = 2_MiB;  // the small pool's segments
inline constexpr std::uint64_t kMinLargeAllocBytes =
    10_MiB;  // from here a segment fits the request
inline constexpr std::uint64_t kLargeRoundBytes = 2_MiB;
inline constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();
inline constexpr std::uint64_t kSmallestMaxSplitBytes = 20_MiB;  // PyTorch refuses less
// roundup_power2_divisions: one value per power-of-two interval of sizes, from below 2 MiB
// ("1" MB) to 32 GiB and above ("32768" MB).
inline constexpr std::size_t kRoundupIntervals = 16;
// cudaMallocAsync's pool reserves device memory in chunks of this (measured: 256 B and 32 MiB
// took 32 MiB, 33 MiB took 64 MiB, 65 MiB took 96 MiB).
inline constexpr std::uint64_t kAsyncChunkBytes = 32_MiB;

// Past this a request is refused before it is rounded (rounding it up would wrap around): no
// device holds 4 EiB.
inline constexpr std::uint64_t kLargestRequestBytes = 1ULL << 62U;

enum class Backend : std::uint8_t { native, async };
// What enforces the budget: the device (a card of that size, or a ballast: the driver refuses)
// or PyTorch itself (set_per_process_memory_fraction: it refuses before asking the driver, and
// only then runs garbage_collection_threshold).
enum class BudgetBy : std::uint8_t { device, fraction };

struct TorchConfig {
  Backend backend = Backend::native;
  bool expandable_segments = false;
  std::uint64_t max_split_size = kUnlimited;
  std::uint64_t max_non_split_rounding = 20_MiB;
  std::uint64_t large_segment_size = 20_MiB;  // the segment of a request of 1 to 10 MiB
  std::array<std::uint32_t, kRoundupIntervals> roundup_power2_divisions{};
  double garbage_collection_threshold = 0.0;
  BudgetBy budget_by = BudgetBy::device;
};

// The size a request becomes: at least 512 B, a multiple of 512 B, or the next of `divisions`
// steps between two powers of two when roundup_power2_divisions asks for it.
[[nodiscard]] std::uint64_t round_size(std::uint64_t bytes, const TorchConfig& config);
// The segment a rounded request asks the device for when no cached block fits: 2 MiB for the
// small pool, large_segment_size for 1 to 10 MiB, else the request rounded up to 2 MiB.
[[nodiscard]] std::uint64_t allocation_size(std::uint64_t rounded, const TorchConfig& config);
[[nodiscard]] constexpr bool is_small(std::uint64_t rounded) {
  return rounded <= kSmallRequestBytes;
}
// The interval of roundup_power2_divisions that `bytes` falls in.
[[nodiscard]] std::size_t roundup_interval(std::uint64_t bytes);

}  // namespace oomlab::torch
