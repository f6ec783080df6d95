// The factories of the CUDA backends (a build with CUDA).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "allocators/async_allocator.hpp"
#include "allocators/backends.hpp"
#include "allocators/budget_cap.hpp"
#include "allocators/cuda_allocator.hpp"
#include "allocators/device_usage_cap.hpp"
#include "allocators/managed_allocator.hpp"
#include "allocators/torch/allocator_device_memory.hpp"
#include "allocators/torch/cuda_vmm_memory.hpp"
#include "allocators/torch/torch_allocator.hpp"
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
                     .prefetch = options.flag("prefetch")});
  auto device_capped = std::make_unique<DeviceUsageCap>(std::move(managed), cap);
  return std::make_unique<BudgetCap>(std::move(device_capped), cap,
                                     ManagedAllocator::kCapGranularity);
}

// PyTorch's allocator in front of the device: cudaMalloc segments (or the virtual-memory API for
// expandable segments) under the ballast; its cudaMallocAsync backend is a pool configured as
// PyTorch configures the device's own (keep everything, every reuse allowed).
std::unique_ptr<Allocator> make_torch(const torch::TorchConfig& config, int device, Stream stream,
                                      std::uint64_t budget_bytes) {
  if (config.backend == torch::Backend::async) {
    if (config.budget_by == torch::BudgetBy::fraction) {
      throw Error(ErrorKind::usage,
                  "allocator 'torch': backend=async with upstream=cuda is capped by the device "
                  "(the ballast): budget_by=fraction is modelled on the sim only");
    }
    return std::make_unique<AsyncPoolAllocator>(device, stream,
                                                AsyncPoolOptions{.release_threshold = UINT64_MAX});
  }
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  OOMLAB_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  std::unique_ptr<torch::DeviceMemory> memory = std::make_unique<torch::AllocatorDeviceMemory>(
      std::make_unique<CudaAllocator>(), stream, total_bytes);
  if (config.expandable_segments) {
    memory = std::make_unique<torch::CudaVmmMemory>(device, stream, std::move(memory));
  }
  return std::make_unique<torch::TorchAllocator>(config, std::move(memory), budget_bytes, false);
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
                                               Stream stream, std::uint64_t budget_bytes,
                                               const torch::TorchConfig* torch) {
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
    case BackendKind::torch:
      if (torch == nullptr) throw Error(ErrorKind::internal, "torch: no resolved configuration");
      return make_torch(*torch, device, stream, budget_bytes);
    case BackendKind::sim:
    case BackendKind::automatic:
      break;
  }
  throw Error(ErrorKind::internal,
              fmt::format("'{}' is not a device backend", backend_info(kind).name));
}

}  // namespace oomlab
