// A build without CUDA: expandable segments on a device say why they cannot be.
#include "oomlab/error.hpp"
#include "pytorch/model/device_pages.hpp"

namespace oomlab::torch {

std::unique_ptr<DeviceMemory> make_device_pages(const BackendSite& /*site*/,
                                                std::unique_ptr<DeviceMemory> /*segments*/) {
  throw Error(ErrorKind::no_device,
              "no CUDA driver/device found: allocator 'torch' needs CUDA, and this oomlab was "
              "built without it (OOMLAB_CUDA=OFF)");
}

}  // namespace oomlab::torch
