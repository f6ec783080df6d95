// Expandable segments on a device: pages of the CUDA virtual-memory API (device_pages.cpp, in a
// build with CUDA; no_device_pages.cpp without it, which throws Error(no_device)).
#pragma once

#include <memory>

#include "oomlab/backend.hpp"
#include "pytorch/model/device_memory.hpp"

namespace oomlab::torch {

// Pages on the site's device, plain segments still from `segments`.
[[nodiscard]] std::unique_ptr<DeviceMemory> make_device_pages(
    const BackendSite& site, std::unique_ptr<DeviceMemory> segments);

}  // namespace oomlab::torch
