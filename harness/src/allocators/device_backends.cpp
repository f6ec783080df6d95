// The factories of the CUDA backends (a build with CUDA).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "allocators/async_allocator.hpp"
#include "allocators/backends.hpp"
#include "allocators/budget_cap.hpp"
#include "allocators/cuda_allocator.hpp"
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

std::unique_ptr<Allocator> make_managed(const Params& options, int device, Stream stream,
                                        std::uint64_t budget_bytes) {
  const std::uint64_t cap = managed_cap_bytes(budget_bytes);
  auto managed = std::make_unique<ManagedAllocator>(
      device, stream,
      ManagedOptions{.advice = advice_from(options.choice("advise")),
                     .prefetch = options.flag("prefetch"),
                     .cap_bytes = cap});
  return std::make_unique<BudgetCap>(std::move(managed), cap, ManagedAllocator::kCapGranularity);
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

std::unique_ptr<Allocator> make_device_backend(BackendKind kind, const Params& options, int device,
                                               Stream stream, std::uint64_t budget_bytes) {
  switch (kind) {
    case BackendKind::cuda:
      return std::make_unique<CudaAllocator>();
    case BackendKind::async:
      return std::make_unique<AsyncPoolAllocator>(
          device, stream,
          AsyncPoolOptions{.release_threshold = options.bytes("release_threshold"),
                           .reuse_follow_events = options.flag("reuse_follow_events"),
                           .reuse_opportunistic = options.flag("reuse_opportunistic"),
                           .reuse_internal_deps = options.flag("reuse_internal_deps")});
    case BackendKind::managed:
      return make_managed(options, device, stream, budget_bytes);
    case BackendKind::sim:
    case BackendKind::automatic:
      break;
  }
  throw Error(ErrorKind::internal,
              fmt::format("'{}' is not a device backend", backend_info(kind).name));
}

}  // namespace oomlab
