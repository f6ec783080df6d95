// `managed`: cudaMallocManaged / cudaFree, with optional cudaMemAdvise and a prefetch to the
// device. Managed memory migrates to the host instead of failing, so the run always wraps this
// backend in BudgetCap and holds no ballast. Measured on an H200 (driver 580.159.04):
// - a touched managed allocation holds its size rounded up to 64 KiB (kCapGranularity);
// - the driver's own bookkeeping comes on top: 2 MiB at budgets of 512 MiB and 8 GiB, 6 MiB at
//   32 GiB, so the cap leaves cap_headroom() of the budget to it;
// - freed managed memory stays on the device while the program runs, so own_bytes_bound (for the
//   external-pressure check) is the high-water mark of what was charged, not what is live;
// - the driver releases memory of its own lazily (about 120 MiB seen held after a first 64 KiB
//   managed allocation was freed, and given back later), and keeps 2 MiB once a process has used
//   managed memory: the run's before/after check sees that 2 MiB.
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
  // What the cap leaves of the budget for the driver's bookkeeping: 4 MiB + budget / 4096.
  [[nodiscard]] static constexpr std::uint64_t cap_headroom(std::uint64_t budget_bytes) {
    return 4_MiB + budget_bytes / 4096;
  }

  ManagedAllocator(int device, Stream stream, const ManagedOptions& options);

  [[nodiscard]] std::string_view name() const override { return "managed"; }
  AllocResult allocate(std::size_t bytes, Stream stream) override;
  void deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState state() const override { return usage_.measure(charged_high_water_); }
  [[nodiscard]] std::uint64_t reserved_bytes() const override { return usage_.used_since_start(); }
  // Allocates and frees without charging the high-water mark: a probe holds nothing.
  AllocStatus probe(std::size_t bytes, Stream stream) override;

 private:
  void place(void* ptr, std::size_t bytes, Stream stream) const;

  int device_;
  ManagedOptions options_;
  DeviceUsage usage_;
  std::uint64_t charged_bytes_ = 0;       // live sizes rounded up to kCapGranularity
  std::uint64_t charged_high_water_ = 0;  // freed managed pages may stay on the device
};

}  // namespace oomlab
