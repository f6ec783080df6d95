// The CUDA backends in a build without CUDA: they exist in the catalog, and say why they cannot
// run.
#include <fmt/format.h>

#include "allocators/device_factories.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

std::uint64_t managed_cap_bytes(std::uint64_t budget_bytes) {
  return budget_bytes;
}

void settle_managed_memory(Stream /*stream*/) {
}

namespace {

[[noreturn]] void no_cuda(std::string_view name) {
  throw Error(ErrorKind::no_device,
              fmt::format("no CUDA driver/device found: allocator '{}' needs CUDA, and this oomlab "
                          "was built without it (OOMLAB_CUDA=OFF)",
                          name));
}

}  // namespace

std::unique_ptr<Allocator> make_cuda_backend(const Params& /*options*/,
                                             const BackendSite& /*site*/) {
  no_cuda("cuda");
}

std::unique_ptr<Allocator> make_async_backend(const Params& /*options*/,
                                              const BackendSite& /*site*/) {
  no_cuda("async");
}

std::unique_ptr<Allocator> make_managed_backend(const Params& /*options*/,
                                                const BackendSite& /*site*/) {
  no_cuda("managed");
}

}  // namespace oomlab
