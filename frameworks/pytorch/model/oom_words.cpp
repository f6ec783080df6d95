#include "pytorch/model/oom_words.hpp"

#include <fmt/format.h>

namespace oomlab::torch {

std::string size_text(std::uint64_t bytes) {
  if (bytes <= 1024) return fmt::format("{} bytes", bytes);
  if (bytes <= 1048576) return fmt::format("{:.2f} KiB", static_cast<double>(bytes) / 1024.0);
  if (bytes <= 1073741824ULL) {
    return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / 1048576.0);
  }
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / 1073741824.0);
}

std::string oom_message(const CacheState& c, std::uint64_t request_bytes,
                        std::uint64_t device_free_bytes, std::uint64_t device_total_bytes) {
  if (c.pool) {
    return fmt::format(
        "Allocation on device 0 would exceed allowed memory. (out of memory) Currently allocated "
        ": {} Requested : {} Device limit : {} Free (according to CUDA): {}",
        size_text(c.allocated_bytes), size_text(request_bytes), size_text(device_total_bytes),
        size_text(device_free_bytes));
  }
  const std::uint64_t unallocated =
      c.reserved_bytes > c.allocated_bytes ? c.reserved_bytes - c.allocated_bytes : 0;
  return fmt::format(
      "CUDA out of memory. Tried to allocate {}. GPU 0 has a total capacity of {} of which {} is "
      "free. {}Of the allocated memory {} is allocated by PyTorch, and {} is reserved by PyTorch "
      "but unallocated.",
      size_text(c.failed_device_bytes != 0 ? c.failed_device_bytes : request_bytes),
      size_text(device_total_bytes), size_text(device_free_bytes),
      c.allowed_bytes != 0 ? fmt::format("{} allowed; ", size_text(c.allowed_bytes)) : "",
      size_text(c.allocated_bytes), size_text(unallocated));
}

CacheWords cache_words() {
  return {.key = std::string(kCacheWordsKey),
          .owner = "PyTorch",
          .settings_variable = "PYTORCH_CUDA_ALLOC_CONF",
          .fragmentation_advice =
              "PyTorch's cache holds memory it cannot reuse for this request: set "
              "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (or max_split_size_mb) so that "
              "freed segments can be remapped or are not split; `oomlab whatif --trace` compares "
              "the settings on this trace",
          .pool_fragmentation_advice =
              "the pool cannot give back chunks in which a block still lives: free long-lived "
              "tensors together, or try the native allocator with expandable_segments:True",
          .cache_backend = "native",
          .pool_backend = "async",
          .size = &size_text,
          .message = &oom_message};
}

}  // namespace oomlab::torch
