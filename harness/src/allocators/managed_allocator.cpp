#include "allocators/managed_allocator.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "device/cuda_check.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

ManagedAllocator::ManagedAllocator(int device, Stream /*stream*/, const ManagedOptions& options)
    : device_(device), options_(options) {
}

AllocResult ManagedAllocator::do_allocate(std::size_t bytes, Stream stream) {
  if (bytes == 0) return {};
  void* ptr = nullptr;
  const cudaError_t status = cudaMallocManaged(&ptr, bytes, cudaMemAttachGlobal);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return {nullptr, alloc_status(status), static_cast<int>(status)};
  }
  try {
    place(ptr, bytes, stream);
  } catch (...) {
    (void)cudaFree(ptr);
    throw;
  }
  charged_bytes_ += round_up(bytes, kCapGranularity);
  charged_high_water_ = std::max(charged_high_water_, charged_bytes_);
  live_pages_bytes_ += round_up(bytes, kDevicePageBytes);
  return {ptr, AllocStatus::ok, 0};
}

void ManagedAllocator::do_deallocate(void* ptr, std::size_t bytes, Stream /*stream*/) {
  if (ptr == nullptr) return;
  OOMLAB_CUDA_TRY(cudaFree(ptr));
  charged_bytes_ -= round_up(bytes, kCapGranularity);
  live_pages_bytes_ -= round_up(bytes, kDevicePageBytes);
  usage_.tick();
}

MemoryState ManagedAllocator::do_state() const {
  // What this run can hold: freed blocks keep their pages while a neighbour lives, so neither the
  // live pages nor the most ever charged alone bound it; the larger of the two does.
  return usage_.measure(std::max(charged_high_water_, live_pages_bytes_));
}

AllocStatus ManagedAllocator::do_probe(std::size_t bytes, Stream /*stream*/) {
  if (bytes == 0) return AllocStatus::ok;
  void* ptr = nullptr;
  const cudaError_t status = cudaMallocManaged(&ptr, bytes, cudaMemAttachGlobal);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return alloc_status(status);
  }
  OOMLAB_CUDA_TRY(cudaFree(ptr));
  return AllocStatus::ok;
}

void ManagedAllocator::place(void* ptr, std::size_t bytes, Stream stream) const {
#if CUDART_VERSION >= 13000
  cudaMemLocation device{};  // CUDA 13 names a location; CUDA 12 took the device index
  device.type = cudaMemLocationTypeDevice;
  device.id = device_;
#else
  const int device = device_;
#endif
  switch (options_.advice) {
    case ManagedAdvice::none:
      break;
    case ManagedAdvice::preferred_location:
      OOMLAB_CUDA_TRY(cudaMemAdvise(ptr, bytes, cudaMemAdviseSetPreferredLocation, device));
      break;
    case ManagedAdvice::accessed_by:
      OOMLAB_CUDA_TRY(cudaMemAdvise(ptr, bytes, cudaMemAdviseSetAccessedBy, device));
      break;
    case ManagedAdvice::read_mostly:
      OOMLAB_CUDA_TRY(cudaMemAdvise(ptr, bytes, cudaMemAdviseSetReadMostly, device));
      break;
  }
  if (options_.prefetch) {
#if CUDART_VERSION >= 13000
    OOMLAB_CUDA_TRY(
        cudaMemPrefetchAsync(ptr, bytes, device, 0, static_cast<cudaStream_t>(stream.handle)));
#else
    OOMLAB_CUDA_TRY(
        cudaMemPrefetchAsync(ptr, bytes, device, static_cast<cudaStream_t>(stream.handle)));
#endif
  }
}

}  // namespace oomlab
