#include "allocators/cuda_allocator.hpp"

#include "device/cuda_check.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

AllocResult CudaAllocator::do_allocate(std::size_t bytes, Stream /*stream*/) {
  if (bytes == 0) return {};  // the same answer on every backend: success, null pointer
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  usage_.tick();
  if (status == cudaSuccess) {
    own_bytes_bound_ += round_up(bytes, kDevicePageBytes);
    return {ptr, AllocStatus::ok, 0};
  }
  (void)cudaGetLastError();  // an OOM is not sticky: clear it for the next launch check
  return {nullptr, alloc_status(status), static_cast<int>(status)};
}

void CudaAllocator::do_deallocate(void* ptr, std::size_t bytes, Stream /*stream*/) {
  if (ptr == nullptr) return;
  OOMLAB_CUDA_TRY(cudaFree(ptr));
  own_bytes_bound_ -= round_up(bytes, kDevicePageBytes);
  usage_.tick();
}

}  // namespace oomlab
