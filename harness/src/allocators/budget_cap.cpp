#include "allocators/budget_cap.hpp"

#include "oomlab/units.hpp"

namespace oomlab {

BudgetCap::BudgetCap(std::unique_ptr<Allocator> inner, std::uint64_t budget_bytes,
                     std::uint64_t granularity)
    : AllocatorAdaptor(std::move(inner)),
      budget_(budget_bytes),
      granularity_(granularity == 0 ? 1 : granularity) {
}

bool BudgetCap::fits(std::size_t bytes) const {
  const std::uint64_t charged = round_up(bytes, granularity_);
  return charged >= bytes && charged <= budget_ - accounted_;  // also refuses sizes that wrap
}

AllocResult BudgetCap::do_allocate(std::size_t bytes, Stream stream) {
  if (!fits(bytes)) return {nullptr, AllocStatus::budget_cap, 0};
  const AllocResult r = upstream().allocate(bytes, stream);
  if (r.ok()) accounted_ += round_up(bytes, granularity_);
  return r;
}

void BudgetCap::do_deallocate(void* ptr, std::size_t bytes, Stream stream) {
  upstream().deallocate(ptr, bytes, stream);
  accounted_ -= round_up(bytes, granularity_);
}

AllocStatus BudgetCap::do_probe(std::size_t bytes, Stream stream) {
  if (!fits(bytes)) return AllocStatus::budget_cap;
  return upstream().probe(bytes, stream);
}

}  // namespace oomlab
