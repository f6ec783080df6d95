// DeviceUsageCap: refuses (status budget_cap), before any call to the wrapped allocator, a request
// that would take the device memory measured in use since the run began past the cap: the usage
// is read with cudaMemGetInfo before each allocation (~5 µs) and the request counts in whole 2 MiB
// pages. Where the memory an allocator holds is not what it was asked for — freed managed memory
// stays on the device while any block of its 2 MiB chunk lives (measured on an H200) — only a
// measurement bounds the device's share. The run wraps `managed` in it, inside BudgetCap.
#pragma once

#include <memory>

#include "allocators/device_usage.hpp"
#include "oomlab/allocator.hpp"

namespace oomlab {

class DeviceUsageCap final : public AllocatorAdaptor {
 public:
  DeviceUsageCap(std::unique_ptr<Allocator> inner, std::uint64_t cap_bytes);

 private:
  AllocResult do_allocate(std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState do_state() const override;
  // Device memory in use since the run began, read before every allocation: exact there.
  [[nodiscard]] std::uint64_t do_reserved_bytes() const override {
    return usage_.used_since_start();
  }
  AllocStatus do_probe(std::size_t bytes, Stream stream) override;
  [[nodiscard]] bool device_has_room_for(std::size_t bytes) const;

  std::uint64_t cap_bytes_;
  DeviceUsage usage_;
};

}  // namespace oomlab
