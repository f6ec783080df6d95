// The factories of the backends that take device memory (a build with CUDA).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "allocators/async_allocator.hpp"
#include "allocators/budget_cap.hpp"
#include "allocators/cuda_allocator.hpp"
#include "allocators/device_factories.hpp"
#include "allocators/device_usage_cap.hpp"
#include "allocators/managed_allocator.hpp"
#include "device/cuda_check.hpp"
#include "kernels/kernels.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

namespace {

// The CLI accepted only the catalog's choices; anything else is a bug.
ManagedAdvice advice_from(const std::string& choice) {
  if (choice == "none") return ManagedAdvice::none;
  if (choice == "preferred-location") return ManagedAdvice::preferred_location;
  if (choice == "accessed-by") return ManagedAdvice::accessed_by;
  if (choice == "read-mostly") return ManagedAdvice::read_mostly;
  throw Error(ErrorKind::internal, fmt::format("managed: no advice named '{}'", choice));
}

int device_of(const BackendSite& site, std::string_view name) {
  if (!site.device) {
    throw Error(ErrorKind::internal, fmt::format("allocator '{}' built with no device", name));
  }
  return *site.device;
}

}  // namespace

std::uint64_t managed_cap_bytes(std::uint64_t budget_bytes) {
  const std::uint64_t headroom = ManagedAllocator::cap_headroom(budget_bytes);
  return budget_bytes > headroom ? budget_bytes - headroom : 0;
}

void settle_managed_memory(Stream stream) {
  void* ptr = nullptr;
  OOMLAB_CUDA_TRY(cudaMallocManaged(&ptr, ManagedAllocator::kCapGranularity, cudaMemAttachGlobal));
  kernels::touch(ptr, ManagedAllocator::kCapGranularity, stream);
  OOMLAB_CUDA_TRY(cudaStreamSynchronize(static_cast<cudaStream_t>(stream.handle)));
  OOMLAB_CUDA_TRY(cudaFree(ptr));
  OOMLAB_CUDA_TRY(cudaDeviceSynchronize());
}

std::unique_ptr<Allocator> make_cuda_backend(const Params& /*options*/, const BackendSite& site) {
  static_cast<void>(device_of(site, "cuda"));
  return std::make_unique<CudaAllocator>();
}

std::unique_ptr<Allocator> make_async_backend(const Params& options, const BackendSite& site) {
  return std::make_unique<AsyncPoolAllocator>(
      device_of(site, "async"), site.stream,
      AsyncPoolOptions{.release_threshold = options.bytes("release_threshold"),
                       .reuse_follow_events = options.flag("reuse_follow_events"),
                       .reuse_opportunistic = options.flag("reuse_opportunistic"),
                       .reuse_internal_deps = options.flag("reuse_internal_deps")});
}

std::unique_ptr<Allocator> make_managed_backend(const Params& options, const BackendSite& site) {
  const std::uint64_t cap = managed_cap_bytes(site.budget_bytes);
  auto managed = std::make_unique<ManagedAllocator>(
      device_of(site, "managed"), site.stream,
      ManagedOptions{.advice = advice_from(options.choice("advise")),
                     .prefetch = options.flag("prefetch")});
  auto device_capped = std::make_unique<DeviceUsageCap>(std::move(managed), cap);
  return std::make_unique<BudgetCap>(std::move(device_capped), cap,
                                     ManagedAllocator::kCapGranularity);
}

}  // namespace oomlab
