#include "allocators/async_allocator.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "device/cuda_check.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

namespace {
cudaStream_t cuda_stream(Stream s) {
  return static_cast<cudaStream_t>(s.handle);
}

void set_flag(cudaMemPool_t pool, cudaMemPoolAttr attr, bool on) {
  int value = on ? 1 : 0;
  OOMLAB_CUDA_TRY(cudaMemPoolSetAttribute(pool, attr, &value));
}
}  // namespace

AsyncPoolAllocator::AsyncPoolAllocator(int device, Stream stream, const AsyncPoolOptions& options)
    : stream_(stream) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  OOMLAB_CUDA_TRY(cudaMemPoolCreate(&pool_, &props));
  try {
    std::uint64_t threshold = options.release_threshold;
    OOMLAB_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold));
    set_flag(pool_, cudaMemPoolReuseFollowEventDependencies, options.reuse_follow_events);
    set_flag(pool_, cudaMemPoolReuseAllowOpportunistic, options.reuse_opportunistic);
    set_flag(pool_, cudaMemPoolReuseAllowInternalDependencies, options.reuse_internal_deps);
  } catch (...) {
    (void)cudaMemPoolDestroy(pool_);
    throw;
  }
}

AsyncPoolAllocator::~AsyncPoolAllocator() {
  // Pending frees must land before the pool goes; errors here cannot be reported any better.
  (void)cudaStreamSynchronize(cuda_stream(stream_));
  (void)cudaMemPoolDestroy(pool_);
}

std::uint64_t AsyncPoolAllocator::read_reserved() const {
  std::uint64_t value = 0;
  OOMLAB_CUDA_TRY(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &value));
  return value;
}

std::uint64_t AsyncPoolAllocator::pool_used_bytes() const {
  std::uint64_t value = 0;
  OOMLAB_CUDA_TRY(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &value));
  return value;
}

AllocResult AsyncPoolAllocator::do_allocate(std::size_t bytes, Stream stream) {
  if (bytes == 0) return {};
  void* ptr = nullptr;
  const cudaError_t status = cudaMallocFromPoolAsync(&ptr, bytes, pool_, cuda_stream(stream));
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return {nullptr, alloc_status(status), static_cast<int>(status)};
  }
  used_ += bytes;
  reserved_ = std::max(reserved_, used_);
  sample();
  return {ptr, AllocStatus::ok, 0};
}

void AsyncPoolAllocator::do_deallocate(void* ptr, std::size_t bytes, Stream stream) {
  if (ptr == nullptr) return;
  OOMLAB_CUDA_TRY(cudaFreeAsync(ptr, cuda_stream(stream)));
  used_ -= bytes;
  sample();
}

MemoryState AsyncPoolAllocator::do_state() const {
  std::size_t free = 0;
  std::size_t total = 0;
  OOMLAB_CUDA_TRY(cudaMemGetInfo(&free, &total));
  const std::uint64_t reserved = read_reserved();
  return {.reserved_bytes = reserved,
          .own_bytes_bound = reserved,
          .device_free_bytes = free,
          .device_total_bytes = total,
          .used_bytes = pool_used_bytes()};
}

AllocStatus AsyncPoolAllocator::do_probe(std::size_t bytes, Stream stream) {
  const std::uint64_t reserved_before = read_reserved();
  void* ptr = nullptr;
  const cudaError_t status = cudaMallocFromPoolAsync(&ptr, bytes, pool_, cuda_stream(stream));
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return alloc_status(status);
  }
  // Give back what the probe made the pool reserve, so that probing leaves no trace.
  OOMLAB_CUDA_TRY(cudaFreeAsync(ptr, cuda_stream(stream)));
  OOMLAB_CUDA_TRY(cudaStreamSynchronize(cuda_stream(stream)));
  OOMLAB_CUDA_TRY(cudaMemPoolTrimTo(pool_, reserved_before));
  return AllocStatus::ok;
}

void AsyncPoolAllocator::do_trim() {
  OOMLAB_CUDA_TRY(cudaStreamSynchronize(cuda_stream(stream_)));
  OOMLAB_CUDA_TRY(cudaMemPoolTrimTo(pool_, 0));
  reserved_ = read_reserved();
}

}  // namespace oomlab
