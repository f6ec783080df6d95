// `managed`: cudaMallocManaged / cudaFree, with optional cudaMemAdvise and a prefetch to the
// device. Managed memory migrates to the host instead of failing, so there is no ballast and the
// run enforces the budget around this backend with two adaptors (both refusals are
// AllocStatus::budget_cap; this backend itself never knows it is capped):
// - BudgetCap on what is asked for, each request rounded up to kCapGranularity (a touched managed
//   allocation holds its size rounded up to 64 KiB), so managed memory is never asked for beyond
//   the budget, touched or not;
// - DeviceUsageCap on what the device holds, measured before each allocation: freed managed
//   memory stays on the device while any block of its 2 MiB chunk lives (H200, driver 580).
// The cap is the budget less cap_headroom() for the driver's own bookkeeping, measured at 2 to
// 6.5 MiB at budgets from 512 MiB to 32 GiB. Apart from that, the driver takes about 126 MiB of
// its own at a process's first managed allocation and keeps or gives it back as it sees fit
// (measured): the runner reads free memory before and after a managed run only after
// settle_managed_memory(), so that both readings see the driver in the same state.
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
  // What the cap leaves of the budget for the driver's bookkeeping: 8 MiB + budget / 1024.
  [[nodiscard]] static constexpr std::uint64_t cap_headroom(std::uint64_t budget_bytes) {
    return 8_MiB + budget_bytes / 1024;
  }

  ManagedAllocator(int device, Stream stream, const ManagedOptions& options);

 private:
  [[nodiscard]] std::string_view do_name() const override { return "managed"; }
  AllocResult do_allocate(std::size_t bytes, Stream stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState do_state() const override;
  // Read every DeviceUsage::kSampleEvery frees (the run's DeviceUsageCap reads at allocations).
  [[nodiscard]] std::uint64_t do_reserved_bytes() const override {
    return usage_.used_since_start();
  }
  // Allocates and frees, untouched: holds nothing, charges nothing.
  AllocStatus do_probe(std::size_t bytes, Stream stream) override;
  void place(void* ptr, std::size_t bytes, Stream stream) const;

  int device_;
  ManagedOptions options_;
  DeviceUsage usage_;
  std::uint64_t charged_high_water_ = 0;  // of live sizes rounded up to kCapGranularity
  std::uint64_t charged_bytes_ = 0;
  std::uint64_t live_pages_bytes_ = 0;  // live sizes rounded up to whole 2 MiB pages
};

}  // namespace oomlab
