#include "pytorch/model/cuda_vmm_memory.hpp"

#include <cuda.h>  // types only: libcuda is never linked, its calls come through the runtime
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <iterator>
#include <string>

#include "device/cuda_check.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab::torch {

struct CudaVmmMemory::Driver {
  PFN_cuMemAddressReserve_v10020 address_reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  PFN_cuGetErrorName_v6000 error_name = nullptr;  // optional: without it an error shows its number
};

namespace {

// The driver's `name` at the ABI of `version`, or false (and no runtime error left behind).
template <typename Function>
bool find_entry(const char* name, unsigned int version, Function* function) {
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, reinterpret_cast<void**>(function), version,
                                       cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || *function == nullptr) {
    (void)cudaGetLastError();
    *function = nullptr;
    return false;
  }
  return true;
}

template <typename Function>
void require_entry(const char* name, unsigned int version, Function* function) {
  if (!find_entry(name, version, function)) {
    throw Error(ErrorKind::no_device,
                fmt::format("expandable segments need the CUDA virtual-memory API: {} not found "
                            "in the driver",
                            name));
  }
}

}  // namespace

CudaVmmMemory::CudaVmmMemory(int device, Stream stream, std::unique_ptr<DeviceMemory> segments)
    : device_(device), stream_(stream), segments_(std::move(segments)) {
  auto driver = std::make_unique<Driver>();
  require_entry("cuMemAddressReserve", 10020, &driver->address_reserve);
  require_entry("cuMemAddressFree", 10020, &driver->address_free);
  require_entry("cuMemCreate", 10020, &driver->create);
  require_entry("cuMemRelease", 10020, &driver->release);
  require_entry("cuMemMap", 10020, &driver->map);
  require_entry("cuMemUnmap", 10020, &driver->unmap);
  require_entry("cuMemSetAccess", 10020, &driver->set_access);
  (void)find_entry("cuGetErrorName", 6000, &driver->error_name);
  driver_ = std::move(driver);
}

CudaVmmMemory::~CudaVmmMemory() {
  // Errors are ignored from here on: a destructor must not throw, and a call fails here only when
  // the context is already lost (a sticky error, the process exiting), which frees it all anyway.
  // The device, not stream_, is waited for: the session may have destroyed the stream already.
  (void)cudaDeviceSynchronize();
  (void)cudaGetLastError();
  for (const auto& [address, handle] : pages_) {
    if (const Range* range = range_of(address)) (void)driver_->unmap(address, range->page);
    (void)driver_->release(handle);
  }
  for (const auto& [base, range] : ranges_)
    (void)driver_->address_free(base, range.bytes);
}

std::uint64_t CudaVmmMemory::reserve(std::uint64_t bytes, std::uint64_t page) {
  CUdeviceptr base = 0;
  check(driver_->address_reserve(&base, bytes, 0, 0, 0), "cuMemAddressReserve", 0, bytes);
  ranges_.emplace(base, Range{bytes, page});
  return base;
}

bool CudaVmmMemory::map(std::uint64_t address, std::uint64_t bytes) {
  if (bytes == 0) return true;  // cuMemSetAccess refuses an empty range
  const std::uint64_t page = page_of(address);
  const auto handles = create_pages(address, bytes, page);
  if (!handles) return false;
  map_pages(address, page, *handles);
  return true;
}

void CudaVmmMemory::unmap(std::uint64_t address, std::uint64_t bytes) {
  const std::uint64_t page = page_of(address);
  // cuMemUnmap does not wait for the work still queued on these pages (PyTorch waits too).
  OOMLAB_CUDA_TRY(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_.handle)));
  for (std::uint64_t at = address; at < address + bytes; at += page) {
    const auto it = pages_.find(at);
    if (it == pages_.end()) continue;
    check(driver_->unmap(at, page), "cuMemUnmap", at, page);
    check(driver_->release(it->second), "cuMemRelease", at, page);
    pages_.erase(it);
  }
}

void CudaVmmMemory::release(std::uint64_t address, std::uint64_t /*bytes*/) {
  const auto it = ranges_.find(address);
  if (it == ranges_.end()) {
    throw Error(ErrorKind::internal,
                fmt::format("released {:#x}, which is not a reserved range", address));
  }
  // The size reserved, which cuMemAddressFree must be given back exactly.
  check(driver_->address_free(address, it->second.bytes), "cuMemAddressFree", address,
        it->second.bytes);
  ranges_.erase(it);
}

const CudaVmmMemory::Range* CudaVmmMemory::range_of(std::uint64_t address) const noexcept {
  const auto after = ranges_.upper_bound(address);
  if (after == ranges_.begin()) return nullptr;
  const auto& [base, range] = *std::prev(after);
  return address < base + range.bytes ? &range : nullptr;
}

std::uint64_t CudaVmmMemory::page_of(std::uint64_t address) const {
  const Range* range = range_of(address);
  if (range == nullptr) {
    throw Error(ErrorKind::internal,
                fmt::format("{:#x} lies in no reserved virtual range", address));
  }
  return range->page;
}

std::optional<std::vector<std::uint64_t>> CudaVmmMemory::create_pages(std::uint64_t address,
                                                                      std::uint64_t bytes,
                                                                      std::uint64_t page) const {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_;
  std::vector<std::uint64_t> handles;
  handles.reserve(bytes / page);
  for (std::uint64_t at = address; at < address + bytes; at += page) {
    CUmemGenericAllocationHandle handle = 0;
    const CUresult result = driver_->create(&handle, page, &prop, 0);
    if (result == CUDA_SUCCESS) {
      handles.push_back(handle);
      continue;
    }
    release_handles(handles);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) return std::nullopt;
    check(result, "cuMemCreate", at, page);
  }
  return handles;
}

// Maps each page, then grants this device read-write access to them all in one call; on an error
// it undoes what it did, so the pages are either all mapped and recorded or none is.
void CudaVmmMemory::map_pages(std::uint64_t address, std::uint64_t page,
                              const std::vector<std::uint64_t>& handles) {
  const std::uint64_t bytes = handles.size() * page;
  const char* call = "cuMemMap";
  CUresult result = CUDA_SUCCESS;
  std::size_t mapped = 0;
  for (; mapped < handles.size(); ++mapped) {
    result = driver_->map(address + mapped * page, page, 0, handles[mapped], 0);
    if (result != CUDA_SUCCESS) break;
  }
  if (result == CUDA_SUCCESS) {
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device_;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    call = "cuMemSetAccess";
    result = driver_->set_access(address, bytes, &access, 1);
  }
  if (result != CUDA_SUCCESS) {
    for (std::size_t i = 0; i < mapped; ++i)
      (void)driver_->unmap(address + i * page, page);
    release_handles(handles);
    check(result, call, address, bytes);
  }
  for (std::size_t i = 0; i < handles.size(); ++i)
    pages_.emplace(address + i * page, handles[i]);
}

void CudaVmmMemory::release_handles(const std::vector<std::uint64_t>& handles) const noexcept {
  // Only after a failure, which is what gets reported; a second error here would hide it.
  for (const std::uint64_t handle : handles)
    (void)driver_->release(handle);
}

void CudaVmmMemory::check(int result, const char* call, std::uint64_t address,
                          std::uint64_t bytes) const {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  if (driver_->error_name == nullptr ||
      driver_->error_name(static_cast<CUresult>(result), &name) != CUDA_SUCCESS) {
    name = nullptr;
  }
  const std::string what =
      address == 0 ? fmt::format("{} of {}", call, format_bytes(bytes))
                   : fmt::format("{} of {} at {:#x}", call, format_bytes(bytes), address);
  throw Error(ErrorKind::device, name != nullptr
                                     ? fmt::format("{} failed: {}", what, name)
                                     : fmt::format("{} failed: CUresult {}", what, result));
}

}  // namespace oomlab::torch
