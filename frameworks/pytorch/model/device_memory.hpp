// What a model of PyTorch's allocator asks the device for: whole segments (cudaMalloc), or
// physical pages mapped into a reserved virtual range (expandable segments: cuMemCreate and
// cuMemMap). Implemented over any oomlab allocator (the sim's pages, or cudaMalloc) and over the
// CUDA virtual-memory API; the model never knows which.
#pragma once

#include <cstdint>
#include <span>

#include "oomlab/caching_allocator.hpp"

namespace oomlab::torch {

class DeviceMemory {
 public:
  DeviceMemory() = default;
  virtual ~DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  DeviceMemory(DeviceMemory&&) = delete;
  DeviceMemory& operator=(DeviceMemory&&) = delete;

  // A segment's address, or 0 when the device has no room for it.
  virtual std::uint64_t allocate(std::uint64_t bytes) = 0;
  // The addresses a recorded run's segments got (Allocator::hint_device_calls); a device that
  // chooses its own addresses ignores them.
  virtual void hint(std::span<const DeviceCall> /*recorded*/) {}
  virtual void free(std::uint64_t address, std::uint64_t bytes) = 0;

  // A virtual range of `bytes` whose pages of `page` bytes are mapped on demand.
  virtual std::uint64_t reserve(std::uint64_t bytes, std::uint64_t page) = 0;
  // Maps [address, address + bytes), whole pages; false, with nothing mapped, when the device
  // has no room for all of them.
  virtual bool map(std::uint64_t address, std::uint64_t bytes) = 0;
  virtual void unmap(std::uint64_t address, std::uint64_t bytes) = 0;
  virtual void release(std::uint64_t address, std::uint64_t bytes) = 0;

  // What the device could still give (for probes, which must not allocate).
  [[nodiscard]] virtual std::uint64_t free_bytes() const = 0;
  // The card's memory: PyTorch reserves 1 1/8 of it as each expandable segment's range.
  [[nodiscard]] virtual std::uint64_t total_bytes() const = 0;
};

}  // namespace oomlab::torch
