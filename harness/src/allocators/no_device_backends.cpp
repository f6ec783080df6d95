// The CUDA backends in a build without CUDA: they exist in the catalog, and say why they cannot
// run.
#include <fmt/format.h>

#include "allocators/backends.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

std::uint64_t managed_cap_bytes(std::uint64_t budget_bytes) {
  return budget_bytes;
}

void settle_managed_memory(Stream /*stream*/) {
}

std::unique_ptr<Allocator> make_device_backend(BackendKind kind, const Params& /*options*/,
                                               int /*device*/, Stream /*stream*/,
                                               std::uint64_t /*budget_bytes*/,
                                               const torch::TorchConfig* /*torch*/) {
  throw Error(ErrorKind::no_device,
              fmt::format("no CUDA driver/device found: allocator '{}' needs CUDA, and this oomlab "
                          "was built without it (OOMLAB_CUDA=OFF)",
                          backend_info(kind).name));
}

}  // namespace oomlab
