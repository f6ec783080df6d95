// `managed`: cudaMallocManaged / cudaFree, with optional cudaMemAdvise and a prefetch to the
// device. Managed memory migrates to the host instead of failing, so the run always wraps this
// backend in BudgetCap (kCapGranularity: a touched managed allocation was measured to hold its
// size rounded up to 64 KiB of device memory, H200, driver 580.159.04) and holds no ballast.
// reserved_bytes is device memory taken since creation, sampled like `cuda` (DeviceUsage).
#pragma once

#include <cstdint>

#include "allocators/device_usage.hpp"
#include "oomlab/allocator.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

enum class ManagedAdvice : std::uint8_t { none, preferred_location, accessed_by, read_mostly };

struct ManagedOptions {
  ManagedAdvice advice = ManagedAdvice::none;
  bool prefetch = false;  // cudaMemPrefetchAsync to the device after each allocation
};

class ManagedAllocator final : public Allocator {
 public:
  static constexpr std::uint64_t kCapGranularity = 64_KiB;

  ManagedAllocator(int device, Stream stream, const ManagedOptions& options);

  [[nodiscard]] std::string_view name() const override { return "managed"; }
  AllocResult allocate(std::size_t bytes, Stream stream) override;
  void deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState state() const override { return usage_.measure(own_bytes_bound_); }
  [[nodiscard]] std::uint64_t reserved_bytes() const override { return usage_.used_since_start(); }

 private:
  void place(void* ptr, std::size_t bytes, Stream stream) const;

  int device_;
  ManagedOptions options_;
  DeviceUsage usage_;
  std::uint64_t own_bytes_bound_ = 0;
};

}  // namespace oomlab
