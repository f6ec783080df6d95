#include "jax/model/xla_words.hpp"

#include <fmt/format.h>

#include <array>

namespace oomlab::jax {

std::string xla_size(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{}B", bytes);
  constexpr std::array<char, 6> kUnits = {'K', 'M', 'G', 'T', 'P', 'E'};
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.2f}{}iB", value, kUnits[unit]);
}

std::string oom_message(const CacheState& /*cache*/, std::uint64_t request_bytes,
                        std::uint64_t /*device_free_bytes*/, std::uint64_t /*device_total_bytes*/) {
  return fmt::format(
      "RESOURCE_EXHAUSTED: Out of memory while trying to allocate {} with allocator GPU_0_bfc on "
      "device 0.",
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
