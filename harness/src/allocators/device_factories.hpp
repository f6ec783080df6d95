// The factories of the backends that take device memory, for the catalogue (backends.cpp): with
// CUDA in device_backends.cpp, without it in no_device_backends.cpp, where each throws
// Error(no_device) naming the allocator.
#pragma once

#include <memory>

#include "allocators/backends.hpp"

namespace oomlab {

[[nodiscard]] std::unique_ptr<Allocator> make_cuda_backend(const Params& options,
                                                           const BackendSite& site);
[[nodiscard]] std::unique_ptr<Allocator> make_async_backend(const Params& options,
                                                            const BackendSite& site);
[[nodiscard]] std::unique_ptr<Allocator> make_managed_backend(const Params& options,
                                                              const BackendSite& site);

}  // namespace oomlab
