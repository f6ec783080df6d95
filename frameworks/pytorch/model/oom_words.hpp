// PyTorch's words for its caching allocator's state at an OOM (CacheWords): its
// OutOfMemoryError's message, its sizes, its settings' variable and the advice for its cache.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "oomlab/caching_allocator.hpp"
#include "oomlab/framework.hpp"

namespace oomlab::torch {

// CacheState::framework of the model's state, and summary.json's oom.pytorch.
inline constexpr std::string_view kCacheWordsKey = "pytorch";

[[nodiscard]] CacheWords cache_words();

// The message PyTorch's OutOfMemoryError gives for this state ("CUDA out of memory. Tried to
// allocate 20.00 MiB. ... Of the allocated memory 2.65 GiB is allocated by PyTorch, and 108.48 MiB
// is reserved by PyTorch but unallocated. ..."), sizes formatted as PyTorch formats them.
[[nodiscard]] std::string oom_message(const CacheState& cache, std::uint64_t request_bytes,
                                      std::uint64_t device_free_bytes,
                                      std::uint64_t device_total_bytes);
// PyTorch's format_size: "512 bytes", "1.50 KiB", "108.48 MiB", "2.65 GiB".
[[nodiscard]] std::string size_text(std::uint64_t bytes);

}  // namespace oomlab::torch
