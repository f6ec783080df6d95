// The factories of the CUDA backends (a build with CUDA).
#include <fmt/format.h>

#include "allocators/async_allocator.hpp"
#include "allocators/backends.hpp"
#include "allocators/budget_cap.hpp"
#include "allocators/cuda_allocator.hpp"
#include "allocators/managed_allocator.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

namespace {
ManagedAdvice advice_from(const std::string& choice) {
  if (choice == "preferred-location") return ManagedAdvice::preferred_location;
  if (choice == "accessed-by") return ManagedAdvice::accessed_by;
  if (choice == "read-mostly") return ManagedAdvice::read_mostly;
  return ManagedAdvice::none;
}
}  // namespace

std::uint64_t managed_cap_bytes(std::uint64_t budget_bytes) {
  const std::uint64_t headroom = ManagedAllocator::cap_headroom(budget_bytes);
  return budget_bytes > headroom ? budget_bytes - headroom : 0;
}

std::unique_ptr<Allocator> make_device_backend(std::string_view name, const Params& options,
                                               int device, Stream stream,
                                               std::uint64_t budget_bytes) {
  if (name == "cuda") return std::make_unique<CudaAllocator>();
  if (name == "async") {
    return std::make_unique<AsyncPoolAllocator>(
        device, stream,
        AsyncPoolOptions{.release_threshold = options.bytes("release_threshold"),
                         .reuse_follow_events = options.flag("reuse_follow_events"),
                         .reuse_opportunistic = options.flag("reuse_opportunistic"),
                         .reuse_internal_deps = options.flag("reuse_internal_deps")});
  }
  if (name == "managed") {
    auto managed = std::make_unique<ManagedAllocator>(
        device, stream,
        ManagedOptions{.advice = advice_from(options.choice("advise")),
                       .prefetch = options.flag("prefetch")});
    return std::make_unique<BudgetCap>(std::move(managed), managed_cap_bytes(budget_bytes),
                                       ManagedAllocator::kCapGranularity);
  }
  throw Error(ErrorKind::internal, fmt::format("no device backend named '{}'", name));
}

}  // namespace oomlab
