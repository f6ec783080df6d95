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

class BudgetCap final : public AllocatorAdaptor {
 public:
  BudgetCap(std::unique_ptr<Allocator> inner, std::uint64_t budget_bytes,
            std::uint64_t granularity);

  [[nodiscard]] std::uint64_t accounted_bytes() const { return accounted_; }
  [[nodiscard]] std::uint64_t budget_bytes() const { return budget_; }

 private:
  AllocResult do_allocate(std::size_t bytes, Stream stream) override;
  void do_deallocate(void* ptr, std::size_t bytes, Stream stream) override;
  [[nodiscard]] MemoryState do_state() const override {
    MemoryState s = upstream().state();  // the upstream may have a cap of its own
    s.cap_bytes = s.cap_bytes == 0 ? budget_ : std::min(s.cap_bytes, budget_);
    s.cap_charged_bytes = std::max(s.cap_charged_bytes, accounted_);
    return s;
  }
  AllocStatus do_probe(std::size_t bytes, Stream stream) override;
  [[nodiscard]] bool fits(std::size_t bytes) const;

  std::uint64_t budget_;
  std::uint64_t granularity_;
  std::uint64_t accounted_ = 0;
};

}  // namespace oomlab
