// How XLA speaks of its BFC pool at an OOM: the words the engine's diagnosis, summary.json's
// oom.xla and the reports use for the state the model of the pool (XlaAllocator) reports, and
// the advice exec gives for a JAX program's own OOM message.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "oomlab/caching_allocator.hpp"
#include "oomlab/framework.hpp"

namespace oomlab::jax {

// CacheState::framework of the pool's state, and summary.json's oom.xla.
inline constexpr std::string_view kCacheWordsKey = "xla";

// The pool holds enough free memory for the request, in pieces. The BFC allocator's own message
// names TF_GPU_ALLOCATOR, which JAX does not read (measured: JAX 0.11.2 kept GPU_0_bfc with it
// set).
inline constexpr std::string_view kFragmentationAdvice =
    "XLA's pool holds enough free memory, in pieces: XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async (the "
    "driver's stream-ordered pool) or the other XLA_PYTHON_CLIENT_PREALLOCATE (a pool taken whole "
    "or grown in regions) cut it otherwise; the message's TF_GPU_ALLOCATOR=cuda_malloc_async is "
    "not read by JAX";
// Its blocks in use and the request exceed its limit.
inline constexpr std::string_view kCapacityAdvice =
    "reduce the batch size or rematerialise (jax.checkpoint); XLA_PYTHON_CLIENT_MEM_FRACTION sets "
    "how much of the card XLA's pool may take";

// A size as XLA prints it (tsl's HumanReadableNumBytes): "4.74GiB", "1.5KiB", "512B".
[[nodiscard]] std::string xla_size(std::uint64_t bytes);
// XLA's RESOURCE_EXHAUSTED for a request the pool refused, without the pool's name and device.
[[nodiscard]] std::string oom_message(const CacheState& cache, std::uint64_t request_bytes,
                                      std::uint64_t device_free_bytes,
                                      std::uint64_t device_total_bytes);
[[nodiscard]] CacheWords cache_words();

}  // namespace oomlab::jax
