// One macro turns a CUDA status into a typed error naming the call, file:line and CUDA's name.
// Light enough for .cu files: the message is built out of line (cuda_check.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include "oomlab/allocator.hpp"

namespace oomlab {

// What a CUDA status means to an allocator: ok, out of memory (the only status that is an OOM),
// or an error.
[[nodiscard]] constexpr AllocStatus alloc_status(cudaError_t status) {
  if (status == cudaSuccess) return AllocStatus::ok;
  return status == cudaErrorMemoryAllocation ? AllocStatus::out_of_memory : AllocStatus::error;
}

}  // namespace oomlab

namespace oomlab::detail {

// Clears the error (so it does not resurface at the next check) and throws Error(device).
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                   int line);

}  // namespace oomlab::detail

#define OOMLAB_CUDA_TRY(call)                                                        \
  do {                                                                               \
    const cudaError_t oomlab_status_ = (call);                                       \
    if (oomlab_status_ != cudaSuccess) {                                             \
      ::oomlab::detail::throw_cuda_error(oomlab_status_, #call, __FILE__, __LINE__); \
    }                                                                                \
  } while (0)
