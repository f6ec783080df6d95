// The CUDA backends in a build without CUDA: they exist in the catalog, and say why they cannot run.
#include <fmt/format.h>

#include "allocators/backends.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

std::uint64_t managed_cap_bytes(std::uint64_t budget_bytes) { return budget_bytes; }

void settle_managed_memory(Stream /*stream*/) {}

}  // namespace oomlab
