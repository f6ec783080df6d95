#include "jax/model/xla_words.hpp"

#include <fmt/format.h>

#include <array>

namespace oomlab::jax {

// As tsl's HumanReadableNumBytes: whole bytes under 1 KiB; else divided by 1024 in integers
// while 1 MiB or more remains, then once more in floating point, one decimal for KiB, two above.
std::string xla_size(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{}B", bytes);
  constexpr std::array<char, 6> kUnits = {'K', 'M', 'G', 'T', 'P', 'E'};
  std::size_t unit = 0;
  while (bytes >= std::uint64_t{1024} * 1024 && unit + 1 < kUnits.size()) {
    bytes /= 1024;
    ++unit;
  }
  const double value = static_cast<double>(bytes) / 1024.0;
  return unit == 0 ? fmt::format("{:.1f}KiB", value)
                   : fmt::format("{:.2f}{}iB", value, kUnits[unit]);
}

// XLA's message names its pool and device too ("with allocator GPU_0_bfc on device 0"), which a
// pool's state does not carry: the request alone.
std::string oom_message(const CacheState& /*cache*/, std::uint64_t request_bytes,
                        std::uint64_t /*device_free_bytes*/, std::uint64_t /*device_total_bytes*/) {
  return fmt::format("RESOURCE_EXHAUSTED: Out of memory while trying to allocate {}.",
                     xla_size(request_bytes));
}

CacheWords cache_words() {
  return {.key = std::string(kCacheWordsKey),
          .owner = "XLA",
          .settings_variable = "XLA_PYTHON_CLIENT_MEM_FRACTION",
          .fragmentation_advice = std::string(kFragmentationAdvice),
          .pool_fragmentation_advice = std::string(kFragmentationAdvice),
          .capacity_advice = std::string(kCapacityAdvice),
          .cache_backend = "bfc",
          .pool_backend = "cuda_async",
          .size = &xla_size,
          .message = &oom_message};
}

}  // namespace oomlab::jax
