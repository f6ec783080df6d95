#include "allocators/device_usage.hpp"

#include "device/cuda_check.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

DeviceUsage::DeviceUsage() {
  std::size_t free = 0;
  std::size_t total = 0;
  OOMLAB_CUDA_TRY(cudaMemGetInfo(&free, &total));
  baseline_free_ = free;
  free_ = free;
  total_ = total;
}

void DeviceUsage::read() const {
  std::size_t free = 0;
  std::size_t total = 0;
  OOMLAB_CUDA_TRY(cudaMemGetInfo(&free, &total));
  free_ = free;
  total_ = total;
  used_ = baseline_free_ > free ? baseline_free_ - free : 0;
  events_since_read_ = 0;
  last_read_ = std::chrono::steady_clock::now();
}

MemoryState DeviceUsage::measure(std::uint64_t own_bytes_bound) const {
  read();
  return {.reserved_bytes = used_,
          .own_bytes_bound = own_bytes_bound,
          .device_free_bytes = free_,
          .device_total_bytes = total_};
}

}  // namespace oomlab
