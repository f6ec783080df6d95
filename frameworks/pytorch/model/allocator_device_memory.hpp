// DeviceMemory over any oomlab allocator: segments are its allocations (the sim's 2 MiB pages,
// or cudaMalloc), and an expandable segment's pages are allocations of one page each behind a
// virtual range the model numbers itself (the pages are what count against the budget). What
// is still held when it is destroyed goes back to the allocator.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "oomlab/allocator.hpp"
#include "pytorch/model/device_memory.hpp"

namespace oomlab::torch {

class AllocatorDeviceMemory final : public DeviceMemory {
 public:
  AllocatorDeviceMemory(std::unique_ptr<Allocator> upstream, Stream stream,
                        std::uint64_t total_bytes);
  ~AllocatorDeviceMemory() override;
  AllocatorDeviceMemory(const AllocatorDeviceMemory&) = delete;
  AllocatorDeviceMemory& operator=(const AllocatorDeviceMemory&) = delete;
  AllocatorDeviceMemory(AllocatorDeviceMemory&&) = delete;
  AllocatorDeviceMemory& operator=(AllocatorDeviceMemory&&) = delete;

  std::uint64_t allocate(std::uint64_t bytes) override;
  // Segments then take the recorded addresses, in order, while their sizes follow the record
  // and the address is free; from the first that does not, addresses of their own.
  void hint(std::span<const DeviceCall> recorded) override;
  void free(std::uint64_t address, std::uint64_t bytes) override;
  std::uint64_t reserve(std::uint64_t bytes, std::uint64_t page) override;
  bool map(std::uint64_t address, std::uint64_t bytes) override;
  void unmap(std::uint64_t address, std::uint64_t bytes) override;
  void release(std::uint64_t address, std::uint64_t bytes) override;
  [[nodiscard]] std::uint64_t free_bytes() const override;
  [[nodiscard]] std::uint64_t total_bytes() const override { return total_bytes_; }

  [[nodiscard]] const Allocator& upstream() const { return *upstream_; }
  [[nodiscard]] Allocator& upstream() { return *upstream_; }

 private:
  struct Range {
    std::uint64_t bytes;
    std::uint64_t page;
  };
  struct Segment {
    void* allocation;
    std::uint64_t bytes;
  };
  [[nodiscard]] static std::uint64_t range_of(std::uint64_t address);
  [[nodiscard]] std::uint64_t address_for(std::uint64_t bytes, void* allocation);
  [[nodiscard]] bool overlaps(std::uint64_t address, std::uint64_t bytes) const;

  std::unique_ptr<Allocator> upstream_;
  Stream stream_;
  std::uint64_t total_bytes_;
  std::map<std::uint64_t, Segment> segments_;  // by the address the model sees
  std::vector<DeviceCall> hints_;
  std::size_t next_hint_ = 0;
  std::uint64_t next_own_address_;
  std::unordered_map<std::uint64_t, Range> ranges_;  // virtual base -> range
  std::unordered_map<std::uint64_t, void*> pages_;   // virtual page -> allocation
  std::uint64_t next_range_;
};

}  // namespace oomlab::torch
