// One macro turns a CUDA status into a typed error naming the call, file:line and CUDA's name.
// Light enough for .cu files: the message is built out of line (cuda_check.cpp).
#pragma once

#include <cuda_runtime_api.h>

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
