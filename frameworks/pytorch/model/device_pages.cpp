#include "pytorch/model/device_pages.hpp"

#include <fmt/format.h>

#include "oomlab/error.hpp"
#include "pytorch/model/cuda_vmm_memory.hpp"

namespace oomlab::torch {

std::unique_ptr<DeviceMemory> make_device_pages(const BackendSite& site,
                                                std::unique_ptr<DeviceMemory> segments) {
  if (!site.device) throw Error(ErrorKind::internal, "allocator 'torch' built with no device");
  return std::make_unique<CudaVmmMemory>(*site.device, site.stream, std::move(segments));
}

}  // namespace oomlab::torch
