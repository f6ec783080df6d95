// PyTorch's expandable segments on a real GPU: reserve is cuMemAddressReserve, map is cuMemCreate
// of one physical page per page, cuMemMap and cuMemSetAccess (read-write for this device), unmap
// waits for the stream and then cuMemUnmap and cuMemRelease each page, release is
// cuMemAddressFree. The driver calls come through cudaGetDriverEntryPointByVersion (libcuda is
// never linked) and are resolved once, in the constructor. A map the device has no room for
// gives back what it created and returns false; any other driver error throws Error(device).
// Plain segments go to another DeviceMemory. What is still mapped or reserved when it is
// destroyed goes back to the driver.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "oomlab/allocator.hpp"
#include "pytorch/model/device_memory.hpp"

namespace oomlab::torch {

class CudaVmmMemory final : public DeviceMemory {
 public:
  // Throws Error(no_device) when the driver lacks a virtual-memory call.
  CudaVmmMemory(int device, Stream stream, std::unique_ptr<DeviceMemory> segments);
  ~CudaVmmMemory() override;
  CudaVmmMemory(const CudaVmmMemory&) = delete;
  CudaVmmMemory& operator=(const CudaVmmMemory&) = delete;
  CudaVmmMemory(CudaVmmMemory&&) = delete;
  CudaVmmMemory& operator=(CudaVmmMemory&&) = delete;

  std::uint64_t allocate(std::uint64_t bytes) override { return segments_->allocate(bytes); }
  void free(std::uint64_t address, std::uint64_t bytes) override {
    segments_->free(address, bytes);
  }
  std::uint64_t reserve(std::uint64_t bytes, std::uint64_t page) override;
  bool map(std::uint64_t address, std::uint64_t bytes) override;
  void unmap(std::uint64_t address, std::uint64_t bytes) override;
  void release(std::uint64_t address, std::uint64_t bytes) override;
  [[nodiscard]] std::uint64_t free_bytes() const override { return segments_->free_bytes(); }
  [[nodiscard]] std::uint64_t total_bytes() const override { return segments_->total_bytes(); }

 private:
  struct Driver;  // the driver's function pointers, in the .cpp so <cuda.h> stays there
  struct Range {
    std::uint64_t bytes;
    std::uint64_t page;
  };

  [[nodiscard]] const Range* range_of(std::uint64_t address) const noexcept;
  [[nodiscard]] std::uint64_t page_of(std::uint64_t address) const;
  // One physical page per `page` of `bytes`; nullopt, with none kept, when the device is full.
  [[nodiscard]] std::optional<std::vector<std::uint64_t>> create_pages(std::uint64_t address,
                                                                       std::uint64_t bytes,
                                                                       std::uint64_t page) const;
  void map_pages(std::uint64_t address, std::uint64_t page,
                 const std::vector<std::uint64_t>& handles);
  void release_handles(const std::vector<std::uint64_t>& handles) const noexcept;
  // Throws Error(device) naming the call and the driver's name for `result`, unless it is 0.
  void check(int result, const char* call, std::uint64_t address, std::uint64_t bytes) const;

  int device_;
  Stream stream_;
  std::unique_ptr<DeviceMemory> segments_;
  std::unique_ptr<const Driver> driver_;
  std::map<std::uint64_t, Range> ranges_;  // virtual base -> range; ordered, to find an address's
  std::unordered_map<std::uint64_t, std::uint64_t> pages_;  // mapped page -> cuMemCreate handle
};

}  // namespace oomlab::torch
