// BudgetCap: refuses, before any CUDA call, a request that would take the memory it accounts for
// past the budget (status budget_cap). Each request counts rounded up to `granularity`, the unit
// in which the wrapped allocator really takes device memory. Wraps any backend; the run uses it
// for `managed`, whose memory would otherwise migrate to the host rather than fail (the safety
// rule of docs/safety.md: never ask for more managed memory than the device has free).
#pragma once

#include <algorithm>
#include <memory>

#include "oomlab/allocator.hpp"

namespace oomlab {

class BudgetCap final : public Allocator {
 public:
  BudgetCap(std::unique_ptr<Allocator> inner, std::uint64_t budget_bytes,
            std::uint64_t granularity);

  [[nodiscard]] std::string_view name() const override { return inner_->name(); }
  AllocResult allocate(std::size_t bytes, Stream stream) override;
  void deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState state() const override {
    MemoryState s = inner_->state();  // the inner allocator may have a cap of its own
    s.cap_bytes = s.cap_bytes == 0 ? budget_ : std::min(s.cap_bytes, budget_);
    s.cap_charged_bytes = std::max(s.cap_charged_bytes, accounted_);
    return s;
  }
  [[nodiscard]] std::uint64_t reserved_bytes() const override { return inner_->reserved_bytes(); }
  AllocStatus probe(std::size_t bytes, Stream stream) override;
  void trim() override { inner_->trim(); }
  [[nodiscard]] std::uint64_t footprint(std::size_t bytes) const override {
    return inner_->footprint(bytes);
  }
  [[nodiscard]] bool simulated() const override { return inner_->simulated(); }

  [[nodiscard]] std::uint64_t accounted_bytes() const { return accounted_; }
  [[nodiscard]] std::uint64_t budget_bytes() const { return budget_; }

 private:
  [[nodiscard]] bool fits(std::size_t bytes) const;

  std::unique_ptr<Allocator> inner_;
  std::uint64_t budget_;
  std::uint64_t granularity_;
  std::uint64_t accounted_ = 0;
};

}  // namespace oomlab
