#include "pytorch/model/torch_config.hpp"

#include <algorithm>
#include <bit>

namespace oomlab::torch {

namespace {

// The next of `divisions` equal steps between the powers of two around `bytes`.
std::uint64_t round_to_division(std::uint64_t bytes, std::uint64_t divisions) {
  if (std::has_single_bit(bytes)) return bytes;
  const std::uint64_t floor = std::bit_floor(bytes);
  const std::uint64_t step = floor >> (std::bit_width(divisions) - 1);
  if (step == 0) return floor << 1U;
  const std::uint64_t down = bytes & ~(step - 1);
  return down == bytes ? bytes : down + step;
}

}  // namespace

std::size_t roundup_interval(std::uint64_t bytes) {
  constexpr std::size_t kFirst = 20;  // log2 of 1 MiB
  const auto log = static_cast<std::size_t>(std::bit_width(bytes)) - 1;
  return std::min(log > kFirst ? log - kFirst : 0, kRoundupIntervals - 1);
}

std::uint64_t round_size(std::uint64_t bytes, const TorchConfig& config) {
  if (bytes < kMinBlockBytes) return kMinBlockBytes;
  const std::uint64_t divisions = config.roundup_power2_divisions[roundup_interval(bytes)];
  if (divisions > 1 && bytes > kMinBlockBytes * divisions) {
    return round_to_division(bytes, divisions);
  }
  return round_up(bytes, kMinBlockBytes);
}

std::uint64_t allocation_size(std::uint64_t rounded, const TorchConfig& config) {
  if (is_small(rounded)) return kSmallSegmentBytes;
  if (rounded < kMinLargeAllocBytes) return config.large_segment_size;
  return round_up(rounded, kLargeRoundBytes);
}

}  // namespace oomlab::torch
